"""The cache baselines as a policy: an ordering policy's GPUs with one of the simple cache rules.

``cache``: ``none`` (no cache), ``lru`` (whole datasets, most recently read first) or
``proportional`` (cache split in proportion to GPUs); remote bandwidth max-min fair up to each
job's need (``smdlab.policies.storage.allocators``, docs/storage.md). The same as running the
base with ``Storage.allocator`` set to the rule, as a policy a scenario or a sweep can name.
Execution: the base's (FIFO: non-elastic, the default; SRTF and Gavel's: preemptive).
"""

from __future__ import annotations

from smdlab.errors import check_choice
from smdlab.model.storage import ALLOCATORS
from smdlab.policies.storage.cba import CBA

__all__ = ["CacheBaseline"]


class CacheBaseline(CBA):
    """The GPU allocation of ``base`` with the cache rule ``cache``."""

    name = "cache_baseline"

    def __init__(self, base: str = "fifo", cache: str = "lru") -> None:
        super().__init__(base)
        self.rule = check_choice("cache", cache, ALLOCATORS)
