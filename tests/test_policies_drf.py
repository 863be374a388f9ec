"""DRF: progressive filling by bundles equalises dominant shares (docs/simulator.md, Policies)."""

from __future__ import annotations

import numpy as np
from _policy_cases import alloc_of, cluster, job, queued, running, state

from smdlab import Cluster, Machine
from smdlab.policies.ps.drf import DRF
from smdlab.policies.ps.fifo import FIFO
from smdlab.policies.toolkit import apply_decision

TINY = {"bw_gbps": 1e-3}  # a PS that costs (almost) nothing: bundles behave like single tasks


def test_ghodsi_example_equalises_dominant_shares():
    # The DRF paper's example: 9 CPUs, 18 GB; A's tasks need <1 CPU, 4 GB>, B's <3 CPU, 1 GB>.
    cl = Cluster(
        (Machine("m0", {"cpu": 9, "mem_gb": 18, "bw_gbps": 100}),), ("cpu", "mem_gb", "bw_gbps")
    )
    a = job(
        "A", worker={"cpu": 1, "mem_gb": 4, "bw_gbps": 1e-3}, ps=TINY, max_workers=20, max_ps=20
    )
    b = job(
        "B",
        arrival=1.0,
        worker={"cpu": 3, "mem_gb": 1, "bw_gbps": 1e-3},
        ps=TINY,
        max_workers=20,
        max_ps=20,
    )
    st = state(cl, [queued(a), queued(b)])
    d = DRF().decide(st)
    assert alloc_of(d, "A") == (3, 3)
    assert alloc_of(d, "B") == (2, 2)
    # both dominant shares are 2/3: A's memory 12/18, B's CPU 6/9
    assert np.isclose(3 * 4 / 18, 2 / 3) and np.isclose(2 * 3 / 9, 2 / 3)
    apply_decision(st, d)


def test_identical_jobs_get_equal_shares_where_fifo_serves_the_head():
    cl = cluster(2)  # 8 GPUs
    jobs = [job(f"j{i}", arrival=float(i)) for i in range(3)]
    st = state(cl, [queued(j) for j in jobs])
    d = DRF().decide(st)
    got = [alloc_of(d, j.name)[0] for j in jobs]
    assert max(got) - min(got) <= 1 and sum(got) == 8  # 3/3/2: fair up to one bundle, all GPUs used
    assert got == [3, 3, 2]  # the odd bundle goes to the earlier arrivals (ties by arrival)
    fifo = FIFO().decide(st)
    assert alloc_of(fifo, "j0")[0] == 8  # FIFO gives the head everything it can take
    apply_decision(st, d)


def test_running_jobs_keep_their_allocation_unless_elastic():
    cl = cluster(1)
    r = running(job("r"), [(0, 1, 1)])
    q = job("q", arrival=1.0)
    d = DRF().decide(state(cl, [queued(q)], [r]))
    assert alloc_of(d, "r") is None and alloc_of(d, "q") == (3, 3)
    st = state(cl, [queued(q)], [r], execution="elastic")
    d = DRF().decide(st)
    # elastic: the filling continues from r's share, so q catches up first and both end at 2
    assert alloc_of(d, "r") == (2, 2) and alloc_of(d, "q") == (2, 2)
    assert d.preempt == ()
    apply_decision(st, d)


def _fragmented():
    # Two machines of 4 GPUs and 10 CPUs. A's bundle needs 7 CPUs on one machine, B's 1.5.
    cl = cluster(2, gpu=4, cpu=10, bw_gbps=100)
    a = job("A", worker={"gpu": 1, "cpu": 1, "bw_gbps": 0.1}, ps={"cpu": 6, "bw_gbps": 0.1})
    b = job(
        "B",
        arrival=1.0,
        worker={"gpu": 1, "cpu": 1, "bw_gbps": 0.1},
        ps={"cpu": 0.5, "bw_gbps": 0.1},
    )
    return state(cl, [queued(a), queued(b)])


def test_paper_stops_at_the_first_misfit():
    st = _fragmented()
    paper = DRF().decide(st)
    # A (share 0.35) is next after B's third bundle (0.375 > 0.35), and its 7-CPU bundle fits on
    # no machine: Algorithm 1 returns there, although B's next bundle would still fit.
    assert alloc_of(paper, "A") == (1, 1) and alloc_of(paper, "B") == (3, 3)
    apply_decision(st, paper)


def test_paper_bundles_are_co_located_on_the_least_loaded_machine():
    st = _fragmented()
    d = DRF().decide(st)
    for a in d.allocations:
        assert all(w == p for _, w, p in a.placement.tasks)  # worker and PS of a bundle together
    # A's bundle went to machine 0 (both empty: ties by index), B's first to the emptier machine 1
    placement = {a.job: a.placement.tasks for a in d.allocations}
    assert placement["A"] == ((0, 1, 1),) and placement["B"][0][0] == 1


def test_paper_elastic_refills_from_zero_every_slot():
    cl = cluster(1)  # 4 GPUs
    r = running(job("r"), [(0, 3, 3)])
    q = job("q", arrival=1.0)
    st = state(cl, [queued(q)], [r], execution="elastic")
    d = DRF().decide(st)  # both start from zero: 2 and 2
    assert alloc_of(d, "r") == (2, 2) and alloc_of(d, "q") == (2, 2)
    apply_decision(st, d)
    # an unchanged allocation on the same machines is left alone (no restart)
    st2 = state(cl, [], [running(job("r"), [(0, 4, 4)])], execution="elastic")
    assert DRF().decide(st2).allocations == ()
