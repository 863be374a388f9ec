"""SRTF's ranked queue kept between decisions, Tiresias' queue order kept between passes,
gang_placement's one-column room and kept requests, and the spread rule's every-k-at-once check
change no decision: each is compared with the from-scratch rule it shortcuts."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from smdlab import Cluster
from smdlab.experiments.muri_parity import muri_scenario
from smdlab.policies.base import ClusterState, Decision, Policy, QueuedJob, RunningJob
from smdlab.policies.ps.srtf import SJF, SRTF
from smdlab.policies.ps.tiresias import Tiresias
from smdlab.policies.toolkit import gang_placement
from smdlab.sim.runner import simulation_options
from smdlab.sim.simulator import simulate
from smdlab.solve.instance import task_vectors
from smdlab.solve.placement import TOL, spread_tasks
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
        self.disagreements += (d.allocations, d.preempt, d.wake_at) != (
            ref.allocations,
            ref.preempt,
            ref.wake_at,
        )
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


class EveryPassOrder(Tiresias):
    """Tiresias re-ordering its queues after every full pass (the rule ``keep_order`` shortcuts)."""

    keep_order = False


@pytest.mark.parametrize("options", [{"thresholds": [3250, 7200], "demotion": "muri"}, {}])
def test_tiresias_kept_queue_order_decides_as_every_pass_reordering_on_gang_jobs(options):
    sc, cluster, jobs = _muri_jobs()
    twin = Twin(Tiresias(**options), EveryPassOrder(**options))
    simulate(jobs, cluster, twin, **simulation_options(sc))
    assert twin.states > 100 and twin.moves >= len(jobs)  # every job starts
    assert twin.disagreements == 0


def test_tiresias_kept_queue_order_decides_as_every_pass_reordering_on_ps_jobs():
    cluster, jobs = _ps_jobs()
    twin = Twin(Tiresias(starve_multiple=2.0), EveryPassOrder(starve_multiple=2.0))
    simulate(jobs, cluster, twin, restart_s=30)
    assert twin.states > 50 and twin.moves >= len(jobs)
    assert twin.disagreements == 0


def _spread_one_k_at_a_time(free, workers, ps, alpha, gamma):
    """The spread rule as its docstring states it: k = 1, 2, ... until every share fits."""
    n = free.shape[0]
    pair = alpha + gamma
    with np.errstate(divide="ignore", invalid="ignore"):
        room = np.where(pair > 0, (free + TOL) / np.where(pair > 0, pair, 1.0), np.inf).min(axis=1)
    order = np.lexsort((np.arange(n), -room))
    for k in range(1, min(n, max(workers, ps)) + 1):
        i = np.arange(k)
        ws = workers // k + (i < workers % k)
        ps_ = ps // k + (i >= k - ps % k)
        if np.all(free[order[:k]] + TOL >= ws[:, None] * alpha + ps_[:, None] * gamma):
            keep = (ws > 0) | (ps_ > 0)
            return tuple(
                sorted(zip(order[:k][keep].tolist(), ws[keep].tolist(), ps_[keep].tolist()))
            )
    return None


def test_spread_rule_trying_every_k_at_once_places_as_one_k_at_a_time():
    rng = np.random.default_rng(11)
    placed = 0
    for case in range(3000):
        n, k = int(rng.integers(1, 12)), int(rng.integers(1, 4))
        if case % 2:  # whole counts, ties included
            free = rng.integers(0, 9, size=(n, k)).astype(float)
            alpha = rng.integers(0, 3, size=k).astype(float)
            gamma = rng.integers(0, 2, size=k).astype(float)
        else:  # fractional demands and a little negative free room
            free = rng.random((n, k)) * 8 - (rng.random((n, k)) < 0.05) * 1e-10
            alpha, gamma = np.round(rng.random(k), 1), np.round(rng.random(k), 1) * (case % 4 == 0)
        workers, ps = int(rng.integers(0, 40)), int(rng.integers(0, 10))
        want = _spread_one_k_at_a_time(free, workers, ps, alpha, gamma)
        assert spread_tasks(free, workers, ps, alpha, gamma) == want
        placed += want is not None
    assert 500 < placed < 2900  # both outcomes are exercised


def test_gang_placement_keeps_requests_apart_for_copies_with_other_counts():
    _, cluster, jobs = _muri_jobs()
    job = next(j for j in jobs if j.gang and j.gang_allocation[0] == 8)
    free = np.tile(np.array([8.0, 92.0, 520.0, 100.0]), (8, 1))
    assert gang_placement(job, free, cluster.resources).tasks == ((0, 8, 1),)
    half = job.replace(requested_workers=4)  # shares the job's memo (a scheduling field)
    assert gang_placement(half, free, cluster.resources).tasks == ((0, 4, 1),)
    assert gang_placement(job, free, cluster.resources).tasks == ((0, 8, 1),)
