"""The one interface every scheduling policy implements, and the immutable state it receives.

``Placement`` is the solver's (``smdlab.solve.placement.Placement``), re-exported here.

A policy never owns the simulation loop: the simulator calls ``decide(state)`` at each decision
point and applies the returned ``Decision`` (after checking it against every machine's capacity).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

import numpy as np

from smdlab.model.cluster import Cluster
from smdlab.model.job import Job
from smdlab.solve.placement import Placement  # the one Placement class (re-exported for policies)

__all__ = [
    "Allocation",
    "ClusterState",
    "Decision",
    "Placement",
    "Policy",
    "QueuedJob",
    "RunningJob",
]


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
    """

    job: Job
    workers: int
    ps: int
    placement: Placement
    start: float
    remaining: float
    attained_service: float = 0.0


@dataclass(frozen=True)
class ClusterState:
    """What a policy sees at a decision point (read-only).

    time: simulation time (s).
    cluster: the machines.
    queued: waiting jobs, in arrival order.
    running: jobs holding allocations.
    free: free capacity per machine, (machines x resources) in ``cluster.resources`` order (read-only).
    mode: timing model overlap mode (``wfbp`` ...).
    elastic: whether the policy may resize running jobs.
    """

    time: float
    cluster: Cluster
    queued: tuple[QueuedJob, ...]
    running: tuple[RunningJob, ...]
    free: np.ndarray
    mode: str = "wfbp"
    elastic: bool = False


@dataclass(frozen=True)
class Allocation:
    """Start (or, for a running job in elastic mode, resize to) ``workers`` and ``ps`` at ``placement``."""

    job: str
    workers: int
    ps: int
    placement: Placement


@dataclass(frozen=True)
class Decision:
    """What a policy returns: jobs to preempt (back to the queue), then allocations to apply."""

    allocations: tuple[Allocation, ...] = ()
    preempt: tuple[str, ...] = ()
    note: str = field(default="", compare=False)


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
