"""The input pipeline's parameters: the cost of feeding one sample, and the bundled table of them.

A job carries an ``InputPipeline`` (``Job.pipeline``); what it costs an iteration is the data
stage (``smdlab.model.pipeline``, specification: docs/model.md, "The data stage").
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from smdlab.caches import PIPELINE_TABLES, memoize
from smdlab.errors import check_positive
from smdlab.model.demands import WORKER_MEM_BASE_GB, WORKER_PARAM_COPIES
from smdlab.model.profiles import LayerProfile
from smdlab.paths import data_dir

__all__ = ["STORAGE_MB_S", "InputPipeline", "bundled_pipeline", "check_level", "pipeline_table"]

# Storage read bandwidth per worker (MB/s). Assumption: one SATA-SSD-class stream per worker; the
# figure is the per-server storage bandwidth of Synergy's simulated servers (msr-fiddle/synergy,
# simulator/jobs/model.py, "GPU-24CPU-500GB-500MB/s"), given here to every worker.
STORAGE_MB_S = 500.0


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
