"""DRF's filling on Python floats (a few machines) makes the decisions of its array version."""

from __future__ import annotations

import numpy as np
import pytest

import smdlab.policies.ps.drf as drf_mod
from smdlab import Cluster, Machine
from smdlab.errors import SmdlabError
from smdlab.policies.ps.drf import DRF
from smdlab.sim import simulate
from smdlab.testing import random_job


def _case(seed: int):
    """Unequal machines (some bundles fit only apart) and jobs arriving over an hour."""
    rng = np.random.default_rng(seed)
    machines = tuple(
        Machine(
            f"m{i}",
            {
                "gpu": int(rng.choice([2, 4, 8])),
                "cpu": float(rng.choice([6.0, 16.0, 32.5])),
                "bw_gbps": float(rng.uniform(10, 100)),
            },
        )
        for i in range(int(rng.integers(1, 6)))
    )
    cluster = Cluster(machines, ("gpu", "cpu", "bw_gbps"))
    jobs = [
        random_job(rng, f"j{i}", arrival=float(rng.uniform(0, 3600)), samples=2e5)
        for i in range(int(rng.integers(2, 9)))
    ]
    return jobs, cluster


@pytest.mark.parametrize("node_choice", ["fit", "dl2"])
@pytest.mark.parametrize("seed", range(5))
def test_small_filling_decides_as_the_array_filling(seed, node_choice, monkeypatch):
    jobs, cluster = _case(seed)
    runs = []
    for small in (10**9, 0):
        monkeypatch.setattr(drf_mod, "_SMALL", small)
        policy = DRF(node_choice=node_choice)
        seen: list[str] = []
        decide = policy.decide

        def record(state, decide=decide, seen=seen):
            d = decide(state)
            seen.append(repr(d))
            return d

        policy.decide = record
        try:  # DL2's rule may stall a cluster: both versions must then stall alike
            res = simulate(jobs, cluster, policy, record_history=False, lower_bound=False)
            outcome = repr(float(res.summary["mean_jct"]))
        except SmdlabError as exc:
            outcome = repr(exc)
        runs.append((seen, outcome))
    assert runs[0] == runs[1]
    assert len(runs[0][0]) > 1
