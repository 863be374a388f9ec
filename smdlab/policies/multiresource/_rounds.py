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
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from operator import ge

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
        jobs = self._jobs
        for q in state.queued:
            if q.job.name not in jobs:
                jobs[q.job.name] = q.job
                self._gpu_need(q.job, cluster)  # every job's need is known before the round
        self._slot = state.slot_s
        entries: list[tuple[tuple, Entry, Job]] = []
        # Without preemption (forced non_elastic) running jobs keep what they hold; the round
        # plans the queued jobs on the free capacity.
        self._free0 = (
            capacity_matrix(cluster)
            if state.preemptive
            else np.array(state.free, dtype=float, copy=True)
        )
        every: list[Entry] = (
            [*state.running, *state.queued] if state.preemptive else list(state.queued)
        )
        bumped = self._bumped if self.base != "fifo" else frozenset()
        submitted = self._jobs.get
        mode = state.mode
        slot = self._slot if self.lease_rounds else None
        # LAS and FIFO keys built inline (the same tuples ``priority`` gives): every round ranks
        # every job, so this loop is linear in the queue
        inline = type(self).priority is SynergyRounds.priority
        las, srtf = self.base == "las", self.base == "srtf"
        last_levels, srtf_hit = self._last_levels.get, self._srtf.get
        for e in every:
            if e.remaining <= 0:
                continue
            job = submitted(e.job.name, e.job)
            name = job.name
            if not inline:
                key = (name not in bumped, *self.priority(e, job, cluster, mode))
            elif srtf:
                h = srtf_hit(name)
                if h is not None and h[0] is job and h[1] == last_levels(name) and h[2] == mode:
                    speed = h[3]
                else:
                    speed = self._srtf_speed(job, cluster, mode)
                key = (name not in bumped, e.remaining / speed, job.arrival, name)
            elif not las:
                key = (name not in bumped, job.arrival, name)
            elif slot:
                key = (name not in bumped, round(e.attained_service / slot), job.arrival, name)
            else:
                key = (name not in bumped, e.attained_service, job.arrival, name)
            entries.append((key, e, job))
        entries.sort(key=lambda x: x[0])
        if self.starvation_s is not None:  # after the sort: it counts from the next round
            now, limit, last_run = state.time, self.starvation_s, self._last_run.get
            self._bumped.update(
                [
                    job.name
                    for _, _e, job in entries
                    if now - last_run(job.name, job.arrival) > limit
                ]
            )
        gi = cluster.resources.index("gpu") if "gpu" in cluster.resources else None
        gpus_left = math.inf if gi is None else float(self._free0[:, gi].sum())
        plans: list[Planned] = []
        needs = self._needs
        for _, e, job in entries:
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
        self.levels(plans, cluster, state)
        self._last_levels = {}
        for plan in plans:
            if plan.tasks is not None:
                self._last_levels[plan.entry.job.name] = (plan.cpu, plan.mem_gb)
                self._last_run[plan.entry.job.name] = state.time + (state.slot_s or 0.0)
        return self._decision(plans, state)

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

    @staticmethod
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

    @staticmethod
    def first_with_gpu(free: list[list[float]], gi: int, start: int) -> int:
        """The first machine from ``start`` on with a free GPU (len(free) if none)."""
        while start < len(free) and free[start][gi] < 1 - TOL:
            start += 1
        return start

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
