"""The measured-throughput job model: a job's speed read from a profiled (CPU, memory) table.

Specification: docs/model.md, "The measured-throughput model". This is the job model of
Synergy's simulator (msr-fiddle/synergy, MIT): a single-GPU job has an iteration time
``iter_time_s`` at the GPU-proportional share (3 CPUs and 62.5 GB per GPU in its cluster) and a
throughput relative to that share on a grid of CPU cores per GPU x memory per GPU. With ``c``
cores and ``g`` GB per worker:

    iteration time  tau(c, g) = iter_time_s / rel(level(c), level(g))

where ``level(x)`` is the largest grid level at most ``x`` (the smallest level when ``x`` is
below every level). There is no parameter server and no communication term: a job carrying a
``MeasuredThroughput`` (``Job.throughput``) is timed by ``measured_iteration_time`` alone, and
every policy sees it through the timing tables (``smdlab.model.timing.iteration_time_table``).
The profiles of Synergy's ten models are ``synergy_throughputs()`` (``data/pipelines``).
"""

from __future__ import annotations

import bisect
import csv
import math
import os
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from smdlab.errors import InvalidInput, check_positive
from smdlab.paths import data_dir

if TYPE_CHECKING:
    from smdlab.model.job import Job

__all__ = [
    "REFERENCE_SHARE",
    "MeasuredThroughput",
    "measured_iteration_time",
    "read_throughputs",
    "synergy_throughputs",
]

_COLUMNS = (
    "model",
    "cpu_per_gpu",
    "mem_gb_per_gpu",
    "relative_throughput",
    "best_cpu_per_gpu",
    "best_mem_gb_per_gpu",
    "batch",
    "iter_time_s_fair_share",
)


@dataclass(frozen=True)
class MeasuredThroughput:
    """A model's profiled throughput against (CPU cores, memory GB) per GPU.

    model: the profile's name. iter_time_s: seconds per iteration at the reference share.
    batch: samples per iteration. cpu_levels, mem_levels: the grid, ascending.
    relative: throughput relative to the reference share, one row per CPU level.
    best_cpu, best_mem_gb: the best-case demand (the smallest levels that reach the peak).
    """

    model: str
    iter_time_s: float
    batch: int
    cpu_levels: tuple[float, ...]
    mem_levels: tuple[float, ...]
    relative: tuple[tuple[float, ...], ...]
    best_cpu: float
    best_mem_gb: float

    def __post_init__(self) -> None:
        check_positive(f"iter_time_s of profile {self.model!r}", self.iter_time_s)
        rel = np.asarray(self.relative, dtype=float)
        if rel.shape != (len(self.cpu_levels), len(self.mem_levels)) or rel.size == 0:
            raise InvalidInput(
                f"profile {self.model!r}: relative throughput must be a "
                f"{len(self.cpu_levels)} x {len(self.mem_levels)} table, got shape {rel.shape}"
            )
        if not np.all(np.isfinite(rel)) or np.any(rel <= 0):
            raise InvalidInput(
                f"profile {self.model!r}: relative throughput must be finite and > 0"
            )
        for name, levels in (("cpu_levels", self.cpu_levels), ("mem_levels", self.mem_levels)):
            if list(levels) != sorted(set(levels)):
                raise InvalidInput(f"profile {self.model!r}: {name} must be strictly ascending")
        if np.any(np.diff(rel, axis=0) < 0) or np.any(np.diff(rel, axis=1) < 0):
            # Kept as profiled: a dip is a measurement, and the table is read as it is.
            warnings.warn(
                f"profile {self.model!r}: throughput is not monotone in CPU and memory",
                stacklevel=3,
            )

    def relative_at(self, cpu: float, mem_gb: float) -> float:
        """Throughput relative to the reference share at ``cpu`` cores and ``mem_gb`` GB per GPU."""
        i = max(0, bisect.bisect_right(self.cpu_levels, cpu + 1e-9) - 1)
        j = max(0, bisect.bisect_right(self.mem_levels, mem_gb + 1e-9) - 1)
        return float(self.relative[i][j])

    @property
    def speedup(self) -> float:
        """Throughput at the best-case demand relative to the reference share."""
        return self.relative_at(self.best_cpu, self.best_mem_gb)


def measured_iteration_time(throughput: MeasuredThroughput, cpu: float, mem_gb: float) -> float:
    """Seconds per iteration at ``cpu`` cores and ``mem_gb`` GB per GPU (the module docstring)."""
    return throughput.iter_time_s / throughput.relative_at(cpu, mem_gb)


def lease_speed(job: Job, workers: int, speed: float, lease_s: float) -> float:
    """Speed over a lease of ``lease_s`` s that counts whole iterations only.

    Synergy's simulator credits a job with ``floor(lease / iteration time)`` iterations per
    round. The iteration time is the measured one for a measured job (the same float operations
    as its simulator), else ``samples per iteration / speed``. A job whose iteration is longer
    than the lease keeps ``speed`` (it would never progress).
    """
    spi = float(job.samples_per_iteration(workers))
    t = job.throughput
    if t is not None:
        tau = measured_iteration_time(
            t, job.worker_demand.get("cpu", 0.0), job.worker_demand.get("mem_gb", 0.0)
        )
    else:
        tau = spi / speed
    n = math.floor(lease_s / tau)
    return speed if n < 1 else n * spi / lease_s


def read_throughputs(path: str | os.PathLike) -> dict[str, MeasuredThroughput]:
    """Profiles from a long-format CSV (``data/pipelines/synergy_sensitivity.csv``'s columns).

    A missing column, a non-numeric value or a grid point missing raises InvalidInput; a table
    that is not monotone in CPU and memory warns, naming the model.
    """
    p = Path(path)
    try:
        lines = [ln for ln in p.read_text(encoding="utf-8").splitlines() if not ln.startswith("#")]
    except OSError as exc:
        raise InvalidInput(f"{p}: cannot read the profile file ({exc.strerror or exc})") from None
    rows = list(csv.DictReader(lines))
    missing = [c for c in _COLUMNS if rows and c not in rows[0]] or ([] if rows else ["model"])
    if missing:
        raise InvalidInput(
            f"{p}: profile file needs columns {', '.join(_COLUMNS)}; missing {missing[0]!r}"
        )
    grids: dict[str, dict[tuple[float, float], float]] = {}
    meta: dict[str, tuple[float, int, float, float]] = {}
    for n, row in enumerate(rows, start=2):
        try:
            c, g, v = (float(row[k]) for k in _COLUMNS[1:4])
            info = (
                float(row["iter_time_s_fair_share"]),
                int(float(row["batch"])),
                float(row["best_cpu_per_gpu"]),
                float(row["best_mem_gb_per_gpu"]),
            )
        except (TypeError, ValueError):
            raise InvalidInput(f"{p}: row {n}: every column but model must be a number") from None
        grids.setdefault(row["model"], {})[(c, g)] = v
        meta[row["model"]] = info
    out = {}
    for model, grid in grids.items():
        cpus = sorted({c for c, _ in grid})
        mems = sorted({g for _, g in grid})
        if len(grid) != len(cpus) * len(mems):
            raise InvalidInput(f"{p}: profile {model!r} must give every (cpu, mem) grid point")
        it, batch, bc, bm = meta[model]
        out[model] = MeasuredThroughput(
            model,
            it,
            batch,
            tuple(cpus),
            tuple(mems),
            tuple(tuple(grid[(c, g)] for g in mems) for c in cpus),
            bc,
            bm,
        )
    return out


# The share Synergy's tables are relative to: its cluster's CPU and memory per GPU (24 CPUs and
# 500 GB per 8 GPUs; msr-fiddle/synergy, MIT, simulator/configs/default_cluster.ini).
REFERENCE_SHARE = (3.0, 62.5)


_SYNERGY: dict[str, MeasuredThroughput] = {}


def synergy_throughputs() -> dict[str, MeasuredThroughput]:
    """The bundled profiles of Synergy's ten models (``data/pipelines/synergy_sensitivity.csv``)."""
    if not _SYNERGY:
        _SYNERGY.update(read_throughputs(data_dir() / "pipelines" / "synergy_sensitivity.csv"))
    return dict(_SYNERGY)
