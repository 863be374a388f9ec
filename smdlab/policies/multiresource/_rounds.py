"""What Synergy's policies share: lease rounds, the job order, GPU requests and the CPU/memory shares.

Source: Mohan, Phanishayee, Kulkarni, Chidambaram, "Looking Beyond GPUs for DNN Scheduling on
Multi-Tenant Clusters", OSDI 2022; simulator msr-fiddle/synergy (MIT). Read, not copied.

Each decision is one lease round (the paper's simulator: 300 s; run the simulator with
``slot_s=LEASE_S``): every running and queued job is ordered by the base policy, jobs are picked
in that order while their GPUs fit in the cluster's GPUs (a job that does not fit is skipped,
the next may still fit), and the picked jobs get CPU and memory per worker by the policy's rule,
placed on an empty copy of the cluster in priority order. The round's plan replaces the last:
running jobs left out are preempted, and a running job whose levels or machines change is
restarted (preempted and started again in the same decision, as Synergy re-leases every round).
With ``round_decisions=True`` the policy plans only at round starts and a job that completes
within a round finishes at the round's end (Synergy's simulator: leases of one round); by
default it also re-plans at arrivals and completions between rounds.

Assumptions where the paper's setting (all-reduce jobs, no PSs) differs from smdlab's:
- A job asks for ``requested_workers`` GPUs (``max_workers`` if not given) and one PS per worker
  (capped by ``max_ps``); a request the empty cluster cannot hold at the proportional share is
  lowered until it fits.
- The GPU-proportional share of a worker is the cluster's CPU and memory per GPU minus what the
  job's PSs reserve per worker (``p / w`` PS demands), at least ``MIN_CPU`` cores and
  ``MIN_MEM_GB``: the worker and its share of PSs together get the machine's ratio.
- A job's best-case demand is its worker demand (the demand rule sizes cores to feed the GPU).
- On uneven machines a job's share may fit nowhere while its demand does: it then runs at the
  smaller of share and demand per resource, else at its demand (``fallback_place``).
"""

from __future__ import annotations

import math
from abc import abstractmethod
from bisect import bisect_left, insort
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from heapq import heappop, heappush
from operator import ge, itemgetter

import numpy as np

from smdlab.errors import check_bool, check_choice, check_positive
from smdlab.model.cluster import Cluster
from smdlab.model.job import Job
from smdlab.model.pipeline import with_worker_resources
from smdlab.policies.base import (
    Allocation,
    ClusterState,
    Decision,
    Placement,
    Policy,
    QueuedJob,
    RunningJob,
)
from smdlab.solve.instance import job_speeds, task_vectors
from smdlab.solve.placement import TOL, capacity_matrix, consolidated_tasks, usage

LEASE_S = 300.0  # Synergy's lease round (paper, section 5)
BASES = ("fifo", "srtf", "las")
# How a Synergy policy places its workers: as the paper describes, or as its simulator does.
RULES = ("paper", "simulator")
MIN_CPU = 1.0
MIN_MEM_GB = 1.0

Entry = QueuedJob | RunningJob


@dataclass
class Planned:
    """One job's plan in a round: request, levels per worker, and where its tasks go."""

    entry: Entry
    workers: int
    ps: int
    cpu: float
    mem_gb: float
    tasks: tuple[tuple[int, int, int], ...] | None = None


def request(job: Job, cluster: Cluster) -> tuple[int, int]:
    """(workers, PSs) the job asks for: its GPU request and one PS per worker, within the cluster."""
    w = job.requested_workers if job.requested_workers is not None else job.max_workers
    cap = capacity_matrix(cluster)

    def fits(w: int) -> bool:
        p = min(job.max_ps, w)
        a, g = task_vectors(
            with_worker_resources(job, *proportional_levels(job, w, p, cluster)), cluster.resources
        )
        return consolidated_tasks(cap, w, p, a, g) is not None

    while w > 1 and not fits(w):
        w -= 1
    return w, min(job.max_ps, w)


def proportional_levels(job: Job, workers: int, ps: int, cluster: Cluster) -> tuple[float, float]:
    """GPU-proportional (cpu, mem_gb) per worker: the cluster's per-GPU share less the PSs' share."""
    cap = cluster.capacity
    gpus = cap.get("gpu", 0.0)
    if gpus <= 0:
        return job.worker_demand.get("cpu", 0.0), job.worker_demand.get("mem_gb", 0.0)
    per_gpu = job.worker_demand.get("gpu", 1.0) or 1.0
    out = []
    for r, floor in (("cpu", MIN_CPU), ("mem_gb", MIN_MEM_GB)):
        share = cap.get(r, 0.0) / gpus * per_gpu - ps / workers * job.ps_demand.get(r, 0.0)
        out.append(max(floor, math.floor(share * 2 + 1e-9) / 2))  # half-unit steps
    return out[0], out[1]


CPU_MENU = (1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 9.0, 12.0, 16.0, 24.0)  # Synergy's grid, plus 16


def level_menu(job: Job, workers: int, ps: int, cluster: Cluster) -> list[tuple[float, float]]:
    """(cpu, mem_gb) levels per worker a job may get: Synergy's CPU grid with the proportional
    memory, plus the best-case demand and the proportional share; within one machine's CPU."""
    best = best_levels(job)
    prop = proportional_levels(job, workers, ps, cluster)
    top = max((m.capacity.get("cpu", 0.0) for m in cluster.machines), default=math.inf)
    out = {(c, prop[1]) for c in CPU_MENU if c <= top} | {best, prop}
    return sorted(out)


def best_levels(job: Job) -> tuple[float, float]:
    """The job's best-case demand per worker (its worker demand)."""
    return job.worker_demand.get("cpu", 0.0), job.worker_demand.get("mem_gb", 0.0)


def original(entry: Entry, jobs_by_name: dict[str, Job]) -> Job:
    """The job as submitted (a running job's ``job`` carries its allocated levels)."""
    return jobs_by_name.get(entry.job.name, entry.job)


def first_fit(
    free: list[list[float]],
    v: tuple[float, ...],
    gi: int,
    start: int = 0,
    low: list[float] | None = None,
) -> int | None:
    """The lowest-numbered machine whose free row holds ``v`` (Synergy's simulator's rule);
    machines before ``start`` are known to hold no GPU. low: ``v`` less TOL, if known."""
    g = v[gi] - TOL
    if low is None:
        low = [b - TOL for b in v]
    for i in range(start, len(free)):
        row = free[i]
        if row[gi] >= g and all(map(ge, row, low)):
            return i
    return None


def first_with_gpu(free: list[list[float]], gi: int, start: int) -> int:
    """The first machine from ``start`` on with a free GPU (len(free) if none)."""
    while start < len(free) and free[start][gi] < 1 - TOL:
        start += 1
    return start


class SynergyRounds(Policy):
    """Round planning shared by GPU-proportional, Synergy-TUNE and Synergy-OPT (module docstring)."""

    name = "synergy"
    execution = "preemptive"  # Synergy re-leases every job each round (paper, section 5)
    executions = ("non_elastic", "preemptive")  # non_elastic: never preempts, plans the queue
    slot_s = LEASE_S

    def __init__(
        self, base: str = "fifo", round_decisions: bool = False, starvation_h: float | None = None
    ) -> None:
        self.base = check_choice("base", base, BASES)
        # SRTF and LAS: a job that has not run for starvation_h hours goes first from the next
        # round on, for good (Synergy's simulator: 1000 h); None: never.
        self.starvation_s = (
            None if starvation_h is None else check_positive("starvation_h", starvation_h) * 3600
        )
        # True: plan only at round starts (multiples of the slot), as Synergy's simulator does;
        # an arrival or a completion between rounds changes nothing until the next round.
        self.round_decisions = check_bool("round_decisions", round_decisions)
        # and then each allocation is a lease of whole rounds: a job finishes at its round's end
        self.lease_rounds = self.round_decisions
        self.reset()

    def reset(self) -> None:
        """Forget cached requests and submitted jobs (the simulator calls this before a run)."""
        self._jobs: dict[str, Job] = {}
        # (cpu, mem_gb) per worker each job ran at in the last round (SRTF's speed for it)
        self._last_levels: dict[str, tuple[float, float]] = {}
        self._slot: float | None = None
        self._vecs: dict[tuple[str, tuple[float, float]], tuple[float, ...]] = {}
        # job, workers, PSs, GPUs, best-case levels
        self._needs: dict[str, tuple[Job, int, int, float, tuple[float, float]]] = {}
        self._props: dict[str, tuple[float, float]] = {}  # single-worker proportional shares
        self._min_need = math.inf  # fewest GPUs any job seen needs
        # SRTF's speed per (job, levels, mode) at the job's request
        self._speeds: dict[tuple[str, tuple[float, float], str], tuple[Job, float]] = {}
        # job name -> (job, last round's levels or None, mode, SRTF's speed)
        self._srtf: dict[str, tuple[Job, tuple[float, float] | None, str, float]] = {}
        self._last_run: dict[str, float] = {}  # end of the last round each job ran in
        self._bumped: set[str] = set()  # jobs starved past starvation_s: first in the order
        self._requests: dict[tuple[int, int], tuple[Job, Cluster, tuple[int, int]]] = {}
        # the kept ranking (``_ranked_incremental``): the queue last seen (id -> job), each queued
        # job's key (None: nothing left to run), name -> (entry, job), the sorted keys, and
        # (time it starves, name) of waiting jobs
        self._queue: dict[int, QueuedJob] = {}
        self._qkey: dict[int, tuple | None] = {}
        self._qentry: dict[str, tuple[QueuedJob, Job]] = {}
        self._rank: list[tuple] = []
        self._starving: list[tuple[float, str]] = []

    # ---- order ----------------------------------------------------------------------------
    def _request(self, job: Job, cluster: Cluster) -> tuple[int, int]:
        key = (id(job), id(cluster))
        hit = self._requests.get(key)
        if hit is not None and hit[0] is job and hit[1] is cluster:
            return hit[2]
        out = request(job, cluster)
        self._requests[key] = (job, cluster, out)
        return out

    def priority(self, entry: Entry, job: Job, cluster: Cluster, mode: str) -> tuple:
        """Sort key of the base policy (smaller first): arrival, remaining time or attained service."""
        if self.base == "fifo":
            return (job.arrival, job.name)
        if self.base == "las":
            att = entry.attained_service
            if self.lease_rounds and self._slot:  # whole leases: count them (exact ties)
                att = round(att / self._slot)
            return (att, job.arrival, job.name)
        return (entry.remaining / self._srtf_speed(job, cluster, mode), job.arrival, job.name)

    def _srtf_speed(self, job: Job, cluster: Cluster, mode: str) -> float:
        """SRTF's speed of ``job``: at the levels it ran at last round (Synergy's simulator keeps
        last round's speed-up), else at the policy's levels for it; cached per job and levels."""
        last = self._last_levels.get(job.name)
        hit = self._srtf.get(job.name)
        if hit is not None and hit[0] is job and hit[1] == last and hit[2] == mode:
            return hit[3]
        w, p = self._request(job, cluster)
        levels = last or self.sort_levels(job, w, p, cluster)
        key = (job.name, levels, mode)
        speed = self._speeds.get(key)
        if speed is None or speed[0] is not job:
            sized = with_worker_resources(job, *levels)
            speed = self._speeds[key] = (job, float(job_speeds(sized, mode)[w - 1, p - 1]))
        self._srtf[job.name] = (job, last, mode, speed[1])
        return speed[1]

    def sort_levels(self, job: Job, workers: int, ps: int, cluster: Cluster) -> tuple[float, float]:
        """The (cpu, mem_gb) per worker SRTF assumes for a job that did not run last round."""
        return best_levels(job)

    # ---- the rule per policy ----------------------------------------------------------------
    @abstractmethod
    def levels(self, plans: Sequence[Planned], cluster: Cluster, state: ClusterState) -> None:
        """Set ``cpu``/``mem_gb`` of each plan and place it (``tasks``); None leaves a job out."""

    # ---- the round ----------------------------------------------------------------------------
    def decide(self, state: ClusterState) -> Decision:
        """Plan the round (module docstring) and turn it into preemptions and allocations."""
        cluster = state.cluster
        if self.round_decisions and state.slot_s:
            k = state.time / state.slot_s
            if abs(k - round(k)) > 1e-9 * max(1.0, k):
                return Decision()
        self._slot = state.slot_s
        # Without preemption (forced non_elastic) running jobs keep what they hold; the round
        # plans the queued jobs on the free capacity.
        self._free0 = (
            capacity_matrix(cluster)
            if state.preemptive
            else np.array(state.free, dtype=float, copy=True)
        )
        running: Sequence[RunningJob] = state.running if state.preemptive else ()
        kept = type(self).priority is SynergyRounds.priority
        ranked, bumps = (self._ranked_incremental if kept else self._ranked_full)(state, running)
        gi = cluster.resources.index("gpu") if "gpu" in cluster.resources else None
        gpus_left = math.inf if gi is None else float(self._free0[:, gi].sum())
        plans: list[Planned] = []
        needs = self._needs
        for e, job in ranked:
            if gpus_left + TOL < self._min_need:
                break  # no job left fits in what remains
            hit = needs.get(job.name)
            if hit is None or hit[0] is not job:
                hit = self._gpu_need(job, cluster)
            _, w, p, need, best = hit
            if need > gpus_left + TOL:
                continue
            gpus_left -= need
            plans.append(Planned(e, w, p, *best))
        self._bump(bumps)  # after the ranking: a job starved this round goes first from the next
        self.levels(plans, cluster, state)
        self._last_levels = {}
        for plan in plans:
            if plan.tasks is not None:
                self._last_levels[plan.entry.job.name] = (plan.cpu, plan.mem_gb)
                self._last_run[plan.entry.job.name] = state.time + (state.slot_s or 0.0)
        return self._decision(plans, state)

    def _register(self, job: Job, cluster: Cluster) -> Job:
        """The submitted job of this name, recorded (with its GPU need) on first sight."""
        known = self._jobs.get(job.name)
        if known is not None:
            return known
        self._jobs[job.name] = job
        self._gpu_need(job, cluster)  # every job's need is known before the round
        return job

    def _key(self, e: Entry, job: Job, cluster: Cluster, mode: str) -> tuple:
        """Rank key (smaller first): starved jobs first (not under FIFO), then ``priority``."""
        return (
            self.base == "fifo" or job.name not in self._bumped,
            *self.priority(e, job, cluster, mode),
        )

    def _ranked_full(
        self, state: ClusterState, running: Sequence[RunningJob]
    ) -> tuple[Iterator[tuple[Entry, Job]], list[str]]:
        """Every job ranked from scratch (a subclass's own ``priority`` may read anything), and
        the jobs starved now."""
        queued, now, cluster, mode = state.queued, state.time, state.cluster, state.mode
        for q in queued:
            self._register(q.job, cluster)
        jobs = self._jobs
        entries: list[tuple[tuple, Entry, Job]] = []
        every: list[Entry] = [*running, *queued]
        for e in every:
            if e.remaining > 0:
                job = jobs.get(e.job.name, e.job)
                entries.append((self._key(e, job, cluster, mode), e, job))
        entries.sort(key=itemgetter(0))
        return iter([(e, job) for _, e, job in entries]), self._starved(
            [j for _, _, j in entries], now
        )

    def _starved(self, jobs: Sequence[Job], now: float) -> list[str]:
        """Names of ``jobs`` that have not run for more than ``starvation_s`` at ``now``."""
        limit = self.starvation_s
        if limit is None:
            return []
        last = self._last_run.get
        return [j.name for j in jobs if now - last(j.name, j.arrival) > limit]

    def _ranked_incremental(
        self, state: ClusterState, running: Sequence[RunningJob]
    ) -> tuple[Iterator[tuple[Entry, Job]], list[str]]:
        """The same ranking as ``_ranked_full`` for the base policies' keys, kept between rounds.

        A queued job's key does not change while it waits (its attained service, remaining work
        and SRTF speed are those it was queued with), so only jobs that entered or left the queue
        since the last round are re-keyed in a sorted list; running jobs are keyed afresh and
        merged in lazily (a round reads only the head of the order). Starvation is found from a
        heap of the times queued jobs cross the limit instead of a scan of the queue."""
        queued, now, cluster, mode = state.queued, state.time, state.cluster, state.mode
        ranked, keys, entry = self._rank, self._qkey, self._qentry
        limit = self.starvation_s
        last = self._last_run.get
        cur = dict(zip(map(id, queued), queued))  # the previous dict keeps old ids from reuse
        prev = self._queue
        if cur.keys() != prev.keys():
            for i in prev.keys() - cur.keys():
                k = keys.pop(i)
                if k is not None:
                    del ranked[bisect_left(ranked, k)]
                    del entry[k[-1]]
            for i in cur.keys() - prev.keys():
                q = cur[i]
                job = self._register(q.job, cluster)
                k = None
                if q.remaining > 0:
                    k = self._key(q, job, cluster, mode)
                    insort(ranked, k)
                    entry[k[-1]] = (q, job)  # every base key ends with the job's name
                    if limit is not None:
                        heappush(self._starving, (last(job.name, job.arrival) + limit, job.name))
                keys[i] = k
            self._queue = cur
        submitted = self._jobs.get
        run = []
        for e in running:
            if e.remaining > 0:
                job = submitted(e.job.name, e.job)
                run.append((self._key(e, job, cluster, mode), e, job))
        run.sort(key=itemgetter(0))
        bumps = self._starved([j for _, _, j in run], now)
        if limit is not None:
            heap, later, bumped = self._starving, [], self._bumped
            edge = now + 1e-6 * max(1.0, abs(now))  # the exact test below decides
            while heap and heap[0][0] <= edge:
                d, name = heappop(heap)
                ent = entry.get(name)
                if ent is None or name in bumped:
                    continue  # not waiting (it is queued again with a new time) or bumped
                lr = last(name, ent[1].arrival)
                if d != lr + limit:
                    continue  # it ran since; its re-queueing pushed its new time
                if now - lr > limit:
                    bumps.append(name)
                else:
                    later.append((d, name))
            for x in later:
                heappush(heap, x)

        def walk() -> Iterator[tuple[Entry, Job]]:
            it = iter(ranked)
            q = next(it, None)
            for k, e, job in run:
                while q is not None and q < k:
                    yield entry[q[-1]]
                    q = next(it, None)
                yield e, job
            while q is not None:
                yield entry[q[-1]]
                q = next(it, None)

        return walk(), bumps

    def _bump(self, names: list[str]) -> None:
        """Mark ``names`` starved and move the queued ones to the front of the kept order."""
        ranked, keys = self._rank, self._qkey
        for name in names:
            if name in self._bumped:
                continue
            self._bumped.add(name)
            ent = self._qentry.get(name)
            if ent is None or self.base == "fifo":
                continue
            i = id(ent[0])
            k = keys[i]
            assert k is not None  # a job with an entry has a key
            del ranked[bisect_left(ranked, k)]
            keys[i] = k = (False, *k[1:])
            insort(ranked, k)

    def place_plans(
        self,
        plans: Sequence[Planned],
        cluster: Cluster,
        rule: Callable[[Planned, np.ndarray], bool],
    ) -> None:
        """Place plans in order on an empty copy of the cluster; ``rule(plan, free)`` places one."""
        free = self.start_free(cluster)
        for plan in plans:
            if not rule(plan, free):
                plan.tasks = None

    def try_place(self, plan: Planned, free: np.ndarray, cluster: Cluster) -> bool:
        """Place ``plan`` at its levels (a running job first on its own machines); update ``free``."""
        job = with_worker_resources(self._job(plan), plan.cpu, plan.mem_gb)
        a, g = task_vectors(job, cluster.resources)
        tasks = None
        e = plan.entry
        if isinstance(e, RunningJob) and (e.workers, e.ps) == (plan.workers, plan.ps):
            use = usage(e.placement.tasks, a, g, free.shape[0])
            if np.all(use <= free + TOL * np.maximum(1.0, free)):
                tasks = e.placement.tasks
        if tasks is None:
            tasks = consolidated_tasks(free, plan.workers, plan.ps, a, g)
        if tasks is None:
            return False
        free -= usage(tasks, a, g, free.shape[0])
        plan.tasks = tuple(tasks)
        return True

    def start_free(self, cluster: Cluster) -> np.ndarray:
        """What the round may place on: the whole cluster (preemptive) or its free capacity."""
        free0 = getattr(self, "_free0", None)
        return capacity_matrix(cluster) if free0 is None else free0.copy()

    def fallback_place(self, plan: Planned, free: np.ndarray, cluster: Cluster) -> bool:
        """Where the share does not fit any machine (uneven machines), the smaller of share and
        demand per resource, then the demand (assumption: a job that fits at its demand runs)."""
        job = self._job(plan)
        prop = proportional_levels(job, plan.workers, plan.ps, cluster)
        best = best_levels(job)
        for levels in ((min(prop[0], best[0]), min(prop[1], best[1])), best):
            plan.cpu, plan.mem_gb = levels
            if self.try_place(plan, free, cluster):
                return True
        return False

    def _gpu_need(
        self, job: Job, cluster: Cluster
    ) -> tuple[Job, int, int, float, tuple[float, float]]:
        """(job, workers, PSs, GPUs, best-case levels) of its request, cached; tracks the least."""
        w, p = self._request(job, cluster)
        g = w * job.worker_demand.get("gpu", 0.0) + p * job.ps_demand.get("gpu", 0.0)
        hit = self._needs[job.name] = (job, w, p, g, best_levels(job))
        self._min_need = min(self._min_need, g)
        return hit

    def worker_vector(
        self, plan: Planned, levels: tuple[float, float], cluster: Cluster
    ) -> tuple[float, ...]:
        """What one worker of ``plan`` reserves at ``levels`` (cached per job and levels)."""
        key = (plan.entry.job.name, levels)
        v = self._vecs.get(key)
        if v is None:
            job = with_worker_resources(self._job(plan), *levels)
            v = self._vecs[key] = tuple(map(float, task_vectors(job, cluster.resources)[0]))
        return v

    def single_share(self, plan: Planned, cluster: Cluster) -> tuple[float, float]:
        """The proportional share of a single-worker job without PS (cached per job)."""
        name = plan.entry.job.name
        p = self._props.get(name)
        if p is None:
            p = self._props[name] = proportional_levels(self._job(plan), 1, 0, cluster)
        return p

    def _job(self, plan: Planned) -> Job:
        return original(plan.entry, self._jobs)

    def _decision(self, plans: Sequence[Planned], state: ClusterState) -> Decision:
        running = {r.job.name: r for r in state.running}
        keep: set[str] = set()
        allocations = []
        for plan in plans:
            if plan.tasks is None:
                continue
            name = plan.entry.job.name
            r = running.get(name)
            if r is not None and (
                (r.workers, r.ps) == (plan.workers, plan.ps)
                and tuple(r.placement.tasks) == plan.tasks
                and best_levels(r.job) == (plan.cpu, plan.mem_gb)
            ):
                keep.add(name)
                continue
            allocations.append(
                Allocation(
                    name,
                    plan.workers,
                    plan.ps,
                    Placement(plan.tasks),
                    cpu=plan.cpu,
                    mem_gb=plan.mem_gb,
                )
            )
        if not state.preemptive:
            return Decision(tuple(allocations))
        preempt = tuple(n for n in running if n not in keep)
        return Decision(tuple(allocations), preempt)
