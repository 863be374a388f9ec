"""Tiresias: discretised two-dimensional least-attained-service (2D-LAS) with preemption.

``demotion="muri"`` follows the ``dlas-gpu`` of Muri's simulator instead of Tiresias' own
(Rivendile/Muri, Apache-2.0, ``simulator/run_sim.py`` ``dlas_sim_jobs``, which adapts Tiresias'):
with GPU-time service the next check comes when the seconds run reach ceil(limit / GPUs), and the
jobs demoted at one decision join their new queue in the order they entered the system.
"""

from __future__ import annotations

import bisect
import itertools
import math
from collections.abc import Sequence

import numpy as np

from smdlab.errors import InvalidInput, check_bool, check_choice, check_int, check_positive
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
from smdlab.policies.toolkit import gang_placement
from smdlab.solve.instance import task_vectors
from smdlab.solve.placement import TOL, capacity_matrix, consolidated_tasks, usage

# The reference simulator's queue limits (SymbioticLab/Tiresias, simulator/jobs.py: three queues,
# limits 3250 and 7200 GPU-seconds; its third limit, 18000, belongs to no queue).
DEFAULT_THRESHOLDS: tuple[float, ...] = (3250.0, 7200.0)
SERVICES = ("gpu_time", "time")
DEMOTIONS = ("exact", "muri")


class Tiresias(Policy):
    """Tiresias' Discretised 2D-LAS (Gu et al., NSDI 2019), as its public simulator runs it.

    Reference: the ``dlas-gpu`` (default) and ``dlas`` schedulers of SymbioticLab/Tiresias
    (``simulator/run_sim.py``, ``dlas_sim_jobs``; Apache-2.0; read, not copied). Mode:
    preemptive, gang (a job runs on exactly its request). Rules, and where smdlab follows the
    reference:
    - Attained service: GPU-seconds (``service="gpu_time"``, the reference's ``dlas-gpu``), or
      seconds run (``service="time"``, its ``dlas``), counted since the job's last promotion.
    - Queues: a job enters queue 0 on arrival and moves down one queue each time its service
      reaches that queue's limit (``thresholds``, default the reference's 3250 and 7200
      GPU-seconds: three queues). A demoted job joins the back of its new queue.
    - Order within a queue: the order jobs entered it, except that after every pass the jobs
      that run are moved ahead of those that wait, keeping their order (the reference's list
      handling). So a running job is never displaced by a waiting job of its own queue.
    - Each pass walks the queues from the highest, each queue in that order, over the pooled
      capacity of the cluster (free plus what running jobs hold): a job that fits is kept or
      started; one that does not is skipped (later jobs may still fit); a running job that no
      longer fits is preempted (keeps its progress; the simulator's ``restart_s`` is the cost).
    - Placement: the reference counts GPUs only (its ``count`` scheme). smdlab places a gang
      job with ``toolkit.gang_placement`` (one machine if it fits, else spread), which for
      GPU-only jobs succeeds exactly when the count does; a job that the pooled walk admits but
      real machines cannot hold (only possible with several resources) waits.
    - Starvation guard (``starve_multiple``, off by default as in the reference's ``dlas-gpu``;
      its ``dlas-gpu-N`` variants set N): a waiting job outside queue 0 whose pending time since
      its last promotion reaches ``starve_multiple`` times the time it ran since then is moved
      to the back of queue 0 and its service restarts from zero.

    Where smdlab differs (docs/simulator.md, "Tiresias' simulator, rule by rule"): time is exact
    (the reference truncates to whole seconds); a demotion happens at the exact moment service
    reaches the limit (the policy asks for a decision point then, ``Decision.wake_at``), and
    several limits crossed at once demote several queues at once, while the reference checks at
    its events only, one queue per event, and estimates the next check as (limit - seconds run)
    / GPUs, which is late for a job that has run before; several jobs demoted at one decision
    join the new queue in the order they reached the limit.

    Jobs that are not gang jobs (parameter-server workloads) run on a request: workers =
    ``requested_workers`` (else ``max_workers``), capped by the policy's ``max_workers``; PSs =
    clamp(ceil(workers * ps_per_worker), 1, max_ps) (one PS per worker by default); lowered to the
    most workers the empty cluster holds. ``preemption=False`` keeps every running job, and so
    does a forced ``non_elastic`` execution (a controlled comparison); the natural execution is
    ``preemptive``.
    """

    name = "tiresias"
    execution = "preemptive"
    executions = ("non_elastic", "preemptive")
    keep_order = True  # skip re-ordering the queues when the last pass left them in order

    def __init__(
        self,
        thresholds: Sequence[float] = DEFAULT_THRESHOLDS,
        service: str = "gpu_time",
        starve_multiple: float | None = None,
        max_workers: int | None = None,
        ps_per_worker: float = 1.0,
        preemption: bool = True,
        demotion: str = "exact",
    ):
        if isinstance(thresholds, (str, bytes)) or not isinstance(thresholds, Sequence):
            raise InvalidInput(
                f"thresholds must be a list of attained-service limits, got {thresholds!r}"
            )
        th = [check_positive(f"thresholds[{i}]", t) for i, t in enumerate(thresholds)]
        if any(b <= a for a, b in itertools.pairwise(th)):
            raise InvalidInput(f"thresholds must be strictly ascending, got {tuple(thresholds)!r}")
        self.thresholds = tuple(th)
        self.service = check_choice("service", service, SERVICES)
        self.starve_multiple = (
            None
            if starve_multiple is None
            else check_positive("starve_multiple", starve_multiple, allow_inf=True)
        )
        self.max_workers = None if max_workers is None else check_int("max_workers", max_workers, 1)
        self.ps_per_worker = check_positive("ps_per_worker", ps_per_worker)
        self.preemption = check_bool("preemption", preemption)
        self.demotion = check_choice("demotion", demotion, DEMOTIONS)
        self._requests: dict[tuple[int, int], tuple] = {}
        self._gcache: dict[tuple[int, int, int], tuple[Job, float]] = {}
        self.reset()

    def reset(self) -> None:
        """Forget the queues (the simulator calls this at the start of a run)."""
        self._queues: list[dict[str, None]] = [{} for _ in range(len(self.thresholds) + 1)]
        self._qid: dict[str, int] = {}
        self._base: dict[str, float] = {}  # GPU-seconds attained at the last promotion
        self._pend: dict[str, list[float]] = {}  # [pending time counted, pending since or nan]
        self._last_time = -math.inf
        self._cluster: Cluster | None = None
        self._qg: dict[str, tuple[Job, float]] = {}  # name -> (job, GPUs at its request)
        self._ran: set[str] = set()  # the jobs the last pass kept or started

    # ---- requests and service ---------------------------------------------------------------
    def request(self, job: Job, cluster: Cluster | None = None) -> tuple[int, int]:
        """The (workers, PSs) Tiresias runs ``job`` on (within what the empty ``cluster`` could hold)."""
        if job.gang:
            return job.gang_allocation
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
        if len(self._requests) > 100_000:
            self._requests.clear()
        self._requests[key] = (job, cluster, out)
        return out

    def _ps_for(self, job: Job, workers: int) -> int:
        return min(job.max_ps, max(1, math.ceil(workers * self.ps_per_worker - 1e-12)))

    def queue_of(self, name: str, attained: float, gpus: float = 1.0) -> int:
        """Queue a job with ``attained`` GPU-seconds (on ``gpus`` GPUs) would be in by service alone."""
        return bisect.bisect_right(self.thresholds, self._service(name, attained, gpus))

    def _service(self, name: str, attained: float, gpus: float) -> float:
        s = attained - self._base.get(name, 0.0)
        return s if self.service == "gpu_time" else s / gpus

    def _gpus(self, job: Job, w: int, p: int) -> float:
        """GPUs of ``job`` on (w, p) (tasks when its workers need no GPU); cached per job and size."""
        key = (id(job), w, p)
        hit = self._gcache.get(key)
        if hit is not None and hit[0] is job:
            return hit[1]
        g = w * job.worker_demand.get("gpu", 0.0) + p * job.ps_demand.get("gpu", 0.0)
        g = g if g > 0 else float(w)  # CPU-only workers: count tasks instead
        if len(self._gcache) > 200_000:
            self._gcache.clear()
        self._gcache[key] = (job, g)
        return g

    def _gang_gpus(self, job: Job) -> float:
        """GPUs of ``job`` at its request, cached per job (the scalar pass reads it per decision)."""
        hit = self._qg.get(job.name)
        if hit is None or hit[0] is not job:
            hit = self._qg[job.name] = (job, self._gpus(job, *self.request(job)))
        return hit[1]

    # ---- bookkeeping ------------------------------------------------------------------------
    def _move(self, name: str, to: int) -> None:
        del self._queues[self._qid[name]][name]
        self._queues[to][name] = None
        self._qid[name] = to

    def _admit(self, new: list[QueuedJob]) -> None:
        """Put jobs the queues do not hold yet into their queue (0, or by service), by arrival."""
        for q in sorted(new, key=lambda q: q.job.arrival):  # stable: ties keep the queue's order
            name = q.job.name
            k = 0 if q.attained_service <= 0 else self.queue_of(name, q.attained_service)
            self._qid[name] = k
            self._queues[k][name] = None
            # a job that has run before (a state built by hand) has waited since it was queued
            self._pend[name] = [0.0, q.last_queued if q.attained_service > 0 else math.nan]

    # ---- the pass ---------------------------------------------------------------------------
    def decide(self, state: ClusterState) -> Decision:
        """One 2D-LAS pass: keep or start jobs queue by queue while they fit; preempt the rest."""
        t = state.time
        if t < self._last_time:
            self.reset()
        self._last_time = t
        cluster = self._cluster = state.cluster
        resources = tuple(cluster.resources)
        # One pass over the waiting jobs: the new ones, those with work left, whether all of
        # those are GPU-only.
        qid = self._qid
        new: list[QueuedJob] = []
        qmap: dict[str, QueuedJob] = {}
        gpu_only = True
        with_work = 0
        for q in state.queued:
            job = q.job
            if job.name not in qid:
                new.append(q)
            if q.remaining > 0:
                qmap[job.name] = q
                gpu_only = gpu_only and job.gpu_only
                with_work += 1
        if with_work != len(qmap):  # a name twice (a state built by hand): its last entry counts
            gpu_only = all(q.job.gpu_only for q in qmap.values())
        if new:
            self._admit(new)
        if len(self._qid) > 2 * (len(state.queued) + len(state.running)) + 64:
            # forget finished jobs now and then (amortised: the fast path never reads the running)
            live = qmap.keys() | {r.job.name for r in state.running}
            for name in [n for n in self._qid if n not in live]:
                del self._queues[self._qid.pop(name)][name]
                self._base.pop(name, None)
                self._pend.pop(name, None)
        fast = self._all_fit(state, qmap)
        if fast is not None:
            return fast
        preemption = self.preemption and state.preemptive
        running = list(state.running)
        rmap = {r.job.name: r for r in running}
        unseen = [r for r in running if r.job.name not in self._qid]
        for u in sorted(unseen, key=lambda r: (r.job.arrival, r.job.name), reverse=True):
            # running before this policy saw it: its queue by service, ahead of the waiting jobs
            name = u.job.name
            k = self.queue_of(name, u.attained_service, self._gpus(u.job, u.workers, u.ps))
            self._qid[name] = k
            self._queues[k] = {name: None, **self._queues[k]}
            self._pend[name] = [0.0, math.nan]
        live = qmap.keys() | rmap.keys()
        if len(self._qid) != len(live):  # the queues hold every live job: others have finished
            for name in [n for n in self._qid if n not in live]:
                del self._queues[self._qid.pop(name)][name]
                self._base.pop(name, None)
                self._pend.pop(name, None)
        rg = {r.job.name: self._gpus(r.job, r.workers, r.ps) for r in running}
        moved = self._demote(t, running, rg)
        self._promote(t, qmap)
        n_m = state.free.shape[0]
        free = np.array(state.free, dtype=float)
        gi = resources.index("gpu") if "gpu" in resources else None
        # every live job (the queues hold exactly the waiting and running ones now) GPU-only
        scalar = gi is not None and gpu_only and all(r.job.gpu_only for r in running)

        def held(name: str) -> np.ndarray:
            r = rmap[name]
            return usage(r.placement.tasks, *task_vectors(r.job, cluster.resources), n_m)

        chosen: list[str] = []
        preempt: list[str] = []
        if scalar and gi is not None:  # GPU-only jobs: count GPUs, as the reference does
            left = float(free[:, gi].sum()) + TOL
            if preemption:
                left += sum(rg.values())
            qg = self._qg
            for queue in self._queues:
                for name in queue:
                    r: RunningJob | None = rmap.get(name)
                    if r is not None:
                        if not preemption:
                            continue
                        need = rg[name]
                    else:
                        job = qmap[name].job
                        hit = qg.get(name)  # _gang_gpus, inline (once per waiting job per pass)
                        need = hit[1] if hit is not None and hit[0] is job else self._gang_gpus(job)
                    if need <= left:
                        left -= need
                        if r is None:
                            chosen.append(name)
                    elif r is not None:
                        preempt.append(name)
        else:
            pool = free.sum(axis=0)
            if preemption:
                for name in rmap:
                    pool = pool + held(name).sum(axis=0)
            for queue in self._queues:
                for name in queue:
                    r = rmap.get(name)
                    if r is not None:
                        if not preemption:
                            continue
                        vec = held(name).sum(axis=0)
                    else:
                        q = qmap[name]
                        w, p = self.request(q.job, cluster)
                        a, g = task_vectors(q.job, cluster.resources)
                        vec = w * a + p * g
                    fits = bool(np.all(pool + TOL * np.maximum(1.0, vec) >= vec))
                    if fits:
                        pool = pool - vec
                        if r is None:
                            chosen.append(name)
                    elif r is not None:
                        preempt.append(name)
        for name in preempt:
            free += held(name)
        allocations = []
        started: set[str] = set()
        for name in chosen:
            job = qmap[name].job
            pl = self._place(job, cluster, free)
            if pl is None:
                continue
            w, p = self.request(job, cluster)
            free -= usage(pl.tasks, *task_vectors(job, cluster.resources), n_m)
            allocations.append(Allocation(name, w, p, pl))
            started.add(name)
        runs = (rmap.keys() - set(preempt)) | started
        if not self.keep_order or moved or preempt or started or (self._ran & live) != rmap.keys():
            _runners_first(self._queues, runs)
        self._ran = runs
        for name in preempt:
            self._pend[name][1] = t
        for name in started:
            acc, since = self._pend[name]
            if not math.isnan(since):
                self._pend[name] = [acc + t - since, math.nan]
        wake = _next_event(self, t, rmap, qmap, runs, rg)
        return Decision(tuple(allocations), tuple(preempt), wake_at=wake)

    def _place(self, job: Job, cluster: Cluster, free: np.ndarray) -> Placement | None:
        if job.gang:
            return gang_placement(job, free, cluster.resources)
        w, p = self.request(job, cluster)
        tasks = consolidated_tasks(free, w, p, *task_vectors(job, cluster.resources))
        return None if tasks is None else Placement(tasks)

    def _all_fit(self, state: ClusterState, qmap: dict[str, QueuedJob]) -> Decision | None:
        """Start every waiting job when all of them fit the free machines (then no pass can preempt)."""
        cluster = state.cluster
        free = np.array(state.free, dtype=float)
        n_m = free.shape[0]
        allocations = []
        for queue in self._queues:
            for name in queue:
                q = qmap.get(name)
                if q is None:
                    continue
                pl = self._place(q.job, cluster, free)
                if pl is None:
                    return None
                free -= usage(pl.tasks, *task_vectors(q.job, cluster.resources), n_m)
                allocations.append(Allocation(name, *self.request(q.job, cluster), pl))
        t = state.time
        for a in allocations:
            acc, since = self._pend[a.job]
            if not math.isnan(since):
                self._pend[a.job] = [acc + t - since, math.nan]
        return Decision(tuple(allocations))

    def _demote(self, t: float, running: list[RunningJob], rg: dict[str, float]) -> int:
        """Move running jobs whose service reached their queue's limit down; return how many moves."""
        moves = []
        last = len(self.thresholds)
        gpu_time = self.service == "gpu_time"
        for r in running:
            name = r.job.name
            k = self._qid[name]
            if k >= last:
                continue
            g = rg[name]
            rate = g if gpu_time else 1.0
            s = r.attained_service - self._base.get(name, 0.0)
            s = s if gpu_time else s / g
            while k < last and s >= self.thresholds[k] - 1e-9:
                moves.append((t - (s - self.thresholds[k]) / rate, k, name))
                k += 1
        if self.demotion == "muri":  # by queue, then in the order the jobs entered the system
            pos = {n: i for i, n in enumerate(self._qid)}
            moves = [(k, pos[n], n) for _, k, n in moves]
        for *_, name in sorted(moves):  # a job's lower limit sorts before its higher one
            self._move(name, self._qid[name] + 1)
        return len(moves)

    def _rate(self, r: RunningJob) -> float:
        """Service gained per second while running."""
        return self._gpus(r.job, r.workers, r.ps) if self.service == "gpu_time" else 1.0

    def _executed(self, q: QueuedJob | RunningJob) -> float:
        """Seconds run since the last promotion."""
        w, p = self.request(q.job, self._cluster)
        g = self._gpus(q.job, w, p)
        return (q.attained_service - self._base.get(q.job.name, 0.0)) / g

    def _promote(self, t: float, qmap: dict[str, QueuedJob]) -> None:
        if self.starve_multiple is None:
            return
        for name, q in qmap.items():
            if self._qid[name] == 0:
                continue
            acc, since = self._pend[name]
            waited = acc + (0.0 if math.isnan(since) else t - since)
            executed = self._executed(q)
            if executed > 0 and waited >= self.starve_multiple * executed - 1e-9:
                self._move(name, 0)
                self._base[name] = q.attained_service
                self._pend[name] = [0.0, math.nan]


def _runners_first(queues: list[dict[str, None]], runs: set[str]) -> None:
    """Move the jobs of ``runs`` ahead of the waiting ones in every queue, stably.

    With ``Tiresias.keep_order``, ``decide`` calls it only when a job started, stopped or moved
    queue, or the running jobs are not those the last pass kept: otherwise the last call left
    every queue so.
    """
    for k, queue in enumerate(queues):
        order = [n for n in queue if n in runs] + [n for n in queue if n not in runs]
        queues[k] = dict.fromkeys(order)


def _next_event(
    self: Tiresias,
    t: float,
    rmap: dict[str, RunningJob],
    qmap: dict[str, QueuedJob],
    runs: set[str],
    rg: dict[str, float],
) -> float | None:
    """Earliest demotion of a running job or promotion of a waiting one (None: none due); a
    module function so that the class stays short."""
    best = math.inf
    last = len(self.thresholds)
    gpu_time = self.service == "gpu_time"
    for name in runs:
        k = self._qid[name]
        if k >= last:
            continue
        r = rmap.get(name)
        if r is not None:
            g, attained = rg[name], r.attained_service
        else:  # started now
            q = qmap[name]
            g, attained = (
                self._gpus(q.job, *self.request(q.job, self._cluster)),
                q.attained_service,
            )
        s = attained - self._base.get(name, 0.0)
        if gpu_time and self.demotion == "muri":
            best = min(best, t + math.ceil(self.thresholds[k] / g - 1e-9) - s / g)
        elif gpu_time:
            best = min(best, t + (self.thresholds[k] - s) / g)
        else:
            best = min(best, t + self.thresholds[k] - s / g)
    if self.starve_multiple is not None:
        for name, q in qmap.items():
            if name in runs or self._qid[name] == 0:
                continue
            acc, since = self._pend[name]
            executed = self._executed(q)
            if executed > 0:
                waited = acc + (0.0 if math.isnan(since) else t - since)
                best = min(best, t + self.starve_multiple * executed - waited)
    return best if best < math.inf and best > t else None
