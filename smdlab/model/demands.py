"""Per-task resource demands derived from the network: the rule ``task_demands`` applies.

These numbers are modelling assumptions of this workbench, not measurements or published
figures; they exist so that jobs on different networks ask for different amounts of CPU and
memory (with one demand vector for every job, multi-resource policies degenerate: every job's
dominant share is the same resource and every alignment score ties). Bandwidth is not derived:
both task types reserve ``bw_gbps`` (default 10 Gbps), as before.

Worker (one GPU, one data-parallel replica):
- gpu = 1.
- cpu = 1 core for the training process plus the input-pipeline cores needed to feed the GPU at
  its compute-bound rate: ceil(samples/s x host CPU-seconds per sample), where samples/s =
  1 / (forward + backward time per sample of the profile) on its device and the CPU cost per
  sample is the family's ``INPUT_CPU_S_PER_SAMPLE`` (image CNNs: JPEG decode, random-resized
  crop and flip of one image at about 150 images/s per core; transformers and the LSTM LM read
  pre-tokenised sequences and only collate them: 0.1 ms and 0.01 ms per sequence; unknown
  family: 0); clipped to [``WORKER_CPU_MIN``, ``WORKER_CPU_MAX``] = [2, 16] (beyond 16 cores a
  real job would be input-bound; the timing model ignores that). Fast CNNs thus need many
  cores (AlexNet, MobileNetV2 16), slow ones few (VGG-16 4), text models 2.
- mem_gb = 4 GB for the training process + 1 GB per input core (loader processes and their
  prefetched batches) + the family's in-memory corpus (``CORPUS_CACHE_GB``: 0 for images,
  streamed from storage; 16 GB for a transformer's tokenised corpus shard; 1 GB for the LSTM
  LM's corpus; 0 unknown) + ``WORKER_PARAM_COPIES`` = 4 host copies of the parameters (pulled
  parameters and pushed gradients, each double-buffered so communication overlaps compute),
  rounded up to 0.5 GB.
PS (CPU only; holds a shard of the parameters and aggregates the workers' gradients):
- gpu = 0.
- cpu = 2 + one core per 125 MB of parameters (``PS_CPU_PER_PARAM_GB`` = 8 per GB), rounded up:
  summing the gradients and applying the optimiser step is work proportional to the bytes held.
- mem_gb = 2 + (2 + optimiser slots) x parameter GB, rounded up to 0.5 GB: the parameters, one
  gradient-aggregation buffer and the optimiser state (``OPTIMIZER_SLOTS``: SGD with momentum,
  1 slot, for CNNs; Adam, 2 slots, for transformers; plain SGD, 0, for the LSTM LM; 1 unknown).
A demand is per task and cannot depend on the number of PSs p, so the PS terms are the worst
case p = 1 (one PS holds the whole model); with p > 1 each PS really needs about 1/p of the
parameter terms, so the rule over-reserves PS CPU and memory for multi-PS jobs.

The family of a bundled network is its ``family`` in ``data/profiles/index.csv``; for any other
profile it is inferred from the layer kinds (conv: cnn, attention: transformer, lstm: rnn,
otherwise ``other``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from types import MappingProxyType

import pandas as pd

from smdlab.errors import InvalidInput, check_choice, check_positive
from smdlab.model.profiles import LayerProfile, list_profiles, profile_info

FAMILIES = ("cnn", "transformer", "rnn", "other")

INPUT_CPU_S_PER_SAMPLE: Mapping[str, float] = MappingProxyType(
    {"cnn": 1 / 150, "transformer": 1e-4, "rnn": 1e-5, "other": 0.0}
)
WORKER_MAIN_CPU = 1
WORKER_CPU_MIN = 2
WORKER_CPU_MAX = 16
WORKER_MEM_BASE_GB = 4
WORKER_MEM_PER_INPUT_CPU_GB = 1
CORPUS_CACHE_GB: Mapping[str, float] = MappingProxyType(
    {"cnn": 0, "transformer": 16, "rnn": 1, "other": 0}
)
WORKER_PARAM_COPIES = 4
PS_CPU_BASE = 2
PS_CPU_PER_PARAM_GB = 8
PS_MEM_BASE_GB = 2
OPTIMIZER_SLOTS: Mapping[str, int] = MappingProxyType(
    {"cnn": 1, "transformer": 2, "rnn": 0, "other": 1}
)
MEM_STEP_GB = 0.5  # memory demands are rounded up to a multiple of this
EPS = 1e-9  # so that a product landing on an integer up to rounding is not rounded up once more


def network_family(profile: LayerProfile) -> str:
    """Family of a profile: its bundled index entry, else inferred from its layer kinds."""
    if not isinstance(profile, LayerProfile):
        raise InvalidInput(f"profile must be a LayerProfile, got {type(profile).__name__}")
    if profile.network in list_profiles():
        family = str(profile_info(profile.network)["family"])
        return family if family in FAMILIES else "other"
    kinds = set(profile.kinds)
    for kind, family in (("conv", "cnn"), ("attention", "transformer"), ("lstm", "rnn")):
        if kind in kinds:
            return family
    return "other"


def _round_up(value: float, step: float) -> float:
    return math.ceil(value / step - EPS) * step


def task_demands(
    profile: LayerProfile, family: str | None = None, bw_gbps: float = 10.0
) -> tuple[dict[str, float], dict[str, float]]:
    """(worker demand, PS demand) of a job on ``profile`` under the documented rule (module docstring)."""
    if not isinstance(profile, LayerProfile):
        raise InvalidInput(f"profile must be a LayerProfile, got {type(profile).__name__}")
    family = network_family(profile) if family is None else check_choice("family", family, FAMILIES)
    bw = check_positive("bw_gbps", bw_gbps)
    param_gb = profile.total_param_bytes / 1e9
    rate = 1.0 / (
        profile.forward_total_s + profile.backward_total_s
    )  # samples/s at one worker, compute-bound
    input_cpu = math.ceil(rate * INPUT_CPU_S_PER_SAMPLE[family] - EPS)
    cpu = min(max(WORKER_MAIN_CPU + input_cpu, WORKER_CPU_MIN), WORKER_CPU_MAX)
    worker_mem = (
        WORKER_MEM_BASE_GB
        + WORKER_MEM_PER_INPUT_CPU_GB * (cpu - WORKER_MAIN_CPU)
        + CORPUS_CACHE_GB[family]
        + WORKER_PARAM_COPIES * param_gb
    )
    worker = {"gpu": 1, "cpu": cpu, "mem_gb": _round_up(worker_mem, MEM_STEP_GB), "bw_gbps": bw}
    ps = {
        "gpu": 0,
        "cpu": PS_CPU_BASE + math.ceil(PS_CPU_PER_PARAM_GB * param_gb - EPS),
        "mem_gb": _round_up(PS_MEM_BASE_GB + (2 + OPTIMIZER_SLOTS[family]) * param_gb, MEM_STEP_GB),
        "bw_gbps": bw,
    }
    return worker, ps


def demand_table(
    device: str = "v100", bw_gbps: float = 10.0, machine: Mapping[str, float] | None = None
) -> pd.DataFrame:
    """The rule applied to every bundled network: one row per network (docs/simulator.md's table).

    machine: a machine's capacities (e.g. ``{"gpu": 8, "cpu": 64, "mem_gb": 256, "bw_gbps": 100}``);
    if given, adds how many worker+PS bundles of each network fit on it and which resource binds.
    """
    rows = []
    for name in list_profiles():
        profile = LayerProfile.load(name, device)
        wd, pd_ = task_demands(profile, bw_gbps=bw_gbps)
        row = {
            "network": name,
            "family": network_family(profile),
            "param_gb": profile.total_param_bytes / 1e9,
            "samples_per_s": 1.0 / (profile.forward_total_s + profile.backward_total_s),
            "worker_cpu": wd["cpu"],
            "worker_mem_gb": wd["mem_gb"],
            "ps_cpu": pd_["cpu"],
            "ps_mem_gb": pd_["mem_gb"],
        }
        if machine is not None:
            fits = {
                r: math.floor(
                    check_positive(f"machine[{r!r}]", c, allow_zero=True)
                    / (wd.get(r, 0) + pd_.get(r, 0))
                    + EPS
                )
                for r, c in machine.items()
                if wd.get(r, 0) + pd_.get(r, 0) > 0
            }
            row["bundles_per_machine"] = min(fits.values())
            row["binding"] = ", ".join(
                r for r, k in fits.items() if k == row["bundles_per_machine"]
            )
        rows.append(row)
    return pd.DataFrame(rows)
