"""CBA: cost-based allocation of cache and remote IO for the GPU allocation of an ordering policy.

GPUs come from ``base`` (FIFO by default, SRTF, or Gavel's round-based ``gavel_max_sum`` or
``gavel_max_min``, whose round decisions then carry storage too); for the jobs that then run,
CBA splits the cache by the closed form of docs/storage.md (``smdlab.solve.storage.cba_split``): cache a dataset exactly
when a GB of it saves more remote bandwidth cost than it costs to hold, or when the remote pool
needs it, greedy by remote GB/s saved per GB; each job then gets exactly the remote bandwidth it
needs at its compute speed. Re-split at every arrival and completion (Gavel's: every arrival and round). Execution: the
base's (FIFO: non-elastic, the default; SRTF and Gavel's: preemptive).
"""

from __future__ import annotations

from smdlab.errors import check_choice
from smdlab.policies.base import ClusterState, Decision, Execution, Policy
from smdlab.policies.storage._common import with_storage

__all__ = ["CBA"]

# Ordering policies CBA, SiloD and the cache baselines extend; Gavel's two run in rounds.
BASES = ("fifo", "srtf", "gavel_max_sum", "gavel_max_min")


def _base(name: str) -> Policy:
    from smdlab.policies.registry import get_policy

    return get_policy(check_choice("base", name, BASES))


class CBA(Policy):
    """The GPU allocation of ``base`` with CBA's cost-minimising cache and remote IO."""

    name = "cba"
    execution: Execution = "non_elastic"
    executions: tuple[Execution, ...] = ("non_elastic", "preemptive")
    decide_on_completion = True
    rule = "cba"

    def __init__(self, base: str = "fifo") -> None:
        self.base = _base(base)
        # Gavel's rounds are not re-decided at a completion (that would change its schedule):
        # the split then follows at the next round or arrival.
        self.decide_on_completion = base in ("fifo", "srtf")
        self.execution = self.base.execution
        self.executions = self.base.executions

    def reset(self) -> None:
        """Reset the base policy."""
        self.base.reset()

    def decide(self, state: ClusterState) -> Decision:
        """The base's decision with this policy's storage allocation attached."""
        return with_storage(state, self.base.decide(state), self.rule)
