"""GPU types of a heterogeneous cluster (K80, P100, V100, A100) and their relative compute speed.

Each type has datasheet peaks (``fp32_tflops``, ``fp16_tflops``: dense FP16 tensor-core peak
where the part has tensor cores, else its FP16 rate) with the source beside them. The speed of a
job on one type relative to another comes, in this order, from:

1. Gavel's measured throughputs (``data/measurements/gavel_solo_throughputs.csv``; Narayanan et
   al., "Heterogeneity-Aware Cluster Scheduling Policies for Deep Learning Workloads", OSDI 2020):
   the job's Gavel job type (``gavel_job_type``) at one GPU, consolidated, on K80/P100/V100;
2. for VGG-16 and Inception-v3, which Gavel did not measure, the median of Gavel's
   per-job-type ratios (``gavel_type_ratios``), an explicit entry of ``GAVEL_JOB_TYPES``;
3. for A100 (not measured by Gavel), the ratio of the ResNet-50 mixed-precision throughputs the
   device model is calibrated on (``smdlab.model.devices``: 2,470 / 1,200 img/s against V100).

A homogeneous cluster has no GPU type (``""``) and every ratio is 1, so nothing changes there,
and a job on its profile's own device type needs no table. Otherwise the throughput table must
cover the job: a network without a job type, or a job type without a rate on a GPU type it needs,
raises ``InvalidInput`` (one line naming both). ``use_throughputs(table)`` replaces the bundled
table within a ``with`` block (``load_throughput_table`` reads one in Gavel's CSV format;
``smdlab simulate --throughputs FILE``).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from contextvars import ContextVar
from dataclasses import dataclass

import numpy as np
import pandas as pd

from smdlab.caches import GAVEL_TABLES, memoize
from smdlab.errors import InvalidInput
from smdlab.model.gavel_data import load_gavel_solo

__all__ = [
    "GAVEL_JOB_TYPES",
    "GPU_TYPES",
    "MEDIAN",
    "GpuType",
    "check_gpu_type",
    "consolidation_ratio",
    "gavel_job_type",
    "gavel_type_ratios",
    "load_throughput_table",
    "speed_ratio",
    "use_throughputs",
]


@dataclass(frozen=True)
class GpuType:
    """One GPU generation: datasheet peaks and their source."""

    name: str
    display_name: str
    fp32_tflops: float
    fp16_tflops: float
    memory_gb: float
    source: str


GPU_TYPES: dict[str, GpuType] = {
    "k80": GpuType(
        "k80",
        "NVIDIA Tesla K80 (one GK210 of the two on a board)",
        4.37,
        4.37,
        12,
        "NVIDIA Tesla K80 datasheet: 8.73 TFLOPS FP32 per board with GPU Boost, two GK210 GPUs "
        "(4.37 each), 24 GB GDDR5 (12 GB each); no FP16 speed-up. Gavel counts one GK210 as a GPU.",
    ),
    "p100": GpuType(
        "p100",
        "NVIDIA Tesla P100 SXM2",
        10.6,
        21.2,
        16,
        "NVIDIA Tesla P100 datasheet (SXM2/NVLink): 10.6 TFLOPS FP32, 21.2 TFLOPS FP16, 16 GB HBM2",
    ),
    "v100": GpuType(
        "v100",
        "NVIDIA V100 SXM2",
        15.7,
        125.0,
        16,
        "NVIDIA Tesla V100 datasheet (SXM2): 15.7 TFLOPS FP32, 125 TFLOPS tensor, 16/32 GB HBM2",
    ),
    "a100": GpuType(
        "a100",
        "NVIDIA A100 SXM4",
        19.5,
        312.0,
        40,
        "NVIDIA A100 datasheet (SXM4): 19.5 TFLOPS FP32, 312 TFLOPS FP16/BF16 tensor dense, "
        "40/80 GB HBM2e",
    ),
}

# A job-type entry meaning "the median ratio over the table's job types" (an explicit estimate for
# networks Gavel did not measure; never a silent fallback).
MEDIAN = "median"

# Bundled network -> the Gavel job type with the same model (the batch size Gavel's traces use
# most; our networks run at their own batch, only the *ratio* between GPU types is taken). Gavel
# has no VGG/Inception rows: those take the median ratio, explicitly. A network not listed has no
# job type and raises InvalidInput where it needs a ratio.
GAVEL_JOB_TYPES: dict[str, str] = {
    "resnet50": "ResNet-50 (batch size 64)",
    "resnet152": "ResNet-50 (batch size 64)",  # deeper ResNet: same conv-bound mix
    "resnext": "ResNet-50 (batch size 64)",
    "densenet121": "ResNet-18 (batch size 64)",  # small CIFAR-class conv network
    "mobilenet_v2": "ResNet-18 (batch size 64)",
    "googlenet": "ResNet-18 (batch size 64)",
    "alexnet": "ResNet-18 (batch size 64)",
    "lstm_lm": "LM (batch size 20)",
    "bert_base": "Transformer (batch size 64)",
    "gpt2_small": "Transformer (batch size 64)",
    "vgg16": MEDIAN,
    "inception_v3": MEDIAN,
}

TABLE_COLUMNS: tuple[str, ...] = (
    "gpu_type",
    "placement",
    "job_type",
    "scale_factor",
    "steps_per_s",
)
_MEASURED = ("k80", "p100", "v100")  # the types a throughput table can hold (A100: device model)

# A100 against V100: the ResNet-50 AMP throughputs the device model is calibrated on
# (NVIDIA DeepLearningExamples, PyTorch ResNet-50 v1.5: 2,470 img/s A100 80GB, 1,200 img/s V100).
_A100_OVER_V100 = 2470.0 / 1200.0


def check_gpu_type(field: str, name: object) -> str:
    """``name`` if it is a known GPU type (or ``""``: untyped), else ``InvalidInput``."""
    if name == "" or name in GPU_TYPES:
        return str(name)
    raise InvalidInput(f"{field} must be one of {', '.join(GPU_TYPES)}; got {name!r}")


class ThroughputTable:
    """A throughput table as lookups: 1-GPU consolidated rates and rates per scale and placement."""

    def __init__(self, df: pd.DataFrame, where: str) -> None:
        self.where = where
        keys = zip(
            df["job_type"].astype(str),
            df["gpu_type"].astype(str),
            df["scale_factor"].astype(int),
            df["placement"].astype(str),
            strict=True,
        )
        rates = df["steps_per_s"].to_numpy(dtype=float)
        self.scaled = {k: float(v) for k, v in zip(keys, rates, strict=True) if v > 0}
        self.solo = {
            (j, g): v for (j, g, s, p), v in self.scaled.items() if s == 1 and p == "consolidated"
        }
        self.job_types = frozenset(str(j) for j in df["job_type"])


_ACTIVE: ContextVar[ThroughputTable | None] = ContextVar("smdlab_throughput_table", default=None)


@memoize(GAVEL_TABLES)
def _bundled() -> ThroughputTable:
    return ThroughputTable(load_gavel_solo(), "Gavel's throughput table")


def _table() -> ThroughputTable:
    return _ACTIVE.get() or _bundled()


def load_throughput_table(path: str | os.PathLike[str]) -> pd.DataFrame:
    """A throughput table from a CSV in Gavel's format (columns ``TABLE_COLUMNS``), checked."""
    where = f"throughput table {os.fspath(path)!r}"
    try:
        df = pd.read_csv(path)
    except (OSError, ValueError) as e:
        raise InvalidInput(f"{where} cannot be read as CSV: {e}") from None
    missing = [c for c in TABLE_COLUMNS if c not in df.columns]
    if missing:
        raise InvalidInput(f"{where} lacks column {missing[0]!r}; needs {', '.join(TABLE_COLUMNS)}")
    bad = df[~df["gpu_type"].isin(_MEASURED)]
    if len(bad):
        raise InvalidInput(
            f"{where} gpu_type must be one of {', '.join(_MEASURED)}; got {bad['gpu_type'].iloc[0]!r}"
        )
    bad = df[~df["placement"].isin(("consolidated", "unconsolidated"))]
    if len(bad):
        raise InvalidInput(
            f"{where} placement must be consolidated or unconsolidated; got {bad['placement'].iloc[0]!r}"
        )
    scale = pd.to_numeric(df["scale_factor"], errors="coerce")
    rate = pd.to_numeric(df["steps_per_s"], errors="coerce")
    if scale.isna().any() or (scale < 1).any() or (scale != scale.round()).any():
        raise InvalidInput(f"{where} scale_factor must be whole numbers >= 1")
    if rate.isna().any() or (rate < 0).any() or not np.isfinite(rate).all():
        raise InvalidInput(f"{where} steps_per_s must be finite numbers >= 0 (0: did not run)")
    return df.assign(scale_factor=scale.astype(int), steps_per_s=rate.astype(float))


@contextlib.contextmanager
def use_throughputs(table: pd.DataFrame | str | os.PathLike[str]) -> Iterator[None]:
    """Within the block, GPU-type speed ratios come from ``table`` (a DataFrame or CSV path)."""
    if isinstance(table, pd.DataFrame):
        missing = [c for c in TABLE_COLUMNS if c not in table.columns]
        if missing:
            raise InvalidInput(f"throughput table lacks column {missing[0]!r}")
        df, where = table, "the throughput table"
    else:
        df, where = load_throughput_table(table), f"throughput table {os.fspath(table)!r}"
    token = _ACTIVE.set(ThroughputTable(df, where))
    try:
        yield
    finally:
        _ACTIVE.reset(token)


def gavel_type_ratios() -> dict[str, float]:
    """Median over the table's job types of throughput on each type / on V100 (1 GPU, consolidated)."""
    table = _table()
    if table is _bundled():
        return dict(_bundled_ratios())
    return _median_ratios(table)


@memoize(GAVEL_TABLES)
def _bundled_ratios() -> dict[str, float]:
    return _median_ratios(_bundled())


def _median_ratios(table: ThroughputTable) -> dict[str, float]:
    solo = table.solo
    out = {}
    for t in _MEASURED:
        r = [v / solo[(j, "v100")] for (j, g), v in solo.items() if g == t and (j, "v100") in solo]
        if not r:
            raise InvalidInput(
                f"{table.where} has no job type measured on both {t!r} and 'v100' "
                "(the median ratio needs one)"
            )
        out[t] = float(np.median(r))
    out["a100"] = _A100_OVER_V100
    return out


def gavel_job_type(network: str) -> str | None:
    """The Gavel job type a bundled network maps to (``MEDIAN``: the median ratio; None: none)."""
    return GAVEL_JOB_TYPES.get(network)


def _over_v100(network: str, gpu_type: str) -> float:
    if gpu_type == "a100":
        return _A100_OVER_V100
    if gpu_type == "v100":
        return 1.0
    jt = gavel_job_type(network)
    if jt == MEDIAN:
        return gavel_type_ratios()[gpu_type]
    table = _table()
    if jt is None:
        raise InvalidInput(
            f"network {network!r} has no job type in {table.where} (needed for its speed on "
            f"{gpu_type!r}); networks with one: {', '.join(GAVEL_JOB_TYPES)}"
        )
    for t in (gpu_type, "v100"):
        if (jt, t) not in table.solo:
            what = (
                "job type" if jt not in table.job_types else "1-GPU consolidated rate for job type"
            )
            raise InvalidInput(
                f"{table.where} has no {what} {jt!r} on GPU type {t!r} "
                f"(network {network!r} needs it for its speed on {gpu_type!r})"
            )
    return table.solo[(jt, gpu_type)] / table.solo[(jt, "v100")]


def speed_ratio(network: str, gpu_type: str, device: str = "v100") -> float:
    """Speed of ``network`` on ``gpu_type`` relative to its profile's ``device`` (1 for ``""``)."""
    if not gpu_type:
        return 1.0
    check_gpu_type("gpu_type", gpu_type)
    base = device if device in GPU_TYPES else "v100"
    if gpu_type == base:
        return 1.0
    return _over_v100(network, gpu_type) / _over_v100(network, base)


def consolidation_ratio(network: str, gpu_type: str, gpus: int) -> float:
    """Gavel's measured unconsolidated / consolidated throughput of the network's job type (1 if unmeasured).

    ``gpus`` is rounded up to Gavel's scale factors (1, 2, 4, 8; larger counts use 8).
    """
    jt = gavel_job_type(network)
    t = gpu_type or "v100"
    if jt is None or jt == MEDIAN or t not in _MEASURED:
        return 1.0
    scale = next((s for s in (1, 2, 4, 8) if s >= gpus), 8)
    table = _table().scaled
    cons, spread = (
        table.get((jt, t, scale, "consolidated")),
        table.get((jt, t, scale, "unconsolidated")),
    )
    if not cons or not spread:
        return 1.0
    return spread / cons
