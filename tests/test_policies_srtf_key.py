"""SRTF's rank: exact remaining time (default) or DL2's remaining fraction of the work (docs/baselines.md)."""

from __future__ import annotations

import pytest
from _policy_cases import alloc_of, cluster, job, queued, state

from smdlab import InvalidInput
from smdlab.policies.ps.srtf import SJF, SRTF
from smdlab.policies.toolkit import apply_decision


def _case():
    # One machine with room for one job's single bundle (4 GPUs, each job needs 4 per worker).
    cl = cluster(1, gpu=4)
    w = {"gpu": 4, "cpu": 2, "bw_gbps": 5}
    long_first = job("long", samples=1e7, worker=w, max_workers=1, max_ps=1)
    short_later = job("short", arrival=1.0, samples=1e4, worker=w, max_workers=1, max_ps=1)
    half_done = job("half", arrival=2.0, samples=1e7, worker=w, max_workers=1, max_ps=1)
    return cl, long_first, short_later, half_done


def test_remaining_time_runs_the_shortest_and_progress_runs_the_earliest_of_new_jobs():
    cl, a, b, _ = _case()
    st = state(cl, [queued(a), queued(b)])
    d = SRTF().decide(st)
    assert alloc_of(d, "short") == (1, 1) and alloc_of(d, "long") is None
    d = SRTF(key="progress").decide(st)  # new jobs tie at 1 - 0/epochs = 1: arrival order
    assert alloc_of(d, "long") == (1, 1) and alloc_of(d, "short") is None
    apply_decision(st, d)


def test_progress_ranks_by_the_remaining_fraction():
    cl, a, b, c = _case()
    st = state(cl, [queued(a), queued(b), queued(c, remaining=0.4e7)])
    assert alloc_of(SRTF(key="progress").decide(st), "half") == (1, 1)  # 0.4 < 1 < 1
    assert alloc_of(SJF(key="progress").decide(st), "half") == (1, 1)
    with pytest.raises(InvalidInput, match="key"):
        SRTF(key="epochs")
