"""Rack-aware placement: one shared module (smdlab.solve.placement) for every policy."""

from __future__ import annotations

import numpy as np
import pytest

from smdlab.model.cluster import Cluster
from smdlab.model.job import make_job
from smdlab.policies.registry import get_policy
from smdlab.sim import simulate
from smdlab.solve.ledger import Ledger
from smdlab.solve.placement import (
    RULES,
    capacity_matrix,
    first_fit_tasks,
    rack_layout,
    rack_preference,
)
from smdlab.solve.shrink_placement import place

A = np.array([1.0, 1.0, 1.0, 1.0])  # worker: 1 GPU
G = np.array([0.0, 1.0, 1.0, 1.0])  # PS: no GPU


def _two_racks() -> Cluster:
    return Cluster.racks(racks=2, machines_per_rack=2, gpu=4)


def test_a_job_that_fits_in_one_rack_stays_there():
    c = _two_racks()
    free = capacity_matrix(c)
    free[1, 0] = 1  # rack 0: 4 + 1 GPUs; rack 1: 8
    # flat first fit: 4 workers on machine 0, 2 on machine 1 (full), 1 on machine 2 -> 2 racks
    assert first_fit_tasks(free, 6, 1, A, G) == ((0, 4, 1), (1, 1, 0), (2, 1, 0))
    with rack_layout(c):
        # rack 0 cannot hold 6 workers; rack 1 can: the job goes there whole
        assert first_fit_tasks(free, 6, 1, A, G) == ((2, 4, 1), (3, 2, 0))
        # a job that fits on one machine is placed as without racks
        assert first_fit_tasks(free, 2, 1, A, G) == ((0, 2, 1),)


def test_best_fit_rack_then_fewest_racks():
    c = Cluster.racks(racks=3, machines_per_rack=1, gpu=8)
    free = capacity_matrix(c)
    free[:, 0] = [2, 6, 5]
    with rack_layout(c):
        # a 5-worker job fits in rack 1 (6 free) and rack 2 (5 free): best fit picks rack 2
        assert RULES["first_fit"](free, 5, 1, A, G) == ((2, 5, 1),)
        # 10 workers fit in no rack: the racks with most room first (rack 1, then rack 2)
        assert RULES["first_fit"](free, 10, 1, A, G) == ((1, 6, 1), (2, 4, 0))


@pytest.mark.parametrize("rule", sorted(RULES))
def test_feasibility_and_flat_clusters_unchanged(rule):
    rng = np.random.default_rng(7)
    racked = Cluster.racks(racks=4, machines_per_rack=3, gpu=8)
    flat = Cluster.homogeneous(12, gpu=8)
    for _ in range(40):
        free = capacity_matrix(racked)
        free[:, 0] = rng.integers(0, 9, size=12)
        w, p = int(rng.integers(1, 20)), int(rng.integers(1, 4))
        plain = RULES[rule](free, w, p, A, G)
        with rack_layout(flat):
            assert RULES[rule](free, w, p, A, G) == plain
        with rack_layout(racked):
            aware = RULES[rule](free, w, p, A, G)
        assert (aware is None) == (plain is None)
        if aware is not None:
            assert sum(t[1] for t in aware) == w and sum(t[2] for t in aware) == p
            used = np.zeros_like(free)
            for m, tw, tp in aware:
                used[m] += tw * A + tp * G
            assert np.all(used <= free + 1e-9)
            # never more racks than the rule without racks
            assert len({m // 3 for m, _, _ in aware}) <= len({m // 3 for m, _, _ in plain})


def test_ledger_prefers_the_jobs_rack():
    c = _two_racks()
    free = capacity_matrix(c)
    free[0, 0] = 1  # machine 0: one GPU left; machine 1 (rack 0) full
    free[1, 0] = 0
    free[2, 0] = 0  # rack 1: machine 3 only
    ledger = Ledger(free)
    ledger.preload("j", ((0, 0, 1),))
    with rack_layout(c):
        assert ledger.add_task("j", "worker", A) == 0
        assert ledger.add_task("j", "worker", A) == 3  # nothing left in rack 0
        assert rack_preference(4, [0]).tolist() == [True, True, False, False]


def test_shrink_placement_fills_one_rack():
    c = _two_racks()
    job = make_job("j", "resnet50", samples=1e5, max_workers=8, max_ps=2)
    free = capacity_matrix(c)
    free[0, 0] = 2  # rack 0 has 6 GPUs free, rack 1 has 8
    with rack_layout(c):
        res = place([job], [(8, 1)], c, free)
    assert {m // 2 for m, _, _ in res.placements[0].tasks} == {1}
    flat = place([job], [(8, 1)], c, free)
    assert {m // 2 for m, _, _ in flat.placements[0].tasks} == {0, 1}


def test_policies_keep_working_on_racked_mixed_clusters():
    from smdlab.workloads.synthetic import synthetic

    c = Cluster.groups(
        [
            {"name": "a", "machines": 2, "gpu_type": "v100", "gpu": 4, "uplink_gbps": 50},
            {"name": "b", "machines": 2, "gpu_type": "p100", "gpu": 4, "uplink_gbps": 50},
        ]
    )
    jobs = synthetic(8, c, seed=1, arch_mix=0.3)
    for name in ("fifo", "tiresias", "smd", "drf", "tetris", "optimus", "gavel_max_min"):
        r = simulate(jobs, c, get_policy(name))
        assert len(r.jobs) == 8 and not r.skipped
        assert r.summary["cross_rack_gb"] >= 0


def test_optimus_source_placement_stays_in_the_first_machines_rack():
    from smdlab.policies.ps.optimus import place_source

    c = _two_racks()
    free = capacity_matrix(c)
    cpu = c.resources.index("cpu")
    free[:, cpu] = [64, 50, 60, 40]  # CPU used: machine 0 least, then 2, then 1
    job = make_job("j", "resnet50", samples=1e5, max_workers=8, max_ps=2)
    flat = place_source(c, free, [job], [(6, 1)])["j"]
    assert {m for m, _, _ in flat} == {0, 2}  # the two least used machines, across racks
    with rack_layout(c):
        aware = place_source(c, free, [job], [(6, 1)])["j"]
    assert {m for m, _, _ in aware} == {0, 1} and sum(t[1] for t in aware) == 6


def test_sjf_bco_ring_balanced_within_one_rack():
    from smdlab.policies.allreduce.sjf_bco import _in_one_rack, balanced_tasks

    c = Cluster.racks(racks=2, machines_per_rack=2, gpu=4)
    ring = make_job("r", "resnet50", samples=1e5, arch="allreduce", requested_workers=6)
    a = np.array([1.0, 1.0, 1.0, 1.0])
    free = capacity_matrix(c)
    crossing = np.array([0, 1, 0, 0])  # machine 1 carries another ring
    flat, _ = balanced_tasks(ring, 6, a, free, crossing, "wfbp")
    assert {m // 2 for m, _, _ in flat} == {0, 1}  # machines without a crossing ring first

    with rack_layout(c):
        inside = _in_one_rack(flat, ring, 6, a, free, crossing, "wfbp")
    # both racks hold 6 workers and are equally free: the best-fit tie goes to rack 0
    assert {m // 2 for m, _, _ in inside} == {0} and sum(t[1] for t in inside) == 6
