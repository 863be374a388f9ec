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
synthetic workload's default); a job without one is the layered model alone, as before.
"""

from __future__ import annotations

import itertools
import math
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from smdlab.caches import JOB_VARIANTS, PIPELINE_TABLES, memoize
from smdlab.errors import InvalidInput, check_positive
from smdlab.paths import data_dir

if TYPE_CHECKING:
    from smdlab.model.job import Job
    from smdlab.model.profiles import LayerProfile

# Storage read bandwidth per worker (MB/s). Assumption: one SATA-SSD-class stream per worker; the
# figure is the per-server storage bandwidth of Synergy's simulated servers (msr-fiddle/synergy,
# simulator/jobs/model.py, "GPU-24CPU-500GB-500MB/s"), given here to every worker.
STORAGE_MB_S = 500.0
STAGES = ("storage", "cpu", "gpu", "network")  # Muri's four resources, in pipeline order
# Synergy's profiled grid (msr-fiddle/synergy, simulator/jobs/job.py cpu_val / mem_val).
SYNERGY_CPU_LEVELS = (1, 2, 3, 4, 5, 6, 9, 12, 24)
SYNERGY_MEM_LEVELS = (20.83, 62.5, 125.0, 187.5, 250.0)
SYNERGY_IMAGE_MODELS = ("res18", "res50", "alexnet", "mobilenet", "shufflenet")


@dataclass(frozen=True)
class InputPipeline:
    """Cost of feeding one sample to a worker.

    cpu_s_per_sample: core-seconds to read, decode and augment one sample (>= 0).
    sample_mb: megabytes read from storage per sample (>= 0).
    dataset_gb: dataset size; a page cache this large removes every storage read (> 0).
    storage_mb_s: storage read bandwidth of one worker (MB/s, > 0).
    process_mem_gb: memory of the worker's own process (not available as page cache, >= 0).
    """

    cpu_s_per_sample: float
    sample_mb: float
    dataset_gb: float
    storage_mb_s: float = STORAGE_MB_S
    process_mem_gb: float = 0.0

    def __post_init__(self) -> None:
        for name, zero_ok in (
            ("cpu_s_per_sample", True),
            ("sample_mb", True),
            ("dataset_gb", False),
            ("storage_mb_s", False),
            ("process_mem_gb", True),
        ):
            v = check_positive(f"pipeline {name}", getattr(self, name), allow_zero=zero_ok)
            object.__setattr__(self, name, v)

    def cache_fraction(self, mem_gb: float | np.ndarray) -> np.ndarray:
        """Fraction of the dataset held in the page cache with ``mem_gb`` per worker."""
        return np.clip((np.asarray(mem_gb, float) - self.process_mem_gb) / self.dataset_gb, 0, 1)


def check_level(field: str, value: float) -> float:
    """A CPU or memory level per worker: a finite number >= 0, else InvalidInput."""
    return check_positive(field, value, allow_zero=True)


@memoize(PIPELINE_TABLES)
def _pipeline_table() -> pd.DataFrame:
    return pd.read_csv(data_dir() / "pipelines" / "pipelines.csv", comment="#").set_index("network")


def bundled_pipeline(profile: LayerProfile) -> InputPipeline | None:
    """The data stage of a bundled network (``data/pipelines/pipelines.csv``); None for others.

    process_mem_gb is the demand rule's worker process memory (``smdlab.model.demands``): the base
    plus the host copies of the parameters; everything above it acts as page cache.
    """
    from smdlab.model.demands import WORKER_MEM_BASE_GB, WORKER_PARAM_COPIES

    table = _pipeline_table()
    if profile.network not in table.index:
        return None
    cols = ["cpu_s_per_sample", "sample_mb", "dataset_gb"]
    values = table.loc[[profile.network], cols].to_numpy(dtype=float)[0]
    row: dict[str, float] = dict(zip(cols, values.tolist()))
    return InputPipeline(
        cpu_s_per_sample=row["cpu_s_per_sample"],
        sample_mb=row["sample_mb"],
        dataset_gb=row["dataset_gb"],
        process_mem_gb=WORKER_MEM_BASE_GB + WORKER_PARAM_COPIES * profile.total_param_bytes / 1e9,
    )


def pipeline_table() -> pd.DataFrame:
    """The bundled per-network pipeline parameters (one row per network, with its source)."""
    return _pipeline_table().reset_index()


def _samples_per_worker(job: Job, workers: np.ndarray) -> np.ndarray:
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
    n = _samples_per_worker(job, np.asarray(workers))
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


def saturation_cpu(job: Job, workers: int, ps: int, mode: str = "wfbp") -> float:
    """Fewest cores per worker at which CPU preprocessing no longer bounds the iteration (0: never does)."""
    from smdlab.model.timing import layered_iteration_time

    p = job.pipeline
    if p is None or p.cpu_s_per_sample == 0:
        return 0.0
    tau = layered_iteration_time(job, workers, ps, mode)
    n = float(_samples_per_worker(job, np.asarray(workers)))
    return n * p.cpu_s_per_sample / tau


def stage_times(
    job: Job,
    workers: int,
    ps: int,
    mode: str = "wfbp",
    cpu: float | None = None,
    mem_gb: float | None = None,
) -> dict[str, float]:
    """Muri's per-iteration time on each of its four resources for one worker of ``job``.

    storage: the storage read; cpu: the CPU preprocessing; gpu: forward + backward (F + B);
    network: the part of the layered iteration not hidden behind compute (tau_layered - F - B).
    """
    from smdlab.model.timing import layered_iteration_time

    io, c = data_stage_times(job, workers, cpu, mem_gb)
    tau = layered_iteration_time(job, workers, ps, mode)
    n = float(_samples_per_worker(job, np.asarray(workers)))
    gpu = n * (job.profile.forward_total_s + job.profile.backward_total_s)
    return {
        "storage": float(io),
        "cpu": float(c),
        "gpu": min(gpu, tau),
        "network": max(0.0, tau - gpu),
    }


# ---- interleaving (Muri) ----------------------------------------------------------------------

# Muri's measured slowdown of an interleaved group over its ideal rotation, per group size
# (Rivendile/Muri, simulator/jobs.py: itertime_overhead_list = [1.015, 1.33/1.015, 1.5/1.015,
# 1.37/1.015]; the first entry scales every job's own iteration time, the others a group's).
GROUP_OVERHEAD: Mapping[int, float] = {1: 1.0, 2: 1.33 / 1.015, 3: 1.5 / 1.015, 4: 1.37 / 1.015}
MAX_GROUP = 4


def check_stage_times(field: str, times: Sequence[Sequence[float]]) -> np.ndarray:
    """Stage times as a (jobs x 4) array of finite numbers >= 0, else InvalidInput."""
    try:
        arr = np.asarray(times, dtype=float)
    except (TypeError, ValueError):
        raise InvalidInput(
            f"{field} must be a (jobs x 4) array of seconds, got {times!r}"
        ) from None
    if arr.ndim != 2 or arr.shape[1] != len(STAGES):
        raise InvalidInput(f"{field} must be a (jobs x 4) array of seconds, got shape {arr.shape}")
    if arr.shape[0] < 1 or arr.shape[0] > MAX_GROUP:
        raise InvalidInput(
            f"group size must be in [1, {MAX_GROUP}] (Muri interleaves at most 4 jobs), got {arr.shape[0]}"
        )
    bad = ~np.isfinite(arr) | (arr < 0)
    if bad.any():
        i, k = (int(x) for x in np.argwhere(bad)[0])
        raise InvalidInput(
            f"{field}[{i}][{STAGES[k]!r}] must be a finite stage time >= 0, got {arr[i, k]!r}"
        )
    return arr


def interleaved_time(times: Sequence[Sequence[float]], overhead: bool = True) -> float:
    """Iteration time of a group of jobs interleaving their four stages on one GPU set.

    In slot s of a round, job i (at offset o_i, all distinct) uses stage (s - o_i) mod 4; a slot
    lasts as long as its longest stage and a round is the sum of its four slots. The group runs the
    best assignment of offsets, times Muri's measured overhead for its size (``GROUP_OVERHEAD``).
    A single job's time is its stages' sum (no interleaving with itself).
    """
    t = check_stage_times("stage times", times)
    k = t.shape[0]
    if k == 1:
        return float(t[0].sum())
    best = math.inf
    S = len(STAGES)
    for offsets in itertools.permutations(range(S), k):
        if offsets[0] != 0:  # a rotation of all offsets gives the same round
            continue
        total = 0.0
        for s in range(S):
            total += max(t[i, (s - o) % S] for i, o in enumerate(offsets))
        best = min(best, total)
    return best * (GROUP_OVERHEAD[k] if overhead else 1.0)


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


def group_iteration_time(jobs: Sequence[Job], workers: int, ps: int, mode: str = "wfbp") -> float:
    """Iteration time of ``jobs`` interleaving on one set of ``workers`` GPUs and ``ps`` PSs.

    Muri's interleaved time of their stage times (``interleaved_time``, with the measured overhead
    per group size), but never below the slowest member's own iteration time: a job alone
    already overlaps its data stage with compute (prefetching), so a group cannot beat that. One
    job: its own iteration time.
    """
    from smdlab.model.timing import iteration_time

    if not 1 <= len(jobs) <= MAX_GROUP:
        raise InvalidInput(
            f"group size must be in [1, {MAX_GROUP}] (Muri interleaves at most 4 jobs), got {len(jobs)}"
        )
    solo = max(iteration_time(j, workers, ps, mode) for j in jobs)
    if len(jobs) == 1:
        return solo
    rows = [[stage_times(j, workers, ps, mode)[s] for s in STAGES] for j in jobs]
    return max(solo, interleaved_time(rows))
