"""Event-driven simulation of a cluster under one policy, with exact (next-event) time.

Events: job arrivals, job completions and, optionally, periodic decision points every ``slot_s``
seconds. Between events every running job processes samples at the layered model's speed for its
current allocation and placement (``smdlab.model.placement_speed``), so its completion time is
known exactly. At each event time the simulator first retires completed jobs, then admits
arrivals, then asks the policy for a decision, validates it against the execution mode, checks
every machine's capacity and applies it.

Execution modes (``smdlab.execution.EXECUTIONS``): ``non_elastic`` (an allocation is fixed for
life), ``preemptive`` (a running job may be stopped and resumed later) and ``elastic`` (running
jobs may also be re-allocated in place). By default each policy runs in the mode it declares
(``execution="natural"``). A running job whose allocation or placement changes, and a preempted
job when it resumes, makes no progress for ``restart_s`` seconds (checkpoint-restart).

This module holds the public API and the event loop. The rest of ``smdlab.sim``: ``engine`` (the
run's state; opening and closing a job's constant-speed segment), ``checks`` and ``decisions``
(checking and applying a decision), ``groups`` (GPU-sharing groups), ``running`` and ``records``
(a running job's bookkeeping; what the run records), ``result`` (the SimResult).
"""

from __future__ import annotations

import heapq
import math
import time
from collections.abc import Generator, Sequence
from typing import TYPE_CHECKING, Never

from smdlab.errors import InvalidInput, check_choice, check_int, check_positive, reject_former
from smdlab.execution import (
    DEFAULT_RESTART_S,
    DEFAULT_SLOT_S,
    EXECUTION_CHOICES,
    RESTART_RULES,
    UNFIT,
)
from smdlab.model.cluster import Cluster
from smdlab.model.job import Job
from smdlab.model.storage import Storage
from smdlab.model.timing import MODES
from smdlab.policies.base import (
    ClusterState,
    Decision,
    Execution,
    Policy,
    QueuedJob,
    policy_settings,
)
from smdlab.policies.toolkit import enforce_gang
from smdlab.sim.checks import as_allreduce, breaks_gang, screen_unfit
from smdlab.sim.decisions import apply_decision
from smdlab.sim.engine import Engine, check_jobs
from smdlab.sim.errors import CapacityExceeded, InvalidDecision, Stalled
from smdlab.sim.groups import SharingGroups
from smdlab.sim.result import SimResult, build_result
from smdlab.sim.running import RunningView
from smdlab.sim.storage import StorageRun
from smdlab.solve.placement import rack_layout, set_rack_layout

if TYPE_CHECKING:
    from smdlab.workloads.storage import StorageSpec

__all__ = [
    "EXECUTION_CHOICES",
    "UNFIT",
    "CapacityExceeded",
    "InvalidDecision",
    "Stalled",
    "as_allreduce",
    "resolve_execution",
    "simulate",
    "simulate_steps",
]


# Idle decision points (nothing runs, jobs wait, no arrival pending) a policy that asks for a
# later decision point may spend before the run is declared stalled.
IDLE_WAKE_LIMIT = 20


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
    restart_rule: str = "on_restart",
    storage: Storage | StorageSpec | None = None,
    lower_bound: bool = True,
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
    None: the policy's declared ``sharing_degree``, else 1). restart_rule: when the restart cost
    is paid (``smdlab.execution.RestartRule``): ``on_restart`` (after a resume or re-allocation)
    or ``every_event`` (at every event, by every running job, as the simulators derived from
    Tiresias' do). A job's ``restart_s``, where set, replaces ``restart_s`` for it.
    storage: datasets, cache, remote pool and prices (``smdlab.model.storage.Storage``): each
    job's speed is capped by its IO-bound speed, and the summary gains the storage entries
    (``smdlab.sim.storage``, docs/storage.md); a ``StorageSpec`` (a scenario's ``[storage]``
    table) is bound to ``jobs`` first; None: no storage (every sample arrives free).
    lower_bound: compute the summary's ``mean_jct_lower_bound`` (an LP, cached per workload and
    process); False leaves it NaN, for a caller that computes it once for several runs.

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
        restart_rule,
        storage,
    )
    sim.progress = bool(progress)
    sim.with_bound = bool(lower_bound)
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
    restart_rule: str = "on_restart",
    storage: Storage | StorageSpec | None = None,
    lower_bound: bool = True,
) -> Generator[ClusterState, Decision, SimResult]:
    """``simulate`` as a generator for an outside driver (``smdlab.rl``): it yields the state at
    each decision point, applies the Decision sent back, and returns the SimResult at the end.

    ``policy`` only sets the execution mode and slot (``resolve_execution``) and is reset once;
    its ``decide`` is never called. ``lower_bound=False`` skips the lower bound's LP at the end
    (``summary["mean_jct_lower_bound"]`` is NaN), for drivers that never read it.
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
        restart_rule,
        storage,
    )
    sim.with_bound = bool(lower_bound)
    return sim.steps()


class _Simulator(Engine):
    """One run: the engine's state driven by the event loop (``steps``) and a policy."""

    progress = False
    _busy: float | None = None  # GPUs in use, kept while the free array is unchanged

    def __init__(
        self,
        jobs,
        cluster,
        policy,
        mode,
        timing,
        restart_s,
        unfit,
        record_history,
        restart_rule="on_restart",
        storage=None,
    ):
        jobs = check_jobs(cluster, jobs)
        mode = check_choice("mode", mode, MODES)
        self.unfit = check_choice("unfit", unfit, UNFIT)
        record_history = bool(record_history)
        self.policy = _policy_from(policy)
        self.settings = policy_settings(self.policy)
        self.decide_on_completion = self.settings.decide_on_completion
        execution, slot_s = resolve_execution(self.policy, *timing)
        restart_s = check_positive("restart_s", restart_s, allow_zero=True)
        restart_rule = check_choice("restart_rule", restart_rule, RESTART_RULES)
        super().__init__(
            jobs,
            cluster,
            mode,
            execution,
            slot_s,
            restart_s,
            record_history,
            policy if isinstance(policy, str) else self.settings.name,
            restart_rule,
        )
        if storage is not None:
            if self.network is not None:  # both re-time running jobs; their interplay is unmodelled
                raise InvalidInput(
                    "storage: a run takes storage or a network fabric, not both (cluster.fabric is set)"
                )
            if not isinstance(storage, Storage) and callable(getattr(storage, "bind", None)):
                storage = storage.bind(jobs)  # a scenario's [storage] table (StorageSpec)
            self.storage_run = StorageRun(storage, jobs, len(cluster.machines))

    def _state(self) -> ClusterState:
        t = self.t
        queued = self._queued_tuple
        if queued is None:
            queued = self._queued_tuple = tuple(self.queued.values())
        running = RunningView(self.running, t)
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
            None if self.storage_run is None else self.storage_run.view(self),
        )

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
        self.reset_run()
        self.groups = SharingGroups(self)
        self.policy.reset()
        order = sorted(screen_unfit(self, self.unfit), key=lambda i: (self.jobs[i].arrival, i))
        self.has_gang = any(self.jobs[i].gang for i in order)
        arrivals = [self.jobs[i].arrival for i in order]
        n_arr = len(order)
        k = 0
        log = self.log
        if n_arr:
            log.first_util_row(arrivals[0], len(self.resources), self.free)
        next_tick = math.inf
        next_wake = math.inf  # a decision point the policy asked for (Decision.wake_at)
        lease = self.settings.lease_rounds
        self.lease_s = self.delta if lease else None
        idle_points = 0
        bar = None
        if self.progress:
            from tqdm import tqdm

            bar = tqdm(total=n_arr, desc=f"simulate {self.policy_name}", unit="job", leave=False)
        wall0 = time.perf_counter()
        free_seen = None  # the free array ``used`` was computed from
        used = self.pooled_capacity
        self._busy = None
        while True:
            t_arr = arrivals[k] if k < n_arr else math.inf
            while self.heap and self.stale(self.heap[0]):
                heapq.heappop(self.heap)
            t_cmp = self.heap[0][0] if self.heap else math.inf
            busy = bool(self.queued or self.running)
            t_tick = next_tick if (self.delta is not None and busy) else math.inf
            t = min(t_arr, t_cmp, t_tick, next_wake if busy else math.inf)
            if t == math.inf:
                break
            self._integrate_sharing(t)
            if self.storage_run is not None:
                self.storage_run.advance(self, t)
            self.t = t
            # Completions (every job whose finish is t, up to rounding).
            limit = t + 1e-12 * max(1.0, abs(t))
            completed_now = False
            left_groups: list[str] = []  # groups a member left, regrouped after the charge
            while self.heap and self.heap[0][0] <= limit:
                _, i, version = heapq.heappop(self.heap)
                name = self.jobs[i].name
                r = self.running.get(name)
                if r is None or r.version != version:
                    continue
                del self.running[name]
                self.close(r, t, final=True)
                self.free[r.rows] += r.usage
                rec = self.records[i]
                rec.finish, rec.status = t, "completed"
                if lease and self.delta is not None:  # it holds its lease to the slot's end
                    rec.finish = math.ceil(t / self.delta - 1e-9) * self.delta
                completed_now = True
                if bar is not None:
                    bar.update()
                if r.group is not None:
                    left_groups.append(r.group)
            # The interval up to t is charged at the group sizes that ran in it (Muri's
            # simulator charges a packing its members' overheads as last scheduled).
            if self.restart_rule == "every_event" and self.running:
                self.charge_event(t, self.groups.members)
            for gid in dict.fromkeys(left_groups):
                self.groups.regroup(gid, t)
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
            # Leases (lease_rounds) end at every slot: the policy re-decides them, queue or not.
            lease_end = lease and bool(self.running) and t == t_tick
            given = None  # the decision's storage allocation, if any
            if self.queued or (self.elastic and self.running) or on_completion or lease_end:
                state = self._state()
                t0 = time.perf_counter()
                # the placement rules are rack-aware while the policy decides (racked clusters)
                prev_racks = set_rack_layout(self.racks)
                decision = yield state  # run() passes it to policy.decide
                if self.has_gang and isinstance(decision, Decision) and breaks_gang(self, decision):
                    decision = enforce_gang(decision, state)
                set_rack_layout(prev_racks)
                spent = time.perf_counter() - t0
                started, preempted, resized = apply_decision(self, self.groups, decision)
                wake = getattr(decision, "wake_at", None)
                given = getattr(decision, "storage", None)
                next_wake = wake if wake is not None and wake > t else math.inf
                log.decisions.append(
                    (t, spent, started, preempted, resized, len(self.queued), len(self.running))
                )
                if self.queued and not self.running and k >= n_arr:
                    idle_points += 1
                    # A policy that asked for a later decision point (wake_at) may wait for it
                    # (a few idle points, e.g. to its next 5-minute mark), as a slotted one waits
                    # for its next slot.
                    limit = 2 if next_wake == math.inf else IDLE_WAKE_LIMIT
                    if (self.delta is None and next_wake == math.inf) or idle_points > limit:
                        raise Stalled(
                            f"policy {self.policy_name!r} started no job on an idle cluster at t={t:g} while "
                            f"{len(self.queued)} jobs wait (first: {next(iter(self.queued))!r}) and no arrival "
                            f"is pending; it would wait forever"
                        )
                else:
                    idle_points = 0
            if self.network is not None:  # shares change only when the running jobs do
                self.network.update(t)
            if self.storage_run is not None:
                self.storage_run.update(self, t, given)
            if completed_now or self.free is not free_seen:  # else free is unchanged
                used = self.pooled_capacity - self.free.sum(axis=0)
                free_seen = self.free
                self._busy = None
            log.util_row(t, used, (len(self.running), len(self.queued)), self.free)
        if bar is not None:
            bar.close()
        wall = time.perf_counter() - wall0
        return build_result(self, wall)

    def _integrate_sharing(self, t: float) -> None:
        """Add the interval since the last event to the GPU-sharing integrals."""
        dt = t - self.t
        if dt > 0 and self.gpu_index is not None and self.running:
            busy = self._busy
            if busy is None:
                gi = self.gpu_index
                busy = self._busy = self.pooled_capacity[gi] - self.free[:, gi].sum()
            self.log.integrate_sharing(dt, self.groups.gpus_at_once(), busy)
