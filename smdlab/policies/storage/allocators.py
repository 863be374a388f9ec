"""Cache and remote-IO allocation rules: the baselines (no cache, LRU, GPU-proportional), CBA's
cost-minimising split and SiloD's throughput-first split, and max-min fair remote bandwidth.

Each takes the running jobs' compute-bound speeds and GPUs (``JobIO``) and returns a
``StorageAllocation``; the simulator applies the baseline named by ``Storage.allocator`` to a
decision that carries none, and the storage policies attach theirs to their decisions.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from smdlab.model.storage import Storage, StorageAllocation, remote_need_gbps
from smdlab.solve.storage import cba_split

__all__ = [
    "JobIO",
    "allocate",
    "cba_allocation",
    "fair_bandwidth",
    "lru_allocation",
    "proportional_cache",
    "silod_allocation",
]


@dataclass(frozen=True)
class JobIO:
    """A running job as the storage rules see it: compute-bound speed (samples/s) and GPUs held."""

    speed: float
    gpus: float


def fair_bandwidth(pool: float, needs: Mapping[str, float]) -> dict[str, float]:
    """Max-min fair shares of ``pool`` GB/s, each job capped at its need (water-filling)."""
    if math.isinf(pool) or sum(needs.values()) <= pool:
        return {j: v for j, v in needs.items() if v > 0}
    out: dict[str, float] = {}
    left, todo = pool, sorted((v, j) for j, v in needs.items() if v > 0)
    while todo:
        share = left / len(todo)
        v, j = todo[0]
        if v <= share:
            out[j] = v
            left -= v
            todo.pop(0)
        else:
            for _, j2 in todo:
                out[j2] = share
            break
    return out


def _needs(
    storage: Storage, jobs: Mapping[str, JobIO], cache: Mapping[str, float]
) -> dict[str, float]:
    out = {}
    for name, io in jobs.items():
        d = storage.dataset_of(name)
        if d is not None:
            out[name] = remote_need_gbps(d, io.speed, cache.get(d.name, 0.0))
    return out


def _with_bandwidth(
    storage: Storage, jobs: Mapping[str, JobIO], cache: dict[str, float]
) -> StorageAllocation:
    return StorageAllocation(
        cache, fair_bandwidth(storage.remote_gbps, _needs(storage, jobs, cache))
    )


def _capacity(storage: Storage, datasets: Mapping[str, float]) -> float:
    """The cache capacity, an infinite one read as room for every dataset named."""
    return storage.cache_gb if math.isfinite(storage.cache_gb) else float(sum(datasets.values()))


def lru_allocation(
    storage: Storage, jobs: Mapping[str, JobIO], last_read: Mapping[str, float]
) -> dict[str, float]:
    """Whole datasets, most recently read first (those read now first), while they fit.

    A dataset that does not fit whole gets none: under uniform sampling without replacement an
    LRU-managed part f of a dataset serves about f^2/2 of its reads (docs/storage.md), neglected.
    """
    now = {storage.job_dataset[j] for j in jobs if j in storage.job_dataset}
    seen = set(last_read) | now
    order = sorted(seen, key=lambda k: (k not in now, -last_read.get(k, -math.inf), k))
    sizes = {k: storage.datasets[k].size_gb for k in order}
    left = _capacity(storage, sizes)
    out = {}
    for k in order:
        if sizes[k] <= left + 1e-9:
            out[k] = sizes[k]
            left -= sizes[k]
    return out


def proportional_cache(storage: Storage, jobs: Mapping[str, JobIO]) -> dict[str, float]:
    """Cache split among the datasets read now in proportion to the GPUs reading each, each
    capped at its size (the excess shared again among the others)."""
    gpus: dict[str, float] = {}
    for name, io in jobs.items():
        k = storage.job_dataset.get(name)
        if k is not None:
            gpus[k] = gpus.get(k, 0.0) + io.gpus
    sizes = {k: storage.datasets[k].size_gb for k in gpus}
    left = _capacity(storage, sizes)
    out: dict[str, float] = {}
    todo = {k: g for k, g in gpus.items() if g > 0}
    while todo and left > 1e-12:
        total = sum(todo.values())
        full = [k for k, g in todo.items() if sizes[k] - out.get(k, 0.0) <= left * g / total]
        if not full:
            for k, g in todo.items():
                out[k] = out.get(k, 0.0) + left * g / total
            break
        for k in full:
            left -= sizes[k] - out.get(k, 0.0)
            out[k] = sizes[k]
            del todo[k]
    return {k: v for k, v in out.items() if v > 0}


def _demand(
    storage: Storage, jobs: Mapping[str, JobIO]
) -> tuple[list[str], np.ndarray, np.ndarray]:
    """Datasets read now, their sizes and their remote need (GB/s) with nothing cached."""
    need: dict[str, float] = {}
    for name, io in jobs.items():
        d = storage.dataset_of(name)
        if d is not None:
            need[d.name] = need.get(d.name, 0.0) + remote_need_gbps(d, io.speed, 0.0)
    names = sorted(need)
    sizes = np.array([storage.datasets[k].size_gb for k in names])
    return names, sizes, np.array([need[k] for k in names])


def cba_allocation(storage: Storage, jobs: Mapping[str, JobIO]) -> StorageAllocation:
    """CBA: the cost-minimising cache split (``cba_split``), each job given exactly its need
    (shared max-min fair when even a full cache leaves the pool short)."""
    names, sizes, demand = _demand(storage, jobs)
    if not names:
        return StorageAllocation()
    cap = _capacity(storage, dict(zip(names, sizes)))
    split = cba_split(
        sizes, demand, cap, storage.remote_gbps, storage.cache_price, storage.remote_price
    )
    cache = {k: float(c) for k, c in zip(names, split.cache_gb) if c > 0}
    return _with_bandwidth(storage, jobs, cache)


def silod_allocation(storage: Storage, jobs: Mapping[str, JobIO]) -> StorageAllocation:
    """SiloD: the whole cache to the datasets whose GB saves the most remote IO (a_k/d_k first),
    then remote bandwidth max-min fair to each job's need: throughput first, no prices."""
    names, sizes, demand = _demand(storage, jobs)
    if not names:
        return StorageAllocation()
    cap = _capacity(storage, dict(zip(names, sizes)))
    split = cba_split(sizes, demand, cap, math.inf, 0.0, 1.0)  # every saving is worth its GB
    cache = {k: float(c) for k, c in zip(names, split.cache_gb) if c > 0}
    return _with_bandwidth(storage, jobs, cache)


def allocate(
    storage: Storage, rule: str, jobs: Mapping[str, JobIO], last_read: Mapping[str, float]
) -> StorageAllocation:
    """The allocation of baseline ``rule`` (``none``, ``lru``, ``proportional``) or ``cba``/``silod``."""
    if rule == "none":
        return _with_bandwidth(storage, jobs, {})
    if rule == "lru":
        return _with_bandwidth(storage, jobs, lru_allocation(storage, jobs, last_read))
    if rule == "proportional":
        return _with_bandwidth(storage, jobs, proportional_cache(storage, jobs))
    if rule == "cba":
        return cba_allocation(storage, jobs)
    return silod_allocation(storage, jobs)
