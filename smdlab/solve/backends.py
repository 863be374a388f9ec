"""MILP/LP backends for the multiple-choice knapsack: HiGHS (always) and Gurobi (when licensed).

The model is always the same shape: columns are (job, configuration) pairs, one row per job
(``sum_c y_ic = 1``, or ``<= 1`` when jobs may stay unstarted) and one row per resource type.
It is built from numpy/scipy arrays in one call; nothing loops over columns in Python.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import sys
import time
from dataclasses import dataclass
from typing import Literal, get_args

import numpy as np
import scipy.sparse as sp

from smdlab.errors import Infeasible, InvalidInput, SolverError, check_choice

Backend = Literal["auto", "highs", "gurobi"]
BACKENDS: tuple[Backend, ...] = get_args(Backend)
# The size-limited pip licence of gurobipy stops at this many variables and constraints (errno 10010).
GUROBI_SIZE_LIMIT = 2000

_HIGHS_BANNER_SHOWN = False


def new_highs():
    """A silent ``highspy.Highs`` (the one-time banner of the process is sent to /dev/null)."""
    global _HIGHS_BANNER_SHOWN
    import highspy

    if _HIGHS_BANNER_SHOWN:
        h = highspy.Highs()
    else:
        # HiGHS prints a banner on fd 1 at the first construction, before any option applies;
        # it would corrupt ``--json`` output on stdout, so that one construction writes to /dev/null.
        sys.stdout.flush()
        saved = os.dup(1)
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 1)
        try:
            h = highspy.Highs()
            # no C library handle (unusual platforms): nothing buffered to flush
            with contextlib.suppress(OSError):
                ctypes.CDLL(None).fflush(None)
        finally:
            os.dup2(saved, 1)
            os.close(saved)
            os.close(devnull)
        _HIGHS_BANNER_SHOWN = True
    h.setOptionValue("output_flag", False)
    return h


@dataclass(frozen=True)
class FlatModel:
    """A multiple-choice knapsack over flat columns (minimisation).

    cost: (m,) objective coefficient of each column.
    use: (m, K) resources each column takes.
    group: (m,) job (row) index of each column, 0..n-1.
    n: number of jobs.
    capacity: (K,) capacity.
    eq: True for ``sum_c y_ic = 1`` per job, False for ``<= 1`` (the job may stay unstarted).
    """

    cost: np.ndarray
    use: np.ndarray
    group: np.ndarray
    n: int
    capacity: np.ndarray
    eq: bool

    @property
    def size(self) -> tuple[int, int]:
        """(variables, constraints) of the model as a solver sees it."""
        return len(self.cost), self.n + len(self.capacity)

    def matrix(self) -> sp.csc_matrix:
        """Constraint matrix, rows = jobs then resources, in CSC format."""
        m = len(self.cost)
        ones = sp.csr_matrix((np.ones(m), (self.group, np.arange(m))), shape=(self.n, m))
        res = sp.csr_matrix(self.use.T)
        a = sp.vstack([ones, res]).tocsc()
        a.eliminate_zeros()
        a.sort_indices()
        return a


@dataclass(frozen=True)
class FlatResult:
    """What a backend returns: column values, objective, bound, status and who solved it."""

    x: np.ndarray
    objective: float
    bound: float
    status: str  # "optimal" or "time_limit"
    backend: str
    note: str = ""
    basic: bool = True  # LP solutions: a simplex vertex (at most K fractional jobs)


def _row_bounds(model: FlatModel) -> tuple[np.ndarray, np.ndarray]:
    lo = np.concatenate(
        [
            np.ones(model.n) if model.eq else np.full(model.n, -np.inf),
            np.full(len(model.capacity), -np.inf),
        ]
    )
    hi = np.concatenate([np.ones(model.n), model.capacity.astype(float)])
    return lo, hi


def solve_highs(
    model: FlatModel,
    integral: bool,
    time_limit: float | None,
    mip_gap: float | None,
    start: np.ndarray | None = None,
) -> FlatResult:
    """Solve with HiGHS (simplex for LPs, so the LP solution is a vertex)."""
    import highspy

    a = model.matrix()
    m = len(model.cost)
    lo, hi = _row_bounds(model)
    h = new_highs()
    inf = highspy.kHighsInf
    h.passModel(
        m, len(lo), a.nnz, 1, 1, 0.0,
        model.cost.astype(np.float64), np.zeros(m), np.ones(m),
        np.where(np.isinf(lo), -inf, lo), np.where(np.isinf(hi), inf, hi),
        a.indptr.astype(np.int32), a.indices.astype(np.int32), a.data.astype(np.float64),
        np.ones(m, dtype=np.int32) if integral else np.zeros(m, dtype=np.int32),
    )  # fmt: skip
    if time_limit is not None:
        h.setOptionValue("time_limit", float(time_limit))
    if integral:
        if mip_gap is not None:
            h.setOptionValue("mip_rel_gap", float(mip_gap))
        if start is not None:
            on = np.flatnonzero(start > 0.5).astype(np.int32)
            h.setSolution(len(on), on, np.ones(len(on)))
    else:
        h.setOptionValue("solver", "simplex")
    h.run()
    status = h.getModelStatus()
    S = highspy.HighsModelStatus
    info = h.getInfo()
    if status == S.kInfeasible:
        raise Infeasible(
            "the allocation problem has no feasible solution (capacity too small for the required jobs)"
        )
    has_sol = info.primal_solution_status == 2  # kSolutionStatusFeasible
    if status == S.kOptimal:
        tag = "optimal"
    elif status in (S.kTimeLimit, S.kIterationLimit, S.kSolutionLimit, S.kInterrupt) and has_sol:
        tag = "time_limit"
    else:
        raise SolverError(
            f"HiGHS stopped with status {h.modelStatusToString(status)!r} and no usable solution"
        )
    x = np.asarray(h.getSolution().col_value, dtype=float)
    obj = float(info.objective_function_value)
    if integral:
        bound = float(info.mip_dual_bound)
        if not np.isfinite(bound):
            bound = -np.inf
    else:
        bound = obj
    return FlatResult(x=x, objective=obj, bound=min(bound, obj), status=tag, backend="highs")


_GUROBI_ENV = None


def _gurobi_env():
    """One quiet Gurobi environment per process (starting one costs several milliseconds)."""
    global _GUROBI_ENV
    if _GUROBI_ENV is None:
        import gurobipy as gp

        env = gp.Env(empty=True)
        env.setParam("OutputFlag", 0)
        env.start()
        _GUROBI_ENV = env
    return _GUROBI_ENV


def solve_gurobi(
    model: FlatModel,
    integral: bool,
    time_limit: float | None,
    mip_gap: float | None,
    start: np.ndarray | None = None,
) -> FlatResult:
    """Solve with gurobipy's matrix API; raises whatever gurobipy raises (the caller falls back)."""
    import gurobipy as gp
    from gurobipy import GRB

    a = model.matrix().tocsr()
    m = len(model.cost)
    env = _gurobi_env()
    with gp.Model(env=env) as g:
        x = g.addMVar(m, lb=0.0, ub=1.0, vtype=GRB.BINARY if integral else GRB.CONTINUOUS)
        g.setObjective(model.cost @ x, GRB.MINIMIZE)
        jobs, res = a[: model.n], a[model.n :]
        if model.eq:
            g.addConstr(jobs @ x == np.ones(model.n))
        else:
            g.addConstr(jobs @ x <= np.ones(model.n))
        g.addConstr(res @ x <= model.capacity.astype(float))
        if time_limit is not None:
            g.Params.TimeLimit = float(time_limit)
        if integral and mip_gap is not None:
            g.Params.MIPGap = float(mip_gap)
        if not integral:
            g.Params.Method = 0  # primal simplex: a vertex solution
        elif start is not None:
            x.setAttr("Start", start)
        g.optimize()
        st = g.Status
        if st in (GRB.INFEASIBLE, GRB.INF_OR_UNBD):
            raise Infeasible(
                "the allocation problem has no feasible solution (capacity too small for the required jobs)"
            )
        if st == GRB.OPTIMAL:
            tag = "optimal"
        elif (
            st in (GRB.TIME_LIMIT, GRB.INTERRUPTED, GRB.SOLUTION_LIMIT, GRB.ITERATION_LIMIT)
            and g.SolCount > 0
        ):
            tag = "time_limit"
        else:
            raise SolverError(f"Gurobi stopped with status {st} and no usable solution")
        xs = np.asarray(x.X, dtype=float)
        obj = float(g.ObjVal)
        bound = float(g.ObjBound) if integral else obj
    return FlatResult(x=xs, objective=obj, bound=min(bound, obj), status=tag, backend="gurobi")


def solve_flat(
    model: FlatModel,
    *,
    integral: bool,
    backend: Backend = "auto",
    time_limit: float | None = None,
    mip_gap: float | None = None,
    start: np.ndarray | None = None,
) -> FlatResult:
    """Solve the model with the chosen backend; any Gurobi failure falls back to HiGHS (noted).

    start: a feasible 0/1 column vector given to the MILP as its first incumbent (optional).
    """
    check_choice("backend", backend, BACKENDS)
    nvar, ncon = model.size
    if backend == "highs":
        return solve_highs(model, integral, time_limit, mip_gap, start)
    if backend == "auto" and (nvar > GUROBI_SIZE_LIMIT or ncon > GUROBI_SIZE_LIMIT):
        res = solve_highs(model, integral, time_limit, mip_gap, start)
        note = (
            f"auto: model has {nvar} variables and {ncon} constraints, over the gurobipy pip licence "
            f"limit of {GUROBI_SIZE_LIMIT}; solved with HiGHS"
        )
        return FlatResult(res.x, res.objective, res.bound, res.status, res.backend, note)
    t0 = time.perf_counter()
    try:
        return solve_gurobi(model, integral, time_limit, mip_gap, start)
    except (Infeasible, SolverError):
        raise
    except ImportError as exc:
        reason = f"gurobipy not importable ({exc})"
    except (
        Exception
    ) as exc:  # GurobiError (licence, errno 10010 size limit, ...) or anything else it raises
        errno = getattr(exc, "errno", None)
        reason = f"Gurobi failed ({type(exc).__name__}{f' errno {errno}' if errno is not None else ''}: {exc})"
    spent = time.perf_counter() - t0
    remaining = None if time_limit is None else max(1e-3, time_limit - spent)
    res = solve_highs(model, integral, remaining, mip_gap, start)
    return FlatResult(
        res.x, res.objective, res.bound, res.status, res.backend, f"fallback to HiGHS: {reason}"
    )


def _lp_highs(cost, a_ub, b_ub, a_eq, b_eq, lo, time_limit, interior=False) -> FlatResult:
    """min cost @ x, a_ub x <= b_ub, a_eq x = b_eq, x >= lo, by HiGHS' simplex (interior: its
    interior-point method without crossover, a point inside the optimal face, not a vertex)."""
    import highspy

    a = sp.vstack([a_ub, a_eq]).tocsc()
    a.sort_indices()
    m = a.shape[1]
    inf = highspy.kHighsInf
    rlo = np.concatenate([np.full(a_ub.shape[0], -inf), b_eq])
    rhi = np.concatenate([b_ub, b_eq])
    h = new_highs()
    h.passModel(
        m, a.shape[0], a.nnz, 1, 1, 0.0,
        np.asarray(cost, dtype=np.float64), np.asarray(lo, dtype=np.float64), np.full(m, inf),
        rlo.astype(np.float64), rhi.astype(np.float64),
        a.indptr.astype(np.int32), a.indices.astype(np.int32), a.data.astype(np.float64),
        np.zeros(m, dtype=np.int32),
    )  # fmt: skip
    if time_limit is not None:
        h.setOptionValue("time_limit", float(time_limit))
    if interior:
        h.setOptionValue("solver", "ipm")
        h.setOptionValue("run_crossover", "off")
    h.run()
    status = h.getModelStatus()
    if status != highspy.HighsModelStatus.kOptimal:
        if status == highspy.HighsModelStatus.kInfeasible:
            raise Infeasible("the LP has no feasible solution")
        raise SolverError(
            f"HiGHS stopped the LP with status {h.modelStatusToString(status)!r}; no valid bound"
        )
    x = np.asarray(h.getSolution().col_value, dtype=float)
    obj = float(h.getInfo().objective_function_value)
    return FlatResult(x=x, objective=obj, bound=obj, status="optimal", backend="highs")


def _lp_gurobi(cost, a_ub, b_ub, a_eq, b_eq, lo, time_limit) -> FlatResult:
    """The same LP with gurobipy's matrix API (raises whatever gurobipy raises)."""
    import gurobipy as gp
    from gurobipy import GRB

    with gp.Model(env=_gurobi_env()) as g:
        x = g.addMVar(len(cost), lb=np.asarray(lo, dtype=float), ub=GRB.INFINITY)
        g.setObjective(np.asarray(cost, dtype=float) @ x, GRB.MINIMIZE)
        g.addConstr(a_ub.tocsr() @ x <= np.asarray(b_ub, dtype=float))
        g.addConstr(a_eq.tocsr() @ x == np.asarray(b_eq, dtype=float))
        if time_limit is not None:
            g.Params.TimeLimit = float(time_limit)
        g.optimize()
        if g.Status in (GRB.INFEASIBLE, GRB.INF_OR_UNBD):
            raise Infeasible("the LP has no feasible solution")
        if g.Status != GRB.OPTIMAL:
            raise SolverError(f"Gurobi stopped the LP with status {g.Status}; no valid bound")
        xs = np.asarray(x.X, dtype=float)
        obj = float(g.ObjVal)
    return FlatResult(x=xs, objective=obj, bound=obj, status="optimal", backend="gurobi")


def solve_lp(
    cost: np.ndarray,
    a_ub: sp.spmatrix,
    b_ub: np.ndarray,
    a_eq: sp.spmatrix,
    b_eq: np.ndarray,
    lo: np.ndarray,
    *,
    backend: Backend = "auto",
    time_limit: float | None = None,
    interior: bool = False,
) -> FlatResult:
    """A general LP (min cost @ x, a_ub x <= b_ub, a_eq x = b_eq, x >= lo) under the same fallback rules as ``solve_flat``.

    interior: HiGHS' interior-point method without crossover (HiGHS only): an optimum inside the
    optimal face rather than a vertex.
    """
    check_choice("backend", backend, BACKENDS)
    if interior:
        if backend != "highs":
            raise InvalidInput("interior=True needs backend='highs'")
        return _lp_highs(cost, a_ub, b_ub, a_eq, b_eq, lo, time_limit, interior=True)
    nvar = len(cost)
    ncon = a_ub.shape[0] + a_eq.shape[0]
    args = (cost, a_ub, b_ub, a_eq, b_eq, lo, time_limit)
    if backend == "highs":
        return _lp_highs(*args)
    if backend == "auto" and (nvar > GUROBI_SIZE_LIMIT or ncon > GUROBI_SIZE_LIMIT):
        res = _lp_highs(*args)
        note = (
            f"auto: model has {nvar} variables and {ncon} constraints, over the gurobipy pip licence "
            f"limit of {GUROBI_SIZE_LIMIT}; solved with HiGHS"
        )
        return FlatResult(res.x, res.objective, res.bound, res.status, res.backend, note)
    t0 = time.perf_counter()
    try:
        return _lp_gurobi(*args)
    except (Infeasible, SolverError):
        raise
    except ImportError as exc:
        reason = f"gurobipy not importable ({exc})"
    except Exception as exc:  # GurobiError (licence, errno 10010 size limit, ...) or anything else
        errno = getattr(exc, "errno", None)
        reason = f"Gurobi failed ({type(exc).__name__}{f' errno {errno}' if errno is not None else ''}: {exc})"
    spent = time.perf_counter() - t0
    remaining = None if time_limit is None else max(1e-3, time_limit - spent)
    res = _lp_highs(cost, a_ub, b_ub, a_eq, b_eq, lo, remaining)
    return FlatResult(
        res.x, res.objective, res.bound, res.status, res.backend, f"fallback to HiGHS: {reason}"
    )
