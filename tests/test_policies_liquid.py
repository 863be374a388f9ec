"""Liquid (TPDS 2022): the cost function by hand, best fit, the seeded GA, history, cross-rack."""

from __future__ import annotations

import numpy as np
import pytest

from smdlab.model.cluster import Cluster
from smdlab.policies.base import ClusterState, QueuedJob, RunningJob
from smdlab.policies.heterogeneity.liquid import Liquid, Topology, _Batch, placement_cost
from smdlab.policies.registry import get_policy
from smdlab.sim import simulate
from smdlab.solve.placement import Placement, capacity_matrix
from tests._policy_cases import job


def _racks(domains: bool = False) -> Cluster:
    racks = [
        {"name": "a", "machines": 2, "gpu": 4, "domain": "d0" if domains else ""},
        {"name": "b", "machines": 2, "gpu": 4, "domain": "d1" if domains else ""},
    ]
    return Cluster.groups(racks)


def test_cost_by_hand():
    topo = Topology(_racks())
    busy = np.zeros(4)
    gpus = [(1.0, 0.0)]  # a worker holds one GPU, a PS none
    # two workers on machine 0 (rack a), one PS on machine 2 (rack b); b = 1
    tasks = [(0, 0, 0), (0, 0, 0), (0, 1, 2)]
    # network: 2 pairs across racks x 4 = 8; load: (-1/4 - 2/4 + 0) / 3 = -0.25;
    # nodes: (job, machine) pairs 2 / 3 tasks
    assert placement_cost(tasks, [1.0], gpus, topo, busy) == pytest.approx(8 - 0.25 + 2 / 3)
    # the PS on machine 1 (same rack, other node): 2 pairs x 1
    near = [(0, 0, 0), (0, 0, 0), (0, 1, 1)]
    assert placement_cost(near, [1.0], gpus, topo, busy) == pytest.approx(2 - 0.25 + 2 / 3)
    # the PS with the workers: no network cost, one machine; the PS sees the machine half busy
    same = [(0, 0, 0), (0, 0, 0), (0, 1, 0)]
    load = (-1 / 4 - 2 / 4 + 2 / 4) / 3
    assert placement_cost(same, [1.0], gpus, topo, busy) == pytest.approx(0 + load + 1 / 3)
    # across domains: 2 pairs x 40; b = 2.5 scales the network term
    far = Topology(_racks(domains=True))
    assert placement_cost(tasks, [2.5], gpus, far, busy) == pytest.approx(2.5 * 80 - 0.25 + 2 / 3)
    # busy GPUs raise the load: machine 0 had 2 busy GPUs: (-(3/4) - (4/4) + 0) / 3
    assert placement_cost(tasks, [1.0], gpus, topo, np.array([2.0, 0, 0, 0])) == pytest.approx(
        8 - 1.75 / 3 + 2 / 3
    )


def _state(c: Cluster, queued, running=(), t: float = 0.0, free=None) -> ClusterState:
    free = capacity_matrix(c) if free is None else free
    q = tuple(QueuedJob(j, j.samples, 0.0, j.arrival) for j in queued)
    return ClusterState(t, c, q, tuple(running), free)


def test_best_fit_keeps_a_job_in_one_rack():
    c = _racks()
    free = capacity_matrix(c)
    free[0, 0] = 1  # rack a: 1 + 4 GPUs; rack b: 8
    j = job("j", max_workers=6, max_ps=6, requested_workers=6)
    d = Liquid().decide(_state(c, [j], free=free))
    (a,) = d.allocations
    assert (a.workers, a.ps) == (6, 6)
    assert {m // 2 for m in a.placement.machines} == {1}  # rack a cannot hold it; rack b can
    # a worker and a PS in turn: four pairs fill machine 2's GPUs; worker 5 goes to machine 3;
    # PS 5 then costs 1 x 1 pair on machine 2 (its 4 workers local) against 4 x 1 on machine 3,
    # so it joins machine 2, and likewise PS 6 (2 remote pairs against 4)
    assert sorted(a.placement.tasks) == [(2, 4, 6), (3, 2, 0)]


def test_ga_is_deterministic_and_never_worse_than_best_fit():
    c = Cluster.racks(racks=3, machines_per_rack=2, gpu=4)
    jobs = [job(f"j{i}", max_workers=3, max_ps=3, requested_workers=3) for i in range(4)]
    st = _state(c, jobs)
    one, two = Liquid(seed=3).decide(st), Liquid(seed=3).decide(st)
    assert one == two and len(one.allocations) == 4
    topo = Topology(c)
    free = capacity_matrix(c)
    batch = _Batch(jobs, [(3, 3)] * 4, [Liquid().bandwidth(j) for j in jobs], c.resources, topo,
                   free, np.zeros(6))  # fmt: skip
    greedy = batch.best_fit()
    assert greedy is not None
    ga = Liquid(seed=3)._ga(batch, greedy, 0.0)
    assert batch.cost(ga) <= batch.cost(greedy)
    assert np.array_equal(ga, Liquid(seed=3)._ga(batch, greedy, 0.0))


def test_simulation_is_deterministic():
    from smdlab.workloads.synthetic import synthetic

    c = Cluster.racks(racks=2, machines_per_rack=2, gpu=4, uplink_gbps=50)
    jobs = [j.replace(gang=True) for j in synthetic(10, c, seed=4, load=1.0)]
    runs = [simulate(jobs, c, Liquid(seed=1), record_history=False) for _ in range(2)]
    assert runs[0].jobs.equals(runs[1].jobs)
    assert runs[0].summary["cross_rack_gb"] == runs[1].summary["cross_rack_gb"]


def test_bandwidth_estimated_from_history():
    c = _racks()
    j = job("r", max_workers=2, max_ps=2)
    policy = Liquid()
    nic = 5.0  # the job's worker bw_gbps: no history yet
    assert policy.bandwidth(j) == pytest.approx(nic)
    pl = Placement(((0, 2, 2),))
    policy.decide(_state(c, [], [RunningJob(j, 2, 2, pl, 0.0, 1e5)], t=0.0))
    policy.decide(_state(c, [], [RunningJob(j, 2, 2, pl, 0.0, 1e5 - 1280.0)], t=10.0))
    # 128 samples/s, global batch 128: 1 iteration/s; 2 x 6 MB per worker per iteration
    assert policy.bandwidth(j) == pytest.approx(2 * 6e6 * 8 / 1e9)
    other = job("o", prof=j.profile)  # same profile object, same network name
    assert policy.bandwidth(other) == policy.bandwidth(j)
    policy.reset()
    assert policy.bandwidth(j) == pytest.approx(nic)


def test_liquid_sends_less_across_racks_than_fifo():
    from smdlab.workloads.synthetic import synthetic

    c = Cluster.racks(racks=4, machines_per_rack=2, gpu=8, uplink_gbps=100)
    jobs = [j.replace(gang=True) for j in synthetic(24, c, seed=2, load=0.9)]
    liquid = simulate(jobs, c, get_policy("liquid"), record_history=False).summary
    fifo = simulate(jobs, c, get_policy("fifo"), record_history=False).summary
    assert liquid["cross_rack_gb"] < fifo["cross_rack_gb"]


def test_oversubscription_experiment_point_and_figure():
    import pandas as pd

    from smdlab.experiments.oversubscription import POLICIES, _point, racked_cluster
    from smdlab.viz.oversubscription import oversubscription_figure

    c = racked_cluster(2, 2, 4.0)
    assert [r.uplink_gbps for r in c.topology] == [50.0, 50.0]  # 2 x 100 Gbps NICs / 4
    df = pd.DataFrame(_point((2, 2, 8, 0, 4.0)))
    assert list(df["policy"]) == list(POLICIES)
    assert (df["cross_rack_tb"] >= 0).all() and (df["mean_jct_h"] > 0).all()
    fig = oversubscription_figure(df)
    assert {t.name for t in fig.data} == {"SMD (reconstructed model)", "Liquid", "FIFO", "Tiresias"}
