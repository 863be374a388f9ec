"""The input pipeline (data stage) of a training iteration: storage reads and CPU preprocessing.

Specification: docs/model.md, "The data stage". Per worker and iteration, with n samples per
worker (``M / w`` in global-batch mode, ``m`` in per-worker mode), ``c`` CPU cores and ``g`` GB
of memory per worker:

    cache hit fraction   h     = clip((g - process_mem_gb) / dataset_gb, 0, 1)
    storage read         t_io  = n * sample_mb * (1 - h) / storage_mb_s
    CPU preprocessing    t_cpu = n * cpu_s_per_sample / c

Loader processes prefetch the next batches while the GPU works, so reading, preprocessing and
the layered model's iteration (compute + communication) overlap: the iteration time is
``max(tau_layered, t_io, t_cpu)``. More cores or memory never slow a job, and once both data
terms are at most ``tau_layered`` (saturation) the iteration time is the layered model's exactly.

A job has a data stage only when ``Job.pipeline`` is set (``make_job(..., pipeline=True)``, the
synthetic workload's default); a job without one is the layered model alone, as before. The
pipeline's parameters are ``smdlab.model.input_pipeline``'s (re-exported here); where the data
stage stops binding is ``smdlab.model.timing.saturation_cpu``; Muri's per-stage times are
``smdlab.model.interleave``'s.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd

from smdlab.caches import JOB_VARIANTS, PIPELINE_TABLES, memoize
from smdlab.errors import InvalidInput
from smdlab.model.input_pipeline import (  # re-exported: the data stage's parameters
    STORAGE_MB_S,
    InputPipeline,
    bundled_pipeline,
    check_level,
    pipeline_table,
)
from smdlab.model.job import Job
from smdlab.paths import data_dir

__all__ = [
    "STORAGE_MB_S",
    "SYNERGY_CPU_LEVELS",
    "SYNERGY_IMAGE_MODELS",
    "SYNERGY_MEM_LEVELS",
    "InputPipeline",
    "apply_data_stage",
    "bundled_pipeline",
    "check_level",
    "check_sensitivity",
    "data_stage_times",
    "pipeline_table",
    "samples_per_worker",
    "synergy_image_cpu_s_per_sample",
    "synergy_sensitivity",
    "with_worker_resources",
]

# Synergy's profiled grid (msr-fiddle/synergy, simulator/jobs/job.py cpu_val / mem_val).
SYNERGY_CPU_LEVELS = (1, 2, 3, 4, 5, 6, 9, 12, 24)
SYNERGY_MEM_LEVELS = (20.83, 62.5, 125.0, 187.5, 250.0)
SYNERGY_IMAGE_MODELS = ("res18", "res50", "alexnet", "mobilenet", "shufflenet")


def samples_per_worker(job: Job, workers: np.ndarray) -> np.ndarray:
    """Samples each worker processes per iteration: M / workers (global), m (per worker)."""
    if job.batch_mode == "global":
        return job.global_batch / np.asarray(workers, float)
    return np.full(np.shape(workers), float(job.per_worker_batch or 0))


def _levels(job: Job, cpu: float | None, mem_gb: float | None) -> tuple[float, float]:
    c = job.worker_demand.get("cpu", 0.0) if cpu is None else check_level("cpu", cpu)
    g = job.worker_demand.get("mem_gb", 0.0) if mem_gb is None else check_level("mem_gb", mem_gb)
    return float(c), float(g)


def data_stage_times(
    job: Job, workers: np.ndarray | int, cpu: float | None = None, mem_gb: float | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """(storage read, CPU preprocessing) seconds per iteration and worker; zeros without a pipeline.

    cpu, mem_gb: per worker; None means the job's worker demand.
    """
    c, g = _levels(job, cpu, mem_gb)
    n = samples_per_worker(job, np.asarray(workers))
    p = job.pipeline
    if p is None:
        return np.zeros_like(n), np.zeros_like(n)
    io = n * p.sample_mb * (1.0 - p.cache_fraction(g)) / p.storage_mb_s
    if p.cpu_s_per_sample == 0:
        return io, np.zeros_like(n)
    if c <= 0:
        raise InvalidInput(
            f"cpu must be > 0 for job {job.name!r}, which preprocesses its input on the CPU; got {c!r}"
        )
    return io, n * p.cpu_s_per_sample / c


def apply_data_stage(job: Job, table: np.ndarray) -> np.ndarray:
    """The layered iteration-time table (W x P) bounded below by the job's data stage at its demand."""
    if job.pipeline is None:
        return table
    io, cpu = data_stage_times(job, np.arange(1, table.shape[0] + 1))
    return np.maximum(table, np.maximum(io, cpu)[:, None])


def with_worker_resources(job: Job, cpu: float | None = None, mem_gb: float | None = None) -> Job:
    """The job with ``cpu`` cores and ``mem_gb`` GB per worker (None keeps its demand); cached."""
    c, g = _levels(job, cpu, mem_gb)
    if c == job.worker_demand.get("cpu", 0.0) and g == job.worker_demand.get("mem_gb", 0.0):
        return job
    return _variant(job, c, g)


def _variant(job: Job, cpu: float, mem_gb: float) -> Job:
    return JOB_VARIANTS.get_or_compute(
        (job.value_key, cpu, mem_gb),
        lambda: job.replace(worker_demand={**job.worker_demand, "cpu": cpu, "mem_gb": mem_gb}),
    )


# ---- Synergy's sensitivity tables -------------------------------------------------------------


def check_sensitivity(table: pd.DataFrame, repair: bool = False) -> pd.DataFrame:
    """Validate a sensitivity table (model, cpu_per_gpu, mem_gb_per_gpu, relative_throughput).

    The model needs throughput non-decreasing in CPU and in memory. A violation raises
    InvalidInput naming the model and point, or with ``repair=True`` is repaired by a running
    maximum along CPU then memory (a warning says how many entries changed).
    """
    need = ("model", "cpu_per_gpu", "mem_gb_per_gpu", "relative_throughput")
    missing = [c for c in need if c not in table.columns]
    if missing:
        raise InvalidInput(f"sensitivity table must have columns {need}; missing {missing}")
    out = table.copy()
    vals = out["relative_throughput"].to_numpy(float)
    if np.any(~np.isfinite(vals)) or np.any(vals < 0):
        raise InvalidInput("sensitivity table relative_throughput must be finite and >= 0")
    for col in ("cpu_per_gpu", "mem_gb_per_gpu"):
        if np.any(out[col].to_numpy(float) < 0):
            raise InvalidInput(f"sensitivity table {col} must be >= 0 (no negative levels)")
    changed = 0
    for model, grp in out.groupby("model", sort=False):
        grid = grp.pivot_table(
            index="cpu_per_gpu", columns="mem_gb_per_gpu", values="relative_throughput"
        )
        g = grid.to_numpy(float)
        fixed = np.maximum.accumulate(np.maximum.accumulate(g, axis=0), axis=1)
        if not np.array_equal(fixed, g, equal_nan=True):
            i, j = (int(x) for x in np.argwhere(fixed != g)[0])
            where = f"cpu_per_gpu={grid.index[i]:g}, mem_gb_per_gpu={grid.columns[j]:g}"
            if not repair:
                raise InvalidInput(
                    f"sensitivity table of model {model!r} must be non-decreasing in CPU and memory; "
                    f"throughput drops at {where}"
                )
            changed += int((fixed != g).sum())
            for (c, m), v in np.ndenumerate(fixed):
                mask = (
                    (out["model"] == model)
                    & (out["cpu_per_gpu"] == grid.index[c])
                    & (out["mem_gb_per_gpu"] == grid.columns[m])
                )
                out.loc[mask, "relative_throughput"] = v
    if changed:
        warnings.warn(
            f"sensitivity table repaired: {changed} entries raised to a running maximum",
            stacklevel=2,
        )
    return out


@memoize(PIPELINE_TABLES)
def _synergy() -> pd.DataFrame:
    return check_sensitivity(
        pd.read_csv(data_dir() / "pipelines" / "synergy_sensitivity.csv", comment="#")
    )


def synergy_sensitivity() -> pd.DataFrame:
    """Synergy's profiled throughput per (CPU, memory) per GPU, relative to 3 CPUs and 62.5 GB."""
    return _synergy().copy()


def synergy_image_cpu_s_per_sample() -> float:
    """Core-seconds per image implied by Synergy's image models at one core and 62.5 GB (mean rate)."""
    t = _synergy()
    rows = t[
        t["model"].isin(SYNERGY_IMAGE_MODELS)
        & (t["cpu_per_gpu"] == 1)
        & (t["mem_gb_per_gpu"] == 62.5)
    ]
    rate = rows["relative_throughput"] * rows["batch"] / rows["iter_time_s_fair_share"]
    return float(1.0 / rate.mean())
