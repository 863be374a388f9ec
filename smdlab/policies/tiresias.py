"""Tiresias: discretised two-dimensional least-attained-service (2D-LAS) with preemption."""

from __future__ import annotations

import bisect
import itertools
import math
from collections.abc import Sequence

import numpy as np

from smdlab.errors import InvalidInput, check_int, check_positive
from smdlab.model.cluster import Cluster
from smdlab.model.job import Job
from smdlab.policies.base import (
    Allocation,
    ClusterState,
    Decision,
    Placement,
    Policy,
    QueuedJob,
    RunningJob,
)
from smdlab.solve.instance import task_vectors
from smdlab.solve.placement import TOL, capacity_matrix, consolidated_tasks, usage

DEFAULT_THRESHOLDS: tuple[float, ...] = (
    3600.0,
)  # GPU-seconds: two queues, as in Tiresias' public simulator example
DEFAULT_STARVE_MULTIPLE = 8.0  # assumed: promote after waiting 8x the time the job has run


class Tiresias(Policy):
    """Tiresias' Discretised 2D-LAS (Gu et al., NSDI 2019), gang-scheduled parameter-server jobs.

    Rule (docs/simulator.md, Policies): priority by attained service (GPUs x time), discretised into queues by
    thresholds; jobs in a higher queue preempt lower ones; FIFO within a queue; a starvation
    guard promotes jobs that waited longer than a multiple of their run time. It needs no
    knowledge of job durations or speeds.

    Parameters and the assumptions behind them:
    - thresholds: queue boundaries in GPU-seconds of attained service, ascending; default
      (3600,), two queues (the example configuration of Tiresias' public simulator). A job is
      in queue k = number of thresholds <= its attained service (queue 0 is the highest).
    - starve_multiple: a queued job that has run before (executed time > 0) and has waited at
      least ``starve_multiple`` times its executed time since it (re-)entered the queue is
      promoted to queue 0: its service is counted from the promotion on (assumed default 8; the
      paper leaves the knob to the operator). Executed time = attained GPU-seconds / requested
      GPUs (Tiresias always runs a job on its requested GPUs).
    - Requested allocation (the paper's jobs ask for a GPU count): workers = the job's
      ``requested_workers`` (the trace's or workload's GPU count; ``max_workers`` when the job
      gives none), capped by ``max_workers`` of the policy (None: no extra cap), and PSs =
      clamp(ceil(workers * ps_per_worker), 1, job.max_ps) with ps_per_worker = 1.0 by default
      (assumed: one PS per worker, the bundle convention of the other classic baselines and the
      workloads' reference allocation (n, n)). GPUs = workers x the worker's GPU demand. A
      request the whole empty cluster cannot hold is lowered to the most workers it can (else
      the job would wait forever).
    - FIFO within a queue is by arrival time (ties by name).
    - Admission walks jobs in priority order (queue, arrival) over the pooled capacity of the
      cluster (free plus what running jobs hold), skipping jobs that do not fit (work
      conserving, as in the paper's simulator). An admitted queued job is placed with
      consolidation (fewest machines, tasks spread evenly; else first fit) into free capacity;
      only if that fails are running jobs of a strictly lower queue than the newcomer released
      (lowest priority first) until it fits, and only released jobs are preempted. Running jobs
      of the same queue are never preempted (avoids churn within FIFO order).
    - Attained service of a running job is the value the simulator reports at the state's time;
      the queue of a running job is re-evaluated at every decision point (the simulator's
      optional periodic decision points make demotion timely).
    - Execution: natural mode ``preemptive`` (the paper's jobs are stopped and resumed from
      checkpoints); in ``non_elastic`` mode (a controlled comparison) it never preempts, as with
      ``preemption=False``.
    - The policy remembers promotions between calls; ``reset()`` (called by the simulator at the
      start of a run), or a state whose time goes backwards, clears that memory. The elastic flag is ignored (gang allocations are fixed).
    """

    name = "tiresias"
    execution = "preemptive"
    executions = ("non_elastic", "preemptive")

    def __init__(
        self,
        thresholds: Sequence[float] = DEFAULT_THRESHOLDS,
        starve_multiple: float = DEFAULT_STARVE_MULTIPLE,
        max_workers: int | None = None,
        ps_per_worker: float = 1.0,
        preemption: bool = True,
    ):
        if isinstance(thresholds, (str, bytes)) or not isinstance(thresholds, Sequence):
            raise InvalidInput(
                f"thresholds must be a list of attained-service limits (GPU-seconds), got {thresholds!r}"
            )
        th = [check_positive(f"thresholds[{i}]", t) for i, t in enumerate(thresholds)]
        if any(b <= a for a, b in itertools.pairwise(th)):
            raise InvalidInput(f"thresholds must be strictly ascending, got {tuple(thresholds)!r}")
        self.thresholds = tuple(th)
        self.starve_multiple = check_positive("starve_multiple", starve_multiple, allow_inf=True)
        self.max_workers = None if max_workers is None else check_int("max_workers", max_workers, 1)
        self.ps_per_worker = check_positive("ps_per_worker", ps_per_worker)
        if not isinstance(preemption, (bool, np.bool_)):
            raise InvalidInput(f"preemption must be True or False, got {preemption!r}")
        self.preemption = bool(preemption)
        self._base: dict[str, float] = {}  # service already attained when the job was promoted
        self._requests: dict[tuple[int, int], tuple] = {}
        self._last_time = -math.inf

    def reset(self) -> None:
        """Forget promotions (the simulator calls this at the start of a run)."""
        self._base.clear()
        self._requests.clear()
        self._last_time = -math.inf

    def request(self, job: Job, cluster: Cluster | None = None) -> tuple[int, int]:
        """The (workers, PSs) Tiresias runs ``job`` on (within what the empty ``cluster`` could hold)."""
        w = job.requested_workers if job.requested_workers is not None else job.max_workers
        w = w if self.max_workers is None else min(w, self.max_workers)
        if cluster is None:
            return w, self._ps_for(job, w)
        key = (id(job), id(cluster))
        hit = self._requests.get(key)
        if hit is not None and hit[0] is job and hit[1] is cluster:
            return hit[2]
        cap = capacity_matrix(cluster)
        a, g = task_vectors(job, cluster.resources)
        while w > 1 and consolidated_tasks(cap, w, self._ps_for(job, w), a, g) is None:
            w -= 1  # a request larger than the whole cluster would wait forever
        out = (w, self._ps_for(job, w))
        self._requests[key] = (job, cluster, out)
        return out

    def _ps_for(self, job: Job, workers: int) -> int:
        return min(job.max_ps, max(1, math.ceil(workers * self.ps_per_worker - 1e-12)))

    def queue_of(self, name: str, attained: float) -> int:
        """Queue index (0 = highest priority) for a job with ``attained`` GPU-seconds."""
        return bisect.bisect_right(self.thresholds, attained - self._base.get(name, 0.0))

    def decide(self, state: ClusterState) -> Decision:
        """Start jobs by 2D-LAS priority, preempting lower queues when a newcomer needs room."""
        if state.time < self._last_time:
            self._base.clear()
        self._last_time = state.time
        cluster = state.cluster
        n_m = state.free.shape[0]

        # Starvation guard, then each job's queue.
        for q in state.queued:
            w, _ = self.request(q.job, cluster)
            gpus = w * q.job.worker_demand.get("gpu", 0.0)
            gpus = gpus if gpus > 0 else w  # CPU-only workers: count tasks instead
            executed = q.attained_service / gpus
            waited = state.time - q.last_queued
            if executed > 0 and waited >= self.starve_multiple * executed:
                self._base[q.job.name] = q.attained_service
        live = {q.job.name for q in state.queued} | {r.job.name for r in state.running}
        for name in list(self._base):
            if name not in live:
                del self._base[name]

        # (priority key, kind, entry): kind 0 running, 1 queued
        items: list[tuple[tuple[int, float, str], int, RunningJob | QueuedJob]] = []
        for r in state.running:
            items.append(
                ((self.queue_of(r.job.name, r.attained_service), r.job.arrival, r.job.name), 0, r)
            )
        for q in state.queued:
            if q.remaining > 0:
                items.append(
                    (
                        (self.queue_of(q.job.name, q.attained_service), q.job.arrival, q.job.name),
                        1,
                        q,
                    )
                )
        items.sort(key=lambda x: x[0])

        # Admission on pooled capacity (free + held by running jobs).
        pool = np.asarray(state.free, dtype=float).sum(axis=0)
        needs = []
        for _key, kind, e in items:
            a, g = task_vectors(e.job, cluster.resources)
            w, p = (e.workers, e.ps) if isinstance(e, RunningJob) else self.request(e.job, cluster)
            needs.append(w * a + p * g)
            if kind == 0:
                pool = pool + needs[-1]
        admitted = []
        for (key, kind, e), need in zip(items, needs):
            if np.all(pool + TOL >= need):
                pool = pool - need
                admitted.append((key, kind, e))
        admitted_running = {e.job.name for _, kind, e in admitted if kind == 0}
        # Preemption candidates: running jobs not admitted, lowest priority first.
        victims = [
            (key, e)
            for key, kind, e in reversed(items)
            if isinstance(e, RunningJob) and e.job.name not in admitted_running
        ]

        free = np.array(state.free, dtype=float, copy=True)
        released: list[str] = []
        allocations = []
        for key, kind, e in admitted:
            if kind == 0:
                continue
            a, g = task_vectors(e.job, cluster.resources)
            w, p = self.request(e.job, cluster)
            tasks = consolidated_tasks(free, w, p, a, g)
            if tasks is None and self.preemption and state.preemptive:
                trial = free.copy()
                chosen = []
                for vkey, v in victims:
                    if v.job.name in released or vkey[0] <= key[0]:
                        continue
                    trial = trial + usage(
                        v.placement.tasks, *task_vectors(v.job, cluster.resources), n_m
                    )
                    chosen.append(v.job.name)
                    tasks = consolidated_tasks(trial, w, p, a, g)
                    if tasks is not None:
                        free = trial
                        released.extend(chosen)
                        break
            if tasks is None:
                continue
            free = free - usage(tasks, a, g, n_m)
            allocations.append(Allocation(e.job.name, w, p, Placement(tasks)))
        return Decision(tuple(allocations), tuple(released))
