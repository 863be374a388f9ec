"""Validation against Gavel's measurements: consolidation and GPU-type ratios from the layered model.

Gavel (Narayanan et al., OSDI 2020) measured each job type's throughput on K80, P100 and V100
at 1, 2, 4 and 8 GPUs, with the GPUs on one server (``consolidated``) or spread over servers
(``unconsolidated``): ``data/measurements/gavel_solo_throughputs.csv``. For the job types whose
network is bundled (ResNet-50, LM, Transformer; ResNet-18 has no bundled profile) this module
predicts, with smdlab's layered all-reduce model (``smdlab.model.allreduce``), two ratios and
compares them with the measured ones:

1. **Consolidation ratio** ``R(g) = throughput(spread) / throughput(consolidated)`` at g = 2, 4, 8
   on each GPU type. A ring all-reduce iteration (PyTorch DDP, 25 MB buckets, ``wfbp``: Gavel's
   workloads use ``DistributedDataParallel`` with a fixed per-process batch) is timed with the
   intra-server link when consolidated and the NIC when spread; ``R = tau_cons / tau_spread``.
   Inputs: the job type's own measured 1-GPU rate (so the compute per iteration is the measured
   one; the multi-GPU rows, which are the targets, are never read), the bundled profile's split of
   compute over layers, and the gradient bytes of Gavel's model (``GAVEL_PARAMS``).
2. **GPU-type ratio** ``throughput(t) / throughput(V100)`` at 1 GPU, consolidated. Predicted from
   datasheets only (``fp32_device``): Gavel's workloads train in FP32, so each type runs at its
   FP32 peak times the achieved fraction of the bundled device model's kinds, and memory-bound
   kinds at the type's memory bandwidth. No Gavel number enters.

Nothing is fitted for either prediction. ``calibrated_type_ratios`` adds one fitted factor per GPU
type, fitted on ResNet-50 only and judged on the held-out job types (LM, Transformer).

Assumptions (the facts of Gavel's measurement servers are not in its data file or repository
README; where unknown we say so and assume):

- ``INTRA_GBPS``: consolidated GPUs exchange over PCIe 3.0 x16 (15.75 GB/s per direction; the
  PCI-SIG line rate in ``smdlab.model.devices``) on every type. Assumption: PCIe servers; an
  NVLink V100 server would make consolidation faster still (``intra_gbps`` argument).
- ``NIC_GBPS``: spread GPUs communicate over a 10 Gbps NIC, one GPU per server. Assumption (not
  published with the data); ``NIC_SENSITIVITY`` shows 25 and 100 Gbps too. With one ring per NIC
  the model's ring bandwidth does not depend on how the GPUs are spread over servers.
- No per-message latency (``latency_s = 0``) and no contention from other jobs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from smdlab.experiments.config import ExperimentConfig, get_config

if TYPE_CHECKING:
    from smdlab.model.gpu_types import ThroughputTable

# Gavel job type family -> (bundled network, parameter count of Gavel's model, its source).
GAVEL_PARAMS: dict[str, tuple[str, int, str]] = {
    "ResNet-50": (
        "resnet50",
        25_557_032,
        "torchvision ResNet-50, the model Gavel's ImageNet workload trains (same as the bundled one)",
    ),
    "LM": (
        "lstm_lm",
        13_987_678,
        "Gavel's word-language-model defaults (2-layer LSTM, emsize = nhid = 200, untied) on "
        "Wikitext-2's 33,278-word vocabulary: 6,655,600 embedding + 643,200 LSTM + 6,688,878 "
        "decoder parameters; the bundled lstm_lm (50,065,078, the medium model) gives the layer mix",
    ),
    "Transformer": (
        "bert_base",
        109_482_240,
        "unknown: Gavel's Transformer (d_model 512, 6 + 6 layers, Multi30k) has a vocabulary-"
        "dependent size; the bundled BERT-base is a proxy for both its layers and its size",
    ),
}

GPUS = (2, 4, 8)
TYPES = ("k80", "p100", "v100")
INTRA_GBPS = 15.75 * 8  # PCIe 3.0 x16 per direction (smdlab.model.devices, PCI-SIG)
NIC_GBPS = 10.0
NIC_SENSITIVITY = (10.0, 25.0, 100.0)
BUCKET_MB = 25.0  # PyTorch DDP's bucket_cap_mb default

# Memory bandwidth per GPU (GB/s), datasheets: K80 480 GB/s per board, two GK210 (240 each);
# P100 SXM2 732 GB/s; V100 SXM2 900 GB/s.
MEMORY_GB_S = {"k80": 240.0, "p100": 732.0, "v100": 900.0}
_MEMORY_BOUND = ("embedding", "norm", "pool", "other")


def fp32_device(gpu_type: str):
    """A ``Device`` for FP32 training on ``gpu_type`` from its datasheet peaks (no measurement).

    GEMM-like kinds reach the same fraction of the FP32 peak as the bundled V100 model's kinds
    reach of its mixed-precision peak (assumption); memory-bound kinds run at the memory bandwidth
    (about 1 FLOP per byte, as the bundled devices).
    """
    from smdlab.model.devices import DEVICES, Device
    from smdlab.model.gpu_types import GPU_TYPES

    gt = GPU_TYPES[gpu_type]
    peak = gt.fp32_tflops * 1e12
    base = DEVICES["v100"].efficiency
    eff = {
        k: (MEMORY_GB_S[gpu_type] * 1e9 / peak if k in _MEMORY_BOUND else float(v))
        for k, v in base.items()
    }
    return Device(f"{gpu_type}_fp32", f"{gt.display_name} (FP32)", peak, eff, source=gt.source)


def _per_sample_time(network: str, gpu_type: str) -> float:
    """Forward + backward seconds per sample of ``network`` on ``gpu_type`` in FP32."""
    from smdlab.paths import data_dir

    dev = fp32_device(gpu_type)
    table = pd.read_csv(data_dir() / "profiles" / f"{network}.csv", comment="#")
    fwd = sum(dev.forward_time(k, f) for k, f in zip(table["kind"], table["forward_flops"]))
    return fwd * (1 + dev.backward_factor)


def _family(job_type: str) -> str:
    return job_type.split(" (")[0]


def _batch(job_type: str) -> int:
    return int(job_type.split("batch size ")[1].rstrip(")"))


def _measured() -> ThroughputTable:
    """Gavel's measured rates of the job types whose networks the layered model knows."""
    from smdlab.model.gavel_data import load_gavel_solo
    from smdlab.model.gpu_types import ThroughputTable

    df = load_gavel_solo()
    return ThroughputTable(df[df["job_type"].map(_family).isin(GAVEL_PARAMS)], "Gavel's table")


def predicted_consolidation_ratio(
    job_type: str,
    gpu_type: str,
    gpus: int,
    rate_1gpu: float,
    *,
    nic_gbps: float = NIC_GBPS,
    intra_gbps: float = INTRA_GBPS,
) -> float:
    """Layered-model throughput ratio spread / consolidated of ``job_type`` at ``gpus`` GPUs.

    ``rate_1gpu``: the job type's measured steps/s on one GPU (sets the compute per iteration).
    """
    from smdlab.model.allreduce import MB, ring_tau
    from smdlab.model.profiles import BYTES_PER_PARAM
    from smdlab.paths import data_dir

    network, params, _ = GAVEL_PARAMS[_family(job_type)]
    dev = fp32_device(gpu_type)
    table = pd.read_csv(data_dir() / "profiles" / f"{network}.csv", comment="#")
    fwd = np.array([dev.forward_time(k, f) for k, f in zip(table["kind"], table["forward_flops"])])
    bwd = fwd * dev.backward_factor
    # Scale the layer times so one GPU's iteration takes the measured time (1 / rate).
    scale = 1.0 / rate_1gpu / float(fwd.sum() + bwd.sum())
    p = table["params"].to_numpy(dtype=float)
    grad = p / p.sum() * params * BYTES_PER_PARAM
    taus = []
    for gbps in (intra_gbps, min(intra_gbps, nic_gbps)):
        taus.append(
            ring_tau(
                fwd * scale,
                bwd * scale,
                grad,
                BUCKET_MB * MB,
                np.array([1.0]),
                np.array([float(gpus)]),
                np.array([gbps * 1e9 / 8]),
                0.0,
                "wfbp",
            )[0]
        )
    return float(taus[0] / taus[1])


def consolidation_points(nics: tuple[float, ...] = NIC_SENSITIVITY) -> pd.DataFrame:
    """One row per (job type, GPU type, GPUs, NIC): measured and predicted spread/consolidated."""
    rate = _measured().scaled
    rows = []
    for (jt, t, s, place), _ in sorted(rate.items()):
        if place != "consolidated" or s not in GPUS or (jt, t, s, "unconsolidated") not in rate:
            continue
        one = rate.get((jt, t, 1, "consolidated"))
        if one is None:
            continue
        measured = rate[(jt, t, s, "unconsolidated")] / rate[(jt, t, s, "consolidated")]
        for nic in nics:
            pred = predicted_consolidation_ratio(jt, t, s, one, nic_gbps=nic)
            rows.append(
                {
                    "quantity": "consolidation",
                    "family": _family(jt),
                    "job_type": jt,
                    "batch": _batch(jt),
                    "gpu_type": t,
                    "gpus": s,
                    "nic_gbps": nic,
                    "measured": measured,
                    "predicted": pred,
                }
            )
    return pd.DataFrame(rows)


def type_ratio_points() -> pd.DataFrame:
    """One row per (job type, GPU type): measured and datasheet-predicted throughput / V100's."""
    rate = _measured().solo
    rows = []
    for (jt, t), v in sorted(rate.items()):
        if t == "v100" or (jt, "v100") not in rate:
            continue
        network = GAVEL_PARAMS[_family(jt)][0]
        pred = _per_sample_time(network, "v100") / _per_sample_time(network, t)
        rows.append(
            {
                "quantity": "gpu_type",
                "family": _family(jt),
                "job_type": jt,
                "batch": _batch(jt),
                "gpu_type": t,
                "gpus": 1,
                "nic_gbps": np.nan,
                "measured": v / rate[(jt, "v100")],
                "predicted": pred,
            }
        )
    return pd.DataFrame(rows)


@dataclass(frozen=True)
class Calibration:
    """One factor per GPU type fitted on ``train`` families; errors on the held-out families."""

    factors: dict[str, float]
    train: tuple[str, ...]
    holdout_mape: float
    uncalibrated_holdout_mape: float


def calibrated_type_ratios(train: tuple[str, ...] = ("ResNet-50",)) -> Calibration:
    """Fit one multiplicative factor per GPU type on ``train`` families (geometric mean of
    measured / predicted), then report the error on the other families with and without it."""
    pts = type_ratio_points()
    fit = pts[pts["family"].isin(train)]
    test = pts[~pts["family"].isin(train)]
    factors = {
        str(t): float(np.exp(np.mean(np.log(g["measured"] / g["predicted"]))))
        for t, g in fit.groupby("gpu_type")
    }
    adj = test["predicted"] * test["gpu_type"].map(factors)
    return Calibration(
        factors,
        tuple(train),
        float(np.mean(np.abs(adj / test["measured"] - 1)) * 100),
        float(np.mean(np.abs(test["predicted"] / test["measured"] - 1)) * 100),
    )


def consolidation_validation(config: str | ExperimentConfig = "quick") -> pd.DataFrame:
    """Every point of both validations (one table): measured, predicted, error in percent.

    ``nic_gbps`` is the assumed NIC of a consolidation row (NaN for GPU-type rows); the figure
    and ``error_table`` use ``NIC_GBPS`` unless told otherwise.
    """
    get_config(config)  # every size is the same: the data set is small and nothing is random
    out = pd.concat([consolidation_points(), type_ratio_points()], ignore_index=True)
    out["error_pct"] = (out["predicted"] - out["measured"]) / out["measured"] * 100
    return out


def error_table(df: pd.DataFrame, nic_gbps: float = NIC_GBPS) -> pd.DataFrame:
    """Mean absolute percentage error per quantity, family and GPU count (or GPU type)."""
    cons = df[(df["quantity"] == "consolidation") & (df["nic_gbps"] == nic_gbps)]
    types = df[df["quantity"] == "gpu_type"]
    rows = []
    for (fam, g), grp in cons.groupby(["family", "gpus"]):
        rows.append(
            {
                "quantity": "spread / consolidated",
                "family": fam,
                "case": f"{g} GPUs",
                "points": len(grp),
                "mape_pct": float(grp["error_pct"].abs().mean()),
                "measured_median": float(grp["measured"].median()),
                "predicted_median": float(grp["predicted"].median()),
            }
        )
    for (fam, t), grp in types.groupby(["family", "gpu_type"]):
        rows.append(
            {
                "quantity": "type / V100",
                "family": fam,
                "case": str(t),
                "points": len(grp),
                "mape_pct": float(grp["error_pct"].abs().mean()),
                "measured_median": float(grp["measured"].median()),
                "predicted_median": float(grp["predicted"].median()),
            }
        )
    return pd.DataFrame(rows)


if __name__ == "__main__":
    df = consolidation_validation()
    with pd.option_context("display.width", 160, "display.max_rows", 200):
        print(error_table(df).to_string(index=False, float_format=lambda x: f"{x:.3g}"))
        for nic in NIC_SENSITIVITY:
            c = df[(df["quantity"] == "consolidation") & (df["nic_gbps"] == nic)]
            print(f"NIC {nic:g} Gbps: consolidation MAPE {c['error_pct'].abs().mean():.1f}%")
        cal = calibrated_type_ratios()
        print(
            f"type ratio, one factor per type fitted on {cal.train}: {cal.factors}; held-out MAPE "
            f"{cal.holdout_mape:.1f}% (uncalibrated {cal.uncalibrated_holdout_mape:.1f}%)"
        )
