"""Batch-queue policies: FIFO, EASY and conservative backfilling, and fair-share order.

A queue policy sees a ``BatchState`` and returns the names of the queued jobs to start now; it
never owns the loop (``smdlab.sim.batch`` runs it). Every rule reads the jobs' requested wall
times, never their true durations.

Sources: EASY backfilling, Lifka, "The ANL/IBM SP Scheduling System", JSSPP 1995; its rule as
stated by Mu'alem & Feitelson, "Utilization, Predictability, Workloads, and User Runtime
Estimates in Scheduling the IBM SP2 with Backfilling", IEEE TPDS 12(6), 2001, Section 2: the
first queued job gets a reservation at the shadow time (the earliest time enough processors are
free, by the running jobs' estimates); a later job may start now if it fits and either ends (by
its estimate) by the shadow time or uses only the extra processors (those the first job will not
need at the shadow time). Conservative backfilling (same paper): every queued job, in order,
gets the earliest reservation that delays no earlier one; a job starts now if its reservation is
now. Fair share: Slurm's idea (accounts with less decayed usage go first), simplified to a sort
by decayed GPU-seconds.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal, get_args

from smdlab.errors import check_choice, check_positive

Backfill = Literal["none", "easy", "conservative"]
BACKFILLS: tuple[Backfill, ...] = get_args(Backfill)
# Half-life of fair-share usage (Slurm's PriorityDecayHalfLife default is 7 days).
DEFAULT_HALF_LIFE_S = 7 * 86400.0


@dataclass(frozen=True)
class QueuedBatch:
    """A waiting batch job as a queue policy sees it (no true duration)."""

    name: str
    gpus: int
    requested_s: float
    submit: float
    account: str = ""


@dataclass(frozen=True)
class RunningBatch:
    """A running batch job: GPUs held and the end of its requested wall time."""

    name: str
    gpus: int
    start: float
    requested_end: float
    account: str = ""


@dataclass(frozen=True)
class BatchState:
    """What a queue policy sees: time, GPUs, the queue in submission order, the running jobs.

    usage: decayed GPU-seconds per account (filled only for a policy with ``fair_share``).
    min_queued_gpus: the fewest GPUs any queued job needs (0: not given, computed from ``queued``).
    """

    time: float
    total_gpus: int
    free_gpus: int
    queued: Sequence[QueuedBatch]
    running: Sequence[RunningBatch]
    usage: Mapping[str, float] = field(default_factory=dict)
    min_queued_gpus: int = 0

    def smallest_queued(self) -> int:
        """The fewest GPUs any queued job needs (``min_queued_gpus`` when given)."""
        if self.min_queued_gpus > 0:
            return self.min_queued_gpus
        return min(q.gpus for q in self.queued)


def shadow(head_gpus: int, free: int, ends: Sequence[tuple[float, int]]) -> tuple[float, int]:
    """(shadow time, extra GPUs) of a job of ``head_gpus`` GPUs: the earliest requested end at
    which enough GPUs are free, and how many more than it needs are free then.

    ends: (requested end, GPUs) of every running job, in ascending order of end.
    """
    avail = free
    for end, g in ends:
        avail += g
        if avail >= head_gpus:
            return end, avail - head_gpus
    return math.inf, 0


class QueuePolicy:
    """Non-preemptive priority order (FIFO or fair share) with optional backfilling."""

    def __init__(
        self,
        backfill: str = "easy",
        *,
        fair_share: bool = False,
        half_life_s: float = DEFAULT_HALF_LIFE_S,
        keep_reservations: bool = True,
    ) -> None:
        self.backfill: Backfill = check_choice("backfill", backfill, BACKFILLS)
        self.fair_share = bool(fair_share)
        self.half_life_s = check_positive("half_life_s", half_life_s)
        # conservative only: False reserves every queued job again at every decision (the same
        # schedule, slower; kept to check and measure the shortcuts)
        self.keep_reservations = bool(keep_reservations)
        fs = "fair_" if self.fair_share else ""
        self.name = f"{fs}{'fifo' if self.backfill == 'none' else self.backfill}"
        self.reset()

    def reset(self) -> None:
        """Forget the kept reservations of conservative backfilling."""
        self._kept: _Reservations | None = None

    def order(self, state: BatchState) -> list[QueuedBatch]:
        """The queue in priority order: submission order, or by account usage then submission."""
        if not self.fair_share:
            return list(state.queued)
        usage = state.usage
        return sorted(state.queued, key=lambda q: (usage.get(q.account, 0.0), q.submit))

    def decide(self, state: BatchState) -> tuple[str, ...]:
        """Names of the queued jobs to start now, in priority order."""
        free = state.free_gpus
        if not state.queued or free <= 0 or free < state.smallest_queued():
            return ()
        order = self.order(state)
        if self.backfill == "conservative":
            if self.fair_share or not self.keep_reservations:  # fair share: usage reorders it
                return conservative(order, state)
            return self._conservative_kept(state)
        t = state.time
        started: list[QueuedBatch] = []
        i = 0
        while i < len(order) and order[i].gpus <= free:
            started.append(order[i])
            free -= order[i].gpus
            i += 1
        if i == len(order) or self.backfill == "none" or free <= 0:
            return tuple(q.name for q in started)
        ends = sorted(
            [(r.requested_end, r.gpus) for r in state.running]
            + [(t + q.requested_s, q.gpus) for q in started]
        )
        shadow_t, extra = shadow(order[i].gpus, free, ends)
        for q in order[i + 1 :]:
            if q.gpus > free:
                continue
            if t + q.requested_s <= shadow_t:
                started.append(q)
                free -= q.gpus
            elif q.gpus <= extra:
                started.append(q)
                free -= q.gpus
                extra -= q.gpus
            if free <= 0:
                break
        return tuple(q.name for q in started)

    def _conservative_kept(self, state: BatchState) -> tuple[str, ...]:
        """Conservative backfilling in submission order, reserving only the jobs that arrived
        since the last decision when no job has ended or started since (the kept reservations
        are then exactly those ``conservative`` would make again, all later than now)."""
        t = state.time
        running = {(r.name, r.requested_end) for r in state.running}
        names = [q.name for q in state.queued]
        kept = self._kept
        if (
            kept is not None
            and t >= kept.time
            and running == kept.running
            and names[: len(kept.queued)] == kept.queued
        ):
            i = bisect.bisect_right(kept.times, t) - 1
            times, free = kept.times[i:], kept.free[i:]
            times[0] = t
            new = state.queued[len(kept.queued) :]
            queued = list(kept.queued)
        else:
            times, free = running_profile(state)
            new, queued = state.queued, []
        started: list[QueuedBatch] = []
        later = _SuffixMinimum(new)
        for i, q in enumerate(new):
            if not later.may_start_now(i, times, free):
                break  # the rest stay unreserved until a decision needs them
            if reserve(times, free, q.gpus, q.requested_s) == t:
                started.append(q)
            else:
                queued.append(q.name)
        running |= {(q.name, t + q.requested_s) for q in started}
        self._kept = _Reservations(t, running, queued, times, free)
        return tuple(q.name for q in started)


def conservative(order: Sequence[QueuedBatch], state: BatchState) -> tuple[str, ...]:
    """Conservative backfilling: each job in order reserves its earliest slot in the profile of
    free GPUs (by requested times) that delays no earlier reservation; those reserved now start."""
    times, free = running_profile(state)
    t = state.time
    return tuple(q.name for q in order if reserve(times, free, q.gpus, q.requested_s) == t)


def running_profile(state: BatchState) -> tuple[list[float], list[int]]:
    """Free GPUs on [times[k], times[k+1]) by the running jobs' requested ends (the last segment
    lasts forever), from ``state.time`` on."""
    times = [state.time]
    free = [state.free_gpus]
    for r in sorted(state.running, key=lambda r: r.requested_end):
        if r.requested_end > times[-1]:
            times.append(r.requested_end)
            free.append(free[-1] + r.gpus)
        else:
            free[-1] += r.gpus
    return times, free


def reserve(times: list[float], free: list[int], gpus: int, dur: float) -> float | None:
    """Reserve ``gpus`` GPUs for ``dur`` seconds at the earliest breakpoint of the profile where
    they stay free (updating it in place); the reservation's start, or None if there is none."""
    k = _earliest(times, free, gpus, dur)
    if k is None:
        return None
    s = times[k]
    e = s + dur
    j = bisect.bisect_left(times, e)
    if j == len(times) or times[j] != e:
        times.insert(j, e)
        free.insert(j, free[j - 1])
    for m in range(k, j):
        free[m] -= gpus
    return s


def _earliest(times: list[float], free: list[int], gpus: int, dur: float) -> int | None:
    """Index of the earliest breakpoint from which ``gpus`` GPUs stay free for ``dur`` seconds."""
    n = len(times)
    k = 0
    while k < n:
        if free[k] < gpus:
            k += 1
            continue
        end = times[k] + dur
        m = k + 1
        while m < n and times[m] < end and free[m] >= gpus:
            m += 1
        if m == n or times[m] >= end:
            return k
        # segment m is too full and lies inside the window of every start from k to m
        k = m + 1
    return None


class _SuffixMinimum:
    """Per GPU count, the shortest requested time among the jobs from each position on: a job
    can start now only if its GPUs stay free for its requested time from now, and reserving
    more jobs only lowers the profile, so once no later job passes that test none starts now."""

    def __init__(self, jobs: Sequence[QueuedBatch]) -> None:
        n = len(jobs)
        self.shortest: dict[int, list[float]] = {}
        for g in {q.gpus for q in jobs}:
            col = [math.inf] * (n + 1)
            for i in range(n - 1, -1, -1):
                q = jobs[i]
                col[i] = min(col[i + 1], q.requested_s) if q.gpus == g else col[i + 1]
            self.shortest[g] = col

    def may_start_now(self, i: int, times: list[float], free: list[int]) -> bool:
        """Could a job from position ``i`` on start now in this profile?"""
        n = len(times)
        for g, col in self.shortest.items():
            need = col[i]
            if need == math.inf or free[0] < g:
                continue
            m = 1
            while m < n and free[m] >= g:
                m += 1
            if m == n or times[m] >= times[0] + need:
                return True
        return False


@dataclass
class _Reservations:
    """Conservative backfilling's profile after one decision: its time, the running jobs (name,
    requested end), the queued jobs in order, and the free GPUs with all their reservations."""

    time: float
    running: set[tuple[str, float]]
    queued: list[str]
    times: list[float]
    free: list[int]


BATCH_QUEUES: dict[str, tuple[str, bool]] = {
    "fifo": ("none", False),
    "easy": ("easy", False),
    "conservative": ("conservative", False),
    "fair_easy": ("easy", True),
}


def queue_policy(name: str | QueuePolicy) -> QueuePolicy:
    """The queue policy of a name in ``BATCH_QUEUES`` (a QueuePolicy is returned as is)."""
    if isinstance(name, QueuePolicy):
        return name
    backfill, fair = BATCH_QUEUES[check_choice("queue", name, list(BATCH_QUEUES))]
    return QueuePolicy(backfill, fair_share=fair)
