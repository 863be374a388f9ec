"""Offline batch plans (OMRU and its baselines) and the policy that carries one out in the simulator.

A plan is a sequence of batches. Batch k runs after every job of batch k-1 has finished (a
barrier). Inside a batch each entry names a job, its GPU count and, optionally, the jobs that
must finish before it starts (``after``: several jobs in turn on one slice of GPUs, as in the
"sorting allocation" of OMRU's baselines). A ``Reuse`` lets a job of batch k+1 pre-train on the
GPUs a job of batch k leaves idle when it finishes before the batch's longest job (OMRU's GPU
reuse); at the barrier the job moves to its own GPU count (a restart: preempt and start again in
preemptive execution, a resize in elastic execution; in non-elastic execution it stays on the
slice's GPUs).

Completion times come from the layered model: ``epoch_table`` gives each job's epoch count and
epoch time at 1..G GPUs (G: the cluster's GPUs), with an epoch of ``samples_per_epoch`` samples
(default ``STEPS_PER_EPOCH``: the epoch of the jobs ``smdlab.model.epochs`` builds).
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from smdlab.errors import InvalidInput, check_positive
from smdlab.model.epochs import STEPS_PER_EPOCH
from smdlab.model.job import Job
from smdlab.policies.base import (
    Allocation,
    ClusterState,
    Decision,
    Execution,
    Placement,
    Policy,
)
from smdlab.solve.instance import job_speeds, task_vectors
from smdlab.solve.placement import Tasks, consolidated_tasks, first_fit_tasks, usage


@dataclass(frozen=True)
class Entry:
    """One job of a batch: its GPU count and the jobs that must finish before it starts."""

    job: str
    gpus: int
    after: tuple[str, ...] = ()


@dataclass(frozen=True)
class Reuse:
    """Job ``job`` (next batch) pre-trains ``epochs`` epochs on the ``gpus`` GPUs ``owner`` frees."""

    job: str
    owner: str
    gpus: int
    epochs: float
    slice_s: float


@dataclass(frozen=True)
class BatchPlan:
    """Batches of entries, the GPU reuses, and the makespan the plan predicts (s)."""

    batches: tuple[tuple[Entry, ...], ...]
    reuses: tuple[Reuse, ...] = ()
    makespan: float = float("nan")
    genes: tuple[int, ...] = field(default=(), compare=False)

    def batch_of(self) -> dict[str, int]:
        """Job name -> index of its batch."""
        return {e.job: k for k, batch in enumerate(self.batches) for e in batch}


@dataclass(frozen=True)
class EpochTable:
    """Per job: epochs E_j and epoch time t_j(g) (s) at g = 1..G (inf beyond the job's cap)."""

    names: tuple[str, ...]
    epochs: np.ndarray  # (n,)
    epoch_time: np.ndarray  # (n, G + 1); column g is g GPUs, column 0 unused (inf)

    @property
    def gpus(self) -> int:
        """G: the most GPUs a plan may use."""
        return self.epoch_time.shape[1] - 1

    def completion(self, g: np.ndarray | int) -> np.ndarray:
        """E_j * t_j(g_j) for every job (g: one count per job, or one for all)."""
        g = np.broadcast_to(np.asarray(g, dtype=np.int64), self.epochs.shape)
        return self.epochs * self.epoch_time[np.arange(len(self.names)), g]


def epoch_table(
    jobs: Sequence[Job],
    remaining: Sequence[float],
    gpus: int,
    mode: str,
    samples_per_epoch: float = STEPS_PER_EPOCH,
) -> EpochTable:
    """Epoch counts and epoch times of ``jobs`` at 1..gpus GPUs from the layered model."""
    check_positive("samples_per_epoch", samples_per_epoch)
    n = len(jobs)
    t = np.full((n, gpus + 1), np.inf)
    for i, job in enumerate(jobs):
        speeds = job_speeds(job, mode)
        cap = min(gpus, job.max_workers)
        g = np.arange(1, cap + 1)
        if job.arch == "allreduce":
            per_g = speeds[g - 1, 0]
        else:  # a PS job: one PS per worker, up to its cap (the bundle convention)
            per_g = speeds[g - 1, np.minimum(g, job.max_ps) - 1]
        t[i, 1 : cap + 1] = samples_per_epoch / per_g
    epochs = np.array(remaining, dtype=float) / samples_per_epoch
    return EpochTable(tuple(j.name for j in jobs), epochs, t)


def spare_to_longest(table: EpochTable, members: Sequence[int], gpus: int) -> dict[int, int]:
    """One GPU each, then each remaining GPU to the job with the largest completion time."""
    g = {i: 1 for i in members}
    c = {i: float(table.epochs[i] * table.epoch_time[i, 1]) for i in members}
    for _ in range(gpus - len(members)):
        open_ = [i for i in members if g[i] < gpus and np.isfinite(table.epoch_time[i, g[i] + 1])]
        if not open_:
            break
        i = max(open_, key=lambda k: (c[k], -k))
        g[i] += 1
        c[i] = float(table.epochs[i] * table.epoch_time[i, g[i]])
    return g


def sorting_allocation(table: EpochTable, gpus: int, longest_first: bool) -> BatchPlan:
    """More jobs than GPUs: one GPU each; the first G jobs in order open a slice, every later job
    goes after the job ending last on the slice that ends first (list scheduling)."""
    n = len(table.names)
    c1 = table.completion(1)
    order = sorted(range(n), key=lambda i: (-c1[i] if longest_first else c1[i], i))
    slices: list[list[int]] = []
    ends: list[float] = []
    entries = []
    for i in order:
        if len(slices) < gpus:
            slices.append([i])
            ends.append(float(c1[i]))
            entries.append(Entry(table.names[i], 1))
            continue
        k = int(np.argmin(ends))
        entries.append(Entry(table.names[i], 1, (table.names[slices[k][-1]],)))
        slices[k].append(i)
        ends[k] += float(c1[i])
    return BatchPlan((tuple(entries),), (), float(max(ends)))


class BatchPlanPolicy(Policy):
    """Carries out a ``BatchPlan`` (built by ``plan``) in the simulator; subclasses build plans.

    The plan covers the jobs queued at the first decision (offline batch: all jobs known at 0);
    jobs that arrive later are planned as a new set run after the current one. Jobs start on
    consolidated placements (fewest machines); an all-reduce job gets p = 0, a PS job one PS per
    worker up to its cap. Assumption: where the planned workers do not fit (a resource other than
    GPUs binds, or a worker needs more than one GPU), the job starts with the most that fit.
    """

    name = "batch_plan"
    decide_on_completion = True  # a barrier can move a running job while nothing is queued
    execution: Execution = "non_elastic"
    executions: tuple[Execution, ...] = ("non_elastic", "preemptive", "elastic")
    samples_per_epoch: float = STEPS_PER_EPOCH

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        """Forget the plans (the simulator calls this before a run)."""
        self.plans: list[BatchPlan] = []
        self._planned: set[str] = set()

    @abstractmethod
    def plan(self, table: EpochTable) -> BatchPlan:
        """The plan for the jobs of ``table`` (each subclass's rule)."""

    def _gpu_total(self, state: ClusterState) -> int:
        cluster = state.cluster
        if "gpu" not in cluster.resources:
            raise InvalidInput(f"policy {self.name!r} needs a 'gpu' resource in the cluster")
        return round(float(cluster.capacity["gpu"]))

    def decide(self, state: ClusterState) -> Decision:
        """Start (or move) the jobs the plan makes active now."""
        new = [q for q in state.queued if q.job.name not in self._planned]
        if new:
            G = self._gpu_total(state)
            table = epoch_table(
                [q.job for q in new],
                [q.remaining for q in new],
                G,
                state.mode,
                self.samples_per_epoch,
            )
            self.plans.append(self.plan(table))
            self._planned.update(q.job.name for q in new)
        queued = {q.job.name: q for q in state.queued}
        running = {r.job.name: r for r in state.running}
        unfinished = set(queued) | set(running)
        want: dict[str, int] = {}
        for plan in self.plans:
            names = [{e.job for e in b} for b in plan.batches]
            k = next((i for i, b in enumerate(names) if b & unfinished), None)
            if k is None:
                continue
            for e in plan.batches[k]:
                if e.job in unfinished and not (set(e.after) & unfinished):
                    want[e.job] = e.gpus
            for ru in plan.reuses:
                if (
                    ru.owner in names[k]
                    and ru.owner not in unfinished
                    and ru.job in unfinished
                    and k + 1 < len(names)
                    and ru.job in names[k + 1]
                ):
                    want.setdefault(ru.job, ru.gpus)
            break  # one plan at a time: a later set waits for the earlier one
        free = np.array(state.free, dtype=float)
        m = free.shape[0]
        allocations: list[Allocation] = []
        moved: list[str] = []
        moves = sorted(
            (
                (name, g)
                for name, g in want.items()
                if state.preemptive and name in running and running[name].workers != g
            ),
            key=lambda kv: (-kv[1], kv[0]),
        )
        # One move at a time: a job that cannot move keeps resources nobody else has touched.
        for name, g in moves:
            r = running[name]
            a, gm = task_vectors(r.job, state.cluster.resources)
            trial = free + usage(r.placement.tasks, a, gm, m)
            tasks, w, ps = _place(trial, r.job, min(g, r.job.max_workers), a, gm, shrink=False)
            if tasks is None:
                continue
            free = trial - usage(tasks, a, gm, m)
            allocations.append(Allocation(name, w, ps, Placement(tasks)))
            moved.append(name)
        for name, g in sorted(want.items(), key=lambda kv: (-kv[1], kv[0])):
            if name in running:
                continue
            job = queued[name].job
            a, gm = task_vectors(job, state.cluster.resources)
            tasks, w, ps = _place(free, job, min(g, job.max_workers), a, gm, shrink=True)
            if tasks is None:
                continue
            free -= usage(tasks, a, gm, m)
            allocations.append(Allocation(name, w, ps, Placement(tasks)))
        preempt: list[str] = []
        if state.execution != "elastic":
            preempt = moved  # preemptive: restart on the new GPU count (work done is kept)
        return Decision(tuple(allocations), tuple(preempt), note=self.name)


def _place(
    free: np.ndarray, job: Job, g: int, a: np.ndarray, gm: np.ndarray, shrink: bool
) -> tuple[Tasks | None, int, int]:
    """Tasks for g workers (fewest machines), or, with ``shrink``, the most workers below g that
    fit (other resources than GPUs may bind); PS jobs get one PS per worker up to their cap."""
    for w in range(g, 0 if shrink else g - 1, -1):
        ps = 0 if job.arch == "allreduce" else min(w, job.max_ps)
        tasks = consolidated_tasks(free, w, ps, a, gm) or first_fit_tasks(free, w, ps, a, gm)
        if tasks:
            return tasks, w, ps
    return None, 0, 0


def plan_makespan(batches: Sequence[Sequence[int]], c: np.ndarray) -> float:
    """Sum over batches of the batch's longest completion time."""
    return float(sum(max(c[i] for i in b) for b in batches if len(b)))


__all__ = [
    "BatchPlan",
    "BatchPlanPolicy",
    "Entry",
    "EpochTable",
    "Reuse",
    "epoch_table",
    "plan_makespan",
    "sorting_allocation",
    "spare_to_longest",
]
