"""The policy contract: settings with defaults (policy_settings), Literal choices, state sequences
that concatenate and slice, assemble() for preemptive policies, one name per policy."""

from __future__ import annotations

import typing

import pytest
from _policy_cases import cluster, job, queued, running, state

import smdlab
from smdlab.errors import InvalidInput
from smdlab.policies import Decision, Policy
from smdlab.policies.base import (
    EXECUTIONS,
    SHARING_KINDS,
    Execution,
    LazySeq,
    PolicySettings,
    SharingKind,
    policy_settings,
)
from smdlab.policies.registry import _EXTRA, get_policy, register_policy
from smdlab.policies.toolkit import Target, admit_bundles, assemble, queued_jobs
from smdlab.sim.runner import run_policies


def test_choices_derive_from_the_literals():
    assert EXECUTIONS == typing.get_args(Execution) == ("non_elastic", "preemptive", "elastic")
    assert SHARING_KINDS == typing.get_args(SharingKind) == ("space", "time")


class Bare:
    """A policy that does not subclass Policy: name, decide and reset only."""

    name = "bare"

    def decide(self, state):
        return admit_bundles(queued_jobs(state), state)

    def reset(self):
        pass


def test_a_policy_without_settings_gets_the_protocol_defaults():
    assert policy_settings(Bare()) == PolicySettings("bare")
    assert policy_settings(Bare) == PolicySettings(
        "bare", "non_elastic", EXECUTIONS, None, 1, False
    )
    jobs = [job(f"j{i}", arrival=float(i)) for i in range(3)]
    res = smdlab.simulate(jobs, cluster(1), Bare())
    assert res.policy == "bare" and res.summary["jobs_completed"] == 3


@pytest.mark.parametrize(
    ("attrs", "words"),
    [
        ({"execution": "elastc"}, "execution must be one of non_elastic, preemptive, elastic"),
        ({"executions": ("elastic", "fast")}, "executions must be among"),
        ({"executions": "elastic"}, "executions must be a tuple of modes"),
        ({"execution": "elastic", "executions": ("non_elastic",)}, "must be one of its executions"),
        ({"slot_s": -5}, "slot_s must be None or a number > 0"),
        ({"sharing_degree": 0}, "sharing_degree must be an integer >= 1"),
        ({"decide_on_completion": "yes"}, "decide_on_completion must be True or False"),
    ],
)
def test_a_bad_setting_is_one_line_naming_it(attrs, words):
    cls = type("Odd", (Bare,), {"name": "odd", **attrs})
    with pytest.raises(InvalidInput, match=r"^policy 'odd': ") as info:
        policy_settings(cls())
    assert words in str(info.value) and "\n" not in str(info.value)
    with pytest.raises(InvalidInput, match="policy 'odd'"):
        smdlab.simulate([job("j0")], cluster(1), cls())


def test_lazy_sequences_concatenate_slice_and_compare_like_tuples():
    built = []
    seq = LazySeq(lambda: built.append(1) or [1, 2, 3])
    assert not built  # nothing built before use
    assert seq + (4,) == (1, 2, 3, 4) and (0,) + seq == (0, 1, 2, 3)  # noqa: RUF005
    assert seq[1:] == (2, 3) and seq[-1] == 3 and len(seq) == 3 and seq == (1, 2, 3)
    assert built == [1]
    with pytest.raises(TypeError):
        seq + "ab"


class SeesEverything(Policy):
    """Bundles, in order of the concatenated running and queued jobs; records what it saw."""

    name = "sees_everything"

    def __init__(self):
        self.seen: list[tuple[int, int, int]] = []

    def decide(self, state):
        both = state.running + state.queued
        assert isinstance(both, tuple) and both[: len(state.running)] == tuple(state.running)
        self.seen.append((len(state.running[:1]), len(state.queued[1:]), len(both)))
        return admit_bundles(queued_jobs(state), state)


def test_state_running_and_queued_concatenate_in_a_simulation():
    jobs = [job(f"j{i}", arrival=float(i), max_workers=2, max_ps=2) for i in range(6)]
    policy = SeesEverything()
    res = smdlab.simulate(jobs, cluster(1), policy)
    assert res.summary["jobs_completed"] == 6
    assert any(r and q for r, q, _ in policy.seen)  # both running and queued jobs were seen


def _preemptive_state():
    a, b = job("a", max_workers=4), job("b", arrival=1.0)
    cl = cluster(1, gpu=2)
    return state(cl, [queued(b)], [running(a, [(0, 2, 1)])], execution="preemptive"), a, b


def test_assemble_preempts_a_running_job_without_a_target_when_asked():
    st, _, b = _preemptive_state()
    d = assemble(st, [Target(b, 2, 1)], preempt_untargeted=True)
    assert d.preempt == ("a",) and [(x.job, x.workers, x.ps) for x in d.allocations] == [
        ("b", 2, 1)
    ]
    kept = assemble(st, [Target(b, 2, 1)])  # default outside elastic runs: keep it
    assert kept.preempt == () and kept.allocations == ()  # b does not fit beside a


def test_assemble_restarts_a_running_job_on_a_new_target_in_a_preemptive_run():
    st, a, b = _preemptive_state()
    d = assemble(st, [Target(a, 1, 1), Target(b, 1, 1)])
    assert d.preempt == ("a",)
    assert [(x.job, x.workers) for x in d.allocations] == [("a", 1), ("b", 1)]


def test_assemble_refuses_to_preempt_in_a_non_elastic_run():
    a = job("a")
    st = state(cluster(1), [], [running(a, [(0, 1, 1)])], execution="non_elastic")
    with pytest.raises(InvalidInput, match="preempt_untargeted=True needs preemptive or elastic"):
        assemble(st, [], preempt_untargeted=True)
    with pytest.raises(InvalidInput, match="non_elastic"):
        assemble(st, [Target(a, 2, 1)])


class Las(Policy):
    name = "las"
    execution = "preemptive"

    def decide(self, state):
        return admit_bundles(queued_jobs(state), state) if state.queued else Decision()


def test_a_policy_reports_the_name_it_was_asked_by():
    jobs = [job(f"j{i}", arrival=float(i)) for i in range(3)]
    try:
        register_policy("other_name", Las)
        results = run_policies(jobs, cluster(1), ["other_name", "fifo"])
        assert {k: r.policy for k, r in results.items()} == {
            "other_name": "other_name",
            "fifo": "fifo",
        }
        assert smdlab.simulate(jobs, cluster(1), "other_name").policy == "other_name"
        assert results["other_name"].summary_row()["policy"] == "other_name"
        assert get_policy("other_name").name == "las"  # the object keeps its own name
        assert smdlab.simulate(jobs, cluster(1), Las()).policy == "las"
    finally:
        _EXTRA.pop("other_name", None)
