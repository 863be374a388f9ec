"""The one interface every scheduling policy implements, and the immutable state it receives.

``Placement`` is the solver's (``smdlab.solve.placement.Placement``), re-exported here.

A policy never owns the simulation loop: the simulator calls ``decide(state)`` at each decision
point and applies the returned ``Decision`` (after checking it against every machine's capacity).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

import numpy as np

from smdlab.errors import InvalidInput

# Simulation options live below the data layer and the policies; re-exported for policies.
from smdlab.execution import (
    DEFAULT_RESTART_S,
    DEFAULT_SLOT_S,
    EXECUTIONS,
    SHARING_KINDS,
    TIME_SLICE_S,
    TIME_SLICE_SWITCH_S,
)
from smdlab.model.cluster import Cluster
from smdlab.model.job import Job
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
    "Placement",
    "Policy",
    "QueuedJob",
    "RunningJob",
    "natural_execution",
    "supported_executions",
]


def natural_execution(policy: Any) -> str:
    """The execution mode ``policy`` declares (class attribute ``execution``; non_elastic if none)."""
    mode = getattr(policy, "execution", "non_elastic")
    return mode if mode in EXECUTIONS else "non_elastic"


def supported_executions(policy: Any) -> tuple[str, ...]:
    """The execution modes ``policy`` can run in (attribute ``executions``; every mode if it declares none)."""
    modes = getattr(policy, "executions", None)
    if modes is None:
        return EXECUTIONS
    return tuple(m for m in EXECUTIONS if m in modes)


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
    queued: waiting jobs, in arrival order.
    running: jobs holding allocations.
    free: free capacity per machine, (machines x resources) in ``cluster.resources`` order (read-only).
    mode: timing model overlap mode (``wfbp`` ...).
    elastic: whether the policy may resize running jobs (``execution == "elastic"``).
    execution: the execution mode (``EXECUTIONS``); when not given, ``elastic`` sets it
        (elastic or non_elastic), and otherwise ``elastic`` follows it.
    slot_s: seconds between periodic decision points (None: decisions at arrivals and
        completions only).
    restart_s: seconds a running job makes no progress after its allocation or placement changes,
        and a preempted job after it resumes (checkpoint-restart cost).
    sharing_degree: most jobs a ``space`` sharing group may co-locate on a GPU (1: no sharing).
    """

    time: float
    cluster: Cluster
    queued: tuple[QueuedJob, ...]
    running: tuple[RunningJob, ...]
    free: np.ndarray
    mode: str = "wfbp"
    elastic: bool = False
    execution: str | None = None
    slot_s: float | None = None
    restart_s: float = 0.0
    sharing_degree: int = 1

    def __post_init__(self) -> None:
        execution = self.execution
        if execution is None:
            execution = "elastic" if self.elastic else "non_elastic"
        elif execution not in EXECUTIONS:
            raise InvalidInput(
                f"execution must be one of {', '.join(EXECUTIONS)}, got {execution!r}"
            )
        object.__setattr__(self, "execution", execution)
        object.__setattr__(self, "elastic", execution == "elastic")

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
    sharing: str | None = None
    accumulation: int = 1


@dataclass(frozen=True)
class Decision:
    """What a policy returns: jobs to preempt (back to the queue), then allocations to apply.

    wake_at: ask for another decision point at this time (None: only at arrivals, completions
    and periodic points); the latest decision's request replaces earlier ones.
    """

    allocations: tuple[Allocation, ...] = ()
    preempt: tuple[str, ...] = ()
    note: str = field(default="", compare=False)
    wake_at: float | None = None


@runtime_checkable
class Policy(Protocol):
    """A scheduling policy: a name, one method from state to decision, and ``reset``.

    Subclass it to inherit the default ``reset`` (nothing kept between runs); a class that does
    not subclass it must define all three. The simulator calls ``reset()`` once before each run
    and ``decide(state)`` at every decision point.
    """

    name: str

    def decide(self, state: ClusterState) -> Decision:
        """Allocations (and preemptions) to apply at this decision point."""
        ...

    def reset(self) -> None:
        """Forget what earlier runs taught the policy (default: it keeps nothing between runs)."""
        return None
