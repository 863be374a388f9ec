"""Shared stages of the bundle policies (smdlab.policies.toolkit, smdlab.solve.placement) and SRTF's incremental order."""

from __future__ import annotations

import itertools

import numpy as np

from smdlab import Cluster, Job, LayerProfile, Machine
from smdlab.policies.base import ClusterState
from smdlab.policies.toolkit import admit_bundles, max_allocation, max_bundles
from smdlab.solve.placement import capacity_matrix, first_fit, placement_usage

RES = ("gpu", "cpu", "bw_gbps")


def _job(max_workers=8, max_ps=8, worker=None, ps=None) -> Job:
    f = np.full(2, 5e-5)
    return Job(
        "j",
        LayerProfile(["a", "b"], f, 2 * f, np.full(2, 1e6)),
        1e5,
        64,
        worker or {"gpu": 1, "cpu": 2, "bw_gbps": 10},
        ps or {"cpu": 4, "bw_gbps": 10},
        max_workers=max_workers,
        max_ps=max_ps,
    )


def _free(*rows) -> np.ndarray:
    return np.array(rows, dtype=float)


def test_first_fit_respects_every_machine_and_reports_misfits():
    job = _job()
    free = _free([2, 32, 100], [4, 8, 30], [0, 64, 100])
    for w, p in itertools.product(range(0, 8), range(0, 8)):
        pl = first_fit(job, w, p, free, RES)
        if pl is None:
            continue
        assert (pl.workers, pl.ps) == (w, p)
        assert np.all(free - placement_usage(job, pl, 3, RES) >= -1e-9)
    assert first_fit(job, 7, 1, free, RES) is None  # only 6 GPUs in all
    work = free.copy()
    assert first_fit(job, 9, 9, work, RES, commit=True) is None and np.array_equal(work, free)
    pl = first_fit(job, 2, 2, work, RES, commit=True)
    assert np.allclose(work, free - placement_usage(job, pl, 3, RES))


def test_max_bundles_is_the_largest_feasible_count():
    job = _job()
    rng = np.random.default_rng(5)
    for _ in range(30):
        free = rng.integers(0, 6, size=(4, 3)) * np.array([1, 4, 10])
        n, pl = max_bundles(job, free.astype(float), RES, 8)
        brute = max(
            [k for k in range(0, 9) if k == 0 or first_fit(job, k, k, free.astype(float), RES)],
            default=0,
        )
        assert n == brute and (n == 0) == (pl is None)


def test_max_allocation_adds_single_workers_after_max_ps():
    job = _job(max_workers=5, max_ps=2)
    w, p, pl = max_allocation(job, _free([8, 64, 100]), RES)
    assert (w, p) == (5, 2) and (pl.workers, pl.ps) == (5, 2)
    w, p, _ = max_allocation(_job(max_workers=2, max_ps=5), _free([8, 64, 100]), RES)
    assert (w, p) == (2, 2)
    assert max_allocation(job, _free([0, 64, 100]), RES) == (0, 0, None)


def test_admit_bundles_stop_rule():
    cl = Cluster((Machine("m", {"gpu": 2, "cpu": 64, "bw_gbps": 100}),), RES)
    from smdlab.policies.base import QueuedJob

    big = _job(max_workers=1, max_ps=1, worker={"gpu": 4, "cpu": 1, "bw_gbps": 1}).replace(
        name="big"
    )
    small = _job(max_workers=1, max_ps=1).replace(name="small")
    free = capacity_matrix(cl)
    state = ClusterState(0.0, cl, (QueuedJob(big, 1.0), QueuedJob(small, 1.0)), (), free)
    assert admit_bundles(state.queued, state).allocations == ()
    skipping = admit_bundles(state.queued, state, stop_at_first_unfit=False)
    assert [a.job for a in skipping.allocations] == ["small"]
