"""Execution modes (natural per policy, or forced), slots, and the checkpoint-restart cost."""

from __future__ import annotations

import json
import math
import sys

import numpy as np
import pytest

from smdlab import Cluster, InvalidInput, Job, LayerProfile, Machine, speed
from smdlab.cli import main
from smdlab.policies.base import (
    DEFAULT_RESTART_S,
    DEFAULT_SLOT_S,
    EXECUTIONS,
    Allocation,
    ClusterState,
    Decision,
    Policy,
    natural_execution,
    supported_executions,
)
from smdlab.policies.ps.fifo import FIFO
from smdlab.policies.registry import get_policy, list_policies, policy_class
from smdlab.sim import simulate
from smdlab.solve.placement import first_fit, placement_usage

NATURAL = {
    "smd": "elastic",
    "milp": "elastic",
    "optimus": "elastic",
    "drf": "elastic",
    "fifo": "non_elastic",
    "srtf": "preemptive",
    "sjf": "non_elastic",
    "tetris": "non_elastic",
    "tiresias": "preemptive",
}


def _profile() -> LayerProfile:
    f = np.full(3, 4e-5)
    return LayerProfile(["a", "b", "c"], f, 2 * f, np.full(3, 2e6))


def _job(name: str, arrival: float = 0.0, samples: float = 2e5, cap: int = 4) -> Job:
    return Job(
        name,
        _profile(),
        samples,
        128,
        {"gpu": 1, "cpu": 2, "bw_gbps": 5},
        {"cpu": 2, "bw_gbps": 5},
        arrival=arrival,
        max_workers=cap,
        max_ps=cap,
    )


def _cluster(n: int = 1, gpu: float = 4) -> Cluster:
    c = {"gpu": gpu, "cpu": 32, "bw_gbps": 100}
    return Cluster(tuple(Machine(f"m{i}", dict(c)) for i in range(n)), tuple(c))


def test_every_policy_declares_its_natural_mode():
    for name in list_policies():
        cls = policy_class(name)
        mode = natural_execution(cls)
        assert mode == NATURAL.get(name, mode), name
        assert getattr(cls, "execution", None) == mode, f"{name} declares no execution mode"
        assert mode in supported_executions(cls)
        doc = (cls.__doc__ or "") + (sys.modules[cls.__module__].__doc__ or "")
        words = {"non_elastic": ("non_elastic", "non-elastic", "non-preemptive")}.get(mode, (mode,))
        assert any(w in doc for w in words), name  # the docstring says which mode
    assert policy_class("smd").slot_s == DEFAULT_SLOT_S == 1200.0


@pytest.mark.parametrize("name", ["fifo", "srtf", "tetris", "drf", "optimus", "tiresias"])
def test_simulate_runs_each_policy_in_its_natural_mode(name):
    jobs = [_job(f"j{i}", arrival=10.0 * i, cap=2) for i in range(4)]
    res = simulate(jobs, _cluster(), name)
    assert res.summary["execution"] == NATURAL[name]
    assert res.summary["jobs_completed"] == 4
    slot = res.summary["slot_s"]
    if NATURAL[name] == "elastic":
        assert slot == get_policy(name).slot_s  # the policy's own slot
    else:
        assert math.isnan(slot)
    assert res.summary["restart_s"] == DEFAULT_RESTART_S


class _Seeing(Policy):
    """FIFO that records what execution mode, slot and restart cost each state shows."""

    name = "seeing"

    def __init__(self):
        self.seen = set()

    def decide(self, state: ClusterState) -> Decision:
        self.seen.add((state.execution, state.slot_s, state.restart_s))
        return FIFO().decide(state)


def test_the_policy_sees_the_mode_and_one_switch_forces_it():
    jobs = [_job("a"), _job("b", 5.0)]
    for execution in EXECUTIONS:
        pol = _Seeing()
        res = simulate(jobs, _cluster(), pol, execution=execution, restart_s=12.0)
        slot = DEFAULT_SLOT_S if execution == "elastic" else None
        assert pol.seen == {(execution, slot, 12.0)}
        assert res.summary["execution"] == execution
    assert simulate(jobs, _cluster(), "smd", execution="non_elastic").summary["slot_s"] != 1200.0


@pytest.mark.parametrize(
    "kwargs, text",
    [
        ({"slot_s": 0}, "slot_s must be > 0"),
        ({"slot_s": -5}, "slot_s must be > 0"),
        ({"slot_s": math.inf}, "slot_s must be > 0 and finite"),
        ({"restart_s": -1}, "restart_s must be >= 0"),
        ({"restart_s": math.nan}, "restart_s must be >= 0"),
        ({"execution": "sometimes"}, "execution must be one of"),
        ({"execution": "preemptive", "policy": "fifo"}, "cannot run in mode 'preemptive'"),
        ({"execution": "elastic", "policy": "tiresias"}, "cannot run in mode 'elastic'"),
        # former names (removed in 0.2) name their replacement
        (
            {"elastic": True},
            r"simulate: elastic is a former option, removed in 0\.2; use execution=",
        ),
        ({"delta": 10}, r"simulate: delta is a former option, removed in 0\.2; use slot_s"),
    ],
)
def test_bad_execution_settings_are_one_clear_line(kwargs, text):
    policy = kwargs.pop("policy", "smd")
    with pytest.raises(InvalidInput, match=text) as info:
        simulate([_job("a")], _cluster(), policy, **kwargs)
    assert "\n" not in str(info.value)


class _GrowOnce(Policy):
    """Starts 'a' at (1, 1); at the next decision point grows it to (2, 2) (needs elastic)."""

    name = "grow-once"
    execution = "elastic"
    executions = ("elastic",)
    slot_s = 50.0

    def decide(self, state):
        running = {r.job.name: r for r in state.running}
        if any(q.job.name == "a" for q in state.queued):
            pl = first_fit(state.queued[0].job, 1, 1, state.free, state.cluster.resources)
            return Decision((Allocation("a", 1, 1, pl),))
        r = running.get("a")
        if r is not None and r.workers == 1:
            free = np.array(state.free) + placement_usage(
                r.job, r.placement, state.free.shape[0], state.cluster.resources
            )
            pl = first_fit(r.job, 2, 2, free, state.cluster.resources)
            return Decision((Allocation("a", 2, 2, pl),))
        if r is not None:  # the same allocation again: changes nothing, costs nothing
            return Decision((Allocation("a", r.workers, r.ps, r.placement),))
        return Decision()


def _finish_a(restart_s: float) -> tuple[float, object]:
    res = simulate([_job("a", samples=2e6)], _cluster(), _GrowOnce(), restart_s=restart_s)
    return float(res.jobs.set_index("job").loc["a", "finish"]), res


@pytest.mark.parametrize("restart_s", [0.0, DEFAULT_RESTART_S])
def test_a_resized_job_pauses_for_restart_s(restart_s):
    job = _job("a", samples=2e6)
    s11, s22 = speed(job, 1, 1), speed(job, 2, 2)
    finish, res = _finish_a(restart_s)
    # 50 s at (1, 1), then restart_s without progress, then the rest at (2, 2)
    expected = 50.0 + restart_s + (job.samples - 50.0 * s11) / s22
    assert finish == pytest.approx(expected, rel=1e-9)
    row = res.jobs.set_index("job").loc["a"]
    assert row["resizes"] == 1 and row["restarts"] == 1
    assert res.summary["restarts"] == 1 and res.summary["restart_s"] == restart_s
    assert row["samples_done"] == pytest.approx(job.samples, rel=1e-12)
    pauses = res.history[(res.history["speed"] == 0.0)]
    if restart_s:
        assert len(pauses) == 1
        assert pauses["end"].iloc[0] - pauses["start"].iloc[0] == pytest.approx(restart_s)
        assert pauses["workers"].iloc[0] == 2 and pauses["samples"].iloc[0] == 0.0
    else:
        assert pauses.empty


class _SwapOnce(Policy):
    """Preempts the running job once for the waiting one; FIFO otherwise."""

    name = "swap-once"
    execution = "preemptive"

    def __init__(self):
        self.done = False

    def decide(self, state):
        if not self.done and state.running and state.queued:
            self.done = True
            r, q = state.running[0], state.queued[0]
            free = np.array(state.free) + placement_usage(
                r.job, r.placement, 1, state.cluster.resources
            )
            pl = first_fit(q.job, 4, 4, free, state.cluster.resources)
            return Decision((Allocation(q.job.name, 4, 4, pl),), (r.job.name,))
        return FIFO().decide(state)


@pytest.mark.parametrize("restart_s", [0.0, DEFAULT_RESTART_S])
def test_a_resumed_job_pauses_for_restart_s_and_counts_one_restart(restart_s):
    jobs = [_job("x", cap=4), _job("y", 1.0, cap=4)]
    base = simulate(jobs, _cluster(), _SwapOnce(), restart_s=0.0).jobs.set_index("job")
    res = simulate(jobs, _cluster(), _SwapOnce(), restart_s=restart_s)
    df = res.jobs.set_index("job")
    assert res.summary["execution"] == "preemptive"
    assert df.loc["x", "preemptions"] == 1 and df.loc["x", "restarts"] == 1
    assert df.loc["y", "restarts"] == 0  # a first start is not a restart
    assert df.loc["x", "finish"] == pytest.approx(base.loc["x", "finish"] + restart_s, rel=1e-9)
    assert df.loc["y", "finish"] == pytest.approx(base.loc["y", "finish"], rel=1e-12)
    assert np.allclose(df["samples_done"], df["samples"], rtol=1e-12)


def test_non_elastic_execution_forbids_preemption():
    jobs = [_job("x", cap=4), _job("y", 1.0, cap=4)]
    with pytest.raises(InvalidInput, match="execution is 'non_elastic'"):
        simulate(jobs, _cluster(), _SwapOnce(), execution="non_elastic")


def test_cli_execution_switches_and_errors(capfd):
    small = ["--jobs", "6", "--machines", "2"]
    assert main(["simulate", *small, "--policy", "fifo,drf", "--json"]) == 0
    data = json.loads(capfd.readouterr()[0])
    assert data["fifo"]["execution"] == "non_elastic" and data["drf"]["execution"] == "elastic"
    assert data["drf"]["slot_s"] == DEFAULT_SLOT_S and "restarts" in data["drf"]
    assert (
        main(["simulate", *small, "--policy", "drf", "--execution", "non_elastic", "--json"]) == 0
    )
    assert json.loads(capfd.readouterr()[0])["drf"]["execution"] == "non_elastic"
    for bad, text in (
        (["--execution", "sometimes"], "execution must be one of"),
        (["--slot-s", "0"], "slot_s must be > 0"),
        (["--restart-s", "-1"], "restart_s must be >= 0"),
        (["--execution", "elastic", "--policy", "fifo"], "cannot run in mode 'elastic'"),
    ):
        assert main(["simulate", *small, *bad]) == 2, bad
        err = capfd.readouterr()[1]
        assert text in err and err.count("\n") == 1 and "Traceback" not in err
