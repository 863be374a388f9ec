"""Datasets for a workload's jobs: each job reads a dataset of its network's task, drawn by a mix.

A network's task family (``NETWORK_TASKS``) names the datasets it may train on, each with a
probability (``DATASET_MIXES``): the image CNNs train on ImageNet, COCO or CIFAR-10; BERT and
GPT-2 on OpenWebText, WikiText-103 or WMT'14; the LSTM on WikiText-103, WMT'14 or LibriSpeech.
The draw is seeded per job name, so a job keeps its dataset whatever else the workload holds.
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from types import MappingProxyType

from smdlab.errors import InvalidInput, check_positive
from smdlab.model.job import Job
from smdlab.model.storage import Dataset, Storage, bundled_datasets

__all__ = ["DATASET_MIXES", "NETWORK_TASKS", "StorageSpec", "job_datasets", "storage_for"]

_VISION = ("alexnet", "densenet121", "googlenet", "inception_v3", "mobilenet_v2", "resnet152")
NETWORK_TASKS: Mapping[str, str] = MappingProxyType(
    {
        **{n: "vision" for n in (*_VISION, "resnet50", "resnext", "vgg16")},
        "bert_base": "language",
        "gpt2_small": "language",
        "lstm_lm": "sequence",
    }
)
DATASET_MIXES: Mapping[str, Mapping[str, float]] = MappingProxyType(
    {
        "vision": MappingProxyType({"imagenet1k": 0.6, "coco2017": 0.25, "cifar10": 0.15}),
        "language": MappingProxyType({"openwebtext": 0.5, "wikitext103": 0.3, "wmt14_en_de": 0.2}),
        "sequence": MappingProxyType(
            {"wikitext103": 0.4, "wmt14_en_de": 0.3, "librispeech960": 0.3}
        ),
    }
)


def _draw(name: str, seed: int, mix: Mapping[str, float]) -> str:
    """A dataset of ``mix`` for job ``name``: a stable hash of (seed, name) picks it."""
    u = zlib.crc32(f"{seed}:{name}".encode()) / 2**32
    total = sum(mix.values())
    acc = 0.0
    for k, p in mix.items():
        acc += p / total
        if u < acc:
            return k
    return list(mix)[-1]


def job_datasets(
    jobs: Sequence[Job],
    *,
    seed: int = 0,
    mixes: Mapping[str, Mapping[str, float]] | None = None,
    datasets: Mapping[str, Dataset] | None = None,
) -> dict[str, str]:
    """Job name -> dataset name, drawn from the mix of the job's network's task."""
    mixes = DATASET_MIXES if mixes is None else mixes
    known = bundled_datasets() if datasets is None else datasets
    for task, mix in mixes.items():
        for k, p in mix.items():
            if k not in known:
                raise InvalidInput(f"dataset mix {task!r} names unknown dataset {k!r}")
            check_positive(f"dataset mix {task!r}[{k!r}]", p, allow_zero=True)
    out = {}
    for j in jobs:
        net = j.profile.network
        task = NETWORK_TASKS.get(net, "vision")  # an unknown network reads images
        if task not in mixes:
            raise InvalidInput(f"no dataset mix for task {task!r} (network {net!r})")
        out[j.name] = _draw(j.name, seed, mixes[task])
    return out


def storage_for(
    jobs: Sequence[Job],
    *,
    cache_gb: float = 0.0,
    remote_gbps: float = math.inf,
    cache_price: float = 0.0,
    remote_price: float = 0.0,
    allocator: str = "lru",
    seed: int = 0,
) -> Storage:
    """A Storage for ``jobs`` with the bundled datasets, each job's drawn from its task's mix."""
    return Storage(
        job_datasets(jobs, seed=seed),
        cache_gb=cache_gb,
        remote_gbps=remote_gbps,
        cache_price=cache_price,
        remote_price=remote_price,
        allocator=allocator,
    )


@dataclass(frozen=True)
class StorageSpec:
    """A scenario's ``[storage]`` table: storage for whatever jobs the scenario builds.

    ``simulate`` binds it to its jobs (``bind``): each job reads a dataset of its network's task
    (``job_datasets`` with ``dataset_seed``), with the bundled datasets. ``machine_cache_gb``
    and ``cache_scope`` are ``Storage``'s (per-machine capacities; who a cached GB serves).
    """

    cache_gb: float = 0.0
    remote_gbps: float = math.inf
    cache_price: float = 0.0
    remote_price: float = 0.0
    allocator: str = "lru"
    dataset_seed: int = 0
    machine_cache_gb: Sequence[float] | None = None
    cache_scope: str = "cluster"

    def __post_init__(self) -> None:
        self.bind(())  # check every value now, naming the field

    def bind(self, jobs: Sequence[Job]) -> Storage:
        """The Storage of this spec for ``jobs``."""
        storage = storage_for(
            jobs,
            cache_gb=self.cache_gb,
            remote_gbps=self.remote_gbps,
            cache_price=self.cache_price,
            remote_price=self.remote_price,
            allocator=self.allocator,
            seed=self.dataset_seed,
        )
        per = self.machine_cache_gb
        if per is None and self.cache_scope == "cluster":
            return storage
        if per is not None and (isinstance(per, (str, bytes)) or not isinstance(per, Sequence)):
            raise InvalidInput(f"storage machine_cache_gb must be a list of GB, got {per!r}")
        return replace(
            storage,
            machine_cache_gb=None if per is None else tuple(per),
            cache_scope=self.cache_scope,
        )
