"""GPU sharing in the simulator: space-shared groups at the co-location model's rates."""

from __future__ import annotations

import math

import pytest

from smdlab import Cluster, make_job
from smdlab.errors import InvalidInput
from smdlab.model.colocation import gavel_job_type, shared_rate_factors
from smdlab.model.timing import speed
from smdlab.policies.base import Allocation, ClusterState, Decision, Placement, Policy
from smdlab.sim import simulate
from smdlab.sim.simulator import CapacityExceeded, InvalidDecision


class PairUp(Policy):
    """Start queued jobs two by two on machine 0, one worker and one PS each, sharing as told."""

    name = "pair_up"

    def __init__(self, sharing: str | None) -> None:
        self.sharing = sharing

    def decide(self, state: ClusterState) -> Decision:
        if state.running:
            return Decision()
        q = state.queued[:2]
        place = Placement(((0, 1, 1),))
        return Decision(
            tuple(Allocation(x.job.name, 1, 1, place, group="g", sharing=self.sharing) for x in q)
        )


def _jobs():
    return [
        make_job("a", "resnet50", 2e5, global_batch=32),
        make_job("b", "lstm_lm", 2e5, global_batch=20),
    ]


def test_default_degree_is_one_and_rejects_space_groups():
    with pytest.raises(InvalidDecision, match="sharing degree allows"):
        simulate(_jobs(), Cluster.homogeneous(1), PairUp("space"))


def test_space_sharing_runs_at_model_rates_and_reports_sharing():
    jobs = _jobs()
    solo = simulate(jobs[:1], Cluster.homogeneous(1), "fifo")
    res = simulate(jobs, Cluster.homogeneous(1), PairUp("space"), sharing_degree=2)
    f = shared_rate_factors([gavel_job_type(j) for j in jobs])
    assert f is not None and (f < 1).all()
    h = res.history[(res.history.job == "a") & (res.history.speed > 0)]
    solo_speed = speed(jobs[0], 1, 1, "wfbp")
    assert h.speed.iloc[0] == pytest.approx(solo_speed * f[0], rel=1e-9)
    t1, t2 = sorted(res.jobs.finish)  # both share until the first finishes, then one is alone
    assert res.summary["gpu_sharing"] == pytest.approx((2 * t1 + (t2 - t1)) / t2, rel=1e-9)
    assert solo.summary["gpu_sharing"] == pytest.approx(1.0)
    # utilisation counts the shared GPU once: never above 1
    assert (res.utilization["gpu"] <= 1 + 1e-12).all()


def test_time_slicing_costs_the_switch_overhead():
    jobs = _jobs()
    res = simulate(jobs, Cluster.homogeneous(1), PairUp("time"))
    h = res.history[(res.history.job == "a") & (res.history.speed > 0)]
    assert h.speed.iloc[0] < speed(jobs[0], 1, 1, "wfbp") / 2


def test_memory_check_and_bad_degree():
    big = [make_job(n, "resnet50", 1e5, global_batch=128) for n in ("x", "y")]
    assert shared_rate_factors([gavel_job_type(j) for j in big]) is None
    with pytest.raises(CapacityExceeded, match="do not fit"):
        simulate(big, Cluster.homogeneous(1), PairUp("space"), sharing_degree=2)
    with pytest.raises(InvalidInput, match="sharing_degree must be an integer in"):
        simulate(_jobs(), Cluster.homogeneous(1), "fifo", sharing_degree=0)


def test_no_sharing_summary_unchanged_otherwise():
    res = simulate(_jobs(), Cluster.homogeneous(2), "fifo")
    assert math.isclose(res.summary["gpu_sharing"], 1.0)


class JoinLater(Policy):
    """Start each job alone in a space group on machine 0; a later job joins the running group."""

    name = "join_later"

    def decide(self, state: ClusterState) -> Decision:
        place = Placement(((0, 1, 1),))
        host = next((r.group for r in state.running), None)
        out = []
        for q in state.queued:
            label = host if host is not None else "solo"
            out.append(Allocation(q.job.name, 1, 1, place, group=label, sharing="space"))
            host = "pending"  # one decision: one start, the rest wait for the next event
            break
        return Decision(tuple(out))


def test_a_later_job_joins_a_running_group():
    jobs = _jobs()
    jobs[1] = make_job("b", "lstm_lm", 2e5, global_batch=20, arrival=100.0)
    res = simulate(jobs, Cluster.homogeneous(1), JoinLater(), sharing_degree=2)
    f = shared_rate_factors([gavel_job_type(j) for j in jobs])
    assert f is not None
    h = res.history[(res.history.job == "a") & (res.history.speed > 0)].sort_values("start")
    s1 = speed(jobs[0], 1, 1, "wfbp")
    assert h.speed.iloc[0] == pytest.approx(s1)  # alone until b arrives
    assert h.start.iloc[1] == pytest.approx(100.0)
    assert h.speed.iloc[1] == pytest.approx(s1 * f[0], rel=1e-9)  # then at the shared rate
    assert (res.utilization["gpu"] <= 1 + 1e-12).all()
    assert res.jobs.status.eq("completed").all()
