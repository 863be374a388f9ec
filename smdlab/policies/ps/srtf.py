"""SRTF: shortest remaining time first, preemptive by default; SJF is its non-preemptive form.

Rule (docs/simulator.md, Policies; the ``shortest`` scheduler of the Tiresias simulator, SymbioticLab/Tiresias
``run_sim.py``, which Tiresias and Muri use as a baseline): at every decision point rank every
job, running or waiting, by its remaining time at its requested allocation (remaining samples /
speed at ``request``; for a trace job, its remaining trace time), ties by arrival then name.
Walk that order over the pooled capacity of the cluster (free plus what running jobs hold): a
job that fits is kept or started, a job that does not is skipped (later, shorter-to-fit jobs may
still run). Running jobs that no longer fit are preempted; they keep their progress and lose
what ``restart_s`` costs in the simulator. Execution: natural mode ``preemptive``
(``preemptive=True``, default); forced ``non_elastic`` (a controlled comparison), it never
preempts.

``preemptive=False`` (also registered as ``sjf``): running jobs are never preempted; waiting
jobs are started in the same order, skipping those that do not fit.

Key (docs/baselines.md, SRTF): ``key="remaining_time"`` (default) ranks by remaining time as
above, the textbook rule and Tiresias'; ``key="progress"`` ranks by the remaining fraction of the
job's work (remaining samples / samples), DL2's ``1 - progress/epochs`` (pengyanghua/DL2,
``srtf_env.py``): jobs that have not started tie, and the tie goes to the earlier arrival.

Allocation: a gang job (``Job.gang``, every ``demands="gpu_only"`` trace job) runs on exactly its
request or not at all (``toolkit.gang_placement``: consolidated on one machine, else spread; for
GPU-only jobs the pooled GPU count decides, as in the reference's count-based placement).
Another job's request is n = ``requested_workers`` (else min(max_workers, max_ps)) worker+PS
bundles: the walk reserves one bundle for it, and it starts on as many bundles as fit, up to
n, placed first-fit decreasing; its remaining time is measured at (n, n).
Assumption: a started job that cannot be placed on real machines after the pooled walk (only
possible with several resources per machine) waits for the next decision.

Cost: a waiting job's key cannot change while it waits, so the waiting jobs stay ranked between
decisions (arrivals and re-queued jobs inserted, departures removed, by bisection); a subclass
with its own ``rank`` (EDF) re-ranks every waiting job at every decision.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Callable, Iterable, Sequence
from operator import itemgetter
from typing import Literal, get_args

import numpy as np

from smdlab.errors import check_bool, check_choice
from smdlab.model.job import Job
from smdlab.policies.base import (
    Allocation,
    ClusterState,
    Decision,
    Execution,
    Policy,
    QueuedJob,
    RunningJob,
)
from smdlab.policies.toolkit import gang_placement, max_bundles
from smdlab.solve.instance import base_speeds, job_speeds, task_vectors
from smdlab.solve.placement import TOL, placement_usage, usage


def request(job: Job) -> tuple[int, int]:
    """(workers, PSs) SRTF ranks and reserves a job at: its gang allocation, else n bundles."""
    if job.gang:
        return job.gang_allocation
    n = job.requested_workers if job.requested_workers is not None else job.max_workers
    if job.arch == "allreduce":  # no PS: n workers and the zero-demand PS slot (run with p = 0)
        return min(n, job.max_workers), 1
    n = min(n, job.max_workers, job.max_ps)
    return n, n


def remaining_time(entry: QueuedJob | RunningJob, mode: str) -> float:
    """Remaining samples / speed at the job's requested allocation, in seconds."""
    w, p = request(entry.job)
    return entry.remaining / float(job_speeds(entry.job, mode)[w - 1, p - 1])


def remaining_time_at_minimum(q: QueuedJob | RunningJob, mode: str) -> float:
    """Remaining samples / speed at (1 worker, 1 PS), in seconds."""
    return q.remaining / float(base_speeds([q.job], mode)[0])


_ORDER = itemgetter(0, 1, 2)  # rank, then arrival, then name


def _DONE(q: QueuedJob) -> tuple[float, float, str, int, QueuedJob]:
    """The item of a waiting entry with no work left (never ranked)."""
    return (0.0, 0.0, "", 0, q)


Key = Literal["remaining_time", "progress"]  # what SRTF ranks by (class docstring)


class SRTF(Policy):
    """Shortest remaining time (at the requested allocation) first; preemptive unless told not to be."""

    name = "srtf"
    execution: Execution = "preemptive"
    executions = ("non_elastic", "preemptive")

    KEYS: tuple[Key, ...] = get_args(Key)

    def __init__(self, preemptive: bool = True, key: str = "remaining_time") -> None:
        self.preemptive = check_bool("preemptive", preemptive)
        self.key = check_choice("key", key, self.KEYS)
        self.execution = "preemptive" if self.preemptive else "non_elastic"
        self._need: dict[int, tuple] = {}  # id(job) -> (job, demand, GPUs, 1/speed)
        self._ctx: tuple = ()  # (mode, resources) the cached demands and ranks are for
        # The waiting jobs ranked, kept between decisions: a waiting job's remaining work (so
        # its key) cannot change, so each decision only inserts arrivals and removes departures.
        self._ranked: list[tuple[float, float, str, int, QueuedJob]] = []
        self._entry: dict[int, tuple] = {}  # id(QueuedJob) -> its item (in _ranked if item[3])
        self._nongang = 0  # ranked jobs that are not gangs
        self._notgpu = 0  # ranked jobs that are not GPU-only
        self._fractional = 0  # ranked gangs whose GPU count is not a whole number
        self._gpus = 0.0  # whole GPUs of the other ranked gangs' requests (an exact sum)

    def reset(self) -> None:
        """Forget cached per-job demands and the ranked queue (the simulator calls this before a run)."""
        self._need.clear()
        self._ctx = ()
        self._forget_ranked()

    def _forget_ranked(self) -> None:
        self._ranked = []
        self._entry = {}
        self._nongang = self._notgpu = self._fractional = 0
        self._gpus = 0.0

    def _context(self, resources: tuple[str, ...], mode: str) -> None:
        """Drop every cache made for another (mode, resources)."""
        if self._ctx != (mode, resources):
            self._need.clear()
            self._forget_ranked()
            self._ctx = (mode, resources)

    def _need_of(self, job: Job, resources: tuple[str, ...], mode: str) -> tuple:
        """(pooled demand of the job's request, its GPUs, 1 / speed at the request), cached per job."""
        self._context(resources, mode)
        hit = self._need.get(id(job))
        if hit is not None and hit[0] is job:
            return hit[1], hit[2], hit[3]
        w, p = request(job)
        a, g = task_vectors(job, resources)
        vec = w * a + p * g
        gi = resources.index("gpu") if "gpu" in resources else None
        gpus = float(vec[gi]) if gi is not None else 0.0
        inv = 1.0 / float(job_speeds(job, mode)[w - 1, p - 1])
        if len(self._need) > 200_000:
            self._need.clear()
        self._need[id(job)] = (job, vec, gpus, inv)
        return vec, gpus, inv

    def rank(self, entry: QueuedJob | RunningJob, state: ClusterState) -> float:
        """The entry's rank (lower first; ties by arrival, then name): its remaining time or progress."""
        if self.key == "progress":
            return entry.remaining / entry.job.samples
        return (
            entry.remaining
            * self._need_of(entry.job, tuple(state.cluster.resources), state.mode)[2]
        )

    def _update_ranked(
        self, queued: Sequence[QueuedJob], rank: Callable[[QueuedJob], float]
    ) -> list[tuple[float, float, str, int, QueuedJob]]:
        """The waiting jobs with work left, ranked: last decision's order, updated by what changed."""
        entry = self._entry
        ranked = self._ranked
        now = dict(zip(map(id, queued), queued))
        if len(now) != len(queued):  # one entry twice: no incremental view of that
            self._forget_ranked()
            entry, ranked = self._entry, self._ranked
        for i in entry.keys() - now.keys():  # left the queue (started, or a new entry replaces it)
            item = entry.pop(i)
            if item[3]:
                del ranked[bisect.bisect_left(ranked, item)]
                self._count(item[4].job, -1)
        for i in now.keys() - entry.keys():
            q = now[i]
            item = (rank(q), q.job.arrival, q.job.name, 1, q) if q.remaining > 0 else _DONE(q)
            if item[3]:
                bisect.insort(ranked, item)
                self._count(q.job, 1)
            entry[i] = item  # holds q, so that its id is not reused while it is here
        return ranked

    def _count(self, job: Job, sign: int) -> None:
        """Add (``sign`` 1) or remove (-1) a ranked job's share of the waiting totals."""
        if not job.gpu_only:
            self._notgpu += sign
        if not job.gang:
            self._nongang += sign
            return
        mode, resources = self._ctx
        g = self._need_of(job, resources, mode)[1]
        if g.is_integer():
            self._gpus += sign * g
        else:
            self._fractional += sign

    def decide(self, state: ClusterState) -> Decision:
        """Keep or start jobs in order of remaining time while they fit; preempt running ones that do not."""
        mode = state.mode
        cluster = state.cluster
        resources = tuple(cluster.resources)
        need = self._need_of
        preemptive = self.preemptive and state.preemptive

        custom = type(self).rank is not SRTF.rank  # a subclass's own order (e.g. EDF)

        cache = self._need

        def need_of(job: Job) -> tuple:  # _need_of's entry, looked up inline (hot)
            h = cache.get(id(job))
            return h if h is not None and h[0] is job else (job, *need(job, resources, mode))

        def rank(e: QueuedJob | RunningJob) -> float:
            if custom:
                return self.rank(e, state)
            if self.key == "progress":  # a division, so that jobs at equal progress tie exactly
                return e.remaining / e.job.samples
            return e.remaining * need_of(e.job)[3]

        items: list[tuple[float, float, str, int, QueuedJob | RunningJob]]
        if custom:  # the subclass's key may change while a job waits: rank every waiting job
            items = [
                (rank(q), q.job.arrival, q.job.name, 1, q) for q in state.queued if q.remaining > 0
            ]
            items.sort(key=_ORDER)
        else:
            self._context(resources, mode)
            items = list(self._update_ranked(state.queued, rank))
        if preemptive:
            # When every waiting job fits the free machines in rank order, the walk below keeps
            # every running job and starts them all: skip reading the running jobs.
            free0 = np.array(state.free, dtype=float)
            # A gang job takes its whole request, so waiting gangs that need more GPUs than are
            # free (beyond gang_placement's tolerance) cannot all start: skip the placement walk.
            over = False
            if items and "gpu" in resources and (custom or not self._nongang):
                if custom or self._fractional:
                    if all(e.job.gang for *_, e in items):
                        total = sum(need_of(e.job)[2] for *_, e in items)
                    else:
                        total = -math.inf
                else:  # whole GPU counts: their sum is exact in any order
                    total = self._gpus
                gi = resources.index("gpu")
                over = total > float(free0[:, gi].sum()) + TOL * max(1.0, total)
            if not over:
                fast = self._place(
                    (e for *_, e in items),  # type: ignore[misc]
                    free0,
                    resources,
                    stop_at_unfit=True,
                )
                if all(a is not None for a in fast):
                    return Decision(tuple(a for a in fast if a is not None))
        running = list(state.running) if preemptive else []
        if running:
            items += [(rank(r), r.job.arrival, r.job.name, 0, r) for r in running]
            items.sort(key=_ORDER)
        free = np.array(state.free, dtype=float)
        n_m = free.shape[0]
        gpu_only = "gpu" in resources and all(r.job.gpu_only for r in running)
        if custom:
            gpu_only = gpu_only and all(e.job.gpu_only for *_, e in items)
        else:
            gpu_only = gpu_only and not self._notgpu
        # Phase 1: who runs, on pooled capacity (free plus what running jobs hold).
        chosen: list[QueuedJob] = []
        kept: set[str] = set()
        if gpu_only:  # GPU counts only: scalar arithmetic
            gi = resources.index("gpu")
            left = float(free[:, gi].sum()) + sum(need_of(r.job)[2] for r in running)
            left += TOL
            for *_, kind, e in items:
                if left < 1.0:
                    break
                g = need_of(e.job)[2]
                if g <= left:
                    left -= g
                    if kind:
                        chosen.append(e)  # type: ignore[arg-type]
                    else:
                        kept.add(e.job.name)
        else:
            held = {
                r.job.name: usage(
                    r.placement.tasks, *task_vectors(r.job, cluster.resources), n_m
                ).sum(axis=0)
                for r in running
            }
            pool = free.sum(axis=0) + sum(held.values(), np.zeros(len(resources)))
            for *_, kind, e in items:
                if not kind:
                    vec = held[e.job.name]
                elif e.job.gang:
                    vec = need(e.job, resources, mode)[0]
                else:  # at least one bundle; it gets up to its request below if more fits
                    a, g = task_vectors(e.job, resources)
                    vec = a + g
                if np.all(pool + TOL * np.maximum(1.0, vec) >= vec):
                    pool = pool - vec
                    if kind:
                        chosen.append(e)  # type: ignore[arg-type]
                    else:
                        kept.add(e.job.name)
        preempt = tuple(r.job.name for r in running if r.job.name not in kept)
        if preempt:
            by_name = {r.job.name: r for r in running}
            for name in preempt:
                r = by_name[name]
                free += usage(r.placement.tasks, *task_vectors(r.job, cluster.resources), n_m)
        # Phase 2: place the jobs that start, in priority order.
        allocations = self._place(chosen, free, resources)
        return Decision(tuple(a for a in allocations if a is not None), preempt)

    @staticmethod
    def _place(
        chosen: Iterable[QueuedJob],
        free: np.ndarray,
        resources: tuple[str, ...],
        stop_at_unfit: bool = False,
    ) -> list[Allocation | None]:
        """Place ``chosen`` in order on ``free`` (updated); None for a job that does not fit.

        stop_at_unfit: end the walk at the first job that does not fit (its None is the last entry).
        """
        out: list[Allocation | None] = []
        n_m = free.shape[0]
        for q in chosen:
            job = q.job
            if job.gang:
                pl = gang_placement(job, free, resources)
                w, p = job.gang_allocation
            else:
                n, pl = max_bundles(job, free, resources, request(job)[0])
                w = p = n
            if pl is None or w == 0:
                out.append(None)
                if stop_at_unfit:
                    break
                continue
            free -= placement_usage(job, pl, n_m, resources)
            out.append(Allocation(job.name, w, p, pl))
        return out


class SJF(SRTF):
    """Shortest remaining time first without preemption (the non-preemptive SRTF)."""

    name = "sjf"
    execution = "non_elastic"

    def __init__(self, preemptive: bool = False, key: str = "remaining_time") -> None:
        super().__init__(preemptive, key)
