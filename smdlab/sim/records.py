"""What a simulation records: per-job outcomes, the allocation history, decisions, utilisation."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from smdlab.model.traffic import cross_rack_bytes_per_iteration
from smdlab.sim.running import Run

__all__ = ["JobRecord", "Recorder"]


@dataclass
class JobRecord:
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


class Recorder:
    """The tables of one run, filled as it goes (``smdlab.sim.result.build_result`` reads them).

    records: one ``JobRecord`` per input job. history: (job, start, end, workers, PSs, speed,
    samples) per constant-speed segment (when ``record_history``). decisions: one row per
    decision point. util_rows: resources in use and job counts whenever they change; type_rows:
    GPUs in use per GPU type beside them (typed clusters). cross_rack_bytes: bytes sent across
    rack uplinks (racked clusters). share_area: integrals of (GPUs held by jobs, GPUs busy).
    """

    def __init__(
        self,
        n_jobs: int,
        index: Mapping[str, int],
        record_history: bool,
        rack_of: Sequence[int] | None,
        machine_types: Sequence[str] | None,
        capacity: np.ndarray,
        gpu_index: int | None,
    ) -> None:
        self.records = [JobRecord(i) for i in range(n_jobs)]
        self.index = index
        self.record_history = record_history
        self.rack_of = rack_of
        self.machine_types = machine_types
        self.capacity = capacity
        self.gpu_index = gpu_index
        self.cross_rack_bytes = 0.0
        self.type_rows: list[tuple] = []
        self.reset()

    def reset(self) -> None:
        """Empty the tables a run fills (the per-job records are the caller's to renew)."""
        self.history: list[tuple] = []
        self.decisions: list[tuple] = []
        self.util_rows: list[tuple] = []
        self.share_area = [0.0, 0.0]
        self._used: np.ndarray | None = None
        self._counts = (0, 0)

    def close_segment(self, r: Run, t: float, final: bool) -> float:
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
                self.cross_rack_bytes += done / r.job.samples_per_iteration(r.workers) * per_iter
        if self.record_history and dt > 0:
            paused = min(t, r.resume)
            if paused > r.seg_start:  # the restart pause: resources held, no progress
                self.history.append((r.job.name, r.seg_start, paused, r.workers, r.ps, 0.0, 0.0))
            if t > paused:
                self.history.append((r.job.name, paused, t, r.workers, r.ps, r.speed, done))
        return r.rem0 - done

    def type_row(self, t: float, free: np.ndarray) -> None:
        """Record GPUs in use per GPU type at ``t`` beside the utilisation row (typed clusters)."""
        if self.machine_types is None or self.gpu_index is None:
            return
        held = self.capacity[:, self.gpu_index] - free[:, self.gpu_index]
        kinds = dict.fromkeys(self.machine_types)
        types = np.array(self.machine_types)
        self.type_rows.append((t, *(float(held[types == k].sum()) for k in kinds)))

    def first_util_row(self, t: float, n_resources: int, free: np.ndarray) -> None:
        """The utilisation row at the first arrival: nothing in use, no job."""
        self._used = np.zeros(n_resources)
        self.util_rows.append((t, *self._used, 0, 0))
        self.type_row(t, free)

    def util_row(
        self, t: float, used: np.ndarray, counts: tuple[int, int], free: np.ndarray
    ) -> None:
        """A utilisation row at ``t`` when usage or the (running, queued) counts changed."""
        # a row whenever usage or the job counts change (a queue can grow while usage stays put)
        if self._used is None:
            self._used = np.zeros(len(used))
        if (
            counts != self._counts
            or not self.util_rows
            or (used is not self._used and not np.array_equal(used, self._used))
        ):
            self.util_rows.append((t, *used, *counts))
            self.type_row(t, free)
        self._used, self._counts = used, counts

    def integrate_sharing(self, dt: float, held: float, busy: float) -> None:
        """Add ``dt`` seconds with ``held`` GPUs held by jobs and ``busy`` GPUs in use."""
        self.share_area[0] += dt * held
        self.share_area[1] += dt * busy

    def gpu_sharing(self) -> float:
        """Time-weighted mean number of jobs running at once per busy GPU (1.0 without sharing; NaN: no GPU used)."""
        held, busy = self.share_area
        return held / busy if busy > 0 else math.nan
