"""Every module-level cache of smdlab, declared in one place with its key, lifetime and bound.

Each cache holds results of a pure function of its key, so a hit returns what the computation
would (one holds hints instead, ``HULL_CHAINS``: guesses its user checks before it relies on
them): clearing a cache (``clear_caches()``) changes timings, never results
(``tests/test_caches.py`` checks that). Keys are values (numbers, strings, tuples of them, a
profile's content fingerprint), never ``id()`` of an object: equal inputs built separately share
an entry, and an entry never outlives the meaning of its key. Every cache is bounded (least
recently used entries go first) and guarded by a lock (the widgets compute on a background
thread while the notebook's thread may compute too).

Not caches, and so not here: per-object memos that die with their object (a policy's state
between decisions, a widget's solved problems) and process resources (the Gurobi environment of
``smdlab.solve.backends``).
"""

from __future__ import annotations

import functools
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar, cast

__all__ = [
    "BUNDLED_PROFILES",
    "COLOCATION",
    "DATA_STAGE_TABLES",
    "DEMAND_ROWS",
    "EDITED_PROFILES",
    "GAVEL_TABLES",
    "HULL_CHAINS",
    "HULL_SEGMENTS",
    "ITERATION_TABLES",
    "JOB_VARIANTS",
    "LINK_SPEEDS",
    "MURI_MATCHINGS",
    "MURI_PACKINGS",
    "OMRU_EPOCH_MODELS",
    "OPTIMUS_FITS",
    "PIPELINE_TABLES",
    "PROFILE_INDEX",
    "SPEED_TABLES",
    "STORAGE_DATASETS",
    "TRACES",
    "WIDGET_JOB_SAMPLES",
    "WORKLOAD_BOUNDS",
    "Cache",
    "cache_info",
    "clear_caches",
    "memoize",
]

V = TypeVar("V")
F = TypeVar("F", bound=Callable[..., Any])

_REGISTRY: dict[str, Cache[Any]] = {}
_MISSING = object()


@dataclass(frozen=True)
class CacheInfo:
    """What a cache holds and how it has been used."""

    name: str
    key: str
    lifetime: str
    maxsize: int
    size: int
    hits: int
    misses: int


class Cache(Generic[V]):
    """A bounded, thread-safe map from a value key to a computed value (least recently used first out).

    name: dotted name of the computation it serves. key: what the key is made of. lifetime: when
    its entries stop being valid (all of ours: never within a process, the inputs are immutable
    or named by content). maxsize: most entries kept.
    """

    def __init__(self, name: str, *, key: str, lifetime: str, maxsize: int) -> None:
        if name in _REGISTRY:
            raise ValueError(f"a cache named {name!r} exists already")
        if maxsize < 1:
            raise ValueError(f"maxsize must be >= 1, got {maxsize}")
        self.name, self.key, self.lifetime, self.maxsize = name, key, lifetime, maxsize
        self._data: OrderedDict[Hashable, V] = OrderedDict()
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0
        _REGISTRY[name] = self

    def get(self, key: Hashable) -> V | None:
        """The value stored under ``key``, or None."""
        value = self._lookup(key)
        return None if value is _MISSING else cast(V, value)

    def _lookup(self, key: Hashable) -> V | object:
        with self._lock:
            value = self._data.get(key, _MISSING)
            if value is _MISSING:
                self.misses += 1
            else:
                self.hits += 1
                self._data.move_to_end(key)
            return value

    def put(self, key: Hashable, value: V) -> V:
        """Store ``value`` under ``key`` (evicting the least recently used entry when full); returns it."""
        with self._lock:
            self._data[key] = value
            self._data.move_to_end(key)
            while len(self._data) > self.maxsize:
                self._data.popitem(last=False)
        return value

    def get_or_compute(self, key: Hashable, compute: Callable[[], V]) -> V:
        """The cached value of ``key``, computing and storing it on a miss (outside the lock)."""
        value = self._lookup(key)
        return self.put(key, compute()) if value is _MISSING else cast(V, value)

    def clear(self) -> None:
        """Drop every entry and reset the counters."""
        with self._lock:
            self._data.clear()
            self.hits = self.misses = 0

    def __len__(self) -> int:
        return len(self._data)

    def info(self) -> CacheInfo:
        """Name, documented key and lifetime, bound, size and hit counts."""
        return CacheInfo(
            self.name, self.key, self.lifetime, self.maxsize, len(self), self.hits, self.misses
        )


def memoize(cache: Cache[Any]) -> Callable[[F], F]:
    """Decorator: cache a function of hashable (value) arguments in ``cache``."""

    def wrap(fn: F) -> F:
        name = f"{fn.__module__}.{fn.__qualname__}"  # functions may share a cache

        @functools.wraps(fn)
        def inner(*args: Hashable, **kwargs: Hashable) -> Any:
            key = (name, args, tuple(sorted(kwargs.items())))
            return cache.get_or_compute(key, lambda: fn(*args, **kwargs))

        return cast(F, inner)  # same signature as fn

    return wrap


def clear_caches() -> None:
    """Empty every cache of smdlab (results stay the same; the next computations are slower)."""
    for cache in _REGISTRY.values():
        cache.clear()


def cache_info() -> list[CacheInfo]:
    """One record per cache: name, key, lifetime, bound, current size, hits and misses."""
    return [c.info() for c in _REGISTRY.values()]


_PROCESS = "the process: the data files are read-only package data"
_IMMUTABLE = "the process: every input in the key is immutable (frozen dataclasses, numbers)"

# ---- model ----------------------------------------------------------------------------------
PROFILE_INDEX: Cache[Any] = Cache(
    "model.profiles.index",
    key="() (one entry: data/profiles/index.csv)",
    lifetime=_PROCESS,
    maxsize=1,
)
BUNDLED_PROFILES: Cache[Any] = Cache(
    "model.profiles.load",
    key="(network name, device name)",
    lifetime=_PROCESS,
    maxsize=128,
)
PIPELINE_TABLES: Cache[Any] = Cache(
    "model.pipeline.tables",
    key="(file name,): data/pipelines/pipelines.csv and synergy_sensitivity.csv",
    lifetime=_PROCESS,
    maxsize=4,
)
ITERATION_TABLES: Cache[Any] = Cache(
    "model.timing.layered_tables",
    key="(profile fingerprint, batch mode, batches, worker and PS link bytes/s, latency, "
    "max_workers, max_ps, mode): every input of the layered iteration-time table",
    lifetime=_IMMUTABLE,
    maxsize=8192,
)
DATA_STAGE_TABLES: Cache[Any] = Cache(
    "model.timing.data_stage_tables",
    key="(layered-table key, input pipeline, worker cpu, worker mem_gb)",
    lifetime=_IMMUTABLE,
    maxsize=8192,
)
LINK_SPEEDS: Cache[Any] = Cache(
    "model.timing.link_speed",
    key="(Job.model_key, mode, workers, ps, worker and PS link divisors, machines): a job's "
    "speed on links slower than its NIC shares (rack uplinks)",
    lifetime=_IMMUTABLE,
    maxsize=50_000,
)
STORAGE_DATASETS: Cache[Any] = Cache(
    "model.storage.bundled",
    key="() (one entry: data/storage/datasets.csv)",
    lifetime=_PROCESS,
    maxsize=1,
)
JOB_VARIANTS: Cache[Any] = Cache(
    "model.pipeline.job_variants",
    key="(Job.value_key, cpu, mem_gb): a job with other per-worker CPU and memory",
    lifetime=_IMMUTABLE,
    maxsize=50_000,
)
# ---- policies -------------------------------------------------------------------------------
MURI_PACKINGS: Cache[Any] = Cache(
    "policies.muri.packing_time",
    key="(sorted stage-time rows of 2-4 jobs,): the packing's iteration time",
    lifetime=_IMMUTABLE,
    maxsize=65_536,
)
MURI_MATCHINGS: Cache[Any] = Cache(
    "policies.muri.matched_pairs",
    key="(per candidate packing, its sorted stage-time rows, in list order): the matched pairs",
    lifetime=_IMMUTABLE,
    maxsize=4096,
)
OPTIMUS_FITS: Cache[Any] = Cache(
    "policies.optimus.loss_fits",
    key="(estimator seed, noise, job name, finished epochs): the fitted loss curve and its end "
    "epoch (a job's loss curve is drawn from the seed, the noise and its name alone)",
    lifetime=_IMMUTABLE,
    maxsize=65_536,
)
# ---- solve ----------------------------------------------------------------------------------
SPEED_TABLES: Cache[Any] = Cache(
    "solve.instance.job_speeds",
    key="(mode, Job.model_key): every job field a speed table reads",
    lifetime=_IMMUTABLE,
    maxsize=200_000,
)
HULL_SEGMENTS: Cache[Any] = Cache(
    "solve.knapsack_hull.row_segments",
    key="(W, P, bytes of one job's value row, mask row, worker and PS demand rows, resource "
    "scale): that job's upper-hull segments (from, to, slope)",
    lifetime=_IMMUTABLE,
    maxsize=4096,
)
HULL_CHAINS: Cache[Any] = Cache(
    "solve.knapsack_hull.chain_hints",
    key="(table position, W, P, mask row, worker and PS demand rows, resource scale): the hull "
    "vertices last found for such a row, a guess that ``_hull_segments`` checks",
    lifetime="a hint: every guessed vertex is checked, so a stale entry costs time, not results",
    maxsize=4096,
)
DEMAND_ROWS: Cache[Any] = Cache(
    "solve.instance.demand_rows",
    key="(resource names, Job.demand_key): the worker and PS demands as sorted pairs",
    lifetime=_IMMUTABLE,
    maxsize=200_000,
)
# ---- sim ------------------------------------------------------------------------------------
WORKLOAD_BOUNDS: Cache[Any] = Cache(
    "sim.bound.workload_bounds",
    key="(Job.value_key of every job, resource names, pooled capacity, mode)",
    lifetime=_IMMUTABLE,
    maxsize=256,
)
# ---- workloads and widgets ------------------------------------------------------------------
TRACES: Cache[Any] = Cache(
    "workloads.trace.parsed",
    key="(path, mtime_ns, size, on_unsorted): a changed file gets a new key",
    lifetime="the process; an edited trace file has another (mtime, size) and so another key",
    maxsize=8,
)
EDITED_PROFILES: Cache[Any] = Cache(
    "widgets.scenario.edited_profiles",
    key="(network name, ProfileEdit)",
    lifetime=_IMMUTABLE,
    maxsize=256,
)
COLOCATION: Cache[Any] = Cache(
    "model.colocation",
    key="() for the default co-location model fitted to the bundled Gavel data; "
    "(network, parameter bytes, per-GPU batch, accumulation) for a job's Gavel type",
    lifetime=_PROCESS,
    maxsize=4096,
)
OMRU_EPOCH_MODELS: Cache[Any] = Cache(
    "workloads.omru.epoch_models",
    key="(gpus_per_machine,): the epoch model fitted to OMRU's bundled measurements",
    lifetime=_PROCESS,
    maxsize=8,
)
GAVEL_TABLES: Cache[Any] = Cache(
    "model.gpu_types.gavel_tables",
    key="(function name,): Gavel's bundled solo throughputs as lookup tables and type ratios",
    lifetime=_PROCESS,
    maxsize=8,
)
WIDGET_JOB_SAMPLES: Cache[Any] = Cache(
    "widgets.scenario.job_samples",
    key="(network names, number of jobs, seed)",
    lifetime=_IMMUTABLE,
    maxsize=64,
)
