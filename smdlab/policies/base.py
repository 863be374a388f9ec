"""The one interface every scheduling policy implements, and the immutable state it receives.

``Placement`` is the solver's (``smdlab.solve.placement.Placement``), re-exported here.

A policy never owns the simulation loop: the simulator calls ``decide(state)`` at each decision
point and applies the returned ``Decision`` (after checking it against every machine's capacity).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import (
    TYPE_CHECKING,
    Any,
    Protocol,
    TypeVar,
    overload,
    runtime_checkable,
)

import numpy as np

from smdlab.errors import InvalidInput, check_bool

# Simulation options live below the data layer and the policies; re-exported for policies.
from smdlab.execution import (
    DEFAULT_RESTART_S,
    DEFAULT_SLOT_S,
    EXECUTIONS,
    SHARING_KINDS,
    TIME_SLICE_S,
    TIME_SLICE_SWITCH_S,
    Execution,
    SharingKind,
)
from smdlab.model.cluster import Cluster
from smdlab.model.job import Job
from smdlab.model.storage import StorageAllocation, StorageView
from smdlab.solve.placement import Placement  # the one Placement class (re-exported for policies)

__all__ = [
    "DEFAULT_RESTART_S",
    "DEFAULT_SLOT_S",
    "EXECUTIONS",
    "SHARING_KINDS",
    "TIME_SLICE_S",
    "TIME_SLICE_SWITCH_S",
    "Allocation",
    "ClusterState",
    "Decision",
    "Execution",
    "LazySeq",
    "Placement",
    "Policy",
    "PolicySettings",
    "QueuedJob",
    "RunningJob",
    "SharingKind",
    "natural_execution",
    "policy_settings",
    "supported_executions",
]


@dataclass(frozen=True)
class PolicySettings:
    """What the simulator reads from a policy, checked, with the ``Policy`` defaults filled in.

    name: the policy's ``name`` (its class name if it has none).
    execution: the mode it runs in by default (``Policy.execution``).
    executions: the modes it can run in (``Policy.executions``; every mode if it declares none).
    slot_s: its own seconds between periodic decision points (``Policy.slot_s``; None: none).
    sharing_degree: most jobs it co-locates on a GPU by default (``Policy.sharing_degree``).
    decide_on_completion: asked at every completion, also with an empty queue.
    lease_rounds: holds every allocation for whole slots (leases): the policy decides at every
        slot while jobs run, a job that completes within a slot finishes at the slot's end, and a
        slot credits whole iterations only (``Policy.lease_rounds``; needs ``slot_s``).
    """

    name: str
    execution: Execution = "non_elastic"
    executions: tuple[Execution, ...] = EXECUTIONS
    slot_s: float | None = None
    sharing_degree: int = 1
    decide_on_completion: bool = False
    lease_rounds: bool = False


def policy_settings(policy: Any) -> PolicySettings:
    """The attributes of ``policy`` (an instance or a class) the simulator reads; raises InvalidInput.

    A policy that does not subclass ``Policy`` gets the protocol's default for each attribute it
    does not define.
    """
    name = getattr(policy, "name", None)
    if not isinstance(name, str) or not name:
        name = policy.__name__ if isinstance(policy, type) else type(policy).__name__
    where = f"policy {name!r}"
    execution = getattr(policy, "execution", "non_elastic")
    if execution not in EXECUTIONS:
        raise InvalidInput(
            f"{where}: execution must be one of {', '.join(EXECUTIONS)}, got {execution!r}"
        )
    declared = getattr(policy, "executions", None)
    if declared is None:
        executions = EXECUTIONS
    else:
        if isinstance(declared, str) or not isinstance(declared, Iterable):
            raise InvalidInput(
                f"{where}: executions must be a tuple of modes among {', '.join(EXECUTIONS)}, "
                f"got {declared!r}"
            )
        declared = tuple(declared)
        unknown = [m for m in declared if m not in EXECUTIONS]
        if unknown:
            raise InvalidInput(
                f"{where}: executions must be among {', '.join(EXECUTIONS)}, got {unknown[0]!r}"
            )
        executions = tuple(m for m in EXECUTIONS if m in declared)
    if execution not in executions:
        raise InvalidInput(
            f"{where}: execution {execution!r} must be one of its executions "
            f"({', '.join(executions) or 'none'})"
        )
    slot_s = getattr(policy, "slot_s", None)
    if slot_s is not None and (
        isinstance(slot_s, bool) or not isinstance(slot_s, (int, float)) or not slot_s > 0
    ):
        raise InvalidInput(f"{where}: slot_s must be None or a number > 0, got {slot_s!r}")
    degree = getattr(policy, "sharing_degree", 1)
    if isinstance(degree, bool) or not isinstance(degree, (int, np.integer)) or degree < 1:
        raise InvalidInput(f"{where}: sharing_degree must be an integer >= 1, got {degree!r}")
    return PolicySettings(
        name,
        execution,
        executions,
        None if slot_s is None else float(slot_s),
        int(degree),
        check_bool(
            f"{where}: decide_on_completion", getattr(policy, "decide_on_completion", False)
        ),
        check_bool(f"{where}: lease_rounds", getattr(policy, "lease_rounds", False)),
    )


def natural_execution(policy: Any) -> Execution:
    """The execution mode ``policy`` declares (attribute ``execution``; non_elastic if none)."""
    return policy_settings(policy).execution


def supported_executions(policy: Any) -> tuple[Execution, ...]:
    """The execution modes ``policy`` can run in (attribute ``executions``; every mode if none)."""
    return policy_settings(policy).executions


T = TypeVar("T")


class LazySeq(Sequence[T]):
    """A read-only sequence built on first use that concatenates and slices like a tuple.

    ``build`` returns the items; it is called at most once. Subclasses may instead override
    ``_get`` (and ``__len__``, when the length is known without building the items).
    """

    def __init__(self, build: Callable[[], Iterable[T]]):
        self._build = build
        self._items: tuple[T, ...] | None = None

    def _get(self) -> tuple[T, ...]:
        if self._items is None:
            self._items = tuple(self._build())
        return self._items

    def __len__(self) -> int:
        return len(self._get())

    @overload
    def __getitem__(self, i: int) -> T: ...
    @overload
    def __getitem__(self, i: slice) -> tuple[T, ...]: ...
    def __getitem__(self, i: int | slice) -> T | tuple[T, ...]:
        return self._get()[i]

    def __iter__(self) -> Iterator[T]:
        return iter(self._get())

    def __bool__(self) -> bool:
        return len(self) > 0

    def __add__(self, other: Iterable[Any]) -> tuple[Any, ...]:
        if isinstance(other, (str, bytes)) or not isinstance(other, Iterable):
            return NotImplemented
        return self._get() + tuple(other)

    def __radd__(self, other: Iterable[Any]) -> tuple[Any, ...]:
        if isinstance(other, (str, bytes)) or not isinstance(other, Iterable):
            return NotImplemented
        return tuple(other) + self._get()

    def __eq__(self, other: object) -> bool:
        if isinstance(other, (str, bytes)) or not isinstance(other, Sequence):
            return NotImplemented
        return self._get() == tuple(other)

    def __hash__(self) -> int:
        return hash(self._get())

    def __repr__(self) -> str:
        return f"{type(self).__name__}({list(self._get())!r})"


@dataclass(frozen=True)
class QueuedJob:
    """A job waiting to run (never started, or preempted).

    job: the job (its ``samples`` is the total work asked).
    remaining: samples still to process.
    attained_service: GPU-seconds received so far (Tiresias' 2D-LAS uses it).
    last_queued: time the job (re-)entered the queue.
    """

    job: Job
    remaining: float
    attained_service: float = 0.0
    last_queued: float = 0.0


@dataclass(frozen=True)
class RunningJob:
    """A job holding an allocation.

    job: the job.
    workers, ps: its current allocation.
    placement: its tasks on machines.
    start: time it (last) started.
    remaining: samples still to process at the state's time.
    attained_service: GPU-seconds received so far.
    group: the simulator's id of the interleaved group the job runs in (None: alone).
    """

    job: Job
    workers: int
    ps: int
    placement: Placement
    start: float
    remaining: float
    attained_service: float = 0.0
    group: str | None = None


@dataclass(frozen=True)
class ClusterState:
    """What a policy sees at a decision point (read-only).

    time: simulation time (s).
    cluster: the machines.
    queued: waiting jobs, in arrival order (a sequence: a tuple, or one built on first use).
    running: jobs holding allocations (a sequence; ``running + queued`` and slicing give tuples).
    free: free capacity per machine, (machines x resources) in ``cluster.resources`` order (read-only).
    mode: timing model overlap mode (``wfbp`` ...).
    execution: the execution mode (``EXECUTIONS``); running jobs may be resized only when it is
        ``elastic``.
    slot_s: seconds between periodic decision points (None: decisions at arrivals and
        completions only).
    restart_s: seconds a running job makes no progress after its allocation or placement changes,
        and a preempted job after it resumes (checkpoint-restart cost).
    sharing_degree: most jobs a ``space`` sharing group may co-locate on a GPU (1: no sharing).
    storage: the run's storage (``smdlab.model.storage.StorageView``: datasets, cache, remote
        pool, the allocation in force, compute speeds); None: a run without storage.
    """

    time: float
    cluster: Cluster
    queued: Sequence[QueuedJob]
    running: Sequence[RunningJob]
    free: np.ndarray
    mode: str = "wfbp"
    execution: Execution = "non_elastic"
    slot_s: float | None = None
    restart_s: float = 0.0
    sharing_degree: int = 1
    storage: StorageView | None = None

    def __post_init__(self) -> None:
        if self.execution not in EXECUTIONS:
            raise InvalidInput(
                f"execution must be one of {', '.join(EXECUTIONS)}, got {self.execution!r}"
            )

    if not TYPE_CHECKING:  # a runtime hint only: static checkers keep reporting unknown names

        def __getattr__(self, name: str) -> Any:
            if name == "elastic":  # the former duplicate of execution
                raise AttributeError(
                    "ClusterState.elastic is a former name (removed in 0.2); "
                    "use state.execution == 'elastic'"
                )
            raise AttributeError(f"'ClusterState' object has no attribute {name!r}")

    @property
    def preemptive(self) -> bool:
        """Whether the policy may preempt running jobs (preemptive or elastic execution)."""
        return self.execution != "non_elastic"


@dataclass(frozen=True)
class Allocation:
    """Start (or, for a running job in elastic mode, resize to) ``workers`` and ``ps`` at ``placement``.

    cpu, mem_gb: CPU cores and memory (GB) each worker reserves and runs with (Synergy-style
    allocations, ``smdlab.model.pipeline``); None: the job's worker demand.
    group: a label shared by the allocations of jobs that interleave on one GPU set (Muri's
    group execution: up to 4 jobs, the same workers, PSs and placement; the group reserves the
    per-machine maximum of its members' demands and each member advances at the group's
    interleaved iteration time, ``smdlab.model.interleave.group_iteration_time``); None: alone.
    sharing: how a group shares its GPUs instead (``SHARING_KINDS``): ``space`` (co-located at
    once, at most the run's sharing degree, each at the co-location model's predicted rate, GPU
    memory checked by the model) or ``time`` (time-sliced, each 1/n of the GPU time less the
    per-switch overhead); None: Muri's interleaving.
    accumulation: gradient-accumulation steps of a ``space``-shared job (>= 1): its per-GPU batch
    runs as that many sub-batches, the global batch unchanged (SJF-BSBF); a smaller footprint,
    at the measured efficiency of the smaller batch (``model.colocation.accumulation_efficiency``).
    """

    job: str
    workers: int
    ps: int
    placement: Placement
    cpu: float | None = None
    mem_gb: float | None = None
    group: str | None = None
    sharing: SharingKind | None = None
    accumulation: int = 1


@dataclass(frozen=True)
class Decision:
    """What a policy returns: jobs to preempt (back to the queue), then allocations to apply.

    allocations: starts of queued (or just preempted) jobs and, in elastic execution, new
    allocations of running jobs; a running job not named keeps what it holds.
    preempt: names of running jobs to stop (preemptive or elastic execution); they re-enter the
    queue with their remaining samples and may be started again in the same decision.
    note: free text kept with the decision (not compared).
    wake_at: simulation time (s) of one extra decision point the policy asks for, on top of
    arrivals, completions and the periodic points of ``slot_s``; ignored unless later than the
    decision's time. Each decision's ``wake_at`` replaces the previous request (None cancels it).
    storage: in a run with storage, the cache per dataset and remote bandwidth per job to hold
    from this decision on (``smdlab.model.storage.StorageAllocation``, docs/storage.md); None:
    the run's default cache rule (``Storage.allocator``), or the policy's last allocation if it
    ever gave one. Ignored in a run without storage.
    """

    allocations: tuple[Allocation, ...] = ()
    preempt: tuple[str, ...] = ()
    note: str = field(default="", compare=False)
    wake_at: float | None = None
    storage: StorageAllocation | None = None


@runtime_checkable
class Policy(Protocol):
    """A scheduling policy: a name, one method from state to decision, ``reset``, and settings.

    Subclass it to inherit ``reset`` (nothing kept between runs) and the defaults below; a class
    that does not subclass it must define ``name``, ``decide`` and ``reset``, and may define any
    setting (``policy_settings`` fills in the defaults for the rest). The simulator calls
    ``reset()`` once before each run and ``decide(state)`` at every decision point.
    """

    name: str
    """The policy's name in results and tables (the registry name when run by name)."""
    execution: Execution = "non_elastic"
    """The mode it runs in by default (``execution="natural"``); one of ``executions``."""
    executions: tuple[Execution, ...] = EXECUTIONS
    """The modes it can run in when a run forces one (``execution=...``)."""
    slot_s: float | None = None
    """Its seconds between periodic decision points in its own mode (None: events only)."""
    sharing_degree: int = 1
    """Most jobs a GPU holds at once in its ``space`` sharing groups unless a run says (1: none)."""
    decide_on_completion: bool = False
    """Ask ``decide`` at every completion, also when no job waits (plans with barriers)."""

    def decide(self, state: ClusterState) -> Decision:
        """Allocations (and preemptions) to apply at this decision point."""
        ...

    def reset(self) -> None:
        """Forget what earlier runs taught the policy (default: it keeps nothing between runs)."""
        return None
