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
- ``gavel_max_min_fairness_packed``: max-min fairness over jobs and pairs sharing GPUs (pairs in
  Gavel's mode only).

Option ``solver`` (the three LP policies): "auto" (ECOS, as Gavel solves its LPs, when the
``gavel`` extra is installed, else HiGHS), "ecos" or "highs" (``smdlab.solve.gavel_lp``).
"""

from __future__ import annotations

import warnings
from functools import partial

import numpy as np

from smdlab.errors import InvalidInput, check_choice
from smdlab.policies.base import ClusterState, Decision
from smdlab.policies.heterogeneity._rounds import ROUND_S, GavelRounds
from smdlab.solve.gavel_lp import (
    GAVEL_SOLVERS,
    gavel_fifo,
    gavel_max_min_fairness,
    gavel_max_sum_throughput,
    gavel_solver,
)

__all__ = [
    "GavelFifoPerf",
    "GavelMaxMinFairness",
    "GavelMaxMinFairnessPacked",
    "GavelMaxMinFairnessPerf",
    "GavelMaxSumThroughputPerf",
]


def _agnostic_max_min(
    T: np.ndarray, g: np.ndarray, G: np.ndarray, solver: str = "highs"
) -> np.ndarray:
    return gavel_max_min_fairness(T, g, G, aware=False, solver=solver)


def _solver(solver: str) -> str:
    """The option checked; "auto" stays "auto" (resolved, with its note, at each solve)."""
    check_choice("solver", solver, GAVEL_SOLVERS)
    gavel_solver(solver)  # "ecos" without the extra: one line now, not mid-run
    return solver


class GavelMaxMinFairness(GavelRounds):
    """Gavel's heterogeneity-agnostic max-min fairness (LAS), in rounds."""

    name = "gavel_max_min_fairness"
    solve = staticmethod(_agnostic_max_min)

    def __init__(self, round_s: float = ROUND_S, solver: str = "auto") -> None:
        super().__init__(round_s, aware=False)
        self.solver = _solver(solver)
        self.solve = partial(_agnostic_max_min, solver=self.solver)


class GavelMaxMinFairnessPerf(GavelRounds):
    """Gavel's heterogeneity-aware max-min fairness, in rounds."""

    name = "gavel_max_min_fairness_perf"
    solve = staticmethod(gavel_max_min_fairness)

    def __init__(self, round_s: float = ROUND_S, solver: str = "auto") -> None:
        super().__init__(round_s, aware=True)
        self.solver = _solver(solver)
        self.solve = partial(gavel_max_min_fairness, solver=self.solver)


class GavelMaxSumThroughputPerf(GavelRounds):
    """Gavel's heterogeneity-aware maximum total throughput, in rounds."""

    name = "gavel_max_sum_throughput_perf"
    solve = staticmethod(gavel_max_sum_throughput)

    def __init__(self, round_s: float = ROUND_S, solver: str = "auto") -> None:
        super().__init__(round_s, aware=True)
        self.solver = _solver(solver)
        self.solve = partial(gavel_max_sum_throughput, solver=self.solver)


class GavelFifoPerf(GavelRounds):
    """Gavel's heterogeneity-aware FIFO, in rounds."""

    name = "gavel_fifo_perf"
    solve = staticmethod(gavel_fifo)
    arrival_order = True

    def __init__(self, round_s: float = ROUND_S) -> None:
        super().__init__(round_s, aware=True)


class GavelMaxMinFairnessPacked(GavelMaxMinFairnessPerf):
    """Gavel's max-min fairness with space sharing (pairs of jobs on the same GPUs).

    In Gavel's mode (``simulation.engine = "gavel"``) the packed LP decides which pairs share,
    from Gavel's measured pair throughputs (``pair_throughputs``: Gavel's
    ``simulation_throughputs.json``; default: the shipped table). smdlab's own simulator has no
    pair mechanism for it, so there it runs unpaired, as ``gavel_max_min_fairness_perf``, and says
    so once.
    """

    name = "gavel_max_min_fairness_packed"

    def __init__(
        self, round_s: float = ROUND_S, solver: str = "auto", pair_throughputs: str | None = None
    ) -> None:
        super().__init__(round_s, solver)
        if pair_throughputs is not None and not isinstance(pair_throughputs, str):
            raise InvalidInput(
                f"pair_throughputs must be a path to Gavel's throughput JSON, got {pair_throughputs!r}"
            )
        self.pair_throughputs = pair_throughputs
        self._noted = False

    def decide(self, state: ClusterState) -> Decision:
        """As gavel_max_min_fairness_perf (no pairs outside Gavel's mode), noted once."""
        if not self._noted:
            self._noted = True
            warnings.warn(
                "gavel_max_min_fairness_packed shares GPUs only in Gavel's mode "
                "(--engine gavel); in smdlab's simulator it runs unpaired",
                stacklevel=2,
            )
        return super().decide(state)
