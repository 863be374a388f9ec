"""MILP/LP backends for the multiple-choice knapsack: HiGHS (always) and Gurobi (when licensed).

The model is always the same shape: columns are (job, configuration) pairs, one row per job
(``sum_c y_ic = 1``, or ``<= 1`` when jobs may stay unstarted) and one row per resource type.
It is built from numpy/scipy arrays in one call; nothing loops over columns in Python.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import pickle
import subprocess
import sys
import time
from dataclasses import dataclass
from typing import Any, Literal, get_args

import numpy as np
import scipy.sparse as sp

from smdlab.errors import Infeasible, InvalidInput, SolverError, check_choice
from smdlab.solve.highs_worker import run_highs

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

    def row_blocks(self) -> tuple[sp.csr_matrix, sp.csr_matrix]:
        """The job rows and the resource rows of ``matrix()`` as CSR, built directly (the same entries, in the same order)."""
        m = len(self.cost)
        idx = np.int32 if m < 2**31 - 1 else np.int64
        order = np.argsort(self.group, kind="stable")  # columns ascending within each job row
        ptr = np.concatenate(([0], np.cumsum(np.bincount(self.group, minlength=self.n))))
        jobs = sp.csr_matrix((np.ones(m), order.astype(idx), ptr.astype(idx)), shape=(self.n, m))
        use_t = np.ascontiguousarray(self.use.T, dtype=float)
        r, c = np.nonzero(use_t)  # row-major: resource by resource, columns ascending
        ptr = np.concatenate(([0], np.cumsum(np.bincount(r, minlength=use_t.shape[0]))))
        res = sp.csr_matrix((use_t[r, c], c.astype(idx), ptr.astype(idx)), shape=use_t.shape)
        return jobs, res


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


def _request(model: FlatModel, integral: bool, time_limit, mip_gap, start) -> dict[str, Any]:
    """The model and options as plain arrays, for ``highs_worker.run_highs`` here or in a child."""
    a = model.matrix()
    m = len(model.cost)
    lo, hi = _row_bounds(model)
    return {
        "cost": model.cost.astype(np.float64),
        "col_lo": np.zeros(m),
        "col_hi": np.ones(m),
        "row_lo": lo,
        "row_hi": hi,
        "indptr": a.indptr.astype(np.int32),
        "indices": a.indices.astype(np.int32),
        "data": a.data.astype(np.float64),
        "integral": integral,
        "deadline": None if time_limit is None else time.time() + float(time_limit),
        "mip_gap": mip_gap,
        "start": start if integral else None,
        "lp_solver": None if integral else "simplex",
    }


# A MILP with a time limit and more columns than this is solved in a child process that is
# stopped at its limit: HiGHS' MIP setup does not check the limit (highs_worker's docstring).
# At 17,335 columns (1,000 jobs) that setup took about 1.5 s; at 175,077 over 500 s.
ISOLATE_COLUMNS = 20_000
# Seconds a child may run past its limit to return what HiGHS found before it is stopped.
ISOLATE_GRACE_S = 2.0


def run_isolated(argv: list[str], payload: bytes, wait: float) -> bytes | None:
    """Run ``argv`` with ``payload`` on its stdin; its stdout, or None if it ran over ``wait`` s (then stopped).

    Raises SolverError when the child fails (exit code not 0).
    """
    proc = subprocess.Popen(
        argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    try:
        out, err = proc.communicate(payload, timeout=max(wait, 1e-3))
    except subprocess.TimeoutExpired:
        proc.kill()  # this call's own child, by its handle
        proc.communicate()
        return None
    if proc.returncode != 0:
        last = err.decode(errors="replace").strip().splitlines()[-1:] or ["no message"]
        raise SolverError(f"the HiGHS child process failed (exit {proc.returncode}): {last[0]}")
    return out


def _highs_isolated(req: dict[str, Any], time_limit: float) -> dict[str, Any] | None:
    """``run_highs`` on ``req`` in a child process; None when stopped at its limit (plus grace)."""
    argv = [sys.executable, "-I", os.path.join(os.path.dirname(__file__), "highs_worker.py")]
    grace = min(ISOLATE_GRACE_S, 0.05 * time_limit)
    out = run_isolated(
        argv, pickle.dumps(req, protocol=pickle.HIGHEST_PROTOCOL), time_limit + grace
    )
    return None if out is None else pickle.loads(out)


def solve_highs(
    model: FlatModel,
    integral: bool,
    time_limit: float | None,
    mip_gap: float | None,
    start: np.ndarray | None = None,
) -> FlatResult:
    """Solve with HiGHS (simplex for LPs, so the LP solution is a vertex).

    A MILP with a time limit and over ``ISOLATE_COLUMNS`` columns runs in a child process, stopped
    at the limit if HiGHS has not returned: the result is then ``start`` (status time_limit, bound
    -inf), or SolverError without one.
    """
    t0 = time.perf_counter()
    req = _request(model, integral, time_limit, mip_gap, start)
    note = ""
    if integral and time_limit is not None and len(model.cost) > ISOLATE_COLUMNS:
        remaining = max(1e-3, time_limit - (time.perf_counter() - t0))
        answer = _highs_isolated(req, remaining)
        note = f"HiGHS ran in a child process ({len(model.cost)} columns)"
        if answer is None:
            if start is None:
                raise SolverError(
                    f"HiGHS had not returned {time_limit:.3g} s into its MIP setup and was stopped; "
                    "no incumbent"
                )
            return FlatResult(
                x=np.asarray(start, dtype=float),
                objective=float(model.cost @ start),
                bound=-np.inf,
                status="time_limit",
                backend="highs",
                note=f"HiGHS had not returned at its time limit of {time_limit:.3g} s (its MIP "
                "setup does not check the limit) and was stopped; the warm start is reported",
            )
    else:
        answer = run_highs(new_highs(), req)
    if answer["status"] == "infeasible":
        raise Infeasible(
            "the allocation problem has no feasible solution (capacity too small for the required jobs)"
        )
    if answer["status"] == "error":
        raise SolverError(f"HiGHS stopped with status {answer['message']!r} and no usable solution")
    obj = answer["objective"]
    return FlatResult(
        x=answer["x"],
        objective=obj,
        bound=min(answer["bound"], obj),
        status=answer["status"],
        backend="highs",
        note=note,
    )


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

    jobs, res = model.row_blocks()
    m = len(model.cost)
    env = _gurobi_env()
    with gp.Model(env=env) as g:
        # The objective as column data and the rows as matrices (addMConstr): the same model as
        # building matrix expressions, without their per-call cost on the small models of SMD.
        x = g.addMVar(
            m, lb=0.0, ub=1.0, obj=model.cost, vtype=GRB.BINARY if integral else GRB.CONTINUOUS
        )
        g.ModelSense = GRB.MINIMIZE
        g.addMConstr(jobs, x, GRB.EQUAL if model.eq else GRB.LESS_EQUAL, np.ones(model.n))
        g.addMConstr(res, x, GRB.LESS_EQUAL, model.capacity.astype(float))
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
        return FlatResult(
            res.x, res.objective, res.bound, res.status, res.backend, _join(note, res.note)
        )
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
        res.x,
        res.objective,
        res.bound,
        res.status,
        res.backend,
        _join(f"fallback to HiGHS: {reason}", res.note),
    )


def _join(*notes: str) -> str:
    return "; ".join(n for n in notes if n)


def _lp_highs(
    cost, a_ub, b_ub, a_eq, b_eq, lo, time_limit, interior=False, primal=False
) -> FlatResult:
    """min cost @ x, a_ub x <= b_ub, a_eq x = b_eq, x >= lo, by HiGHS' simplex (interior: its
    interior-point method without crossover, a point inside the optimal face, not a vertex;
    primal: its primal simplex without presolve, then its defaults if that does not end optimal)."""
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
    if primal:
        h.setOptionValue("simplex_strategy", 4)
        h.setOptionValue("presolve", "off")
    h.run()
    status = h.getModelStatus()
    if primal and status not in (
        highspy.HighsModelStatus.kOptimal,
        highspy.HighsModelStatus.kInfeasible,
        highspy.HighsModelStatus.kTimeLimit,
    ):
        return _lp_highs(cost, a_ub, b_ub, a_eq, b_eq, lo, time_limit)
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
    primal: bool = False,
) -> FlatResult:
    """A general LP (min cost @ x, a_ub x <= b_ub, a_eq x = b_eq, x >= lo) under the same fallback rules as ``solve_flat``.

    interior: HiGHS' interior-point method without crossover (HiGHS only): an optimum inside the
    optimal face rather than a vertex.
    primal: where HiGHS solves it, its primal simplex without presolve (faster on the interval LP
        of ``schedule_bound``, whose many interval-capacity rows presolve barely shrinks).
    """
    check_choice("backend", backend, BACKENDS)
    if interior:
        if backend != "highs":
            raise InvalidInput("interior=True needs backend='highs'")
        return _lp_highs(cost, a_ub, b_ub, a_eq, b_eq, lo, time_limit, interior=True)
    nvar = len(cost)
    ncon = a_ub.shape[0] + a_eq.shape[0]
    args = (cost, a_ub, b_ub, a_eq, b_eq, lo, time_limit, False, primal)
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
        return _lp_gurobi(*args[:7])
    except (Infeasible, SolverError):
        raise
    except ImportError as exc:
        reason = f"gurobipy not importable ({exc})"
    except Exception as exc:  # GurobiError (licence, errno 10010 size limit, ...) or anything else
        errno = getattr(exc, "errno", None)
        reason = f"Gurobi failed ({type(exc).__name__}{f' errno {errno}' if errno is not None else ''}: {exc})"
    spent = time.perf_counter() - t0
    remaining = None if time_limit is None else max(1e-3, time_limit - spent)
    res = _lp_highs(cost, a_ub, b_ub, a_eq, b_eq, lo, remaining, primal=primal)
    return FlatResult(
        res.x, res.objective, res.bound, res.status, res.backend, f"fallback to HiGHS: {reason}"
    )
