"""Chronus: deadline-aware lease scheduling (Gao et al., "Chronus: A Novel Deadline-aware Scheduler
for Deep Learning Training Jobs", ACM SoCC 2021).

Written in our own code from the authors' artifact (S-Lab-System-Group/ChronusArtifact, ``code/``,
``alg/scheduler/time_aware_with_lease.py`` and ``solver.py``; MIT licence, Copyright (c) 2021
S-Lab System Group). docs/deadlines.md gives the rules and every difference. In short, on a
clock of minutes (the policy acts at whole minutes and asks to be woken at the next one while
jobs wait):

- Classes: accepted SLO, unaccepted SLO, best-effort, and demoted (lowest). A job's estimate is
  its duration x (1 + restart minutes / lease) x 1.1; it needs ceil(estimate / lease) leases.
- Admission (every 5 minutes, for the jobs submitted since): the greedy packing check
  (``_lease.packable``) over the future leases; if the job does not pack by its last deadline, a
  binary search for the earliest lease it packs by; later than its last deadline: unaccepted.
- Every lease (``lease_s``, 20 minutes): every running job is released; the lease MILP
  (``_lease.milp_selection``, HiGHS or Gurobi, ``time_limit`` seconds) picks the accepted jobs
  that hold this lease and each one's deadline option; with no solution in time, the greedy
  fall-back (``_lease.greedy_selection``, cached plans kept).
- Every 5 minutes: unaccepted jobs that can finish within the lease get spot GPUs (forced,
  preempting opportunistic jobs); a waiting SLO job that can no longer meet its (admitted)
  deadline is demoted; free GPUs go to waiting jobs by force, then class (unaccepted and
  best-effort before accepted, demoted last), then least remaining GPU-time, then submission.
- Odd minutes: free GPUs go to waiting jobs by class (demoted, accepted, unaccepted,
  best-effort), then most remaining GPU-time first (the artifact's ``filling_jobs`` order).
- A running job past its estimate becomes unaccepted and forced (it runs first).
Placement: a gang job on its request or not at all (``toolkit.gang_placement``: one machine
when it fits, else spread; GPU-only jobs fit when the free GPUs add up, as the artifact's local
search placement, whose speed factor is 1). Execution: ``elastic``, only so that the simulator
asks it at every lease boundary also when no job waits; it never resizes a running job (it
preempts and starts, as a preemptive policy does).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import numpy as np

from smdlab.errors import check_choice, check_positive
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
from smdlab.policies.deadline import _lease
from smdlab.policies.ps.srtf import request
from smdlab.policies.toolkit import gang_placement, max_bundles
from smdlab.solve.backends import BACKENDS
from smdlab.solve.instance import job_speeds, task_vectors
from smdlab.solve.placement import placement_usage, usage

LOWEST, ACCEPTED, UNACCEPTED, BEST = -1, 0, 1, 2
ARRIVAL_STEP_MIN = 5  # the artifact's BEST_SLOT: arrivals and forced runs every 5 minutes
PADDING = 1.1  # estimate = duration x (1 + overhead / lease) x 1.1


def gpu_bin(g: int) -> int:
    """GPUs a job counts for in the lease MILP: 3-4 -> 4, 5-7 -> 8 (the artifact's convert_to_bin)."""
    return 4 if g in (3, 4) else 8 if g in (5, 6, 7) else g


@dataclass
class JobPlan:
    """What the policy keeps about one job (minutes)."""

    job: Job
    gpus: int
    submit: float
    duration: float
    est: int
    prio: int
    deadlines: tuple[float, ...] = ()  # option deadlines, minutes after submission
    values: tuple[float, ...] = ()
    deadline: float = math.inf  # the admitted first deadline (rewritten at admission)
    still: int = 0  # leases still needed
    mip: bool = True  # takes part in the lease MILP
    force: bool = False
    fake_force: bool = False
    occupy: bool = False  # holds the current lease
    cache: tuple[int, set[int]] | None = None  # (option, absolute lease indices)
    emergence: float = 0.0
    progress: float = 0.0  # minutes of work done at its request
    speed: float = 1.0  # samples per second at its request


@dataclass
class _Step:
    """One decision: the free capacity as the policy plans it, and what it changes."""

    state: ClusterState
    free: np.ndarray
    running: dict[str, RunningJob]
    released: set[str] = field(default_factory=set)
    starts: dict[str, Allocation] = field(default_factory=dict)

    def gpus_free(self) -> float:
        res = self.state.cluster.resources
        return float(self.free[:, res.index("gpu")].sum()) if "gpu" in res else math.inf

    def release(self, name: str) -> None:
        r = self.running[name]
        self.free += usage(
            r.placement.tasks,
            *task_vectors(r.job, self.state.cluster.resources),
            self.free.shape[0],
        )
        self.released.add(name)

    def is_running(self, name: str) -> bool:
        return name in self.starts or (name in self.running and name not in self.released)

    def run(self, job: Job, keep: bool = True) -> bool:
        """Run ``job``: a released running job keeps its placement if ``keep``; else place it anew."""
        name = job.name
        if self.is_running(name):
            return True
        res = self.state.cluster.resources
        r = self.running.get(name)
        if keep and r is not None:
            use = usage(r.placement.tasks, *task_vectors(job, res), self.free.shape[0])
            if np.all(self.free + 1e-9 >= use):
                self.free -= use
                self.released.discard(name)
                return True
        if job.gang:
            pl = gang_placement(job, self.free, res)
            w, p = job.gang_allocation
        else:
            n, pl = max_bundles(job, self.free, res, request(job)[0])
            w = p = n
        if pl is None or w == 0:
            return False
        self.free -= placement_usage(job, pl, self.free.shape[0], res)
        self.starts[name] = Allocation(name, w, p, pl)
        return True


class Chronus(Policy):
    """Chronus' lease scheduler (module docstring; docs/deadlines.md)."""

    name = "chronus"
    # Elastic only so that the simulator asks it at every lease boundary, also when no job waits
    # (it releases every running job there); it never resizes a running job.
    execution: Execution = "elastic"
    executions = ("non_elastic", "preemptive", "elastic")

    def __init__(
        self, lease_s: float = 1200.0, time_limit: float = 5.0, solver: str = "milp",
        backend: str = "highs",
    ) -> None:  # fmt: skip
        self.lease_s = check_positive("lease_s", lease_s)
        self.time_limit = check_positive("time_limit", time_limit)
        self.solver = check_choice("solver", solver, ("milp", "greedy"))
        self.backend = check_choice("backend", backend, BACKENDS)
        self.reset()

    def reset(self) -> None:
        """Forget every job and counter (the simulator calls this before a run)."""
        self.plans: dict[str, JobPlan] = {}
        self.unaccepted_count = 0
        self.last_minute = -1
        self.spot = 0.0
        self.lease_solves: list[tuple[float, str, int, float]] = []  # (time, status, rows, s)

    # ---- per-job estimates (UniSched overrides these) -----------------------------------------
    def duration_min(self, job: Job, state: ClusterState) -> float:
        """The job's duration in minutes at its request, as the scheduler knows it (the trace's)."""
        w, p = request(job)
        return float(job.samples / job_speeds(job, state.mode)[w - 1, p - 1]) / 60.0

    def observe_finished(self, plan: JobPlan, state: ClusterState) -> None:
        """Called once per job that finished since the last decision (Chronus learns nothing)."""

    def _plan(self, q: QueuedJob | RunningJob, state: ClusterState) -> JobPlan:
        job = q.job
        w, p = request(job)
        wv, pv = task_vectors(job, state.cluster.resources)
        res = state.cluster.resources
        g = round(float((w * wv + p * pv)[res.index("gpu")])) if "gpu" in res else 1
        # a request larger than the cluster runs on what fits (bundles), as in every policy here
        g = min(g, int(self._total(state)))
        d = self.duration_min(job, state)
        restart = (job.restart_s if job.restart_s is not None else state.restart_s) / 60.0
        lease = self.lease_s / 60.0
        est = int(d * (1 + restart / lease) * PADDING)
        plan = JobPlan(
            job, g, job.arrival / 60.0, d, max(est, 1), BEST if job.slo is None else ACCEPTED
        )
        plan.speed = float(job_speeds(job, state.mode)[w - 1, p - 1])
        if job.slo is not None:
            plan.deadlines = tuple(x / 60.0 for x in job.slo.deadlines_s)
            plan.values = job.slo.values
            plan.deadline = plan.deadlines[0]
        else:
            plan.mip = False
        plan.still = math.ceil(plan.est / lease)
        return plan

    # ---- the decision --------------------------------------------------------------------------
    def decide(self, state: ClusterState) -> Decision:
        """Act at whole minutes as the artifact's loop does; ask to be woken at the next one."""
        t = state.time
        minute = math.floor(t / 60.0 + 1e-9)
        on_minute = abs(t - minute * 60.0) < 1e-6
        idle = False  # the artifact waits for its 5-minute marks even on an idle cluster
        if not on_minute or minute == self.last_minute:
            odd = minute + 1 if minute % 2 == 0 else minute + 2
            mark = (minute // ARRIVAL_STEP_MIN + 1) * ARRIVAL_STEP_MIN
            return Decision(wake_at=min(odd, mark) * 60.0)
        self.last_minute = minute
        step = _Step(
            state, np.array(state.free, dtype=float), {r.job.name: r for r in state.running}
        )
        self._sync(state, step)
        lease_min = self.lease_s / 60.0
        at_lease = on_minute and (minute % lease_min) < 1e-9
        if at_lease and state.preemptive:
            self._lease_flush(step, minute)
        if minute % ARRIVAL_STEP_MIN == 0 or idle:
            self._admit(step, minute)
            self._flush_pending(step, minute)
        if minute % 2 == 1 or idle:
            self._fill(step)
        preempt = tuple(sorted(step.released)) if state.preemptive else ()
        return Decision(
            tuple(step.starts.values()), preempt, wake_at=self._next_minute(step, minute)
        )

    def _next_minute(self, step: _Step, minute: int) -> float:
        """The next minute anything can change: a 5-minute mark, or an odd minute that can fill."""
        nxt = (minute // ARRIVAL_STEP_MIN + 1) * ARRIVAL_STEP_MIN
        if step.gpus_free() > 0 and self._waiting(step):
            nxt = min(nxt, minute + 1 if minute % 2 == 0 else minute + 2)
        return nxt * 60.0

    def _sync(self, state: ClusterState, step: _Step) -> None:
        """New jobs get a plan; progress is read; finished jobs are forgotten; overdue jobs forced."""
        lease_min = self.lease_s / 60.0
        entries: list[QueuedJob | RunningJob] = [*state.running, *state.queued]
        seen = {e.job.name for e in entries}
        for name in [n for n in self.plans if n not in seen]:  # finished since: learn first
            self.observe_finished(self.plans.pop(name), state)
        for e in entries:
            name = e.job.name
            plan = self.plans.get(name)
            if plan is None:
                plan = self.plans[name] = self._plan(e, state)
                plan.prio = -99  # not admitted yet
            if plan.gpus > 0:  # minutes held, restart pauses included (the artifact's progress)
                plan.progress = e.attained_service / plan.gpus / 60.0
            else:
                plan.progress = (e.job.samples - e.remaining) / plan.speed / 60.0
        minute = state.time / 60.0
        for name in step.running:
            plan = self.plans[name]
            if plan.prio == -99:
                continue
            at_lease = abs(minute / lease_min - round(minute / lease_min)) < 1e-9
            if plan.progress >= plan.est and (at_lease or not plan.occupy):
                plan.prio, plan.cache, plan.fake_force, plan.mip = UNACCEPTED, None, True, False
            elif plan.prio == ACCEPTED and not (plan.occupy or plan.force):
                self._shrink(plan)

    def _shrink(self, plan: JobPlan) -> None:
        """Fewer leases needed after progress outside its leases: drop the earliest planned ones."""
        lease_min = self.lease_s / 60.0
        still = math.ceil((plan.est - plan.progress) / lease_min)
        if still < plan.still:
            if plan.cache is not None:
                leases = plan.cache[1]
                for idx in sorted(leases)[: plan.still - still]:
                    leases.discard(idx)
            plan.still = still

    # ---- the lease flush -----------------------------------------------------------------------
    def _rows(self, base: int, cached: bool | None) -> list[_lease.Row]:
        lease_min = self.lease_s / 60.0
        rows = []
        for name, p in self.plans.items():
            if p.prio != ACCEPTED or not p.mip or p.still <= 0:
                continue
            if cached is not None and (p.cache is not None) != cached:
                continue
            for vid, (d, v) in enumerate(zip(p.deadlines, p.values, strict=True)):
                maxl = math.floor((d + p.submit) / lease_min + 1e-9) - base
                rows.append(_lease.Row(name, vid, gpu_bin(p.gpus), p.still, maxl, v))
        return rows

    def _cached_free(self, base: int, total: float) -> list[float]:
        """GPUs per lease from ``base`` left by the cached plans of accepted jobs."""
        width = max(
            [
                max(p.cache[1]) - base + 1
                for p in self.plans.values()
                if p.cache and p.cache[1] and p.prio == ACCEPTED and p.mip
            ]
            + [0]
        )
        free = [total] * width
        for p in self.plans.values():
            if p.cache is None or p.prio != ACCEPTED or not p.mip or p.still <= 0:
                continue
            for idx in p.cache[1]:
                if idx >= base:
                    free[idx - base] -= p.gpus
        return free

    def _total(self, state: ClusterState) -> float:
        res = state.cluster.resources
        return float(state.cluster.capacity_vector[res.index("gpu")]) if "gpu" in res else 1e9

    def _lease_flush(self, step: _Step, minute: int) -> None:
        lease_min = self.lease_s / 60.0
        k = round(minute / lease_min)
        for name in list(step.running):
            step.release(name)
            plan = self.plans[name]
            plan.occupy = plan.force = False
            if plan.prio == ACCEPTED:
                self._shrink(plan)
        for p in self.plans.values():
            if p.cache is not None:
                p.cache[1].difference_update({i for i in p.cache[1] if i < k})
        total = self._total(step.state)
        rows = self._rows(k, None)
        chosen: dict[str, tuple[int, list[int]]] | None = None
        t0 = time.perf_counter()
        status = "greedy"
        if rows and self.solver == "milp":
            sign = -1 if self.unaccepted_count > 0 else 1
            start = {
                n: (p.cache[0], sorted(i - k for i in p.cache[1]))
                for n, p in self.plans.items()
                if p.cache is not None
                and p.prio == ACCEPTED
                and p.mip
                and len(p.cache[1]) == p.still
            }
            chosen, status = _lease.milp_selection(
                rows, [], total, use_now=sign, time_limit=self.time_limit, backend=self.backend,
                start=start,
            )  # fmt: skip
            if chosen is not None:
                for name, (vid, cols) in chosen.items():
                    self.plans[name].cache = (vid, {k + c for c in cols})
        if chosen is None and rows:  # the greedy fall-back: cached plans kept
            fresh = _lease.greedy_selection(
                self._rows(k, False), self._cached_free(k, total), total
            )
            for name, (vid, cols) in fresh.items():
                self.plans[name].cache = (vid, {k + c for c in cols})
            for p in self.plans.values():
                if p.prio == ACCEPTED and p.cache is None:
                    p.prio = UNACCEPTED
        if rows:
            self.lease_solves.append((step.state.time, status, len(rows), time.perf_counter() - t0))
        run = [
            p
            for p in self.plans.values()
            if p.prio == ACCEPTED and p.cache is not None and k in p.cache[1] and p.prio != -99
        ]
        guarantee = 0.0
        for p in sorted(run, key=lambda p: -p.gpus):
            if step.run(p.job):
                p.occupy = True
                p.still -= 1
                guarantee += p.gpus
        self.spot = total - guarantee
        self.unaccepted_count = sum(1 for p in self.plans.values() if p.prio == UNACCEPTED)

    # ---- arrivals ------------------------------------------------------------------------------
    def _admit(self, step: _Step, minute: int) -> None:
        lease_min = self.lease_s / 60.0
        base = math.floor(minute / lease_min + 1e-9) + 1
        total = self._total(step.state)
        new = sorted(
            (p for p in self.plans.values() if p.prio == -99 and p.submit <= minute + 1e-9),
            key=lambda p: p.submit,
        )
        if not new:
            return
        cached = self._cached_free(base, total)
        rows = self._rows(base, False)
        if not _lease.packable(rows, cached, total):  # re-plan the uncached jobs first
            fresh, _ = _lease.milp_selection(
                rows, cached, total, time_limit=self.time_limit, backend=self.backend
            )
            if fresh is None:
                fresh = _lease.greedy_selection(rows, cached, total)
            for name, (vid, cols) in fresh.items():
                self.plans[name].cache = (vid, {base + c for c in cols})
            cached = self._cached_free(base, total)
            rows = self._rows(base, False)
        for p in new:
            if p.job.slo is None:
                p.prio = BEST
                continue
            p.prio = ACCEPTED
            mine = [
                _lease.Row(
                    p.job.name,
                    vid,
                    gpu_bin(p.gpus),
                    p.still,
                    math.floor((d + p.submit) / lease_min + 1e-9) - base,
                    v,
                )
                for vid, (d, v) in enumerate(zip(p.deadlines, p.values, strict=True))
            ]
            ok = mine[-1].req <= mine[-1].maxl and _lease.packable(rows + mine, cached, total)
            if not ok:
                last = mine[-1]
                left = max(last.maxl, last.req)
                right = max([r.maxl for r in rows + mine] + [len(cached)]) + p.still + 1
                while left < right:
                    mid = (left + right) // 2
                    trial = [
                        *mine[:-1],
                        _lease.Row(last.job, last.vid, last.res, last.req, mid, last.value),
                    ]
                    if _lease.packable(rows + trial, cached, total):
                        right = mid
                    else:
                        left = mid + 1
                mine[-1] = _lease.Row(last.job, last.vid, last.res, last.req, right, last.value)
                if lease_min * (right + base) - p.submit > p.deadlines[-1] + 1e-9:
                    # Rejected; its rows stay for the rest of this batch (the artifact's phantom).
                    p.prio = UNACCEPTED
                    self.unaccepted_count += 1
                    rows += mine
                    continue
            p.deadline = lease_min * (mine[-1].maxl + base) - p.submit
            rows += mine

    # ---- every 5 minutes and odd minutes -------------------------------------------------------
    def _waiting(self, step: _Step) -> list[JobPlan]:
        return [p for n, p in self.plans.items() if p.prio != -99 and not step.is_running(n)]

    def _emergence(self, p: JobPlan, minute: float) -> None:
        if (
            p.prio != BEST
            and p.prio != LOWEST
            and p.deadline + p.submit < minute + p.duration - p.progress
        ):
            p.prio = LOWEST
        if p.prio in (BEST, UNACCEPTED):
            p.emergence = -(p.est - p.progress) * p.gpus
        else:
            p.emergence = -(p.deadline + p.submit - minute - p.est + p.progress) * p.gpus

    @staticmethod
    def _best_key(p: JobPlan) -> tuple:
        return (p.fake_force, min(p.prio, UNACCEPTED), p.emergence, -p.submit, p.prio)

    def _flush_pending(self, step: _Step, minute: int) -> None:
        lease_min = self.lease_s / 60.0
        cur = math.floor(minute / lease_min + 1e-9) + 1
        left = cur * lease_min - minute
        waiting = self._waiting(step)
        cands = [p for p in waiting if p.prio == UNACCEPTED and p.duration - p.progress <= left]
        for p in cands:
            p.emergence = -(p.duration - p.progress) * p.gpus
        spot = self.spot - sum(p.gpus for p in waiting if p.prio == ACCEPTED and p.force)
        for p in sorted(cands, key=lambda p: (-p.emergence, p.submit)):
            if p.gpus <= spot:
                spot -= p.gpus
                p.force = True
                if p.submit >= (cur - 1) * lease_min:
                    p.prio = ACCEPTED
                p.mip = False
        for p in waiting:
            self._emergence(p, minute)
        forced = [p for p in waiting if p.force]
        need = sum(p.gpus for p in forced)
        if need > step.gpus_free() and step.state.preemptive:
            victims = [
                self.plans[n]
                for n in step.running
                if step.is_running(n) and not (self.plans[n].occupy or self.plans[n].force)
            ]
            for p in victims:
                self._emergence(p, minute)
            for p in sorted(victims, key=self._best_key):
                if need <= step.gpus_free():
                    break
                step.release(p.job.name)
                if p.prio == ACCEPTED:
                    self._shrink(p)
        for p in forced:
            if step.run(p.job, keep=False):
                self.spot -= p.gpus
            else:
                p.force = False
        for p in sorted(self._waiting(step), key=self._best_key, reverse=True):
            if p.gpus <= step.gpus_free() and not step.run(p.job, keep=False):
                continue

    def _fill(self, step: _Step) -> None:
        for p in sorted(self._waiting(step), key=lambda p: (p.prio, p.emergence)):
            if p.gpus <= step.gpus_free():
                step.run(p.job, keep=False)
