"""The result of ``solve``: an allocation per job with its objective, bound and provenance."""

from __future__ import annotations

import math
from dataclasses import dataclass

from smdlab.solve.shrink_placement import PlacementResult
from smdlab.solve.smd import IterationRecord

# A result is called optimal only within this relative gap of its proven bound: the MILP's default
# gap tolerance, and below the 1 s in 10^6 s that every view prints.
OPTIMAL_GAP = 1e-6


@dataclass(frozen=True, eq=False)
class Solution:
    """An allocation of (P) and how it was found.

    method: solve method (milp, lp, lp_round, smd, brute).
    jobs: job names, in the order given.
    workers, ps: per job, the allocation (0 and 0: not started). For ``lp``: the configuration
        carrying the largest LP share (see ``fractional`` for the whole fractional solution).
    durations: per job, d_i(w, p) in seconds (NaN when not started).
    costs: per job, omega_i * d_i(w, p), or the waiting charge omega_i * (H + d_i(r_i)) when not started
        (r_i the job's reference configuration; docs/solver.md, "Jobs that wait").
    objective: sum of ``costs`` (for ``lp``: the LP value).
    lower_bound: a proven lower bound on the optimum of (P) (LP relaxation or MILP bound).
    gap: (objective - lower_bound) / objective.
    status: optimal, time_limit (stopped by its limit: incumbent and bound), heuristic, or relaxation (lp).
    backend: solvers that did the work (highs, gurobi, numpy), comma-separated.
    note: remarks: fallback reasons, limits hit, shrinking by placement.
    fallback: whether a Gurobi failure made HiGHS solve instead.
    wall_time_s: seconds spent in ``solve``.
    horizon: H, the expected wait charged to a job that is not started (s).
    mode: timing overlap mode.
    knapsack: for smd, the knapsack method.
    rounding_bound: for lp_round, the additive bound: objective <= lower_bound + rounding_bound before
        placement and spare-capacity filling can only lower it.
    fractional: for lp, per job the configurations with a positive LP value as (workers, ps, value).
    trace: for smd, one record per iteration of Jong's method.
    converged: for smd, whether ||psi|| fell below the tolerance.
    polish_moves: for smd, moves of the final local search (None when ``polish=False``).
    selected: per job, whether the outer selection (smd) or the solver chose to start it.
    pooled_workers, pooled_ps: the allocation before placement (equal to workers/ps without shrinking).
    placement: the placement on machines, when placed.
    shrink_steps: single-task removals placement needed (0 when not placed).
    bound_kind: which bound ``lower_bound`` is: ``lp`` (the LP relaxation), ``lagrangian`` (resource
        prices), ``milp`` (the MILP solver's proven bound), ``exact`` (brute force's optimum), or
        ``""`` (none computed).
    """

    method: str
    jobs: tuple[str, ...]
    workers: tuple[int, ...]
    ps: tuple[int, ...]
    durations: tuple[float, ...]
    costs: tuple[float, ...]
    objective: float
    lower_bound: float
    gap: float
    status: str
    backend: str
    note: str
    fallback: bool
    wall_time_s: float
    horizon: float
    mode: str
    knapsack: str | None = None
    rounding_bound: float | None = None
    fractional: tuple[tuple[tuple[int, int, float], ...], ...] | None = None
    trace: tuple[IterationRecord, ...] = ()
    converged: bool | None = None
    polish_moves: int | None = None
    selected: tuple[bool, ...] = ()
    pooled_workers: tuple[int, ...] = ()
    pooled_ps: tuple[int, ...] = ()
    placement: PlacementResult | None = None
    shrink_steps: int = 0
    bound_kind: str = ""

    @property
    def proven_optimal(self) -> bool:
        """Optimal as reported: the solver proved it and the result is within ``OPTIMAL_GAP`` of its bound.

        A MILP optimum of the pooled problem that placement then shrank is not optimal for the
        placed problem; its ``gap`` says by how much it may miss.
        """
        return self.status == "optimal" and self.gap <= OPTIMAL_GAP * (1 + 1e-9)

    @property
    def time_limit_reached(self) -> bool:
        """Whether the solver stopped at its time limit (its incumbent and the bound proven by then)."""
        return self.status == "time_limit"

    @property
    def allocation(self) -> dict[str, tuple[int, int]]:
        """Job name -> (workers, ps); (0, 0) for a job not started."""
        return dict(zip(self.jobs, zip(self.workers, self.ps)))

    @property
    def started(self) -> tuple[str, ...]:
        """Names of the jobs that start."""
        return tuple(j for j, w in zip(self.jobs, self.workers) if w > 0)

    @property
    def iterations(self) -> int:
        """Number of Newton iterations of smd (0 for other methods)."""
        return max(0, len(self.trace) - 1)

    def to_frame(self):
        """One row per job: job, workers, ps, duration, cost, started (+ machines when placed)."""
        import pandas as pd

        df = pd.DataFrame(
            {
                "job": list(self.jobs),
                "workers": list(self.workers),
                "ps": list(self.ps),
                "duration": list(self.durations),
                "cost": list(self.costs),
                "started": [w > 0 for w in self.workers],
            }
        )
        if self.pooled_workers:
            df["pooled_workers"] = list(self.pooled_workers)
            df["pooled_ps"] = list(self.pooled_ps)
        if self.placement is not None:
            df["machines"] = [pl.machines for pl in self.placement.placements]
        return df

    def trace_frame(self):
        """smd's iteration trace as a DataFrame (iteration, psi_norm, objective, knapsack_time_s, ...)."""
        import pandas as pd

        cols = ["iteration", "psi_norm", "objective", "knapsack_time_s", "knapsack_solves", "step"]
        return pd.DataFrame([[getattr(r, c) for c in cols] for r in self.trace], columns=cols)

    def __repr__(self) -> str:
        started = sum(1 for w in self.workers if w > 0)
        gap = "n/a" if math.isnan(self.gap) else f"{self.gap:.2%}"
        return (
            f"Solution({self.method}, {started}/{len(self.jobs)} jobs started, objective={self.objective:.6g}, "
            f"lower_bound={self.lower_bound:.6g}, gap={gap}, status={self.status}, backend={self.backend}, "
            f"{self.wall_time_s:.3f} s)"
        )
