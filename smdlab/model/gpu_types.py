"""GPU types of a heterogeneous cluster (K80, P100, V100, A100) and their relative compute speed.

Each type has datasheet peaks (``fp32_tflops``, ``fp16_tflops``: dense FP16 tensor-core peak
where the part has tensor cores, else its FP16 rate) with the source beside them. The speed of a
job on one type relative to another comes, in this order, from:

1. Gavel's measured throughputs (``data/measurements/gavel_solo_throughputs.csv``; Narayanan et
   al., "Heterogeneity-Aware Cluster Scheduling Policies for Deep Learning Workloads", OSDI 2020):
   the job's Gavel job type (``gavel_job_type``) at one GPU, consolidated, on K80/P100/V100;
2. for a network without a Gavel job type, the median of Gavel's per-job-type ratios
   (``gavel_type_ratios``);
3. for A100 (not measured by Gavel), the ratio of the ResNet-50 mixed-precision throughputs the
   device model is calibrated on (``smdlab.model.devices``: 2,470 / 1,200 img/s against V100).

A homogeneous cluster has no GPU type (``""``) and every ratio is 1, so nothing changes there.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from smdlab.caches import GAVEL_TABLES, memoize
from smdlab.errors import InvalidInput

__all__ = [
    "GAVEL_JOB_TYPES",
    "GPU_TYPES",
    "GpuType",
    "check_gpu_type",
    "consolidation_ratio",
    "gavel_job_type",
    "gavel_type_ratios",
    "speed_ratio",
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

# Bundled network -> the Gavel job type with the same model (the batch size Gavel's traces use
# most; our networks run at their own batch, only the *ratio* between GPU types is taken). Gavel
# has no VGG/Inception/BERT/GPT rows: those fall back to the median ratio.
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
}

# A100 against V100: the ResNet-50 AMP throughputs the device model is calibrated on
# (NVIDIA DeepLearningExamples, PyTorch ResNet-50 v1.5: 2,470 img/s A100 80GB, 1,200 img/s V100).
_A100_OVER_V100 = 2470.0 / 1200.0


def check_gpu_type(field: str, name: object) -> str:
    """``name`` if it is a known GPU type (or ``""``: untyped), else ``InvalidInput``."""
    if name == "" or name in GPU_TYPES:
        return str(name)
    raise InvalidInput(f"{field} must be one of {', '.join(GPU_TYPES)}; got {name!r}")


@memoize(GAVEL_TABLES)
def _gavel_solo() -> dict[tuple[str, str], float]:
    """(job type, gpu type) -> steps/s at one GPU, consolidated (0 rows dropped)."""
    from smdlab.model.colocation import load_gavel_solo

    df = load_gavel_solo()
    one = df[(df["scale_factor"] == 1) & (df["placement"] == "consolidated")]
    keys = zip(one["job_type"].astype(str), one["gpu_type"].astype(str), strict=True)
    rates = one["steps_per_s"].to_numpy(dtype=float)
    return {k: float(v) for k, v in zip(keys, rates, strict=True) if v > 0}


@memoize(GAVEL_TABLES)
def gavel_type_ratios() -> dict[str, float]:
    """Median over Gavel job types of throughput on each type / on V100 (1 GPU, consolidated)."""
    solo = _gavel_solo()
    out = {}
    for t in ("k80", "p100", "v100"):
        r = [v / solo[(j, "v100")] for (j, g), v in solo.items() if g == t and (j, "v100") in solo]
        out[t] = float(np.median(r))
    out["a100"] = _A100_OVER_V100
    return out


def gavel_job_type(network: str) -> str | None:
    """The Gavel job type a bundled network maps to (None: no measured counterpart)."""
    return GAVEL_JOB_TYPES.get(network)


def _over_v100(network: str, gpu_type: str) -> float:
    jt = gavel_job_type(network)
    solo = _gavel_solo()
    if gpu_type == "a100":
        return _A100_OVER_V100
    if jt is not None and (jt, gpu_type) in solo and (jt, "v100") in solo:
        return solo[(jt, gpu_type)] / solo[(jt, "v100")]
    return gavel_type_ratios()[gpu_type]


def speed_ratio(network: str, gpu_type: str, device: str = "v100") -> float:
    """Speed of ``network`` on ``gpu_type`` relative to its profile's ``device`` (1 for ``""``)."""
    if not gpu_type:
        return 1.0
    check_gpu_type("gpu_type", gpu_type)
    base = device if device in GPU_TYPES else "v100"
    return _over_v100(network, gpu_type) / _over_v100(network, base)


def consolidation_ratio(network: str, gpu_type: str, gpus: int) -> float:
    """Gavel's measured unconsolidated / consolidated throughput of the network's job type (1 if unmeasured).

    ``gpus`` is rounded up to Gavel's scale factors (1, 2, 4, 8; larger counts use 8).
    """
    jt = gavel_job_type(network)
    t = gpu_type or "v100"
    if jt is None or t not in ("k80", "p100", "v100"):
        return 1.0
    scale = next((s for s in (1, 2, 4, 8) if s >= gpus), 8)
    table = _gavel_scaled()
    cons, spread = (
        table.get((jt, t, scale, "consolidated")),
        table.get((jt, t, scale, "unconsolidated")),
    )
    if not cons or not spread:
        return 1.0
    return spread / cons


@memoize(GAVEL_TABLES)
def _gavel_scaled() -> dict[tuple[str, str, int, str], float]:
    """(job type, gpu type, scale factor, placement) -> steps/s (0 rows dropped)."""
    from smdlab.model.colocation import load_gavel_solo

    df = load_gavel_solo()
    keys = zip(
        df["job_type"].astype(str),
        df["gpu_type"].astype(str),
        df["scale_factor"].astype(int),
        df["placement"].astype(str),
        strict=True,
    )
    rates = df["steps_per_s"].to_numpy(dtype=float)
    return {k: float(v) for k, v in zip(keys, rates, strict=True) if v > 0}
