"""SRTF's ranked queue kept between decisions and gang_placement's one-column room change no
decision: each is compared with the from-scratch rule it shortcuts."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from smdlab import Cluster
from smdlab.experiments.muri_parity import muri_scenario
from smdlab.policies.base import ClusterState, Decision, Policy, QueuedJob, RunningJob
from smdlab.policies.ps.srtf import SJF, SRTF
from smdlab.policies.toolkit import gang_placement
from smdlab.sim.runner import simulation_options
from smdlab.sim.simulator import simulate
from smdlab.solve.instance import task_vectors
from smdlab.solve.placement import TOL
from smdlab.workloads import synthetic

MURI_TRACE = Path(__file__).parent / "data" / "muri" / "trace2_first100.csv"


class FullRank(SRTF):
    """SRTF's own key through the subclass path, which re-ranks every waiting job per decision."""

    def rank(self, entry: QueuedJob | RunningJob, state: ClusterState) -> float:
        return SRTF.rank(self, entry, state)


class Twin(Policy):
    """Runs ``kept``; asks ``other`` on every state too and records whether they agree."""

    def __init__(self, kept: Policy, other: Policy):
        self.kept, self.other = kept, other
        self.name = kept.name
        self.execution = kept.execution
        self.executions = kept.executions
        self.states = self.disagreements = self.moves = 0

    def reset(self) -> None:
        self.kept.reset()
        self.other.reset()

    def decide(self, state: ClusterState) -> Decision:
        d = self.kept.decide(state)
        ref = self.other.decide(state)
        self.states += 1
        self.moves += len(d.allocations) + len(d.preempt)
        self.disagreements += (d.allocations, d.preempt) != (ref.allocations, ref.preempt)
        return d


def _muri_jobs():
    sc = muri_scenario(MURI_TRACE)
    cluster = sc.build_cluster()
    return sc, cluster, sc.build_jobs(cluster)


def _ps_jobs():
    cl = Cluster.homogeneous(4)
    return cl, synthetic(
        60, cl, load=1.5, seed=3, networks=["resnet50", "vgg16", "alexnet", "lstm_lm"]
    )


@pytest.mark.parametrize("preemptive", [True, False])
def test_srtf_ranked_queue_decides_as_a_full_re_rank_on_gang_jobs(preemptive):
    sc, cluster, jobs = _muri_jobs()
    opts = simulation_options(sc)
    twin = Twin(SRTF(preemptive=preemptive), FullRank(preemptive=preemptive))
    simulate(jobs, cluster, twin, **{**opts, "execution": twin.execution})
    assert twin.states > 100 and twin.moves >= len(jobs)  # every job starts
    assert twin.disagreements == 0


@pytest.mark.parametrize("make", [SRTF, SJF, lambda: SRTF(key="progress")])
def test_srtf_ranked_queue_decides_as_a_full_re_rank_on_ps_jobs(make):
    cluster, jobs = _ps_jobs()
    kept = make()
    twin = Twin(kept, FullRank(preemptive=kept.preemptive, key=kept.key))
    simulate(jobs, cluster, twin)
    assert twin.states > 30 and twin.moves > 30
    assert twin.disagreements == 0


def test_srtf_keeps_its_queue_across_runs_only_through_reset():
    sc, cluster, jobs = _muri_jobs()
    opts = simulation_options(sc)
    pol = SRTF()
    first = simulate(jobs, cluster, pol, **opts)
    again = simulate(jobs, cluster, pol, **opts)  # the same instance: reset() empties its queue
    assert first.jobs["finish"].tolist() == again.jobs["finish"].tolist()


def test_gang_placement_single_resource_room_matches_the_general_rule():
    _, cluster, jobs = _muri_jobs()
    resources = cluster.resources
    rng = np.random.default_rng(7)
    gangs = [j for j in jobs if j.gang][:40]
    checked = 0
    for job in gangs:
        w, _ = job.gang_allocation
        wv, _ = task_vectors(job, resources)
        for _ in range(5):
            free = np.tile(np.array([8.0, 92.0, 520.0, 100.0]), (8, 1))
            free[:, 0] = rng.integers(0, 9, size=8)
            got = gang_placement(job, free, resources)
            with np.errstate(divide="ignore", invalid="ignore"):
                room = np.where(wv > 0, (free + TOL) / np.where(wv > 0, wv, 1.0), np.inf)
            room = room.min(axis=1)
            m = int(np.argmax(room))
            if room[m] >= w:  # the one-machine case: the machine with most room, lowest index
                assert got is not None and got.tasks == ((m, w, 1),)
                checked += 1
    assert checked > 20
