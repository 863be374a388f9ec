"""The event-driven simulator: conservation, capacity, determinism, validation, guards."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pandas as pd
import pytest

from smdlab import Cluster, Infeasible, Job, LayerProfile, Machine, speed
from smdlab.policies.base import Allocation, ClusterState, Decision, Placement, Policy
from smdlab.policies.ps.fifo import FIFO
from smdlab.policies.ps.srtf import SRTF
from smdlab.sim import CapacityExceeded, InvalidDecision, Stalled, simulate
from smdlab.solve.placement import capacity_matrix, first_fit, placement_usage
from smdlab.workloads import synthetic


def _profile(scale: float = 1.0) -> LayerProfile:
    f = np.full(3, 4e-5 * scale)
    return LayerProfile(["a", "b", "c"], f, 2 * f, np.full(3, 2e6))


def _job(
    name: str, arrival: float = 0.0, samples: float = 2e5, cap: int = 4, worker=None, **kw
) -> Job:
    return Job(
        name,
        _profile(),
        samples,
        128,
        worker or {"gpu": 1, "cpu": 2, "bw_gbps": 5},
        {"cpu": 2, "bw_gbps": 5},
        arrival=arrival,
        max_workers=cap,
        max_ps=cap,
        **kw,
    )


def _cluster(n: int = 2, gpu: float = 4) -> Cluster:
    c = {"gpu": gpu, "cpu": 32, "bw_gbps": 100}
    return Cluster(tuple(Machine(f"m{i}", dict(c)) for i in range(n)), tuple(c))


@pytest.fixture(scope="module")
def workload():
    cl = Cluster.homogeneous(4)
    return cl, synthetic(
        60, cl, load=1.5, seed=3, networks=["resnet50", "vgg16", "alexnet", "lstm_lm"]
    )


class Watching(Policy):
    """Wraps a policy; checks every state it is shown against the cluster's capacity."""

    def __init__(self, inner):
        self.inner, self.name, self.states = inner, inner.name, 0

    def reset(self) -> None:
        self.inner.reset()

    def decide(self, state: ClusterState) -> Decision:
        cap = capacity_matrix(state.cluster)
        held = sum(
            (
                placement_usage(r.job, r.placement, cap.shape[0], state.cluster.resources)
                for r in state.running
            ),
            np.zeros_like(cap),
        )
        assert np.all(state.free >= -1e-9)
        np.testing.assert_allclose(state.free, cap - held, atol=1e-9)
        assert not state.free.flags.writeable
        self.states += 1
        return self.inner.decide(state)


@pytest.mark.parametrize("policy", [FIFO, SRTF])
def test_conservation_and_capacity(workload, policy):
    cl, jobs = workload
    watcher = Watching(policy())
    res = simulate(jobs, cl, watcher)
    assert watcher.states > 0
    df = res.jobs.set_index("job")
    assert (df["status"] == "completed").all() and res.summary["jobs_completed"] == len(jobs)
    asked = pd.Series({j.name: j.samples for j in jobs})
    # Samples done, rebuilt from the allocation history (speed x time per segment), equal samples asked.
    drained = (
        (res.history["speed"] * (res.history["end"] - res.history["start"]))
        .groupby(res.history["job"])
        .sum()
    )
    np.testing.assert_allclose(drained[asked.index], asked, rtol=1e-9)
    np.testing.assert_allclose(df.loc[asked.index, "samples_done"], asked, rtol=1e-12)
    assert (df["finish"] >= df["start"]).all() and (df["start"] >= df["arrival"]).all()
    np.testing.assert_allclose(df["jct"], df["queueing_delay"] + df["run_time"])
    util = res.utilization[list(cl.resources)]
    assert (util.to_numpy() <= 1 + 1e-9).all() and (util.to_numpy() >= -1e-9).all()
    assert np.allclose(util.iloc[-1], 0) and res.utilization["time"].iloc[-1] == df["finish"].max()


def test_determinism(workload):
    cl, jobs = workload
    a, b = simulate(jobs, cl, "fifo"), simulate(jobs, cl, "fifo")
    pd.testing.assert_frame_equal(a.jobs, b.jobs)
    pd.testing.assert_frame_equal(a.history, b.history)
    cl2 = Cluster.homogeneous(4)
    again = synthetic(
        60, cl2, load=1.5, seed=3, networks=["resnet50", "vgg16", "alexnet", "lstm_lm"]
    )
    c = simulate(again, cl2, "fifo")
    pd.testing.assert_frame_equal(a.jobs, c.jobs)


def test_single_job_finishes_at_its_exact_duration():
    j = _job("solo", arrival=5.0, cap=3)
    res = simulate([j], _cluster(1), "fifo")
    row = res.jobs.iloc[0]
    assert (row["workers"], row["ps"]) == (3, 3)
    assert row["finish"] == pytest.approx(5.0 + j.samples / speed(j, 3, 3), rel=1e-12)
    assert res.summary["makespan"] == pytest.approx(row["jct"])


def test_fifo_serves_the_head_first():
    # One machine, 2 GPUs. 'long' takes both; 'big' (arrives first, needs 2 GPUs per worker)
    # then blocks 'short' even though 'short' would fit next to nothing else.
    cl = _cluster(1, gpu=2)
    jobs = [
        _job("long", 0.0, samples=4e5, cap=2),
        _job("big", 1.0, samples=1e5, cap=1, worker={"gpu": 2, "cpu": 2, "bw_gbps": 5}),
        _job("short", 2.0, samples=1e4, cap=1),
    ]
    fifo = simulate(jobs, cl, "fifo").jobs.set_index("job")
    assert fifo.loc["big", "start"] == pytest.approx(fifo.loc["long", "finish"])
    assert (
        fifo.loc["short", "start"] >= fifo.loc["big", "finish"] - 1e-9
    )  # no overtaking while big waits
    sjf = simulate(jobs, cl, "sjf").jobs.set_index("job")
    assert sjf.loc["short", "start"] == pytest.approx(sjf.loc["long", "finish"])  # shortest first
    assert sjf.loc["big", "start"] >= sjf.loc["short", "finish"] - 1e-9
    srtf = simulate(jobs, cl, "srtf").jobs.set_index("job")
    assert srtf.loc["short", "start"] == 2.0  # preempts 'long' at once: shorter remaining time
    assert srtf.loc["long", "preemptions"] >= 1


def test_fifo_decision_stops_at_first_unfit_and_fills_head_to_cap():
    cl = _cluster(1, gpu=3)
    from smdlab.policies.base import QueuedJob

    head = _job("head", cap=2)
    blocker = _job("blocker", 1.0, cap=1, worker={"gpu": 2, "cpu": 2, "bw_gbps": 5})
    small = _job("small", 2.0, cap=1)
    free = capacity_matrix(cl)
    free.setflags(write=False)
    state = ClusterState(
        3.0, cl, tuple(QueuedJob(j, j.samples) for j in (head, blocker, small)), (), free
    )
    d = FIFO().decide(state)
    assert [(a.job, a.workers, a.ps) for a in d.allocations] == [("head", 2, 2)]


class Scripted(Policy):
    """Returns one prepared decision at the first call, then nothing."""

    name = "scripted"

    def __init__(self, make):
        self.make, self.calls = make, 0

    def decide(self, state):
        self.calls += 1
        return self.make(state) if self.calls == 1 else Decision()


def _alloc(state, name, w, p, tasks=None):
    job = next(q.job for q in state.queued if q.job.name == name)
    pl = (
        Placement(tuple(tasks))
        if tasks is not None
        else first_fit(job, w, p, np.array(state.free), state.cluster.resources)
    )
    return Allocation(name, w, p, pl)


@pytest.mark.parametrize(
    "make, error, text",
    [
        (
            lambda s: Decision((Allocation("ghost", 1, 1, Placement(((0, 1, 1),))),)),
            InvalidDecision,
            "unknown",
        ),
        (
            lambda s: Decision((_alloc(s, "a", 1, 1, [(0, 1, 1)]),) * 2),
            InvalidDecision,
            "two allocations",
        ),
        (
            lambda s: Decision((_alloc(s, "a", 5, 1, [(0, 5, 1)]),)),
            InvalidDecision,
            "workers must be an integer in [1, 4]",
        ),
        (
            lambda s: Decision((_alloc(s, "a", 2, 1, [(0, 1, 1)]),)),
            InvalidDecision,
            "placement holds 1 workers",
        ),
        (
            lambda s: Decision((_alloc(s, "a", 1, 1, [(7, 1, 1)]),)),
            InvalidDecision,
            "machine index",
        ),
        (lambda s: Decision((), ("a",)), InvalidDecision, "not running"),
        (
            lambda s: Decision(
                (_alloc(s, "a", 4, 4, [(0, 4, 4)]), _alloc(s, "b", 1, 1, [(0, 1, 1)]))
            ),
            CapacityExceeded,
            "capacity of gpu",
        ),
        (lambda s: "nothing", InvalidDecision, "must return a Decision"),
    ],
)
def test_bad_decisions_are_rejected(make, error, text):
    jobs = [_job("a"), _job("b")]
    with pytest.raises(error) as info:
        simulate(jobs, _cluster(1), Scripted(make), execution="preemptive")
    assert text in str(info.value)


def test_resizing_needs_elastic():
    jobs = [_job("a", cap=2), _job("b", 0.5, cap=1)]
    with pytest.raises(InvalidDecision, match="elastic"):
        simulate(jobs, _cluster(1), _ResizeLater())


class _ResizeLater(Policy):
    """Starts 'a' at (1, 1), then at the next point tries to resize it (needs elastic)."""

    name = "resize-later"

    def decide(self, state):
        if any(q.job.name == "a" for q in state.queued):
            return Decision((_alloc(state, "a", 1, 1),))
        running = {r.job.name: r for r in state.running}
        if "a" in running and running["a"].workers == 1:
            r = running["a"]
            free = np.array(state.free) + placement_usage(
                r.job, r.placement, state.free.shape[0], state.cluster.resources
            )
            return Decision(
                (Allocation("a", 2, 2, first_fit(r.job, 2, 2, free, state.cluster.resources)),)
            )
        return FIFO().decide(state)


def test_elastic_resize_and_preemption_conserve_work():
    jobs = [_job("a", cap=2), _job("b", 0.5, cap=1)]
    res = simulate(jobs, _cluster(1), _ResizeLater(), execution="elastic", restart_s=0)
    a = res.jobs.set_index("job").loc["a"]
    assert a["resizes"] == 1 and a["status"] == "completed"
    hist = res.history[res.history["job"] == "a"]
    assert list(hist["workers"]) == [1, 2]
    assert hist["samples"].sum() == pytest.approx(jobs[0].samples, rel=1e-12)

    class PreemptOnce(Policy):
        name = "preempt-once"

        def __init__(self):
            self.done = False

        def decide(self, state):
            if not self.done and state.running and state.queued:
                self.done = True  # swap: the running job back to the queue, the waiting one in
                r, q = state.running[0], state.queued[0]
                free = np.array(state.free) + placement_usage(
                    r.job, r.placement, 1, state.cluster.resources
                )
                pl = first_fit(q.job, 4, 4, free, state.cluster.resources)
                return Decision((Allocation(q.job.name, 4, 4, pl),), (r.job.name,))
            return FIFO().decide(state)

    res = simulate(
        [_job("x", cap=4), _job("y", 1.0, cap=4)],
        _cluster(1),
        PreemptOnce(),
        execution="preemptive",
    )
    df = res.jobs.set_index("job")
    assert df["preemptions"].sum() == 1 and (df["status"] == "completed").all()
    done = res.history.groupby("job")["samples"].sum()
    assert done["x"] == pytest.approx(2e5) and done["y"] == pytest.approx(2e5)


def test_policy_that_never_starts_anything_raises_instead_of_hanging():
    class Idle(Policy):
        name = "idle"

        def decide(self, state):
            return Decision()

    with pytest.raises(Stalled, match="idle"):
        simulate([_job("a"), _job("b", 3.0)], _cluster(1), Idle())
    with pytest.raises(Stalled):
        simulate([_job("a")], _cluster(1), Idle(), slot_s=10.0)


def test_periodic_decision_points():
    res = simulate(
        [_job("a", samples=5e6, cap=1), _job("b", 1.0, samples=5e6, cap=1)],
        _cluster(1, gpu=1),
        "fifo",
        slot_s=100.0,
    )
    times = res.decisions["time"].to_numpy()
    ticks = times[(times > 1.0) & (times < res.jobs["finish"].max())]
    ticks = ticks[np.isin(ticks, res.jobs[["arrival", "finish"]].to_numpy().ravel(), invert=True)]
    assert ticks.size > 0
    np.testing.assert_allclose(ticks / 100.0, np.round(ticks / 100.0), atol=1e-9)


def test_unfit_jobs_are_skipped_or_raise():
    huge = _job("huge", worker={"gpu": 16, "cpu": 1, "bw_gbps": 1})
    jobs = [_job("a"), huge]
    with pytest.warns(UserWarning, match="huge"):
        res = simulate(jobs, _cluster(2), "fifo")
    assert res.skipped == ("huge",)
    assert res.summary["jobs_skipped"] == 1 and res.summary["jobs_completed"] == 1
    assert res.jobs.set_index("job").loc["huge", "status"] == "skipped"
    with pytest.raises(Infeasible, match="huge"):
        simulate(jobs, _cluster(2), "fifo", unfit="raise")


def test_summary_metrics_match_the_job_table(workload):
    cl, jobs = workload
    res = simulate(jobs, cl, "srtf")
    s, df = res.summary, res.jobs
    assert s["mean_jct"] == pytest.approx(df["jct"].mean())
    assert s["p95_jct"] == pytest.approx(np.percentile(df["jct"], 95))
    assert s["makespan"] == pytest.approx(df["finish"].max() - df["arrival"].min())
    assert s["decisions"] == len(res.decisions) and s["scheduler_time_s"] >= 0
    # Mean utilisation equals held resource-time over capacity x makespan, from the history.
    # Each job's own per-task demands (they differ by network).
    by_name = {j.name: j for j in jobs}
    h = res.history
    wv = np.stack([cl.vector(by_name[n].worker_demand) for n in h["job"]])
    pv = np.stack([cl.vector(by_name[n].ps_demand) for n in h["job"]])
    held = (
        (h["end"] - h["start"]).to_numpy()[:, None]
        * (h["workers"].to_numpy()[:, None] * wv + h["ps"].to_numpy()[:, None] * pv)
    ).sum(0)
    expect = held / (cl.capacity_vector * s["makespan"])
    np.testing.assert_allclose([s["utilization"][r] for r in cl.resources], expect, rtol=1e-9)


def test_pooled_cluster_and_input_validation():
    pooled = Cluster.pooled(("gpu", "cpu", "bw_gbps"), gpu=4, cpu=32, bw_gbps=100)
    res = simulate([_job("a"), _job("b", 1.0)], pooled, "fifo")
    assert res.summary["jobs_completed"] == 2
    from smdlab import InvalidInput

    with pytest.raises(InvalidInput, match="at least one job"):
        simulate([], pooled, "fifo")
    with pytest.raises(InvalidInput, match="unique"):
        simulate([_job("a"), _job("a")], pooled, "fifo")
    with pytest.raises(InvalidInput, match="policy must be one of"):
        simulate([_job("a")], pooled, "no-such-policy")
    with pytest.raises(InvalidInput, match="mode"):
        simulate([_job("a")], pooled, "fifo", mode="warp")
    with pytest.raises(InvalidInput, match="slot_s must be > 0"):
        simulate([_job("a")], pooled, "fifo", slot_s=-1)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert math.isfinite(simulate([_job("a")], pooled, "fifo").summary["mean_jct"])


def test_placement_listing_a_machine_twice_is_charged_and_released_in_full():
    res = simulate([_job("a", cap=2), _job("b", 1.0, cap=4)], _cluster(1), _Split())
    assert res.summary["jobs_completed"] == 2
    b = res.jobs.set_index("job").loc["b"]
    assert (b["workers"], b["ps"]) == (2, 2)  # 'a' holds 2 of the 4 GPUs while 'b' starts
    assert (res.utilization.iloc[-1][["gpu", "cpu", "bw_gbps"]] == 0).all()  # everything given back


class _Split(Policy):
    """Starts 'a' with its tasks listed per machine twice, then FIFO."""

    name = "split"

    def decide(self, state):
        if any(q.job.name == "a" for q in state.queued):
            return Decision((Allocation("a", 2, 2, Placement(((0, 1, 1), (0, 1, 1)))),))
        return FIFO().decide(state)


def test_utilization_records_queue_growth():
    # Two jobs need the whole cluster each: the second waits while usage stays put.
    from smdlab import Cluster, Job, LayerProfile
    from smdlab.sim import simulate

    prof = LayerProfile(["a"], [1e-4], [2e-4], [1e6])
    cluster = Cluster.homogeneous(1, gpu=1, cpu=8, mem_gb=64, bw_gbps=100)
    jobs = [
        Job(
            f"j{i}",
            prof,
            1e5,
            32,
            {"gpu": 1, "bw_gbps": 10},
            {"bw_gbps": 10},
            arrival=float(i),
            max_workers=1,
            max_ps=1,
        )
        for i in range(2)
    ]
    util = simulate(jobs, cluster, "fifo").utilization
    assert util["queued"].max() == 1
    assert util.loc[util.time == 1.0, "queued"].iloc[-1] == 1
