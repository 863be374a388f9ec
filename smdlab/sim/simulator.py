"""Event-driven simulation of a cluster under one policy, with exact (next-event) time.

Events: job arrivals, job completions and, optionally, periodic decision points every ``slot_s``
seconds. Between events every running job processes samples at the layered model's speed for its
current allocation (``smdlab.model.timing.speed_table``), so its completion time is known exactly.
At each event time the simulator first retires completed jobs, then admits arrivals, then asks the
policy for a decision, validates it against the execution mode, checks every machine's capacity
and applies it.

Execution modes (``smdlab.policies.base.EXECUTIONS``): ``non_elastic`` (an allocation is fixed
for life), ``preemptive`` (a running job may be stopped and resumed later) and ``elastic``
(running jobs may also be re-allocated in place). By default each policy runs in the mode it
declares (``execution="natural"``). A running job whose allocation or placement changes, and a
preempted job when it resumes, makes no progress for ``restart_s`` seconds (checkpoint-restart).
"""

from __future__ import annotations

import dataclasses
import heapq
import math
import time
import warnings
from collections.abc import Generator, Sequence
from dataclasses import dataclass
from typing import Never

import numpy as np

from smdlab.errors import (
    Infeasible,
    InvalidInput,
    SmdlabError,
    check_choice,
    check_int,
    check_positive,
    reject_former,
)
from smdlab.model.allreduce import allreduce_iteration_time, packed_machines
from smdlab.model.cluster import Cluster
from smdlab.model.gpu_types import speed_ratio
from smdlab.model.job import Job
from smdlab.model.pipeline import MAX_GROUP, group_iteration_time, with_worker_resources
from smdlab.model.timing import MODES, iteration_time, link_speed, speed as speed_of
from smdlab.model.traffic import (
    Uplinks,
    cross_rack_bytes_per_iteration,
    samples_per_iteration,
)
from smdlab.policies.base import (
    DEFAULT_RESTART_S,
    DEFAULT_SLOT_S,
    EXECUTIONS,
    SHARING_KINDS,
    TIME_SLICE_S,
    TIME_SLICE_SWITCH_S,
    Allocation,
    ClusterState,
    Decision,
    Execution,
    LazySeq,
    Placement,
    Policy,
    QueuedJob,
    RunningJob,
    policy_settings,
)
from smdlab.policies.toolkit import enforce_gang
from smdlab.sim.result import SimResult, build_result
from smdlab.solve.instance import job_speeds, task_vectors
from smdlab.solve.placement import (
    TOL,
    capacity_matrix,
    consolidated_tasks,
    first_fit,
    rack_array,
    rack_layout,
    set_rack_layout,
)

UNFIT = ("skip", "raise")
EXECUTION_CHOICES = ("natural", *EXECUTIONS)


class InvalidDecision(InvalidInput):
    """A policy returned a decision the simulator cannot apply (unknown job, bad counts, ...)."""


class CapacityExceeded(InvalidDecision):
    """A policy's decision would put more on a machine than it has."""


class Stalled(SmdlabError):
    """The policy starts nothing on an idle cluster while jobs wait and nothing else can happen."""


@dataclass
class _Run:
    """Mutable bookkeeping of one running job (the policy sees an immutable RunningJob)."""

    job: Job
    workers: int
    ps: int
    placement: Placement
    rows: np.ndarray  # machine indices of the placement
    usage: np.ndarray  # resources per machine in ``rows``
    start: float  # time of the (last) start
    seg_start: float  # start of the current constant-speed segment
    resume: float  # time progress starts in this segment (after a restart pause)
    rem0: float  # remaining samples at seg_start
    att0: float  # attained GPU-seconds at seg_start
    speed: float
    gpus: float  # GPUs held (attained service rate)
    finish: float
    version: int
    group: str | None = None  # id of the interleaved group (Muri); None: alone
    solo: np.ndarray | None = None  # per-machine use of the job alone (``rows``), for regrouping


@dataclass
class _Record:
    """Per-job outcome, filled as the simulation runs."""

    index: int
    first_start: float = math.nan
    finish: float = math.nan
    workers: int = 0
    ps: int = 0
    run_time: float = 0.0
    worker_time: float = 0.0
    ps_time: float = 0.0
    preemptions: int = 0
    resizes: int = 0
    restarts: int = 0
    samples_done: float = 0.0
    status: str = "pending"


def _policy_from(policy: Policy | str) -> Policy:
    if isinstance(policy, str):
        from smdlab.policies.registry import get_policy

        return get_policy(policy)
    if not callable(getattr(policy, "decide", None)) or not callable(
        getattr(policy, "reset", None)
    ):
        raise InvalidInput(
            "policy must have decide(state) and reset() methods (subclass smdlab.policies.Policy "
            f"for the default reset) or be a registered name, got {policy!r}"
        )
    return policy


def as_allreduce(a: Allocation, job: Job) -> Allocation:
    """An all-reduce job's allocation with p = 0 and no PS tasks (policies written for PS jobs
    may give it PSs: their demand is zero, and the simulator drops them)."""
    if job.arch != "allreduce" or a.ps == 0 or not isinstance(a.placement, Placement):
        return a
    tasks = tuple((m, w, 0) for m, w, _ in a.placement.tasks if w)
    return dataclasses.replace(a, ps=0, placement=Placement(tasks))


def _fits_empty(job: Job, capacity: np.ndarray, resources: Sequence[str]) -> bool:
    if job.gang:  # a gang runs on its whole request or not at all: that must fit the empty cluster
        w, p = job.gang_allocation
        wv, pv = task_vectors(job, resources)
        return consolidated_tasks(capacity, w, p, wv, pv) is not None
    return first_fit(job, 1, 1, capacity, resources) is not None


_new = object.__new__


class _RunningView(LazySeq[RunningJob]):
    """The running jobs at one decision point, built on first use (FIFO never looks at them)."""

    def __init__(self, sim: _Simulator, t: float):
        self._sim, self._t = sim, t
        self._items: tuple[RunningJob, ...] | None = None

    def _get(self) -> tuple[RunningJob, ...]:
        if self._items is None:
            t, sim = self._t, self._sim
            items = []
            for r in sim.running.values():
                # RunningJob's fields set directly: a frozen dataclass's __init__ costs twice as much
                o = _new(RunningJob)
                o.__dict__.update(
                    job=r.job,
                    workers=r.workers,
                    ps=r.ps,
                    placement=r.placement,
                    start=r.start,
                    remaining=sim._remaining(r, t),
                    attained_service=r.att0 + r.gpus * (t - r.seg_start),
                    group=r.group,
                )
                items.append(o)
            self._items = tuple(items)
        return self._items

    def __len__(self) -> int:
        return len(self._sim.running) if self._items is None else len(self._items)

    def __getitem__(self, i):
        return self._get()[i]

    def __iter__(self):
        return iter(self._get())

    def __bool__(self) -> bool:
        return len(self) > 0


# Former keyword options of ``simulate`` (removed in 0.2) -> what replaces them.
FORMER_OPTIONS = {
    "elastic": "use execution='elastic' (was elastic=True) or 'non_elastic' (elastic=False)",
    "delta": "use slot_s, seconds between periodic decision points (was delta)",
}


def resolve_execution(
    policy: Policy | str, execution: str = "natural", slot_s: float | None = None
) -> tuple[Execution, float | None]:
    """The (execution mode, slot seconds or None) a run of ``policy`` uses; raises InvalidInput.

    execution: ``natural`` (the policy's declared mode) or one of ``EXECUTIONS``, which the policy
    must support. slot_s: seconds between periodic decision points; None: the policy's ``slot_s``
    in its natural mode, ``DEFAULT_SLOT_S`` in a forced elastic mode, else none.
    """
    settings = policy_settings(_policy_from(policy))
    name = policy if isinstance(policy, str) else settings.name
    execution = check_choice("execution", execution, EXECUTION_CHOICES)
    natural = execution == "natural"
    if natural:
        execution = settings.execution
    supported = settings.executions
    if execution not in supported:
        raise InvalidInput(
            f"execution: policy {name!r} cannot run in mode {execution!r}; "
            f"it supports {', '.join(supported)}"
        )
    if slot_s is not None:
        slot_s = check_positive("slot_s", slot_s)
    elif natural:
        slot_s = settings.slot_s
    elif execution == "elastic":
        slot_s = DEFAULT_SLOT_S if settings.slot_s is None else settings.slot_s
    return execution, slot_s


def simulate(
    jobs: Sequence[Job],
    cluster: Cluster,
    policy: Policy | str,
    *,
    mode: str = "wfbp",
    execution: str = "natural",
    slot_s: float | None = None,
    restart_s: float = DEFAULT_RESTART_S,
    unfit: str = "skip",
    record_history: bool = True,
    progress: bool = False,
    sharing_degree: int | None = None,
    **former: Never,
) -> SimResult:
    """Run ``jobs`` on ``cluster`` under ``policy`` until every job has finished (or was skipped).

    mode: timing-model overlap mode. execution: ``natural`` (each policy's declared mode) or a mode
    of ``EXECUTIONS`` forced for a controlled comparison (``resolve_execution``). slot_s: seconds
    between periodic decision points (None: the policy's slot in its natural mode, 1,200 s in a
    forced elastic mode, else decisions only at arrivals and completions). restart_s: seconds
    without progress after a running job's allocation or placement changes, or a preempted job
    resumes. unfit: what to do with a job that fits on no machine even at (1 worker, 1 PS), or
    whose training state exceeds the memory of every GPU of the cluster even alone
    (``model.colocation.too_large_for_gpus``): ``skip`` (warn and record it) or ``raise``
    (Infeasible). record_history: keep the
    allocation-history table (turn off to save memory on very long runs; the summary is
    unaffected). progress: a tqdm bar on stderr counting finished jobs.
    sharing_degree: most jobs a GPU holds at once in ``space`` sharing groups (1: no sharing;
    None: the policy's declared ``sharing_degree``, else 1).

    A gang job (``Job.gang``) may only start on exactly its ``gang_allocation`` and is never
    resized; one whose gang does not fit the empty cluster is unfit (skipped or raised). A
    decision that breaks this is first corrected by ``toolkit.enforce_gang`` (so every policy runs
    gang jobs all-or-nothing). A decision's ``wake_at`` asks for another decision point then.
    """
    reject_former("simulate", former, FORMER_OPTIONS)
    sim = _Simulator(
        jobs,
        cluster,
        policy,
        mode,
        (execution, slot_s),
        restart_s,
        unfit,
        record_history,
    )
    sim.progress = bool(progress)
    if sharing_degree is None:
        sharing_degree = sim.settings.sharing_degree
    sim.sharing_degree = check_int("sharing_degree", sharing_degree, 1)
    return sim.run()


def simulate_steps(
    jobs: Sequence[Job],
    cluster: Cluster,
    policy: Policy | str,
    *,
    mode: str = "wfbp",
    execution: str = "natural",
    slot_s: float | None = None,
    restart_s: float = DEFAULT_RESTART_S,
    unfit: str = "skip",
    record_history: bool = True,
) -> Generator[ClusterState, Decision, SimResult]:
    """``simulate`` as a generator for an outside driver (``smdlab.rl``): it yields the state at
    each decision point, applies the Decision sent back, and returns the SimResult at the end.

    ``policy`` only sets the execution mode and slot (``resolve_execution``) and is reset once;
    its ``decide`` is never called.
    """
    sim = _Simulator(
        jobs,
        cluster,
        policy,
        mode,
        (execution, slot_s),
        restart_s,
        unfit,
        record_history,
    )
    return sim.steps()


class _Simulator:
    progress = False
    sharing_degree = 1
    t: float
    heap: list[tuple[float, int, int]]
    queued: dict[str, QueuedJob]
    _queued_tuple: tuple[QueuedJob, ...] | None

    def __init__(self, jobs, cluster, policy, mode, timing, restart_s, unfit, record_history):
        if not isinstance(cluster, Cluster):
            raise InvalidInput(f"cluster must be a Cluster, got {type(cluster).__name__}")
        try:
            jobs = list(jobs)
        except TypeError:
            raise InvalidInput(f"jobs must be a sequence of Job objects, got {jobs!r}") from None
        if not jobs:
            raise InvalidInput("jobs must list at least one job, got 0")
        for j in jobs:
            if not isinstance(j, Job):
                raise InvalidInput(f"jobs must be Job objects, got {type(j).__name__}")
        names = [j.name for j in jobs]
        if len(set(names)) != len(names):
            dup = next(n for n in names if names.count(n) > 1)
            raise InvalidInput(f"job names must be unique; {dup!r} appears more than once")
        self.mode = check_choice("mode", mode, MODES)
        self.unfit = check_choice("unfit", unfit, UNFIT)
        self.record_history = bool(record_history)
        self.policy = _policy_from(policy)
        self.settings = policy_settings(self.policy)
        self.decide_on_completion = self.settings.decide_on_completion
        self.policy_name = policy if isinstance(policy, str) else self.settings.name
        self.execution, self.delta = resolve_execution(self.policy, *timing)
        self.elastic = self.execution == "elastic"
        self.restart_s = check_positive("restart_s", restart_s, allow_zero=True)
        self.cluster = cluster
        self.beyond_bound = False  # set when a run leaves the lower bound's model (docs/bound.md)
        self.resources = cluster.resources
        self.capacity = capacity_matrix(cluster)
        self.free = self.capacity.copy()
        self.pooled_capacity = self.capacity.sum(axis=0)
        self.machine_names = [m.name for m in cluster.machines] or ["pool"]
        # GPU type per machine; None on an untyped cluster (every speed is the tables' speed).
        types = [m.gpu_type for m in cluster.machines]
        self.machine_types = types if any(types) else None
        if self.machine_types is not None:
            # Fail before the run, not mid-way, when the throughput table lacks what the jobs need.
            kinds = [t for t in dict.fromkeys(types) if t]
            for net, dev in dict.fromkeys((j.profile.network, j.profile.device) for j in jobs):
                for t in kinds:
                    speed_ratio(net, t, dev)
        # Racks: bytes sent across rack uplinks (cross_rack_gb); None on a flat cluster.
        self.rack_of = cluster.rack_of if cluster.topology else None
        self.cross_rack_bytes = 0.0
        self.uplinks = Uplinks.of(cluster)  # rack uplinks in the timing model; None when flat
        self.racks = rack_array(cluster)  # rack-aware placement rules while a policy decides
        # GPUs in use per GPU type, one row per utilisation row (typed clusters only).
        self.type_rows: list[tuple] = []
        self.gpu_index = self.resources.index("gpu") if "gpu" in self.resources else None
        self.jobs = jobs
        self.index = {j.name: i for i, j in enumerate(jobs)}
        self.records = [_Record(i) for i in range(len(jobs))]

    # ---- bookkeeping helpers -------------------------------------------------------------
    def _close_segment(self, r: _Run, t: float, final: bool) -> float:
        """End the current segment of ``r`` at ``t``; return the samples left."""
        dt = t - r.seg_start
        busy = max(0.0, t - r.resume)  # time past the restart pause
        done = r.rem0 if final else min(r.rem0, r.speed * busy)
        rec = self.records[self.index[r.job.name]]
        rec.run_time += dt
        rec.worker_time += r.workers * dt
        rec.ps_time += r.ps * dt
        rec.samples_done += done
        if self.rack_of is not None and done > 0:
            per_iter = cross_rack_bytes_per_iteration(r.job, r.placement.tasks, self.rack_of)
            if per_iter > 0:
                self.cross_rack_bytes += done / samples_per_iteration(r.job, r.workers) * per_iter
        if self.record_history and dt > 0:
            paused = min(t, r.resume)
            if paused > r.seg_start:  # the restart pause: resources held, no progress
                self.history.append((r.job.name, r.seg_start, paused, r.workers, r.ps, 0.0, 0.0))
            if t > paused:
                self.history.append((r.job.name, paused, t, r.workers, r.ps, r.speed, done))
        return r.rem0 - done

    def _ring_speed(self, job: Job, workers: int, placement: Placement) -> float | None:
        """An all-reduce ring's speed over the machines its placement spans, when that differs
        from the packed ring of the timing tables (None: the tables hold it)."""
        if job.arch != "allreduce" or job.pipeline is not None:
            return None
        machines = len({m for m, w, _ in placement.tasks if w > 0})
        if machines == int(packed_machines(job, workers)):
            return None
        tau = allreduce_iteration_time(job, workers, machines=machines, mode=self.mode)
        per_iter = job.global_batch if job.batch_mode == "global" else workers * job.batch
        return float(per_iter / tau)

    def _uplink_speed(self, job: Job, workers: int, ps: int, placement: Placement) -> float | None:
        """Speed when the placement's path crosses a rack uplink slower than its NIC shares
        (``smdlab.model.traffic.Uplinks``), GPU type included; None: no uplink binds."""
        if self.uplinks is None:
            return None
        dw, dp = self.uplinks.divisors(job, placement.tasks)
        if dw == 1.0 and dp == 1.0:
            return None
        machines = len({m for m, w, _ in placement.tasks if w > 0})
        v = link_speed(job, workers, ps, dw, dp, self.mode, machines)
        return v * self._type_factor(job, placement)

    def _type_row(self, t: float) -> None:
        """Record GPUs in use per GPU type at ``t`` beside the utilisation row (typed clusters)."""
        if self.machine_types is None or self.gpu_index is None:
            return
        held = self.capacity[:, self.gpu_index] - self.free[:, self.gpu_index]
        kinds = dict.fromkeys(self.machine_types)
        types = np.array(self.machine_types)
        self.type_rows.append((t, *(float(held[types == k].sum()) for k in kinds)))

    def _type_factor(self, job: Job, placement: Placement) -> float:
        """Speed on the placement's GPU types relative to the job's profile device: the slowest
        worker's (synchronous training; ``smdlab.model.gpu_types.speed_ratio``); 1 when untyped."""
        if self.machine_types is None:
            return 1.0
        types = {self.machine_types[m] for m, w, _ in placement.tasks if w > 0}
        net, dev = job.profile.network, job.profile.device
        return min((speed_ratio(net, t, dev) for t in types), default=1.0)

    def _remaining(self, r: _Run, t: float) -> float:
        return max(0.0, r.rem0 - r.speed * max(0.0, t - r.resume))

    def _open(
        self,
        job: Job,
        workers: int,
        ps: int,
        placement: Placement,
        t: float,
        start: float,
        remaining: float,
        attained: float,
        pause: float = 0.0,
        speed: float | None = None,
        share: np.ndarray | None = None,
        group: str | None = None,
    ) -> _Run:
        wv, pv = task_vectors(job, self.resources)
        per_machine: dict[int, np.ndarray] = {}
        for m, w, p in placement.tasks:  # merged per machine, so that free[rows] += usage is exact
            per_machine[int(m)] = per_machine.get(int(m), 0.0) + w * wv + p * pv
        rows = np.fromiter(per_machine, dtype=np.int64, count=len(per_machine))
        usage = np.array(list(per_machine.values())).reshape(len(rows), len(self.resources))
        solo = usage
        if share is not None:  # a group member holds its share of the group's use
            usage = share[rows]
        if speed is None:
            speed = self._uplink_speed(job, workers, ps, placement)
        if speed is None:
            speed = self._ring_speed(job, workers, placement)
            if speed is None:
                speed = float(job_speeds(job, self.mode)[workers - 1, ps - 1])
            speed *= self._type_factor(job, placement)
        self.version += 1
        gpu_i = self.gpu_index
        gpus = 0.0 if gpu_i is None else workers * wv[gpu_i] + ps * pv[gpu_i]
        r = _Run(
            job,
            workers,
            ps,
            placement,
            rows,
            usage,
            start,
            t,
            t + pause,
            remaining,
            attained,
            speed,
            gpus,
            t + pause + remaining / speed,
            self.version,
            group,
            solo,
        )
        heapq.heappush(self.heap, (r.finish, self.index[job.name], r.version))
        return r

    # ---- decision validation -------------------------------------------------------------
    def _check_alloc(self, a, job: Job) -> None:
        where = f"policy {self.policy_name!r} at t={self.t:g}: allocation of job {a.job!r}"
        for field, value, low, cap in (
            ("workers", a.workers, 1, job.max_workers),
            ("ps", a.ps, 0 if job.arch == "allreduce" else 1, job.max_ps),
        ):
            if (
                isinstance(value, bool)
                or not isinstance(value, (int, np.integer))
                or not low <= value <= cap
            ):
                raise InvalidDecision(
                    f"{where}: {field} must be an integer in [{low}, {cap}], got {value!r}"
                )
        acc = getattr(a, "accumulation", 1)
        if isinstance(acc, bool) or not isinstance(acc, (int, np.integer)) or acc < 1:
            raise InvalidDecision(
                f"{where}: accumulation (gradient-accumulation steps) must be an integer >= 1, "
                f"got {acc!r}"
            )
        if not isinstance(a.placement, Placement):
            raise InvalidDecision(
                f"{where}: placement must be a Placement, got {type(a.placement).__name__}"
            )
        n_machines = self.capacity.shape[0]
        for task in a.placement.tasks:
            if len(task) != 3:
                raise InvalidDecision(
                    f"{where}: placement tasks must be (machine, workers, ps), got {task!r}"
                )
            m, w, p = task
            ok_int = all(isinstance(x, (int, np.integer)) and not isinstance(x, bool) for x in task)
            if not ok_int or not 0 <= m < n_machines or w < 0 or p < 0:
                raise InvalidDecision(
                    f"{where}: placement task {task!r} must have a machine index in [0, {n_machines - 1}] "
                    f"and workers, ps >= 0"
                )
        if job.gang and (a.workers, a.ps) != job.gang_allocation:
            raise InvalidDecision(
                f"{where}: job {a.job!r} is a gang of {job.gang_allocation[0]} workers and "
                f"{job.gang_allocation[1]} PSs (all or nothing); the allocation gives {a.workers} and {a.ps}"
            )
        if (a.placement.workers, a.placement.ps) != (a.workers, a.ps):
            raise InvalidDecision(
                f"{where}: placement holds {a.placement.workers} workers and {a.placement.ps} PSs, "
                f"the allocation says {a.workers} and {a.ps}"
            )

    def _check_groups(self, allocations, starts, where: str) -> dict[str, list]:
        """Allocations per group label, checked: at most 4 jobs, same counts and placement, all starts."""
        groups: dict[str, list] = {}
        started = {a.job for a in starts}
        for a in allocations:
            label = getattr(a, "group", None)
            if label is None:
                continue
            if a.job not in started:
                raise InvalidDecision(
                    f"{where}: group {label!r} resizes running job {a.job!r}; a group starts its jobs"
                )
            groups.setdefault(str(label), []).append(a)
        for label, members in groups.items():
            kind = getattr(members[0], "sharing", None)
            present = self._group_runs(label) if label in self.groups else []
            if present:  # new jobs join a running sharing group (its id from RunningJob.group)
                if kind is None or self.group_kinds.get(label) != kind:
                    raise InvalidDecision(
                        f"{where}: group {label!r} is running; only jobs of its sharing kind "
                        f"({self.group_kinds.get(label)!r}) may join it"
                    )
                host = present[0]
                for a in members:
                    if (a.workers, a.ps) != (host.workers, host.ps) or sorted(
                        a.placement.tasks
                    ) != sorted(host.placement.tasks):
                        raise InvalidDecision(
                            f"{where}: job {a.job!r} joins group {label!r} on other counts or "
                            f"tasks than the group's"
                        )
                members = [*present, *members]
            if kind is not None and kind not in SHARING_KINDS:
                raise InvalidDecision(
                    f"{where}: group {label!r}: sharing must be one of {', '.join(SHARING_KINDS)} "
                    f"or None, got {kind!r}"
                )
            if any(getattr(a, "sharing", kind) != kind for a in members):  # a _Run has none
                raise InvalidDecision(f"{where}: group {label!r} mixes sharing kinds")
            if kind == "space" and len(members) > self.sharing_degree:
                raise InvalidDecision(
                    f"{where}: group {label!r} co-locates {len(members)} jobs; the sharing degree "
                    f"allows [1, {self.sharing_degree}]"
                )
            if (
                kind == "space"
                and self._space_factors(
                    [self._member_job(a) for a in members],
                    [
                        self.accumulation.get(a.job.name, 1)
                        if isinstance(a, _Run)
                        else getattr(a, "accumulation", 1)
                        for a in members
                    ],
                )
                is None
            ):
                raise CapacityExceeded(
                    f"{where}: group {label!r}: the co-location model predicts its jobs do not fit "
                    f"in one GPU's memory together"
                )
            if len(members) > MAX_GROUP:
                raise InvalidDecision(
                    f"{where}: group {label!r} has {len(members)} jobs; group size must be in "
                    f"[1, {MAX_GROUP}]"
                )
            first = members[0]
            for a in members[1:]:
                if (a.workers, a.ps) != (first.workers, first.ps):
                    raise InvalidDecision(
                        f"{where}: group {label!r} mixes {first.workers} and {a.workers} GPUs "
                        f"(workers) or PS counts; a group's jobs must have the same GPU count"
                    )
                if sorted(a.placement.tasks) != sorted(first.placement.tasks):
                    raise InvalidDecision(
                        f"{where}: group {label!r}: job {a.job!r} is not placed on the group's tasks"
                    )
        return groups

    def _member_job(self, a) -> Job:
        """The job of a group member: an allocation's, or a running member's own."""
        return a.job if isinstance(a, _Run) else self._alloc_job(a)

    def _space_factors(self, jobs: list[Job], accs: list[int] | None = None) -> np.ndarray | None:
        """Each job's fraction of its solo rate when co-located (None: not in memory together)."""
        from smdlab.model.colocation import (
            accumulation_efficiency,
            gavel_job_type,
            shared_rate_factors,
        )

        if accs is None:
            accs = [self.accumulation.get(j.name, 1) for j in jobs]
        f = shared_rate_factors([gavel_job_type(j, k) for j, k in zip(jobs, accs, strict=True)])
        if f is None:
            return None
        eff = [
            accumulation_efficiency(j, k) if k > 1 else 1.0 for j, k in zip(jobs, accs, strict=True)
        ]
        return f * np.array(eff)

    def _group_speeds(self, jobs: list[Job], w: int, p: int, kind: str | None) -> dict[str, float]:
        """Speed of each member of a group of ``jobs`` on (w, p) shared in the way ``kind`` says."""
        if kind is None:  # Muri's interleaving
            tau = group_iteration_time(jobs, w, p, self.mode)
            return {
                j.name: speed_of(j, w, p, self.mode) * iteration_time(j, w, p, self.mode) / tau
                for j in jobs
            }
        # the speed tables, as for a job alone (an all-reduce job's PS column is its p = 0)
        solo = {j.name: float(job_speeds(j, self.mode)[w - 1, max(p, 1) - 1]) for j in jobs}
        if kind == "space":
            f = self._space_factors(jobs)
            f = np.ones(len(jobs)) if f is None else f
            return {j.name: solo[j.name] * float(x) for j, x in zip(jobs, f, strict=True)}
        n = len(jobs)  # time-slicing: 1/n of the GPU time, less the switches
        keep = 1.0 if n == 1 else max(0.0, 1.0 - TIME_SLICE_SWITCH_S / TIME_SLICE_S) / n
        return {j.name: solo[j.name] * keep for j in jobs}

    def _group_use(self, members) -> np.ndarray:
        """Per-machine use of a group: the maximum of its members' (machines x resources)."""
        use = np.zeros_like(self.capacity)
        for a in members:
            wv, pv = task_vectors(self._alloc_job(a), self.resources)
            one = np.zeros_like(self.capacity)
            for m, w, p in a.placement.tasks:
                one[m] += w * wv + p * pv
            use = np.maximum(use, one)
        return use

    def _group_runs(self, gid: str, leaving: set[str] | None = None) -> list[_Run]:
        """Running members of group ``gid``, less ``leaving``."""
        leaving = leaving or set()
        return [
            r
            for n in sorted(self.groups.get(gid, ()))
            if n not in leaving and (r := self.running.get(n)) is not None and r.group == gid
        ]

    def _group_held_use(self, gid: str, leaving: set[str]) -> tuple[np.ndarray, np.ndarray]:
        """(what the members of ``gid`` that stay hold now, what they will hold as a group)."""
        use = np.zeros_like(self.capacity)
        held = np.zeros_like(self.capacity)
        for r in self._group_runs(gid, leaving):
            one = np.zeros_like(self.capacity)
            one[r.rows] = r.solo
            use = np.maximum(use, one)
            held[r.rows] += r.usage
        return held, use

    def _regroup(self, gid: str, t: float, adjust_free: bool = True) -> None:
        """After a member left group ``gid``: the rest share its use anew and speed up."""
        runs = self._group_runs(gid)
        if not runs:
            self.groups.pop(gid, None)
            return
        self.groups[gid] = {r.job.name for r in runs}
        held, use = self._group_held_use(gid, set())
        if adjust_free:
            self.free += held - use
        w, p = runs[0].workers, runs[0].ps
        jobs = [r.job for r in runs]
        speeds = self._group_speeds(jobs, w, p, self.group_kinds.get(gid))
        for r in runs:
            left = self._close_segment(r, t, final=False)
            v = speeds[r.job.name]
            self.running[r.job.name] = self._open(
                r.job,
                w,
                p,
                r.placement,
                t,
                r.start,
                left,
                r.att0 + r.gpus * (t - r.seg_start),
                max(0.0, r.resume - t),
                speed=v,
                share=use / len(runs),
                group=gid,
            )

    def _alloc_job(self, a) -> Job:
        """The job as allocated: its worker CPU and memory set to the allocation's levels, if given."""
        job = self.jobs[self.index[a.job]]
        if getattr(a, "cpu", None) is None and getattr(a, "mem_gb", None) is None:
            return job
        self.beyond_bound = True  # its speed is no longer the (workers, PS) table's
        try:
            return with_worker_resources(job, a.cpu, a.mem_gb)
        except InvalidInput as exc:
            raise InvalidDecision(
                f"policy {self.policy_name!r} at t={self.t:g}: allocation of job {a.job!r}: {exc}"
            ) from None

    def _apply(self, d: Decision) -> tuple[int, int, int]:
        t = self.t
        where = f"policy {self.policy_name!r} at t={t:g}"
        if not isinstance(d, Decision):
            raise InvalidDecision(
                f"{where}: decide() must return a Decision, got {type(d).__name__}"
            )
        preempt = list(d.preempt)
        pset = set(preempt)
        if len(pset) != len(preempt):
            raise InvalidDecision(f"{where}: preempt lists a job twice: {preempt!r}")
        if preempt and self.execution == "non_elastic":
            raise InvalidDecision(
                f"{where}: decision preempts {preempt[0]!r}, but execution is 'non_elastic' "
                f"(preempting needs 'preemptive' or 'elastic')"
            )
        for name in preempt:
            if name not in self.running:
                raise InvalidDecision(f"{where}: preempt names {name!r}, which is not running")
        seen: set[str] = set()
        starts, resizes = [], []
        for a in d.allocations:
            if a.job in self.index:
                a = as_allreduce(a, self.jobs[self.index[a.job]])
            if a.job in seen:
                raise InvalidDecision(f"{where}: job {a.job!r} has two allocations in one decision")
            seen.add(a.job)
            if a.job in self.queued or a.job in pset:
                job = self.jobs[self.index[a.job]]
                starts.append(a)
            elif a.job in self.running:
                if not self.elastic:
                    raise InvalidDecision(
                        f"{where}: allocation resizes running job {a.job!r}, but execution is "
                        f"{self.execution!r} (resizing needs 'elastic')"
                    )
                job = self.running[a.job].job
                if job.gang:
                    raise InvalidDecision(
                        f"{where}: allocation resizes running job {a.job!r}, a gang job (never resized)"
                    )
                resizes.append(a)
            else:
                state = (
                    "finished"
                    if a.job in self.index and self.records[self.index[a.job]].status == "completed"
                    else (
                        "not yet arrived"
                        if a.job in self.index
                        and self.records[self.index[a.job]].status == "pending"
                        else "unknown"
                    )
                )
                raise InvalidDecision(f"{where}: allocation names job {a.job!r}, which is {state}")
            self._check_alloc(a, job)
            self._alloc_job(a)  # validates the CPU/memory levels before anything changes
        groups = self._check_groups(d.allocations, starts, where)
        # An allocation that repeats a running job's allocation, placement and levels changes nothing.
        resizes = [
            a
            for a in resizes
            if not (
                self._unchanged(self.running[a.job], a)
                and self._alloc_job(a).worker_demand == self.running[a.job].job.worker_demand
            )
        ]
        # Capacity: release what preempted and resized jobs hold, then take every new placement.
        free = self.free.copy()
        leaving = {*preempt, *(a.job for a in resizes)}
        for name in leaving:
            r = self.running[name]
            free[r.rows] += r.usage
        touched = {g for n in leaving if (g := self.running[n].group) is not None}
        for gid in touched:  # members that stay share their group's use anew
            held, use = self._group_held_use(gid, leaving)
            free += held - use
        for a in (*starts, *resizes):
            if getattr(a, "group", None) is not None:
                continue  # charged once per group below
            job = self._alloc_job(a)
            wv, pv = task_vectors(job, self.resources)
            for m, w, p in a.placement.tasks:
                free[m] -= w * wv + p * pv
        group_use = {label: self._group_use(members) for label, members in groups.items()}
        joins = {label for label in groups if self._group_runs(label)}
        for label in joins & touched:
            raise InvalidDecision(f"{where}: jobs join group {label!r} while members leave it")
        for label, use in group_use.items():
            if label in joins:  # the group's use grows to the maximum with its new members
                now = self._group_held_use(label, set())[1]
                use = np.maximum(now, use) - now
            free -= use
        over = free < -TOL * np.maximum(1.0, self.capacity)
        if over.any():
            m, k = (int(x) for x in np.argwhere(over)[0])
            raise CapacityExceeded(
                f"{where}: decision exceeds machine {self.machine_names[m]!r} (index {m}) capacity of "
                f"{self.resources[k]} ({self.capacity[m, k]:g}) by {-free[m, k]:g}"
            )
        # Commit.
        self.free = free
        if preempt:
            for name in preempt:
                r = self.running.pop(name)
                left = self._close_segment(r, t, final=False)
                rec = self.records[self.index[name]]
                rec.preemptions += 1
                rec.status = "queued"
                self.queued[name] = QueuedJob(
                    self.jobs[self.index[name]], left, r.att0 + r.gpus * (t - r.seg_start), t
                )
            # Queue order is arrival order (ties by input position), also for re-queued jobs.
            self.queued = dict(
                sorted(self.queued.items(), key=lambda kv: (kv[1].job.arrival, self.index[kv[0]]))
            )
        for a in resizes:
            r = self.running.pop(a.job)
            left = self._close_segment(r, t, final=False)
            rec = self.records[self.index[a.job]]
            rec.resizes += 1
            rec.restarts += 1
            self.running[a.job] = self._open(
                self._alloc_job(a),
                a.workers,
                a.ps,
                a.placement,
                t,
                r.start,
                left,
                r.att0 + r.gpus * (t - r.seg_start),
                self.restart_s,
            )
        for gid in touched:
            self._regroup(gid, t, adjust_free=False)
        started_groups: dict[str, tuple[str, dict[str, float], np.ndarray | None]] = {}
        for a in starts:
            if getattr(a, "accumulation", 1) > 1:
                self.accumulation[a.job] = int(a.accumulation)
            else:
                self.accumulation.pop(a.job, None)
        for label, members in groups.items():
            if label in joins:
                started_groups[label] = (label, {a.job: 1.0 for a in members}, None)
                continue
            self.group_seq += 1
            self.beyond_bound = True  # grouped jobs share GPUs
            gid = f"{label}#{self.group_seq}"
            jobs = [self._alloc_job(a) for a in members]
            w, p = members[0].workers, members[0].ps
            kind = getattr(members[0], "sharing", None)
            if kind is not None:
                self.group_kinds[gid] = kind
            speed = self._group_speeds(jobs, w, p, kind)
            started_groups[label] = (gid, speed, group_use[label] / len(members))
        for a in starts:
            q = self.queued.pop(a.job)
            rec = self.records[self.index[a.job]]
            pause = 0.0
            if math.isnan(rec.first_start):
                rec.first_start, rec.workers, rec.ps = t, a.workers, a.ps
            else:  # a preempted job resumes from its checkpoint
                pause = self.restart_s
                rec.restarts += 1
            rec.status = "running"
            glabel = getattr(a, "group", None)
            if glabel is not None:
                gid, speed, share = started_groups[str(glabel)]
                self.groups.setdefault(gid, set()).add(a.job)
                self.running[a.job] = self._open(
                    self._alloc_job(a),
                    a.workers,
                    a.ps,
                    a.placement,
                    t,
                    t,
                    q.remaining,
                    q.attained_service,
                    pause,
                    speed=speed[a.job],
                    share=share,
                    group=gid,
                )
                continue
            self.running[a.job] = self._open(
                self._alloc_job(a),
                a.workers,
                a.ps,
                a.placement,
                t,
                t,
                q.remaining,
                q.attained_service,
                pause,
            )
        for label in joins:  # every member now runs at the rates of the larger group
            self._regroup(label, t, adjust_free=False)
        if preempt or starts:
            self._queued_tuple = None
        return len(starts), len(preempt), len(resizes)

    @staticmethod
    def _unchanged(r: _Run, a) -> bool:
        """Whether allocation ``a`` keeps running job ``r``'s counts and per-machine tasks."""
        if (a.workers, a.ps) != (r.workers, r.ps):
            return False

        def per_machine(tasks) -> dict[int, tuple[int, int]]:
            out: dict[int, tuple[int, int]] = {}
            for m, w, p in tasks:
                w0, p0 = out.get(int(m), (0, 0))
                out[int(m)] = (w0 + int(w), p0 + int(p))
            return {m: wp for m, wp in out.items() if wp != (0, 0)}

        return per_machine(a.placement.tasks) == per_machine(r.placement.tasks)

    # ---- the loop --------------------------------------------------------------------------
    def _state(self) -> ClusterState:
        t = self.t
        queued = self._queued_tuple
        if queued is None:
            queued = self._queued_tuple = tuple(self.queued.values())
        running = _RunningView(self, t)
        free = self.free.copy()
        free.setflags(write=False)
        return ClusterState(
            t,
            self.cluster,
            queued,
            running,
            free,
            self.mode,
            self.execution,
            self.delta,
            self.restart_s,
            self.sharing_degree,
        )

    def _screen_unfit(self) -> list[int]:
        """Indices of jobs that can run at all; the rest are skipped or raise."""
        from smdlab.model.colocation import largest_gpu_memory, too_large_for_gpus

        ok: list[int] = []
        cache: dict = {}
        for i, j in enumerate(self.jobs):
            wv, pv = task_vectors(j, self.resources)
            key = (wv.tobytes(), pv.tobytes(), j.gang and j.gang_allocation)
            if key not in cache:
                cache[key] = _fits_empty(j, self.capacity, self.resources)
            mem_msg = None
            if cache[key]:
                # GPU memory: a job whose training state alone exceeds every GPU cannot run
                if "largest" not in cache:
                    cache["largest"] = largest_gpu_memory(self.cluster)
                mem_key = ("gpu_mem", id(j.profile))
                if mem_key not in cache:
                    cache[mem_key] = too_large_for_gpus(j, self.cluster, cache["largest"])
                if cache[mem_key] is None:
                    ok.append(i)
                    continue
                mem_msg = too_large_for_gpus(j, self.cluster, cache["largest"])  # with its name
            if mem_msg is not None:
                msg = mem_msg
            elif j.gang:
                w, p = j.gang_allocation
                msg = (
                    f"job {j.name!r} is a gang of {w} workers and {p} PSs (worker needs "
                    f"{dict(j.worker_demand)}, PS needs {dict(j.ps_demand)}) that does not fit "
                    f"the whole empty cluster"
                )
            else:
                msg = (
                    f"job {j.name!r} fits on no machine even with 1 worker and 1 PS "
                    f"(worker needs {dict(j.worker_demand)}, PS needs {dict(j.ps_demand)})"
                )
            if self.unfit == "raise":
                raise Infeasible(msg)
            warnings.warn(msg + "; skipped", stacklevel=3)
            self.records[i].status = "skipped"
            self.skipped.append(j.name)
        return ok

    def run(self) -> SimResult:
        """Run to the end, asking the policy at every decision point."""
        steps = self.steps()
        decide = self.policy.decide
        try:
            with rack_layout(self.cluster):
                state = next(steps)
                while True:
                    state = steps.send(decide(state))
        except StopIteration as done:
            return done.value

    def steps(self) -> Generator[ClusterState, Decision, SimResult]:
        """The run as a generator: yields the state at each decision point, takes the Decision."""
        self.heap = []
        self.running: dict[str, _Run] = {}
        self.queued = {}
        self._queued_tuple = ()
        self.version = 0
        self.group_seq = 0
        self.groups: dict[str, set[str]] = {}
        self.group_kinds: dict[str, str] = {}
        self.accumulation: dict[str, int] = {}  # gradient-accumulation steps of shared jobs
        self.share_area = [0.0, 0.0]  # integrals of (GPUs held by jobs, GPUs busy) over time
        self.history: list[tuple] = []
        self.skipped: list[str] = []
        self.decisions: list[tuple] = []
        self.t = 0.0
        self.policy.reset()
        order = sorted(self._screen_unfit(), key=lambda i: (self.jobs[i].arrival, i))
        self.has_gang = any(self.jobs[i].gang for i in order)
        arrivals = [self.jobs[i].arrival for i in order]
        n_arr = len(order)
        k = 0
        used = np.zeros(len(self.resources))
        counts = (0, 0)
        util_rows: list[tuple] = []
        if n_arr:
            util_rows.append((arrivals[0], *used, 0, 0))
            self._type_row(arrivals[0])
        next_tick = math.inf
        next_wake = math.inf  # a decision point the policy asked for (Decision.wake_at)
        idle_points = 0
        bar = None
        if self.progress:
            from tqdm import tqdm

            bar = tqdm(total=n_arr, desc=f"simulate {self.policy_name}", unit="job", leave=False)
        wall0 = time.perf_counter()
        while True:
            t_arr = arrivals[k] if k < n_arr else math.inf
            while self.heap and self._stale(self.heap[0]):
                heapq.heappop(self.heap)
            t_cmp = self.heap[0][0] if self.heap else math.inf
            busy = bool(self.queued or self.running)
            t_tick = next_tick if (self.delta is not None and busy) else math.inf
            t = min(t_arr, t_cmp, t_tick, next_wake if busy else math.inf)
            if t == math.inf:
                break
            self._integrate_sharing(t)
            self.t = t
            # Completions (every job whose finish is t, up to rounding).
            limit = t + 1e-12 * max(1.0, abs(t))
            completed_now = False
            while self.heap and self.heap[0][0] <= limit:
                _, i, version = heapq.heappop(self.heap)
                name = self.jobs[i].name
                r = self.running.get(name)
                if r is None or r.version != version:
                    continue
                del self.running[name]
                self._close_segment(r, t, final=True)
                self.free[r.rows] += r.usage
                rec = self.records[i]
                rec.finish, rec.status = t, "completed"
                completed_now = True
                if bar is not None:
                    bar.update()
                if r.group is not None:
                    self._regroup(r.group, t)
            # Arrivals.
            while k < n_arr and arrivals[k] <= t:
                i = order[k]
                j = self.jobs[i]
                self.queued[j.name] = QueuedJob(j, j.samples, 0.0, j.arrival)
                self.records[i].status = "queued"
                self._queued_tuple = None
                k += 1
            if self.delta is not None:
                next_tick = (math.floor(t / self.delta + 1e-9) + 1) * self.delta
            if next_wake <= t:
                next_wake = math.inf
            # Decision.
            # A policy with ``decide_on_completion`` (plans with barriers, e.g. OMRU) is asked at
            # every completion, also when nothing waits.
            on_completion = completed_now and bool(self.running) and self.decide_on_completion
            if self.queued or (self.elastic and self.running) or on_completion:
                state = self._state()
                t0 = time.perf_counter()
                # the placement rules are rack-aware while the policy decides (racked clusters)
                prev_racks = set_rack_layout(self.racks)
                decision = yield state  # run() passes it to policy.decide
                if self.has_gang and isinstance(decision, Decision) and self._breaks_gang(decision):
                    decision = enforce_gang(decision, state)
                set_rack_layout(prev_racks)
                spent = time.perf_counter() - t0
                started, preempted, resized = self._apply(decision)
                wake = getattr(decision, "wake_at", None)
                next_wake = wake if wake is not None and wake > t else math.inf
                self.decisions.append(
                    (t, spent, started, preempted, resized, len(self.queued), len(self.running))
                )
                if self.queued and not self.running and k >= n_arr:
                    idle_points += 1
                    if self.delta is None or idle_points > 2:
                        raise Stalled(
                            f"policy {self.policy_name!r} started no job on an idle cluster at t={t:g} while "
                            f"{len(self.queued)} jobs wait (first: {next(iter(self.queued))!r}) and no arrival "
                            f"is pending; it would wait forever"
                        )
                else:
                    idle_points = 0
            new_used = self.pooled_capacity - self.free.sum(axis=0)
            new_counts = (len(self.running), len(self.queued))
            # a row whenever usage or the job counts change (a queue can grow while usage stays put)
            if not np.array_equal(new_used, used) or new_counts != counts or not util_rows:
                util_rows.append((t, *new_used, *new_counts))
                self._type_row(t)
            used, counts = new_used, new_counts
        if bar is not None:
            bar.close()
        wall = time.perf_counter() - wall0
        return build_result(self, util_rows, wall)

    def _integrate_sharing(self, t: float) -> None:
        """Add the interval since the last event to the GPU-sharing integrals."""
        dt = t - self.t
        if dt > 0 and self.gpu_index is not None and self.running:
            busy = self.pooled_capacity[self.gpu_index] - self.free[:, self.gpu_index].sum()
            self.share_area[0] += dt * sum(r.gpus for r in self.running.values())
            self.share_area[1] += dt * busy

    def gpu_sharing(self) -> float:
        """Time-weighted mean number of jobs per busy GPU (1.0 without sharing; NaN: no GPU used)."""
        held, busy = self.share_area
        return held / busy if busy > 0 else math.nan

    def _breaks_gang(self, d: Decision) -> bool:
        """Whether ``d`` starts a gang job on less than its request or resizes a running one."""
        pre = d.preempt
        for a in d.allocations:
            i = self.index.get(a.job) if isinstance(a, Allocation) else None
            if i is None:
                continue
            job = self.jobs[i]
            if job.gang and (
                (a.workers, a.ps) != job.gang_allocation
                or (a.job in self.running and a.job not in pre)
            ):
                return True
        return False

    def _stale(self, entry: tuple[float, int, int]) -> bool:
        r = self.running.get(self.jobs[entry[1]].name)
        return r is None or r.version != entry[2]
