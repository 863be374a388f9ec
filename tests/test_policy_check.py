"""check_policy: every registered policy passes; seeded broken policies fail with one line each."""

from __future__ import annotations

import numpy as np
import pytest

import smdlab
from smdlab.errors import InvalidInput
from smdlab.policies import Allocation, Decision, Placement, Policy
from smdlab.policies.registry import get_policy, list_policies
from smdlab.policies.toolkit import admit_bundles, queued_jobs
from smdlab.sim import check_policy
from smdlab.sim.policy_check import PROBLEM_KINDS, worlds

# Short GA runs for OMRU and low Tiresias thresholds (preemptions within these short runs).
OPTIONS = {
    "tiresias": {"thresholds": (5.0, 50.0)},
    "omru": {"generations": 20},
    "omru_noreuse": {"generations": 20},
}


@pytest.mark.parametrize("name", list_policies())
def test_every_registered_policy_passes(name):
    assert check_policy(get_policy(name, **OPTIONS.get(name, {}))) == []


class Overfill(Policy):
    """Starts every queued job at its largest size on machine 0, whatever is free there."""

    name = "overfill"

    def decide(self, state):
        return Decision(
            tuple(
                Allocation(
                    q.job.name, q.job.max_workers, 1, Placement(((0, q.job.max_workers, 1),))
                )
                for q in state.queued
            )
        )


class Forget(Policy):
    """First fit in bundles, but never starts job j1."""

    name = "forget"

    def decide(self, state):
        order = [q for q in queued_jobs(state) if q.job.name != "j1"]
        return admit_bundles(order, state, stop_at_first_unfit=False)


class Shuffle(Policy):
    """Bundles in a random order from a generator seeded once, not at reset()."""

    name = "shuffle"

    def __init__(self):
        self.rng = np.random.default_rng(1)

    def decide(self, state):
        order = list(queued_jobs(state))
        self.rng.shuffle(order)
        return admit_bundles(order, state)


class Ghost(Policy):
    """Bundles, plus an allocation for a job that does not exist."""

    name = "ghost"

    def decide(self, state):
        d = admit_bundles(queued_jobs(state), state)
        return Decision((*d.allocations, Allocation("ghost", 1, 1, Placement(((0, 1, 1),)))))


class PreemptsWhenNonElastic(Policy):
    """Declares only non_elastic execution but preempts its first running job."""

    name = "preempter"
    executions = ("non_elastic",)

    def decide(self, state):
        d = admit_bundles(queued_jobs(state), state)
        return Decision(d.allocations, tuple(r.job.name for r in state.running[:1]))


class Typo(Policy):
    name = "typo"
    execution = "elastc"

    def decide(self, state):
        return Decision()


@pytest.mark.parametrize(
    ("policy", "kind", "words"),
    [
        (Overfill(), "capacity", "overfills a machine: machine 'big' would hold"),
        (Forget(), "lost job", "(first: 'j1')"),
        (Shuffle(), "determinism", "two runs of one world differ"),
        (Ghost(), "unknown job", "allocates job 'ghost', which is neither queued nor running"),
        (PreemptsWhenNonElastic(), "mode", "preempts job"),
        (Typo(), "contract", "execution must be one of non_elastic, preemptive, elastic"),
    ],
    ids=lambda x: x.name if isinstance(x, Policy) else None,
)
def test_a_broken_policy_fails_with_one_line(policy, kind, words):
    problems = check_policy(policy)
    assert len(problems) == 1, problems
    line = problems[0]
    assert kind in PROBLEM_KINDS and line.startswith(f"{kind}: policy {policy.name!r}: ")
    assert words in line and "\n" not in line


def test_worlds_are_seeded_and_crowded_enough_to_queue():
    a, b = worlds(0), worlds(0)

    def key(ws):
        return [(j.name, j.arrival, j.samples, dict(j.worker_demand)) for w in ws for j in w.jobs]

    assert key(a) == key(b)
    assert [j.samples for j in worlds(1)[0].jobs] != [j.samples for j in a[0].jobs]
    res = smdlab.simulate(list(a[1].jobs), a[1].cluster, "fifo")
    assert (res.jobs["queueing_delay"] > 0).any()  # ordering matters there


def test_check_policy_takes_names_and_rejects_bad_ones():
    assert check_policy("fifo", worlds_to_run=1) == []
    with pytest.raises(InvalidInput, match="worlds_to_run"):
        check_policy("fifo", worlds_to_run=0)
    with pytest.raises(InvalidInput, match="policy must be one of"):
        check_policy("no_such_policy")
