"""Placement of pooled allocations on machines: fits every machine, shrinks only when it must."""

from __future__ import annotations

import numpy as np
import pytest

from smdlab import Cluster, Machine
from smdlab.errors import InvalidInput
from smdlab.solve import Placement, place, solve
from smdlab.solve.cases import small_job


def _check(result, jobs, cluster, free):
    used = np.zeros_like(free)
    for job, pl, w, p in zip(jobs, result.placements, result.workers, result.ps):
        assert isinstance(pl, Placement)
        assert pl.workers == w and pl.ps == p
        for h, wh, ph in pl.tasks:
            used[h] += wh * cluster.vector(job.worker_demand) + ph * cluster.vector(job.ps_demand)
    assert np.all(used <= free + 1e-9)
    assert np.allclose(result.free, free - used)


def _cluster(rng, machines=4):
    return Cluster(
        tuple(
            Machine(f"m{h}", {"gpu": 4, "cpu": 32, "mem_gb": 128, "bw_gbps": 50})
            for h in range(machines)
        )
    )


@pytest.mark.parametrize("seed", range(30))
def test_placement_fits_every_machine(seed):
    rng = np.random.default_rng(seed)
    cluster = _cluster(rng, int(rng.integers(2, 6)))
    jobs = [
        small_job(rng, f"j{i}", max_workers=6, max_ps=6) for i in range(int(rng.integers(2, 7)))
    ]
    alloc = [(int(rng.integers(0, 7)), 0) for _ in jobs]
    alloc = [(w, int(rng.integers(1, 7))) if w else (0, 0) for w, _ in alloc]
    free = cluster.machine_matrix * rng.uniform(0.5, 1.0, (len(cluster.machines), 1))
    res = place(jobs, alloc, cluster, free)
    _check(res, jobs, cluster, free)
    for (w0, p0), w, p, k in zip(alloc, res.workers, res.ps, res.shrunk):
        assert w <= w0 and p <= p0 and (w0 - w) + (p0 - p) == k
    if res.shrink_steps == 0:
        assert (res.workers, res.ps) == (tuple(a[0] for a in alloc), tuple(a[1] for a in alloc))


def test_fragmentation_shrinks_by_one_task():
    # two machines with 3 GPUs: three 2-GPU workers fit the pool (6) but only one fits per machine
    cluster = Cluster(
        tuple(
            Machine(f"m{h}", {"gpu": 3, "cpu": 64, "mem_gb": 256, "bw_gbps": 100}) for h in range(2)
        )
    )
    rng = np.random.default_rng(0)
    job = small_job(rng, "big", max_workers=4, max_ps=4).replace(
        worker_demand={"gpu": 2, "cpu": 1, "mem_gb": 1, "bw_gbps": 1},
        ps_demand={"gpu": 0, "cpu": 1, "mem_gb": 1, "bw_gbps": 1},
    )
    res = place([job], [(3, 2)], cluster)
    assert res.shrink_steps == 1 and (res.workers[0], res.ps[0]) == (2, 2)
    assert sorted(t[1] for t in res.placements[0].tasks) == [1, 1]


def test_task_that_fits_nowhere_leaves_its_job_out():
    cluster = Cluster((Machine("m0", {"gpu": 1, "cpu": 8, "mem_gb": 64, "bw_gbps": 10}),) * 1)
    rng = np.random.default_rng(1)
    job = small_job(rng, "wide").replace(
        worker_demand={"gpu": 2, "cpu": 1, "mem_gb": 1, "bw_gbps": 1}
    )
    other = small_job(rng, "ok").replace(
        worker_demand={"gpu": 1, "cpu": 1, "mem_gb": 1, "bw_gbps": 1},
        ps_demand={"gpu": 0, "cpu": 1, "mem_gb": 1, "bw_gbps": 1},
    )
    res = place([job, other], [(1, 1), (1, 1)], cluster)
    assert res.placements[0].tasks == () and (res.workers[0], res.ps[0]) == (0, 0)
    assert res.workers[1] == 1 and res.shrink_steps == 1


def test_first_fit_decreasing_fills_machines_in_order():
    cluster = Cluster(
        tuple(
            Machine(f"m{h}", {"gpu": 4, "cpu": 16, "mem_gb": 64, "bw_gbps": 40}) for h in range(3)
        )
    )
    rng = np.random.default_rng(2)
    demand = {"gpu": 1, "cpu": 2, "mem_gb": 8, "bw_gbps": 5}
    job = small_job(rng, "a", max_workers=8, max_ps=8).replace(
        worker_demand=demand, ps_demand={**demand, "gpu": 0}
    )
    res = place([job], [(6, 2)], cluster)
    # workers (dominant share: gpu 1/12) go first: 4 fill m0's GPUs, 2 go to m1; the PSs (share
    # 2/48) follow and still fit on m0, the first machine with room
    assert res.placements[0].tasks == ((0, 4, 2), (1, 2, 0))


def test_solve_places_by_default_on_machines():
    rng = np.random.default_rng(4)
    cluster = _cluster(rng, 3)
    jobs = [small_job(rng, f"j{i}", max_workers=4, max_ps=4) for i in range(4)]
    sol = solve(jobs, cluster, "smd")
    assert sol.placement is not None and len(sol.placement) == 4
    _check(sol.placement, jobs, cluster, cluster.machine_matrix)
    frame = sol.to_frame()
    assert {"job", "workers", "ps", "duration", "machines"} <= set(frame.columns)
    assert solve(jobs, cluster, "smd", place=False).placement is None
    # with part of the cluster busy, the solution fits what is free
    free = cluster.machine_matrix.copy()
    free[0] = 0
    sol2 = solve(jobs, cluster, "milp", free=free)
    _check(sol2.placement, jobs, cluster, free)
    assert all(0 not in pl.machines for pl in sol2.placement.placements)


def test_place_rejects_bad_input():
    rng = np.random.default_rng(5)
    cluster = _cluster(rng, 2)
    jobs = [small_job(rng, "a", max_workers=2, max_ps=2)]
    with pytest.raises(InvalidInput, match="workers"):
        place(jobs, [(3, 1)], cluster)
    with pytest.raises(InvalidInput, match="one \\(workers, ps\\) pair per job"):
        place(jobs, [], cluster)
    with pytest.raises(InvalidInput, match="free"):
        place(jobs, [(1, 1)], cluster, free=np.zeros((3, 4)))
    with pytest.raises(InvalidInput, match="machines"):
        place(jobs, [(1, 1)], Cluster.pooled(gpu=4, cpu=8, mem_gb=64, bw_gbps=100))
