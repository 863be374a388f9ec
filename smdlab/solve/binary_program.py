"""A 0/1 program with general linear rows, maximised by HiGHS or Gurobi (the lease MILP of Chronus).

max c @ x  s.t.  row_lo <= A x <= row_hi,  x in {0, 1}.

``backend="auto"`` tries Gurobi within the size limit of its pip licence and falls back to HiGHS
on any Gurobi failure, as ``smdlab.solve.backends.solve_flat`` does; ``"highs"`` uses HiGHS only.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from smdlab.errors import SolverError, check_choice
from smdlab.solve.backends import BACKENDS, GUROBI_SIZE_LIMIT, _gurobi_env, new_highs

__all__ = ["BinaryResult", "solve_binary"]


@dataclass(frozen=True)
class BinaryResult:
    """A solution: x (0/1), objective, status (optimal, time_limit or infeasible), backend, note."""

    x: np.ndarray | None
    objective: float
    status: str
    backend: str
    note: str = ""


def _highs(c, a, lo, hi, time_limit, start, gap) -> BinaryResult:
    import highspy

    a = sp.csc_matrix(a)
    a.sort_indices()
    m = a.shape[1]
    h = new_highs()
    inf = highspy.kHighsInf
    h.passModel(
        m, a.shape[0], a.nnz, 1, 1, 0.0,
        -np.asarray(c, dtype=np.float64), np.zeros(m), np.ones(m),
        np.where(np.isinf(lo), -inf, lo).astype(np.float64),
        np.where(np.isinf(hi), inf, hi).astype(np.float64),
        a.indptr.astype(np.int32), a.indices.astype(np.int32), a.data.astype(np.float64),
        np.ones(m, dtype=np.int32),
    )  # fmt: skip
    if time_limit is not None:
        h.setOptionValue("time_limit", float(time_limit))
    if gap is not None:
        h.setOptionValue("mip_rel_gap", float(gap))
    if start is not None:
        on = np.flatnonzero(start > 0.5).astype(np.int32)
        h.setSolution(len(on), on, np.ones(len(on)))
    h.run()
    status = h.getModelStatus()
    S = highspy.HighsModelStatus
    info = h.getInfo()
    if status == S.kInfeasible:
        return BinaryResult(None, -np.inf, "infeasible", "highs")
    if info.primal_solution_status != 2:
        if status == S.kTimeLimit:  # no incumbent within the limit
            return BinaryResult(None, -np.inf, "time_limit", "highs")
        raise SolverError(f"HiGHS stopped with status {h.modelStatusToString(status)!r}")
    x = np.round(np.asarray(h.getSolution().col_value, dtype=float))
    tag = "optimal" if status == S.kOptimal else "time_limit"
    return BinaryResult(x, -float(info.objective_function_value), tag, "highs")


def _gurobi(c, a, lo, hi, time_limit, start, gap) -> BinaryResult:
    import gurobipy as gp
    from gurobipy import GRB

    a = sp.csr_matrix(a)
    with gp.Model(env=_gurobi_env()) as g:
        x = g.addMVar(a.shape[1], vtype=GRB.BINARY)
        g.setObjective(np.asarray(c, dtype=float) @ x, GRB.MAXIMIZE)
        fin_hi, fin_lo = np.isfinite(hi), np.isfinite(lo)
        if fin_hi.any():
            g.addConstr(a[fin_hi] @ x <= hi[fin_hi])
        if fin_lo.any():
            g.addConstr(a[fin_lo] @ x >= lo[fin_lo])
        if time_limit is not None:
            g.Params.TimeLimit = float(time_limit)
        g.Params.Threads = 1
        if gap is not None:
            g.Params.MIPGap = float(gap)
        if start is not None:
            x.setAttr("Start", start)
        g.optimize()
        if g.Status in (GRB.INFEASIBLE, GRB.INF_OR_UNBD):
            return BinaryResult(None, -np.inf, "infeasible", "gurobi")
        if g.SolCount == 0:
            return BinaryResult(None, -np.inf, "time_limit", "gurobi")
        tag = "optimal" if g.Status == GRB.OPTIMAL else "time_limit"
        return BinaryResult(np.round(np.asarray(x.X)), float(g.ObjVal), tag, "gurobi")


def solve_binary(
    c: np.ndarray,
    a: sp.spmatrix,
    row_lo: np.ndarray,
    row_hi: np.ndarray,
    *,
    time_limit: float | None = None,
    backend: str = "highs",
    start: np.ndarray | None = None,
    mip_gap: float | None = None,
) -> BinaryResult:
    """Maximise ``c @ x`` over 0/1 ``x`` with ``row_lo <= a @ x <= row_hi`` (module docstring).

    start: a 0/1 vector offered as the first incumbent (need not be feasible for HiGHS).
    mip_gap: relative optimality gap at which the search stops (None: the solver's default).
    """
    check_choice("backend", backend, BACKENDS)
    lo = np.asarray(row_lo, dtype=float)
    hi = np.asarray(row_hi, dtype=float)
    small = a.shape[1] <= GUROBI_SIZE_LIMIT and a.shape[0] <= GUROBI_SIZE_LIMIT
    if backend == "gurobi" or (backend == "auto" and small):
        try:
            return _gurobi(c, a, lo, hi, time_limit, start, mip_gap)
        except Exception as exc:  # licence, size limit, not installed: HiGHS instead (noted)
            res = _highs(c, a, lo, hi, time_limit, start, mip_gap)
            return BinaryResult(
                res.x, res.objective, res.status, res.backend, f"fallback to HiGHS: {exc}"
            )
    return _highs(c, a, lo, hi, time_limit, start, mip_gap)
