"""Task order in placement: one worker and one PS that fit only on two different machines.

First fit places the task type of larger dominant share first; when that fails it tries the
other order, which for (1 worker, 1 PS) finds a placement whenever one exists. The same retry is
in ``local`` (and so ``consolidated``), ``Ledger.add_pair`` (DRF), Tetris and the solver's
``place`` (before a job at (1, 1) is shrunk to nothing).
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from smdlab import Cluster, Job, LayerProfile, Machine
from smdlab.policies.registry import list_policies
from smdlab.sim import simulate
from smdlab.solve import place
from smdlab.solve.ledger import Ledger
from smdlab.solve.placement import RULES, first_fit_tasks

RES = ("gpu", "cpu", "mem_gb", "bw_gbps")
PROFILE = LayerProfile(["a"], [1e-4], [2e-4], [1e6])


def _split_only() -> tuple[Cluster, Job]:
    """Worker first (larger dominant share) takes m0; the PS then fits nowhere. PS on m0, worker on m1 fits."""
    cluster = Cluster(
        (
            Machine("m0", {"gpu": 4, "cpu": 7, "mem_gb": 64, "bw_gbps": 100}),
            Machine("m1", {"gpu": 4, "cpu": 26, "mem_gb": 16, "bw_gbps": 10}),
        ),
        RES,
    )
    job = Job(
        "j",
        PROFILE,
        1e4,
        64,
        {"gpu": 2, "cpu": 4, "mem_gb": 1, "bw_gbps": 1},
        {"cpu": 4, "mem_gb": 4, "bw_gbps": 25},
        max_workers=1,
        max_ps=1,
    )
    return cluster, job


def _vectors(job: Job) -> tuple[np.ndarray, np.ndarray]:
    return (
        np.array([job.worker_demand.get(r, 0.0) for r in RES]),
        np.array([job.ps_demand.get(r, 0.0) for r in RES]),
    )


def _exists(free: np.ndarray, a: np.ndarray, g: np.ndarray) -> bool:
    """Brute force: some machine pair (equal or not) holds one worker and one PS."""
    for m, k in itertools.product(range(len(free)), repeat=2):
        f = free.copy()
        f[m] -= a
        f[k] -= g
        if np.all(f >= -1e-9):
            return True
    return False


def _check(tasks, free, a, g) -> None:
    assert tasks is not None
    assert sum(t[1] for t in tasks) == 1 and sum(t[2] for t in tasks) == 1
    used = np.zeros_like(free)
    for m, w, p in tasks:
        used[m] += w * a + p * g
    assert np.all(used <= free + 1e-9)


@pytest.mark.parametrize(
    "rule", ["first_fit", "local", "consolidated"]
)  # ``spread`` alone is even spreads only
def test_every_rule_places_a_pair_that_fits_only_split(rule):
    cluster, job = _split_only()
    a, g = _vectors(job)
    free = cluster.machine_matrix.astype(float)
    _check(RULES[rule](free, 1, 1, a, g), free, a, g)


def test_first_fit_finds_every_unit_placement_that_exists():
    # Exactness for (1, 1) on random small machine sets: a placement is found iff one exists.
    rng = np.random.default_rng(0)
    found = split = 0
    for _ in range(3000):
        free = rng.integers(0, 5, size=(int(rng.integers(1, 4)), 3)).astype(float)
        a = rng.integers(0, 4, size=3).astype(float)
        g = rng.integers(0, 4, size=3).astype(float)
        exists = _exists(free, a, g)
        for rule in ("first_fit", "local", "consolidated"):
            tasks = RULES[rule](free, 1, 1, a, g)
            assert (tasks is not None) == exists, (rule, free, a, g)
            if tasks is not None:
                _check(tasks, free, a, g)
        found += exists
        split += exists and not np.all(free >= a + g, axis=1).any()
    assert found > 500 and split > 50  # the cases of interest occur


def test_ledger_add_pair_tries_the_ps_first_and_undoes_a_failure():
    cluster, job = _split_only()
    a, g = _vectors(job)
    ledger = Ledger(cluster.machine_matrix)
    assert ledger.add_pair("j", a, g) == (1, 0)  # worker on m1, PS on m0
    assert ledger.tasks("j") == ((0, 0, 1), (1, 1, 0))
    before = ledger.free.copy()
    assert ledger.add_pair("k", a, g) is None  # no room for a second pair
    np.testing.assert_array_equal(ledger.free, before)
    assert ledger.tasks("k") == ()


def test_solver_place_swaps_the_order_of_a_unit_job():
    # Equal dominant shares: the PS group goes first and takes m0, the only machine with a GPU.
    cluster = Cluster(
        (
            Machine("m0", {"gpu": 8, "cpu": 42, "mem_gb": 256, "bw_gbps": 40}),
            Machine("m1", {"gpu": 0, "cpu": 26, "mem_gb": 64, "bw_gbps": 40}),
        ),
        RES,
    )
    job = Job(
        "j",
        PROFILE,
        1e4,
        64,
        {"gpu": 1, "cpu": 1, "mem_gb": 15, "bw_gbps": 25},
        {"cpu": 5, "mem_gb": 3, "bw_gbps": 25},
        max_workers=1,
        max_ps=1,
    )
    res = place([job], [(1, 1)], cluster)
    assert (res.workers, res.ps, res.shrink_steps) == ((1,), (1,), 0)
    assert res.placements[0].tasks == ((0, 1, 0), (1, 0, 1))


@pytest.mark.parametrize("policy", list_policies())
def test_every_policy_runs_a_job_that_fits_only_split(policy):
    cluster, job = _split_only()
    res = simulate([job], cluster, policy)
    assert res.jobs["status"].tolist() == ["completed"]


def test_first_fit_keeps_the_dominant_order_when_it_works():
    # Both orders fit: the result is the one of the dominant-share order (workers first here).
    free = np.array([[4.0, 8.0], [4.0, 8.0]])
    a, g = np.array([2.0, 1.0]), np.array([0.0, 1.0])
    assert first_fit_tasks(free, 2, 1, a, g) == ((0, 2, 1),)
