"""MILP: the exact allocation of (P) at every decision point, for small runs."""

from __future__ import annotations

from typing import Any, ClassVar

from smdlab.policies.ps.smd import SMD


class MILP(SMD):
    """The exact reference of docs/solver.md as an online policy (same shape as SMD).

    At each decision point the jobs to allocate (queued; plus running ones in elastic mode) get
    the optimal allocation of (P) from ``smdlab.solve.solve(..., method="milp")``: every job's
    configurations enumerated, a multiple-choice multi-dimensional knapsack solved with gurobipy
    when its size-limited licence admits the model, else HiGHS. A job waits when the solver's
    waiting charge (docs/solver.md, "Jobs that wait") is below its best start, even when it
    fits. Placement, elastic handling, the pooled cluster and the natural execution mode
    (elastic per 1,200 s slot, DL2's public simulator) are as in ``SMD``.

    It is optimal per decision, not over the whole run (later arrivals are unknown), and its cost
    grows quickly with the number of jobs and their caps: meant for small runs and for measuring
    SMD's gap. ``time_limit`` (s, default: solve's 60 s) bounds each decision; a decision stopped
    by it uses the incumbent (``last_solution.status == "time_limit"``).
    """

    name = "milp"
    method = "milp"
    _defaults: ClassVar[dict[str, Any]] = {}
