"""A running job's mutable bookkeeping, and the read-only view of the running jobs a policy gets."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from smdlab.model.job import Job
from smdlab.policies.base import LazySeq, Placement, RunningJob

__all__ = ["Run", "RunningView", "remaining"]


@dataclass
class Run:
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
    base: float = 0.0  # speed without fabric contention (the fabric scales it; docs/network.md)


def remaining(r: Run, t: float) -> float:
    """Samples ``r`` has left at ``t`` (no progress before ``r.resume``)."""
    return max(0.0, r.rem0 - r.speed * max(0.0, t - r.resume))


_new = object.__new__


class RunningView(LazySeq[RunningJob]):
    """The running jobs at one decision point, built on first use (FIFO never looks at them)."""

    def __init__(self, running: Mapping[str, Run], t: float):
        self._running, self._t = running, t
        self._items: tuple[RunningJob, ...] | None = None

    def _get(self) -> tuple[RunningJob, ...]:
        if self._items is None:
            t = self._t
            items = []
            for r in self._running.values():
                # RunningJob's fields set directly: a frozen dataclass's __init__ costs twice as much
                o = _new(RunningJob)
                o.__dict__.update(
                    job=r.job,
                    workers=r.workers,
                    ps=r.ps,
                    placement=r.placement,
                    start=r.start,
                    remaining=max(0.0, r.rem0 - r.speed * max(0.0, t - r.resume)),  # remaining()
                    attained_service=r.att0 + r.gpus * (t - r.seg_start),
                    group=r.group,
                )
                items.append(o)
            self._items = tuple(items)
        return self._items

    def __len__(self) -> int:
        return len(self._running) if self._items is None else len(self._items)

    @property
    def runs(self) -> tuple[Run, ...]:
        """The engine's bookkeeping of the running jobs, in the view's order (read only).

        For a policy that keeps per-job arrays between decisions instead of reading every
        ``RunningJob`` at each one: a run's ``version`` is unique within a simulation and changes
        whenever its allocation, placement, speed or remaining work does (the other fields are
        fixed while it lasts), so the policy refreshes only the runs whose version is new to it;
        ``remaining_at`` and ``running_job`` give what the view holds for them.
        """
        return tuple(self._running.values())

    def remaining_at(self, rem0: np.ndarray, speed: np.ndarray, resume: np.ndarray) -> np.ndarray:
        """``remaining`` at the view's time of runs given as arrays of their ``rem0``, ``speed``
        and ``resume`` (the same floats as ``RunningJob.remaining``)."""
        return np.maximum(0.0, rem0 - speed * np.maximum(0.0, self._t - resume))

    def running_job(self, run: Run) -> RunningJob:
        """What the view holds for ``run`` (one of its ``runs``)."""
        return RunningView({run.job.name: run}, self._t)[0]

    @property
    def source(self) -> object:
        """The simulation the view belongs to: the same object at every decision of one run."""
        return self._running
