"""OMRU's workloads: image classification and action recognition jobs, all known at time 0.

``omru-image``: alexnet, resnet50, resnext50, seresnet101, googlenet, vgg16; ``omru-action``: tsn,
tsm, slowfast, r2plus1d, i3d (the networks of OMRU's measured epoch-time table,
``data/measurements/epoch_times_v100.csv``). Each job is a ring all-reduce job whose epoch time
at g GPUs is the fitted epoch model's (``smdlab.model.epochs.fit_epoch_model`` on every measured
GPU count, 1..8); beyond 8 GPUs the model extrapolates (label such points "extrapolated").

Epoch counts: OMRU does not publish them; ``DEFAULT_EPOCHS`` takes each network's standard
training recipe (a parameter, ``epochs=``):
- alexnet, resnet50, resnext50, googlenet, vgg16: 90 epochs, the default of the torchvision
  ImageNet reference recipe (pytorch/vision ``references/classification/train.py``, ``--epochs``
  default 90);
- seresnet101: 100 epochs (Hu, Shen, Sun, "Squeeze-and-Excitation Networks", CVPR 2018: "trained
  for 100 epochs");
- tsn: 100, tsm: 50, slowfast: 256, r2plus1d: 180, i3d: 100 epochs: the Kinetics-400 configs of
  MMAction2 (open-mmlab/mmaction2: ``tsn_r50_1x1x3_100e``, ``tsm_r50_1x1x8_50e``,
  ``slowfast_r50_4x16x1_256e``, ``r2plus1d_r34_8x8x1_180e``, ``i3d_r50_32x2x1_100e``).
Per-worker demand: 1 GPU, 4 CPU cores, 16 GB (assumed; only GPUs bind on OMRU's machines).
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from smdlab.caches import OMRU_EPOCH_MODELS, memoize
from smdlab.errors import InvalidInput, check_int, check_positive
from smdlab.model.cluster import Cluster
from smdlab.model.epochs import EpochModel, fit_epoch_model, load_epoch_times
from smdlab.model.job import Job

OMRU_WORKLOADS: Mapping[str, tuple[str, ...]] = MappingProxyType(
    {
        "omru-image": ("alexnet", "resnet50", "resnext50", "seresnet101", "googlenet", "vgg16"),
        "omru-action": ("tsn", "tsm", "slowfast", "r2plus1d", "i3d"),
    }
)
DEFAULT_EPOCHS: Mapping[str, float] = MappingProxyType(
    {
        "alexnet": 90,
        "resnet50": 90,
        "resnext50": 90,
        "googlenet": 90,
        "vgg16": 90,
        "seresnet101": 100,
        "tsn": 100,
        "tsm": 50,
        "slowfast": 256,
        "r2plus1d": 180,
        "i3d": 100,
    }
)
MEASURED_GPUS = 8  # the table's largest GPU count: larger allocations are extrapolated
WORKER_DEMAND: Mapping[str, float] = MappingProxyType({"gpu": 1, "cpu": 4, "mem_gb": 16})


@memoize(OMRU_EPOCH_MODELS)
def omru_epoch_model(gpus_per_machine: int = 4) -> EpochModel:
    """The epoch model the OMRU workloads use: fitted on every measured GPU count (1..8)."""
    return fit_epoch_model(
        load_epoch_times(),
        train_gpus=range(1, MEASURED_GPUS + 1),
        gpus_per_machine=gpus_per_machine,
    )


def omru_jobs(
    kind: str,
    *,
    epochs: Mapping[str, float] | None = None,
    gpus_per_machine: int = 4,
    max_workers: int = 32,
) -> list[Job]:
    """The jobs of workload ``kind`` (``omru-image`` or ``omru-action``), all arriving at 0."""
    if kind not in OMRU_WORKLOADS:
        raise InvalidInput(f"workload must be one of {', '.join(OMRU_WORKLOADS)}; got {kind!r}")
    gpm = check_int("gpus_per_machine", gpus_per_machine, 1, 1024)
    cap = check_int("max_workers", max_workers, 1, 1024)
    chosen = dict(DEFAULT_EPOCHS)
    if epochs is not None:
        if not isinstance(epochs, Mapping):
            raise InvalidInput(f"epochs must map network names to epoch counts, got {epochs!r}")
        for name, value in epochs.items():
            if name not in DEFAULT_EPOCHS:
                raise InvalidInput(
                    f"epochs names unknown network {name!r}; allowed: {', '.join(DEFAULT_EPOCHS)}"
                )
            chosen[name] = check_positive(f"epochs[{name!r}]", value)
    model = omru_epoch_model(gpm)
    return [
        model.job(net, chosen[net], name=net, max_workers=cap, worker_demand=WORKER_DEMAND)
        for net in OMRU_WORKLOADS[kind]
    ]


def omru_cluster(machines: int, gpus_per_machine: int = 4) -> Cluster:
    """``machines`` servers of ``gpus_per_machine`` GPUs (OMRU's: 8 of 4 V100), ample CPU,
    memory and NIC so that GPUs are the resource that binds."""
    m = check_int("machines", machines, 1, 100_000)
    g = check_int("gpus_per_machine", gpus_per_machine, 1, 1024)
    return Cluster.homogeneous(m, gpu=g, cpu=16 * g, mem_gb=64 * g, bw_gbps=100 * g)


__all__ = [
    "DEFAULT_EPOCHS",
    "MEASURED_GPUS",
    "OMRU_WORKLOADS",
    "omru_cluster",
    "omru_epoch_model",
    "omru_jobs",
]
