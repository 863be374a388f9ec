"""Gavel's own policies under Gavel's own names, in smdlab's rounds.

Source: stanford-futuredata/gavel (MIT licence, Copyright (c) 2020 Stanford Future Data Systems),
``scheduler/policies``; Narayanan et al., "Heterogeneity-Aware Cluster Scheduling Policies for
Deep Learning Workloads", OSDI 2020. The allocations are ``smdlab.solve.gavel_lp``'s ``gavel_*``
functions (Gavel's objectives as its code states them). Here they run in smdlab's simulator, on
any workload, preemptive, with the round mechanism of ``smdlab.policies.heterogeneity._rounds`` (6-minute
rounds, the LP re-solved at every decision point, work conservation). Gavel's own simulation
loop on a Gavel trace, rule by rule, is ``smdlab.sim.gavel_mode``; docs/heterogeneity.md lists
how the two differ.

- ``gavel_max_min_fairness``: Gavel's agnostic LAS (``max_min_fairness``): every throughput 1.
- ``gavel_max_min_fairness_perf``: heterogeneity-aware max-min fairness.
- ``gavel_max_sum_throughput_perf``: maximise the sum of throughputs.
- ``gavel_fifo_perf``: jobs in arrival order, each whole on its fastest type with room.
"""

from __future__ import annotations

import numpy as np

from smdlab.policies.heterogeneity._rounds import ROUND_S, GavelRounds
from smdlab.solve.gavel_lp import gavel_fifo, gavel_max_min_fairness, gavel_max_sum_throughput

__all__ = [
    "GavelFifoPerf",
    "GavelMaxMinFairness",
    "GavelMaxMinFairnessPerf",
    "GavelMaxSumThroughputPerf",
]


def _agnostic_max_min(T: np.ndarray, g: np.ndarray, G: np.ndarray) -> np.ndarray:
    return gavel_max_min_fairness(T, g, G, aware=False)


class GavelMaxMinFairness(GavelRounds):
    """Gavel's heterogeneity-agnostic max-min fairness (LAS), in rounds."""

    name = "gavel_max_min_fairness"
    solve = staticmethod(_agnostic_max_min)

    def __init__(self, round_s: float = ROUND_S) -> None:
        super().__init__(round_s, aware=False)


class GavelMaxMinFairnessPerf(GavelRounds):
    """Gavel's heterogeneity-aware max-min fairness, in rounds."""

    name = "gavel_max_min_fairness_perf"
    solve = staticmethod(gavel_max_min_fairness)

    def __init__(self, round_s: float = ROUND_S) -> None:
        super().__init__(round_s, aware=True)


class GavelMaxSumThroughputPerf(GavelRounds):
    """Gavel's heterogeneity-aware maximum total throughput, in rounds."""

    name = "gavel_max_sum_throughput_perf"
    solve = staticmethod(gavel_max_sum_throughput)

    def __init__(self, round_s: float = ROUND_S) -> None:
        super().__init__(round_s, aware=True)


class GavelFifoPerf(GavelRounds):
    """Gavel's heterogeneity-aware FIFO, in rounds."""

    name = "gavel_fifo_perf"
    solve = staticmethod(gavel_fifo)
    arrival_order = True

    def __init__(self, round_s: float = ROUND_S) -> None:
        super().__init__(round_s, aware=True)
