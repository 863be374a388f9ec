"""SMD on pools of machines (GPU types, racks whose uplinks bind): pools, prices, placement, gap."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from smdlab.model.cluster import Cluster
from smdlab.model.gpu_types import speed_ratio
from smdlab.sim.simulator import simulate
from smdlab.solve.api import solve
from smdlab.solve.instance import build_instance, task_vectors
from smdlab.solve.placement import TOL, Placement, rack_layout
from smdlab.solve.placement_milp import evaluate, placement_instance, smd_placed, solve_placed
from smdlab.solve.smd_pools import (
    binding_uplinks,
    machine_pools,
    pool_instance,
    pool_ratios,
    regions,
    smd_pools,
)


def test_one_type_without_binding_uplinks_is_one_pool():
    assert len(machine_pools(Cluster.homogeneous(4))) == 1
    _, fast_uplinks = placement_instance("typed", 4, 4)
    assert not binding_uplinks(fast_uplinks)
    flat_racks = Cluster.groups([{"machines": 2, "uplink_gbps": 1e4}] * 2)
    assert not binding_uplinks(flat_racks) and len(machine_pools(flat_racks)) == 1


def test_pools_split_gpu_types_and_racks_whose_uplinks_bind():
    _, typed = placement_instance("typed", 4, 6)
    pools = machine_pools(typed)
    assert [sorted({typed.machines[int(m)].gpu_type for m in p}) for p in pools] == [
        ["k80"],
        ["v100"],
    ]
    assert regions(typed, pools).tolist() == [0, 0]  # PSs may sit on either type
    _, racked = placement_instance("racked", 4, 6)
    pools = machine_pools(racked)
    assert binding_uplinks(racked) and len(pools) == 2
    assert [sorted({racked.rack_of[int(m)] for m in p}) for p in pools] == [[0], [1]]
    assert regions(racked, pools).tolist() == [0, 1]  # PSs stay in their workers' rack


def test_a_pool_prices_a_job_at_the_simulators_speed_there():
    jobs, cluster = placement_instance("typed", 6, 4)
    inst = build_instance(jobs, cluster, cluster.capacity_vector)
    pools = machine_pools(cluster)
    ratio = pool_ratios(inst, cluster, pools)
    for i, job in enumerate(jobs):
        for g, machines in enumerate(pools):
            t = cluster.machines[int(machines[0])].gpu_type
            assert ratio[i, g] == speed_ratio(job.profile.network, t, job.profile.device)
    region = regions(cluster, pools)
    assert region.tolist() == [0, 0]
    blocks = [cluster.machine_matrix[m].sum(axis=0) for m in pools] + [cluster.capacity_vector]
    cap = np.concatenate(blocks).astype(float)  # each pool, then the one region
    for g, machines in enumerate(pools):
        home = np.full(inst.n, g)
        sub = pool_instance(inst, home, ratio, region, cap)
        # one job alone, its worker on the pool's first machine and its PS on another type's
        other = int(pools[1 - g][0])
        for i in range(inst.n):
            one = [Placement(())] * inst.n
            one[i] = Placement(tuple(sorted([(int(machines[0]), 1, 0), (other, 0, 1)])))
            assert sub.cost[i, 0, 0] == pytest.approx(evaluate(inst, cluster, one)[i], rel=1e-12)
        assert np.array_equal(sub.defer_cost, inst.defer_cost)


@pytest.mark.parametrize("kind", ["typed", "racked"])
@pytest.mark.parametrize("seed", [0, 1])
def test_workers_stay_in_their_pool_and_capacity_holds(kind, seed):
    jobs, cluster = placement_instance(kind, 12, 6, seed=seed)
    inst = build_instance(jobs, cluster, cluster.capacity_vector)
    pools = machine_pools(cluster)
    free = cluster.machine_matrix.astype(float)
    a = smd_pools(inst, cluster, free, pools)
    use = np.zeros_like(free)
    rack = np.array(cluster.rack_of)
    for i, (job, pl) in enumerate(zip(jobs, a.placements, strict=True)):
        wv, pv = task_vectors(job, cluster.resources)
        for m, w, p in pl.tasks:
            use[m] += w * wv + p * pv
        assert (a.pool[i] >= 0) == bool(pl.tasks)
        if pl.tasks:
            workers_on = {m for m, w, _ in pl.tasks if w}
            assert workers_on <= set(pools[a.pool[i]].tolist())
            if kind == "racked":  # every task in the workers' rack: no uplink divisor
                assert len({int(rack[m]) for m, _, _ in pl.tasks}) == 1
    assert np.all(use <= free + TOL)
    # the placed objective is the simulator's; placement can only lose what SMD planned
    placed = float(evaluate(inst, cluster, a.placements).sum())
    assert placed >= a.planned * (1 - 1e-9)


def test_smd_on_pools_beats_pooled_smd_on_gpu_types_and_stays_above_the_optimum():
    jobs, cluster = placement_instance("typed", 10, 4)
    exact = solve_placed(jobs, cluster, time_limit=60)
    smd = smd_placed(jobs, cluster)
    inst = build_instance(jobs, cluster, cluster.capacity_vector)
    with rack_layout(cluster):
        pooled = solve(jobs, cluster, "smd", place=True, bound=False).placement
    assert pooled is not None
    assert exact.status == "optimal"
    assert smd.method == "smd on pools + placement"
    # pooled SMD is far off on GPU types (it ignores them); on pools within a few percent
    pooled_objective = float(evaluate(inst, cluster, pooled.placements).sum())
    assert exact.objective * (1 - 1e-6) <= smd.objective <= exact.objective * 1.05
    assert smd.objective - exact.objective < (pooled_objective - exact.objective) / 10


def _arriving(kind: str, n: int, machines: int):
    jobs, cluster = placement_instance(kind, n, machines, seed=3)
    return [j.replace(arrival=600.0 * i) for i, j in enumerate(jobs)], cluster


def _weighted_jct(result) -> float:
    df = result.jobs
    return float((df["weight"] * df["jct"]).sum())


def test_the_policy_is_smd_on_a_cluster_of_one_pool():
    jobs, _ = _arriving("flat", 8, 2)
    cluster = Cluster.homogeneous(2)
    for execution in ("elastic", "non_elastic"):
        a = simulate(jobs, cluster, "smd", execution=execution).jobs
        b = simulate(jobs, cluster, "smd_pools", execution=execution).jobs
        pd.testing.assert_frame_equal(a, b)


@pytest.mark.parametrize("execution", ["elastic", "non_elastic"])
def test_the_policy_keeps_fast_jobs_off_slow_gpus(execution):
    jobs, cluster = _arriving("typed", 12, 4)
    pools = simulate(jobs, cluster, "smd_pools", execution=execution)
    pooled = simulate(jobs, cluster, "smd", execution=execution)
    assert len(pools.jobs) == len(jobs) and pools.jobs["jct"].notna().all()
    assert _weighted_jct(pools) < _weighted_jct(pooled)
