"""SMD and MILP policies: their allocations are solve()'s on the remaining work and the free capacity."""

from __future__ import annotations

import numpy as np
import pytest
from _policy_cases import alloc_of, cluster, job, queued, running, state

from smdlab import Cluster, InvalidInput
from smdlab.policies.ps.milp import MILP
from smdlab.policies.ps.smd import SMD
from smdlab.policies.toolkit import apply_decision, with_remaining
from smdlab.solve import solve
from smdlab.solve.instance import task_vectors
from smdlab.solve.placement import usage


def _case(elastic: bool = False):
    cl = cluster(2)  # 8 GPUs
    r = running(job("r", max_workers=4, max_ps=4), [(0, 2, 1)], remaining=4e4)
    qs = [
        queued(job("a", arrival=1.0, samples=2e5, max_workers=4, max_ps=4)),
        queued(job("b", arrival=2.0, samples=5e4, max_workers=4, max_ps=4)),
        queued(
            job("c", arrival=3.0, samples=3e5, max_workers=4, max_ps=4), remaining=1e5
        ),  # preempted earlier
    ]
    return state(cl, qs, [r], time=10.0, execution="elastic" if elastic else "non_elastic")


@pytest.mark.parametrize("policy, method", [(SMD(), "smd"), (MILP(), "milp")])
def test_allocation_equals_solve_on_queued_jobs_and_free_capacity(policy, method):
    st = _case()
    d = policy.decide(st)
    jobs = [with_remaining(q) for q in st.queued]
    assert [j.samples for j in jobs] == [2e5, 5e4, 1e5]
    sol = solve(
        jobs,
        st.cluster,
        method,
        free=np.asarray(st.free),
        **({"bound": False} if method == "smd" else {}),
    )
    for name, w, p, pl in zip(sol.jobs, sol.workers, sol.ps, sol.placement.placements):
        if w == 0:
            assert alloc_of(d, name) is None
        else:
            assert alloc_of(d, name) == (w, p)
            (a,) = [a for a in d.allocations if a.job == name]
            assert a.placement.tasks == tuple(pl.tasks)
    assert d.preempt == ()
    apply_decision(st, d)


def test_elastic_resolves_running_and_queued_jobs():
    st = _case(elastic=True)
    d = SMD().decide(st)
    apply_decision(st, d)
    r = st.running[0]
    jobs = [with_remaining(r), *(with_remaining(q) for q in st.queued)]
    free_all = np.asarray(st.free) + usage(
        r.placement.tasks, *task_vectors(r.job, st.cluster.resources), 2
    )
    sol = solve(jobs, st.cluster, "smd", free=free_all, place=False, bound=False)
    assert sol.shrink_steps == 0
    final = {"r": (r.workers, r.ps)} | {a.job: (a.workers, a.ps) for a in d.allocations}
    for name in d.preempt:
        final.pop(name)
    assert final == {n: (w, p) for n, w, p in zip(sol.jobs, sol.workers, sol.ps) if w > 0}


def test_pooled_cluster_is_one_virtual_machine():
    cl = Cluster.pooled(("gpu", "cpu", "bw_gbps"), gpu=6, cpu=48, bw_gbps=200)
    free = np.array([[6.0, 48.0, 200.0]])
    from smdlab.policies.base import ClusterState

    st = ClusterState(0.0, cl, (queued(job("a")), queued(job("b", arrival=1.0))), (), free)
    d = SMD().decide(st)
    assert {a.job for a in d.allocations} == {"a", "b"}
    assert all(a.placement.machines == (0,) for a in d.allocations)
    assert sum(a.workers for a in d.allocations) <= 6
    apply_decision(st, d)


def test_unknown_option_raises():
    with pytest.raises(InvalidInput, match="option"):
        SMD(nonsense=1)
    with pytest.raises(InvalidInput, match="option"):
        MILP(knapsack="exact")  # an smd option, not a milp one
    assert SMD(knapsack="greedy").options == {"bound": False, "knapsack": "greedy"}


def test_remaining_work_as_work_equals_copied_jobs():
    st = _case(elastic=True)
    entries = [*st.running, *st.queued]
    free = np.asarray(st.free)
    copied = solve([with_remaining(e) for e in entries], st.cluster, "smd", free=free, bound=False)
    given = solve(
        [e.job for e in entries],
        st.cluster,
        "smd",
        free=free,
        bound=False,
        work=[e.remaining for e in entries],
    )
    assert [e.remaining for e in entries] != [e.job.samples for e in entries]
    assert (given.workers, given.ps, given.objective) == (
        copied.workers,
        copied.ps,
        copied.objective,
    )
    assert given.placement.placements == copied.placement.placements
    with pytest.raises(InvalidInput, match="work"):
        solve([e.job for e in entries], st.cluster, "smd", free=free, work=[1.0, 2.0])
    with pytest.raises(InvalidInput, match="work"):
        solve([e.job for e in entries], st.cluster, "smd", free=free, work=[1.0, 0.0, 1.0, 1.0])
