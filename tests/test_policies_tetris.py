"""Tetris: alignment of demand with free resources, blended with a shorter-work preference."""

from __future__ import annotations

from _policy_cases import alloc_of, job, queued, running, state

from smdlab import Cluster, Machine
from smdlab.policies.ps.tetris import Tetris
from smdlab.policies.toolkit import apply_decision

TINY = {"bw_gbps": 0.01}


def _case(x_samples: float = 1e5):
    # One machine with 10 CPUs free but only 1 of 4 GPUs (3 held by a running job).
    cl = Cluster((Machine("m0", {"gpu": 4, "cpu": 16, "bw_gbps": 100}),), ("gpu", "cpu", "bw_gbps"))
    hog = running(job("hog", worker={"gpu": 3, "cpu": 6, "bw_gbps": 0.01}, ps=TINY), [(0, 1, 1)])
    # y arrives first and needs the scarce GPU; x needs the plentiful CPU. Only one of them fits.
    y = job(
        "y",
        arrival=0.0,
        worker={"gpu": 1, "cpu": 3, "bw_gbps": 0.01},
        ps=TINY,
        max_workers=1,
        max_ps=1,
    )
    x = job(
        "x",
        arrival=1.0,
        worker={"gpu": 0, "cpu": 8, "bw_gbps": 0.01},
        ps=TINY,
        max_workers=1,
        max_ps=1,
        samples=x_samples,
    )
    return state(cl, [queued(y), queued(x)], [hog])


def test_prefers_the_better_aligned_job():
    st = _case()
    for weight in (0.0, 1.0):  # pure alignment, and the default blend with equal remaining work
        d = Tetris(weight=weight).decide(st)
        assert alloc_of(d, "x") == (1, 1)
        assert alloc_of(d, "y") is None
        apply_decision(st, d)


def test_remaining_work_preference_can_outweigh_alignment():
    st = _case(x_samples=1e7)  # x now has 100x the remaining work of y
    assert alloc_of(Tetris(weight=0.0).decide(st), "x") == (1, 1)
    d = Tetris(weight=5.0).decide(st)
    assert alloc_of(d, "y") == (1, 1) and alloc_of(d, "x") is None
    apply_decision(st, d)


def test_fairness_knob_hands_the_bundle_to_the_job_furthest_below_its_share():
    # Two queued jobs on one empty machine: a, better aligned and shorter, would take every
    # bundle under pure packing (f = 0); with f -> 1 only the job of smallest share competes, so
    # the bundles alternate.
    cl = Cluster((Machine("m0", {"gpu": 4, "cpu": 16, "bw_gbps": 100}),), ("gpu", "cpu", "bw_gbps"))
    a = job("a", worker={"gpu": 1, "cpu": 4, "bw_gbps": 0.01}, ps=TINY, max_workers=4, max_ps=4)
    b = job(
        "b",
        arrival=1.0,
        worker={"gpu": 1, "cpu": 1, "bw_gbps": 0.01},
        ps=TINY,
        max_workers=4,
        max_ps=4,
        samples=1e7,
    )
    st = state(cl, [queued(a), queued(b)])
    packing = Tetris(fairness=0.0).decide(st)
    fair = Tetris(fairness=0.99).decide(st)
    assert alloc_of(packing, "a") == (4, 4) and alloc_of(packing, "b") is None
    assert alloc_of(fair, "a")[0] == 2 and alloc_of(fair, "b")[0] == 2
    for d in (packing, fair):
        apply_decision(st, d)


def test_paper_remaining_work_counts_resources_and_bad_options_raise():
    import pytest

    from smdlab import InvalidInput

    st = _case(x_samples=1e7)
    # x needs 100x the samples of y; the paper's remaining work also weighs the bundle's size
    d = Tetris(weight=5.0, fairness=0.0).decide(st)
    assert alloc_of(d, "y") == (1, 1) and alloc_of(d, "x") is None
    assert Tetris().fairness == Tetris.DEFAULT_FAIRNESS == 0.25
    with pytest.raises(InvalidInput, match="fairness"):
        Tetris(fairness=1.0)
    with pytest.raises(InvalidInput, match=r"Tetris: variant is a former option, removed in 0\.2"):
        Tetris(variant="smdlab")
