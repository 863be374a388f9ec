"""Tiresias: 2D-LAS queues, demotion after the threshold, preemption, FIFO within a queue, starvation guard."""

from __future__ import annotations

import pytest
from _policy_cases import alloc_of, cluster, job, queued, running, state

from smdlab import InvalidInput
from smdlab.policies.ps.tiresias import Tiresias
from smdlab.policies.toolkit import apply_decision


def test_demotes_after_threshold():
    t = Tiresias(thresholds=(3600.0, 36000.0))
    assert [t.queue_of("j", s) for s in (0.0, 3599.0, 3600.0, 20000.0, 40000.0)] == [0, 0, 1, 1, 2]


def _contended(attained: float, time: float = 10_000.0):
    cl = cluster(1)  # 4 GPUs
    old = job("old", max_workers=4, max_ps=2)
    new = job("new", arrival=time, max_workers=4, max_ps=2)
    return state(
        cl,
        [queued(new)],
        [running(old, [(0, 4, 2)], attained=attained)],
        time=time,
        execution="preemptive",
    )


def test_higher_queue_preempts_lower():
    st = _contended(attained=4 * 1000.0)  # 4 GPUs for 1000 s: past the 3600 GPU-s threshold
    d = Tiresias().decide(st)
    assert d.preempt == ("old",)
    assert alloc_of(d, "new") == (4, 2)
    apply_decision(st, d)


def test_same_queue_does_not_preempt():
    st = _contended(attained=4 * 100.0)  # still in queue 0
    d = Tiresias().decide(st)
    assert d.preempt == () and d.allocations == ()
    d = Tiresias(preemption=False).decide(_contended(attained=4 * 1000.0))
    assert d.preempt == () and d.allocations == ()


def test_fifo_within_a_queue_and_gang_allocation():
    cl = cluster(1)
    a = job("a", arrival=5.0, max_workers=3, max_ps=4)
    b = job("b", arrival=2.0, max_workers=3, max_ps=4)
    st = state(cl, [queued(a), queued(b)], time=5.0)
    d = Tiresias().decide(st)
    # b arrived first; a's 3 GPUs no longer fit beside b's: a waits (no partial allocation)
    assert alloc_of(d, "b") == (3, 3) and alloc_of(d, "a") is None  # one PS per worker
    assert alloc_of(Tiresias(max_workers=2, ps_per_worker=0.5).decide(st), "a") == (2, 1)


def test_starvation_guard_promotes_and_then_preempts():
    cl = cluster(1)
    hog = job("hog", max_workers=4, max_ps=2)
    starved = job("starved", max_workers=4, max_ps=2)
    # both in queue 1; the starved job ran 1000 s on 4 GPUs, then waited since t = 1000
    r = running(hog, [(0, 4, 2)], attained=4 * 2000.0)
    q_short = queued(starved, attained=4 * 1000.0, since=1000.0)
    d = Tiresias(thresholds=(3600.0,), starve_multiple=8).decide(
        state(cl, [q_short], [r], time=1000.0 + 7000.0, execution="preemptive")
    )  # waited 7x its run time
    assert d.preempt == ()
    assert (
        Tiresias(thresholds=(3600.0,))
        .decide(state(cl, [q_short], [r], time=9000.0, execution="preemptive"))
        .preempt
        == ()
    )
    pol = Tiresias(thresholds=(3600.0,), starve_multiple=8)
    st = state(
        cl, [q_short], [r], time=1000.0 + 8000.0, execution="preemptive"
    )  # waited 8x: promoted to queue 0
    d = pol.decide(st)
    assert d.preempt == ("hog",) and alloc_of(d, "starved") == (4, 2)
    apply_decision(st, d)
    assert pol.queue_of("starved", 4 * 1000.0) == 0  # service counted from the promotion on
    pol.reset()
    assert pol.queue_of("starved", 4 * 1000.0) == 1


def test_request_shrinks_to_what_the_cluster_can_hold_and_bad_options_raise():
    cl = cluster(1)  # 4 GPUs
    big = job("big", max_workers=16, max_ps=16)
    assert Tiresias().request(big, cl) == (4, 4)
    with pytest.raises(InvalidInput, match="thresholds"):
        Tiresias(thresholds=(10.0, 5.0))
    with pytest.raises(InvalidInput, match="starve_multiple"):
        Tiresias(starve_multiple=0)


def test_request_follows_the_jobs_requested_workers():
    cl = cluster(2)  # 8 GPUs
    asked = job("asked", max_workers=8, max_ps=8, requested_workers=2)
    unset = job("unset", max_workers=8, max_ps=8)
    assert Tiresias().request(asked, cl) == (2, 2)  # the request, not the cap
    assert Tiresias().request(unset, cl) == (8, 8)  # no request: the cap
    assert Tiresias(max_workers=1).request(asked, cl) == (1, 1)  # the policy's cap still applies
    d = Tiresias().decide(state(cl, [queued(asked)]))
    assert alloc_of(d, "asked") == (2, 2)


def test_requested_workers_is_validated_and_set_by_the_workloads():
    with pytest.raises(
        InvalidInput, match=r"requested_workers must be an integer in \[1, 4\], got 5"
    ):
        job("j", max_workers=4, requested_workers=5)
    with pytest.raises(InvalidInput, match="requested_workers must be an integer"):
        job("j", requested_workers=1.5)
    from smdlab import Cluster
    from smdlab.workloads import load_philly, synthetic

    philly = load_philly(first=50, seed=1, cap_factor=2.0)
    for jobs in (philly, synthetic(40, Cluster.homogeneous(4), seed=2, cap_factor=2.0)):
        # the request (trace GPU count / reference allocation), not the cap of twice that
        assert all(j.max_workers == 2 * j.requested_workers for j in jobs)
        assert len({j.requested_workers for j in jobs}) > 1


def test_muri_demotion_checks_at_whole_seconds_run_and_bad_value_raises():
    """demotion="muri": the next check when the seconds run reach ceil(limit / GPUs)."""
    st = _contended(attained=0.0)
    exact = Tiresias(thresholds=(3250.0,)).decide(st)
    muri = Tiresias(thresholds=(3250.0,), demotion="muri").decide(st)
    assert exact.wake_at == pytest.approx(10_000.0 + 3250.0 / 4)
    assert muri.wake_at == pytest.approx(10_000.0 + 813.0)
    with pytest.raises(InvalidInput, match="demotion"):
        Tiresias(demotion="late")
