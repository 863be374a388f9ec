"""Storage as a resource: datasets, a shared cluster cache and a remote-IO bandwidth pool.

A job reads its dataset by uniform random sampling without replacement in every epoch. A cache
holding ``c`` of the dataset's ``d`` GB serves exactly the fraction c/d of an epoch's reads, so
a job with remote bandwidth ``b`` GB/s and mean sample size ``s`` MB is fed at most
``io_speed = 1000 b / (s (1 - c/d))`` samples/s (docs/storage.md derives it). Its speed is the
minimum of that and its compute-bound speed (the layered model's, data stage included). Jobs
that name the same dataset share its cache; each job has its own remote bandwidth.

Units: sizes in GB (1e9 bytes), sample sizes in MB (1e6 bytes), bandwidth in GB/s, prices per
GB-hour of cache and per (GB/s)-hour of remote bandwidth.
"""

from __future__ import annotations

import csv
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Literal, get_args

from smdlab.caches import STORAGE_DATASETS, memoize
from smdlab.errors import InvalidInput, check_choice, check_positive
from smdlab.paths import data_dir

__all__ = [
    "ALLOCATORS",
    "CACHE_SCOPES",
    "Dataset",
    "Storage",
    "StorageAllocation",
    "StorageView",
    "bundled_datasets",
    "cost_rate",
    "held_gb",
    "io_speed",
    "local_cache_gb",
    "place_cache",
    "remote_need_gbps",
]

Allocator = Literal["none", "lru", "proportional"]
# Cache rules the simulator applies when a decision carries no storage allocation.
ALLOCATORS: tuple[Allocator, ...] = get_args(Allocator)
CacheScope = Literal["cluster", "machine"]
# Who a cached GB serves: every job (cluster), or the workers on its machine (machine).
CACHE_SCOPES: tuple[CacheScope, ...] = get_args(CacheScope)
_TOL = 1e-9


@dataclass(frozen=True)
class Dataset:
    """A training dataset: its name, size (GB), mean sample size (MB) and task family."""

    name: str
    size_gb: float
    sample_mb: float
    task: str = ""

    def __post_init__(self) -> None:
        object.__setattr__(self, "name", str(self.name))
        object.__setattr__(
            self, "size_gb", check_positive(f"dataset {self.name!r}: size_gb", self.size_gb)
        )
        object.__setattr__(
            self, "sample_mb", check_positive(f"dataset {self.name!r}: sample_mb", self.sample_mb)
        )

    @property
    def samples(self) -> float:
        """Number of samples (size over mean sample size)."""
        return self.size_gb * 1000.0 / self.sample_mb


@memoize(STORAGE_DATASETS)
def _bundled() -> Mapping[str, Dataset]:
    out = {}
    with open(data_dir() / "storage" / "datasets.csv", newline="") as f:
        for row in csv.DictReader(f):
            size_gb = float(row["size_bytes"]) / 1e9
            out[row["name"]] = Dataset(
                row["name"], size_gb, size_gb * 1000.0 / float(row["samples"]), row["task"]
            )
    return MappingProxyType(out)


def bundled_datasets() -> Mapping[str, Dataset]:
    """The bundled datasets by name (``data/storage/datasets.csv``, sources in its README)."""
    return _bundled()


def io_speed(dataset: Dataset, cache_gb: float, remote_gbps: float) -> float:
    """Samples/s the storage can feed a job reading ``dataset`` (inf: storage never binds)."""
    miss = 1.0 - min(cache_gb / dataset.size_gb, 1.0)
    if miss <= _TOL or math.isinf(remote_gbps):
        return math.inf
    return 1000.0 * remote_gbps / (dataset.sample_mb * miss)


def remote_need_gbps(dataset: Dataset, speed: float, cache_gb: float) -> float:
    """Remote GB/s a job needs to run at ``speed`` samples/s with ``cache_gb`` of its dataset cached."""
    miss = max(0.0, 1.0 - min(cache_gb / dataset.size_gb, 1.0))
    return 0.0 if miss <= _TOL else speed * dataset.sample_mb * miss / 1000.0


@dataclass(frozen=True)
class StorageAllocation:
    """Cache and remote IO a policy allocates beside workers and PSs (``Decision.storage``).

    cache_gb: GB of each dataset held in the cluster cache (0 to its size), shared by every job
    reading it. remote_gbps: remote bandwidth (GB/s) of each running job; a job not named gets 0.
    machine_cache_gb: with ``Storage.cache_scope == "machine"`` only, GB of each dataset held
    on each machine ({dataset: {machine index: GB}}); when empty the simulator places
    ``cache_gb`` on the machines (``place_cache``).
    """

    cache_gb: Mapping[str, float] = field(default_factory=dict)
    remote_gbps: Mapping[str, float] = field(default_factory=dict)
    machine_cache_gb: Mapping[str, Mapping[int, float]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not isinstance(self.machine_cache_gb, Mapping):
            raise InvalidInput(
                f"storage machine_cache_gb must be a mapping, got {self.machine_cache_gb!r}"
            )
        per: dict[str, Mapping[int, float]] = {}
        for k, row in self.machine_cache_gb.items():
            if not isinstance(row, Mapping):
                raise InvalidInput(
                    f"storage machine_cache_gb[{k!r}] must map machine indices to GB, got {row!r}"
                )
            per[str(k)] = MappingProxyType(
                {
                    int(m): check_positive(
                        f"storage machine_cache_gb[{k!r}][{m}]", v, allow_zero=True
                    )
                    for m, v in row.items()
                }
            )
        object.__setattr__(self, "machine_cache_gb", MappingProxyType(per))
        for what in ("cache_gb", "remote_gbps"):
            value = getattr(self, what)
            if not isinstance(value, Mapping):
                raise InvalidInput(f"storage {what} must be a mapping, got {value!r}")
            checked = {
                str(k): check_positive(f"storage {what}[{k!r}]", v, allow_zero=True)
                for k, v in value.items()
            }
            object.__setattr__(self, what, MappingProxyType(checked))


@dataclass(frozen=True)
class Storage:
    """A run's storage: datasets, which job reads which, cache capacity, remote pool and prices.

    datasets: name -> Dataset (``bundled_datasets()`` by default). job_dataset: job name ->
    dataset name; a job not listed reads no stored data (storage never binds it).
    cache_gb: cluster cache capacity (GB, may be inf). machine_cache_gb: optional capacity per
    machine (one per machine of the cluster); the cluster capacity is then their sum.
    cache_scope: ``cluster`` (the default: a dataset's cache may span machines and every reader
    reads it over the network, as in Alluxio, so only the sum binds) or ``machine`` (each
    machine's cache serves only the workers on that machine; needs ``machine_cache_gb``).
    remote_gbps: the remote-storage bandwidth pool (GB/s, may be
    inf: free bandwidth). cache_price: per GB-hour of cache held; remote_price: per (GB/s)-hour
    of remote bandwidth allocated. allocator: the cache rule applied when a decision carries no
    storage (``ALLOCATORS``): ``none``, ``lru`` (whole datasets, most recently read first) or
    ``proportional`` (cache split in proportion to GPUs held); remote bandwidth then goes max-min
    fair to each job's need.
    """

    job_dataset: Mapping[str, str]
    cache_gb: float = 0.0
    remote_gbps: float = math.inf
    cache_price: float = 0.0
    remote_price: float = 0.0
    datasets: Mapping[str, Dataset] = field(default_factory=bundled_datasets)
    machine_cache_gb: tuple[float, ...] | None = None
    allocator: str = "lru"
    cache_scope: str = "cluster"

    def __post_init__(self) -> None:
        if not isinstance(self.datasets, Mapping) or not all(
            isinstance(d, Dataset) for d in self.datasets.values()
        ):
            raise InvalidInput("storage datasets must map names to Dataset objects")
        object.__setattr__(self, "datasets", MappingProxyType(dict(self.datasets)))
        if not isinstance(self.job_dataset, Mapping):
            raise InvalidInput(f"storage job_dataset must be a mapping, got {self.job_dataset!r}")
        for job, name in self.job_dataset.items():
            if name not in self.datasets:
                known = ", ".join(sorted(self.datasets))
                raise InvalidInput(
                    f"storage job_dataset: job {job!r} names unknown dataset {name!r}; known: {known}"
                )
        object.__setattr__(self, "job_dataset", MappingProxyType(dict(self.job_dataset)))
        if self.machine_cache_gb is not None:
            per = tuple(
                check_positive(f"storage machine_cache_gb[{i}]", v, allow_zero=True)
                for i, v in enumerate(self.machine_cache_gb)
            )
            object.__setattr__(self, "machine_cache_gb", per)
            object.__setattr__(self, "cache_gb", float(sum(per)))
        for what in ("cache_gb", "remote_gbps"):
            value = check_positive(
                f"storage {what}", getattr(self, what), allow_zero=True, allow_inf=True
            )
            object.__setattr__(self, what, value)
        for what in ("cache_price", "remote_price"):
            object.__setattr__(
                self, what, check_positive(f"storage {what}", getattr(self, what), allow_zero=True)
            )
        check_choice("storage allocator", self.allocator, ALLOCATORS)
        check_choice("storage cache_scope", self.cache_scope, CACHE_SCOPES)
        if self.cache_scope == "machine" and self.machine_cache_gb is None:
            raise InvalidInput(
                "storage cache_scope 'machine' needs machine_cache_gb (one capacity per machine)"
            )

    def dataset_of(self, job: str) -> Dataset | None:
        """The dataset job ``job`` reads (None: it reads no stored data)."""
        name = self.job_dataset.get(job)
        return None if name is None else self.datasets[name]

    @property
    def unbounded(self) -> bool:
        """Whether storage can never bind (an infinite cache or a free, infinite remote pool)."""
        return math.isinf(self.cache_gb) or math.isinf(self.remote_gbps)

    def check(self, alloc: StorageAllocation, running: Mapping[str, object]) -> None:
        """Raise InvalidInput unless ``alloc`` fits this storage with ``running`` jobs."""
        for name, gb in alloc.cache_gb.items():
            d = self.datasets.get(name)
            if d is None:
                raise InvalidInput(f"storage allocation caches unknown dataset {name!r}")
            if gb > d.size_gb * (1 + _TOL) + _TOL:
                raise InvalidInput(
                    f"storage allocation caches {gb:g} GB of {name!r}, more than its {d.size_gb:g} GB"
                )
        if self.cache_scope == "machine":
            self._check_machines(alloc)
        total = sum(alloc.cache_gb.values())
        if total > self.cache_gb * (1 + 1e-7) + 1e-7:
            raise InvalidInput(
                f"storage allocation caches {total:g} GB, more than the cache's {self.cache_gb:g} GB"
            )
        for job in alloc.remote_gbps:
            if job not in running:
                raise InvalidInput(
                    f"storage allocation gives bandwidth to job {job!r}, which does not run"
                )
        bw = sum(alloc.remote_gbps.values())
        if bw > self.remote_gbps * (1 + 1e-7) + 1e-7:
            raise InvalidInput(
                f"storage allocation uses {bw:g} GB/s, more than the remote pool's {self.remote_gbps:g} GB/s"
            )

    def _check_machines(self, alloc: StorageAllocation) -> None:
        caps = self.machine_cache_gb or ()
        used = [0.0] * len(caps)
        for name, row in alloc.machine_cache_gb.items():
            d = self.datasets.get(name)
            if d is None:
                raise InvalidInput(f"storage allocation caches unknown dataset {name!r}")
            for m, gb in row.items():
                if not 0 <= m < len(caps):
                    raise InvalidInput(
                        f"storage allocation caches {name!r} on machine {m}; machines are 0 to {len(caps) - 1}"
                    )
                if gb > d.size_gb * (1 + _TOL) + _TOL:
                    raise InvalidInput(
                        f"storage allocation caches {gb:g} GB of {name!r} on machine {m}, more than its {d.size_gb:g} GB"
                    )
                used[m] += gb
        for m, (u, cap) in enumerate(zip(used, caps)):
            if u > cap * (1 + 1e-7) + 1e-7:
                raise InvalidInput(
                    f"storage allocation caches {u:g} GB on machine {m}, more than its cache's {cap:g} GB"
                )


def place_cache(
    storage: Storage, cache_gb: Mapping[str, float], readers: Mapping[str, Mapping[int, float]]
) -> dict[str, dict[int, float]]:
    """Per-machine caches from a cluster-level split: each machine holds, of every dataset whose
    readers have workers on it (most such workers first, ties by name), up to ``cache_gb`` of it
    while its capacity lasts (a dataset read on two machines is cached on both).

    readers: dataset -> {machine: workers of its readers there}.
    """
    caps = storage.machine_cache_gb or ()
    out: dict[str, dict[int, float]] = {}
    for m, cap in enumerate(caps):
        here = [(-w.get(m, 0.0), k) for k, w in readers.items() if w.get(m, 0.0) > 0]
        left = cap
        for _, k in sorted(here):
            gb = min(cache_gb.get(k, 0.0), left)
            if gb > 0:
                out.setdefault(k, {})[m] = gb
                left -= gb
    return out


def local_cache_gb(
    alloc: StorageAllocation, dataset: str, tasks: Sequence[tuple[int, int, int]]
) -> float:
    """A job's cached GB under per-machine caches: each worker reads only its machine's cache, so
    the job hits sum_m (workers on m / workers) c_{k,m} / d_k of its reads."""
    row = alloc.machine_cache_gb.get(dataset, {})
    workers = sum(w for _, w, _ in tasks)
    if workers <= 0:
        return 0.0
    return sum(w * row.get(m, 0.0) for m, w, _ in tasks) / workers


def held_gb(storage: Storage, alloc: StorageAllocation) -> float:
    """Cache GB ``alloc`` holds: the cluster cache's, or with per-machine caches every machine's
    (a dataset cached on two machines is held twice)."""
    if storage.cache_scope == "machine":
        return float(sum(sum(row.values()) for row in alloc.machine_cache_gb.values()))
    return float(sum(alloc.cache_gb.values()))


def cost_rate(storage: Storage, alloc: StorageAllocation) -> float:
    """IO cost per hour of ``alloc``: cache GB times its price plus remote GB/s times its price."""
    cache = held_gb(storage, alloc) * storage.cache_price if storage.cache_price else 0.0
    remote = sum(alloc.remote_gbps.values()) * storage.remote_price if storage.remote_price else 0.0
    return cache + remote


@dataclass(frozen=True)
class StorageView:
    """What a policy sees of storage at a decision point (``ClusterState.storage``).

    storage: the run's Storage. allocation: the allocation in force before this decision.
    speeds: compute-bound speed (samples/s) of each running job. last_read: the last time each
    dataset was read (LRU). speed_of(job, workers, ps, placement): the compute-bound speed a new
    allocation would get (the simulator's own model, placement and GPU types included).
    """

    storage: Storage
    allocation: StorageAllocation
    speeds: Mapping[str, float]
    last_read: Mapping[str, float]
    speed_of: Callable[..., float]
