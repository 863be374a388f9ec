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
"""

from __future__ import annotations

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
        self._need: dict[
            int, tuple
        ] = {}  # id(job) -> (job, demand, GPUs, 1/speed, mode, resources)

    def reset(self) -> None:
        """Forget cached per-job demands (the simulator calls this before a run)."""
        self._need.clear()

    def _need_of(self, job: Job, resources: tuple[str, ...], mode: str) -> tuple:
        """(pooled demand of the job's request, its GPUs, 1 / speed at the request), cached per job."""
        hit = self._need.get(id(job))
        if hit is not None and hit[0] is job and hit[4] == mode and hit[5] == resources:
            return hit[1], hit[2], hit[3]
        w, p = request(job)
        a, g = task_vectors(job, resources)
        vec = w * a + p * g
        gi = resources.index("gpu") if "gpu" in resources else None
        gpus = float(vec[gi]) if gi is not None else 0.0
        inv = 1.0 / float(job_speeds(job, mode)[w - 1, p - 1])
        if len(self._need) > 200_000:
            self._need.clear()
        self._need[id(job)] = (job, vec, gpus, inv, mode, resources)
        return vec, gpus, inv

    def rank(self, entry: QueuedJob | RunningJob, state: ClusterState) -> float:
        """The entry's rank (lower first; ties by arrival, then name): its remaining time or progress."""
        if self.key == "progress":
            return entry.remaining / entry.job.samples
        return (
            entry.remaining
            * self._need_of(entry.job, tuple(state.cluster.resources), state.mode)[2]
        )

    def decide(self, state: ClusterState) -> Decision:
        """Keep or start jobs in order of remaining time while they fit; preempt running ones that do not."""
        mode = state.mode
        cluster = state.cluster
        resources = tuple(cluster.resources)
        need = self._need_of
        preemptive = self.preemptive and state.preemptive

        custom = type(self).rank is not SRTF.rank  # a subclass's own order (e.g. EDF)

        def rank(e: QueuedJob | RunningJob) -> float:
            if custom:
                return self.rank(e, state)
            if self.key == "progress":  # a division, so that jobs at equal progress tie exactly
                return e.remaining / e.job.samples
            return e.remaining * need(e.job, resources, mode)[2]

        items: list[tuple[float, float, str, int, QueuedJob | RunningJob]]
        if custom or self.key == "progress":
            items = [
                (rank(q), q.job.arrival, q.job.name, 1, q) for q in state.queued if q.remaining > 0
            ]
        else:  # rank() inlined: the cached 1 / speed of each job (every waiting job, every decision)
            cached = self._need.get
            items = [
                (
                    q.remaining
                    * (
                        h[3]
                        if (h := cached(id(q.job))) is not None
                        and h[0] is q.job
                        and h[4] == mode
                        and h[5] == resources
                        else need(q.job, resources, mode)[2]
                    ),
                    q.job.arrival,
                    q.job.name,
                    1,
                    q,
                )
                for q in state.queued
                if q.remaining > 0
            ]
        if preemptive:
            # When every waiting job fits the free machines in rank order, the walk below keeps
            # every running job and starts them all: skip reading the running jobs.
            items.sort(key=lambda x: x[:3])
            waiting = [e for *_, e in items]
            free0 = np.array(state.free, dtype=float)
            # A gang job takes its whole request, so waiting gangs that need more GPUs than are
            # free (beyond gang_placement's tolerance) cannot all start: skip the placement walk.
            over = False
            if waiting and "gpu" in resources and all(e.job.gang for e in waiting):
                total = sum(need(e.job, resources, mode)[1] for e in waiting)
                gi = resources.index("gpu")
                over = total > float(free0[:, gi].sum()) + TOL * max(1.0, total)
            if not over:
                fast = self._place(waiting, free0, resources, stop_at_unfit=True)  # type: ignore[arg-type]
                if all(a is not None for a in fast):
                    return Decision(tuple(a for a in fast if a is not None))
        running = list(state.running) if preemptive else []
        items += [(rank(r), r.job.arrival, r.job.name, 0, r) for r in running]
        items.sort(key=lambda x: x[:3])
        free = np.array(state.free, dtype=float)
        n_m = free.shape[0]
        gpu_only = "gpu" in resources and all(e.job.gpu_only for *_, e in items)
        # Phase 1: who runs, on pooled capacity (free plus what running jobs hold).
        chosen: list[QueuedJob] = []
        kept: set[str] = set()
        if gpu_only:  # GPU counts only: scalar arithmetic
            gi = resources.index("gpu")
            left = float(free[:, gi].sum()) + sum(need(r.job, resources, mode)[1] for r in running)
            left += TOL
            for *_, kind, e in items:
                if left < 1.0:
                    break
                g = need(e.job, resources, mode)[1]
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
        chosen: list[QueuedJob],
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
