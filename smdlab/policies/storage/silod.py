"""SiloD-style scheduling: cache and remote IO as first-class resources beside an ordering policy.

GPUs come from ``base`` (FIFO, SRTF, or Gavel's round-based
``gavel_max_sum`` or ``gavel_max_min``, as SiloD extends existing schedulers); the whole cache
then goes to the datasets whose GB saves the most remote IO at the running jobs' compute speeds
(remote GB/s needed over dataset size, largest first), and the remote pool is shared max-min
fair up to each job's need: the allocation that maximises the jobs' IO-bound speeds, with no
regard to prices (docs/storage.md). Execution: the base's (FIFO: non-elastic, the default;
SRTF and Gavel's: preemptive).
"""

from __future__ import annotations

from smdlab.policies.storage.cba import CBA

__all__ = ["SiloD"]


class SiloD(CBA):
    """The GPU allocation of ``base`` with SiloD's throughput-first cache and remote IO."""

    name = "silod"
    rule = "silod"
