"""Every policy's decision fits each machine's free capacity on random states."""

from __future__ import annotations

import numpy as np
import pytest
from _policy_cases import queued, running

from smdlab import Cluster, Machine
from smdlab.policies.base import ClusterState
from smdlab.policies.registry import get_policy
from smdlab.policies.toolkit import apply_decision
from smdlab.sim import simulate
from smdlab.sim.policy_check import audit_decision
from smdlab.solve.placement import capacity_matrix, first_fit
from smdlab.testing import random_job

POLICIES = [
    "fifo",
    "srtf",
    "drf",
    "tetris",
    "optimus",
    "tiresias",
    "smd",
    "milp",
    "gpu_proportional",
    "synergy_tune",
    "synergy_opt",
]


def _cluster() -> Cluster:
    # heterogeneous: a big GPU box, a small one, and a CPU-only server (PSs only)
    res = ("gpu", "cpu", "mem_gb", "bw_gbps")
    return Cluster(
        (
            Machine("big", {"gpu": 8, "cpu": 32, "mem_gb": 256, "bw_gbps": 100}),
            Machine("small", {"gpu": 2, "cpu": 12, "mem_gb": 64, "bw_gbps": 25}),
            Machine("cpu", {"gpu": 0, "cpu": 24, "mem_gb": 128, "bw_gbps": 40}),
        ),
        res,
    )


def _random_state(seed: int, elastic: bool) -> ClusterState:
    rng = np.random.default_rng(seed)
    cl = _cluster()
    free = capacity_matrix(cl).copy()
    runs = []
    for i in range(int(rng.integers(0, 4))):
        j = random_job(rng, name=f"r{i}", max_workers=4, max_ps=4)
        w, p = int(rng.integers(1, 4)), int(rng.integers(1, 4))
        pl = first_fit(j, w, p, free, cl.resources, commit=True)
        if pl is not None:
            runs.append(
                running(j, pl.tasks, remaining=j.samples / 2, attained=float(rng.uniform(0, 2e4)))
            )
    qs = [
        queued(
            random_job(
                rng,
                name=f"q{i}",
                arrival=float(i),
                max_workers=int(rng.integers(1, 7)),
                max_ps=int(rng.integers(1, 7)),
            ),
            attained=float(rng.choice([0.0, 5e3])),
            since=float(i),
        )
        for i in range(int(rng.integers(1, 6)))
    ]
    free.setflags(write=False)
    execution = "elastic" if elastic else "non_elastic"
    return ClusterState(100.0, cl, tuple(qs), tuple(runs), free, "wfbp", execution)


@pytest.mark.parametrize("elastic", [False, True])
@pytest.mark.parametrize("name", POLICIES)
def test_decisions_fit_every_machine(name, elastic):
    started = 0
    for seed in range(6):
        st = _random_state(seed, elastic)
        d = get_policy(name).decide(st)
        left = apply_decision(st, d)  # raises if any machine is over capacity
        assert np.all(left >= -1e-9)
        audit_decision(st, d)  # check_policy's audit: the same, plus job names and the mode
        started += len(d.allocations)
    assert started > 0


def _workload():
    rng = np.random.default_rng(7)
    return [
        random_job(
            rng,
            name=f"j{i}",
            arrival=float(3 * i),
            samples=float(rng.integers(2e4, 2e5)),
            worker_demand={"gpu": 1, "cpu": 4, "mem_gb": 16, "bw_gbps": 10},
            ps_demand={"cpu": 4, "mem_gb": 16, "bw_gbps": 10},
        )
        for i in range(14)
    ]


# Running each policy to completion in every mode it supports, deterministically:
# tests/test_policy_check.py (check_policy, for every registered policy).


def test_tiresias_preempts_in_a_run_with_low_thresholds():
    jobs = _workload()
    cl = Cluster.homogeneous(3, gpu=4, cpu=32, mem_gb=128, bw_gbps=100)
    res = simulate(jobs, cl, get_policy("tiresias", thresholds=(20.0,)), slot_s=10.0)
    assert res.summary["jobs_completed"] == len(jobs)
    assert res.summary["preemptions"] > 0
    assert np.allclose(res.jobs["samples_done"], res.jobs["samples"], rtol=1e-6)
