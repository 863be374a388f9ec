"""The multiple-choice multi-dimensional knapsack over jobs' (w, p) grids: exact, LP, LP+rounding, greedy.

The convex-hull greedy is ``smdlab.solve.knapsack_hull``; the move-based improvement of a
feasible allocation is ``smdlab.solve.local_search``.

Every function minimises ``obj`` (n, W, P) (+inf where a configuration does not exist) subject to
sum_i alpha_i w_i + gamma_i p_i <= capacity, choosing one configuration per job; with ``defer``
(an (n,) cost of leaving a job unstarted) a job may also take no configuration at that cost.
A maximisation (SMD's weighted-speed subproblem) passes ``-profit``.
"""

from __future__ import annotations

import heapq
import math
import time
from dataclasses import dataclass
from typing import Literal, get_args

import numpy as np

from smdlab.errors import Infeasible, SolverError
from smdlab.solve.backends import FlatModel, FlatResult, solve_flat
from smdlab.solve.instance import fits, pareto_mask
from smdlab.solve.knapsack_hull import HullKnapsack

_FRAC_TOL = 1e-6  # an LP value within this of 0/1 counts as integral


@dataclass(frozen=True)
class KnapsackResult:
    """An allocation from a knapsack method (w = p = 0: not started) with its objective and bound.

    workers, ps: (n,) chosen configuration per job.
    objective: the knapsack objective of that allocation (including deferral costs).
    bound: a lower bound on the knapsack optimum (-inf when the method gives none).
    status: ``optimal``, ``time_limit`` or ``heuristic``.
    backend: solver used (``highs``, ``gurobi`` or ``numpy``).
    note: fallback reason or other remark.
    rounding_bound: lp_round only: the additive bound of section 5 (objective <= bound + this).
    fractional_jobs: lp/lp_round only: jobs whose LP choice is fractional.
    lp_x: lp only: fractional values of the kept columns, with ``lp_cols`` (job, w, p) per column.
    """

    workers: np.ndarray
    ps: np.ndarray
    objective: float
    bound: float
    status: str
    backend: str
    note: str = ""
    rounding_bound: float | None = None
    fractional_jobs: tuple[int, ...] = ()
    lp_x: np.ndarray | None = None
    lp_cols: np.ndarray | None = None


def grid_objective(
    obj: np.ndarray, defer: np.ndarray | None, w: np.ndarray, p: np.ndarray
) -> float:
    """Objective of an allocation on a grid (deferral cost where w == 0)."""
    w = np.asarray(w, dtype=int)
    p = np.asarray(p, dtype=int)
    started = w > 0
    idx = np.flatnonzero(started)
    val = float(obj[idx, w[idx] - 1, p[idx] - 1].sum())
    if defer is not None:
        val += float(defer[~started].sum())
    elif not started.all():
        raise AssertionError("a job without a configuration although deferral is not allowed")
    return val


def _flat(
    obj: np.ndarray,
    mask: np.ndarray,
    alpha: np.ndarray,
    gamma: np.ndarray,
    defer: np.ndarray | None,
):
    """Kept configurations as flat columns: (cost, use, group, cols(job, w, p))."""
    if defer is not None:
        # cost shifted by the deferral cost, so "sum_c y_ic <= 1" charges defer_i for an unused row;
        # a configuration costing at least the deferral is never better than leaving the job out.
        mask = mask & (obj < defer[:, None, None])
    job, wi, pi = np.nonzero(mask)
    cost = obj[job, wi, pi] - (defer[job] if defer is not None else 0.0)
    use = alpha[job] * (wi + 1)[:, None] + gamma[job] * (pi + 1)[:, None]
    cols = np.stack([job, wi + 1, pi + 1], axis=1)
    return cost, use, job, cols


def _model(obj, alpha, gamma, capacity, defer, mask) -> tuple[FlatModel, np.ndarray, float]:
    if mask is None:
        mask = pareto_mask(obj)
    cost, use, group, cols = _flat(obj, mask, alpha, gamma, defer)
    n = obj.shape[0]
    if defer is None:
        missing = np.setdiff1d(np.arange(n), group)
        if missing.size:
            raise Infeasible(f"job index {int(missing[0])} has no configuration")
        if not fits((alpha + gamma).sum(axis=0), capacity):
            raise Infeasible("the jobs do not all fit at (1, 1) in the capacity")
    offset = float(defer.sum()) if defer is not None else 0.0
    return (
        FlatModel(cost, use, group, n, np.asarray(capacity, dtype=float), defer is None),
        cols,
        offset,
    )


def _decode(x: np.ndarray, cols: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    w = np.zeros(n, dtype=int)
    p = np.zeros(n, dtype=int)
    on = x > 0.5
    w[cols[on, 0]] = cols[on, 1]
    p[cols[on, 0]] = cols[on, 2]
    return w, p


def _start_vector(obj, alpha, gamma, capacity, defer, cols) -> np.ndarray | None:
    """A heuristic incumbent as a column vector (None if it uses a configuration that was pruned)."""
    if defer is None:
        w, p = HullKnapsack(-obj, pareto_mask(obj), alpha, gamma, capacity).solve(
            np.ones(obj.shape[0])
        )
    else:
        g = knapsack_greedy(obj, alpha, gamma, capacity, defer)
        w, p = g.workers, g.ps
    index = {(int(j), int(cw), int(cp)): k for k, (j, cw, cp) in enumerate(cols)}
    x = np.zeros(len(cols))
    for i in np.flatnonzero(w > 0):
        k = index.get((int(i), int(w[i]), int(p[i])))
        if k is None:
            return None
        x[k] = 1.0
    return x


def knapsack_exact(
    obj,
    alpha,
    gamma,
    capacity,
    defer=None,
    *,
    backend="auto",
    time_limit=None,
    mip_gap=None,
    mask=None,
    warm_start=True,
) -> KnapsackResult:
    """Optimal allocation by MILP (HiGHS or Gurobi), or the incumbent and bound at the time limit.

    warm_start: give the solver a greedy allocation as its first incumbent, so a solve stopped by
    its time limit still has an allocation to report.
    time_limit: seconds for the whole call, building the model and the warm start included.
    """
    t0 = time.perf_counter()
    model, cols, offset = _model(obj, alpha, gamma, capacity, defer, mask)
    start = _start_vector(obj, alpha, gamma, capacity, defer, cols) if warm_start else None
    if time_limit is not None:
        time_limit = max(1e-3, time_limit - (time.perf_counter() - t0))
    try:
        res = solve_flat(
            model,
            integral=True,
            backend=backend,
            time_limit=time_limit,
            mip_gap=mip_gap,
            start=start,
        )
    except SolverError as exc:
        if start is None:
            raise
        # the solver stopped before reading the warm start: that start is still a valid incumbent
        res = FlatResult(
            start,
            float(model.cost @ start),
            -math.inf,
            "time_limit",
            "numpy",
            f"solver returned no incumbent ({exc}); the warm-start allocation is reported",
        )
    w, p = _decode(res.x, cols, model.n)
    value = grid_objective(obj, defer, w, p)
    return KnapsackResult(w, p, value, res.bound + offset, res.status, res.backend, res.note)


def knapsack_lp(
    obj, alpha, gamma, capacity, defer=None, *, backend="auto", time_limit=None, mask=None
):
    """LP relaxation: its value (a lower bound) and fractional solution (a simplex vertex)."""
    model, cols, offset = _model(obj, alpha, gamma, capacity, defer, mask)
    res: FlatResult = solve_flat(model, integral=False, backend=backend, time_limit=time_limit)
    if res.status != "optimal":
        # an LP stopped early gives no valid bound; report it rather than a wrong number
        raise SolverError(f"the LP relaxation did not finish within time_limit={time_limit}")
    x = np.clip(res.x, 0.0, 1.0)
    n = model.n
    share = np.bincount(model.group, weights=x, minlength=n)
    biggest = np.zeros(n)
    np.maximum.at(biggest, model.group, x)
    frac = np.flatnonzero((biggest < 1 - _FRAC_TOL) & ((share > _FRAC_TOL) | (defer is None)))
    # integral part: the column carrying (almost) all of a job's mass
    w, p = _decode(np.where(x >= 1 - _FRAC_TOL, 1.0, 0.0), cols, n)
    value = res.objective + offset
    return KnapsackResult(
        w,
        p,
        value,
        value,
        "optimal",
        res.backend,
        res.note,
        None,
        tuple(int(i) for i in frac),
        x,
        cols,
    )


def knapsack_lp_round(
    obj,
    alpha,
    gamma,
    capacity,
    defer=None,
    *,
    backend="auto",
    time_limit=None,
    mask=None,
    fill=True,
):
    """LP relaxation, then each fractional job moves to its cheapest configuration that still fits.

    Jobs are rounded one at a time; while rounding, every fractional job not yet rounded keeps
    the resources of its fallback (smallest) configuration reserved: (1, 1), or nothing when it
    may stay unstarted. The fallback always fits (a job's LP usage is at least its (1, 1) usage),
    so the result is feasible and costs at most LP + sum over fractional jobs of
    (fallback cost - LP cost of the job): the reported ``rounding_bound``. With ``fill``, spare
    capacity then goes to the best upgrades (greedy), which only lowers the cost.
    """
    lp = knapsack_lp(
        obj, alpha, gamma, capacity, defer, backend=backend, time_limit=time_limit, mask=mask
    )
    n = obj.shape[0]
    x, cols = lp.lp_x, lp.lp_cols
    frac = list(lp.fractional_jobs)
    w, p = lp.workers.copy(), lp.ps.copy()
    fallback_use = np.zeros_like(alpha) if defer is not None else alpha + gamma
    fallback_cost = defer.copy() if defer is not None else obj[:, 0, 0].copy()
    # LP cost of each fractional job (shifted columns + its deferral share)
    col_cost = obj[cols[:, 0], cols[:, 1] - 1, cols[:, 2] - 1]
    lp_job_cost = np.bincount(cols[:, 0], weights=x * col_cost, minlength=n)
    if defer is not None:
        lp_job_cost += defer * (1 - np.bincount(cols[:, 0], weights=x, minlength=n))
    bound = float(sum(fallback_cost[i] - lp_job_cost[i] for i in frac))
    w[frac] = 0
    p[frac] = 0
    leftover = capacity - _use(alpha, gamma, w, p)
    reserved = fallback_use[frac].sum(axis=0) if frac else np.zeros_like(capacity, dtype=float)
    W, P = obj.shape[1:]
    wg = np.arange(1, W + 1)[:, None, None]
    pg = np.arange(1, P + 1)[None, :, None]
    # most valuable rounding first: jobs whose LP mass sits far below their fallback cost
    for i in sorted(frac, key=lambda j: lp_job_cost[j] - fallback_cost[j]):
        reserved = reserved - fallback_use[i]
        room = leftover - reserved
        grid_use = alpha[i] * wg + gamma[i] * pg  # (W, P, K)
        ok = fits(grid_use, room) & np.isfinite(obj[i])
        cand = np.where(ok, obj[i], np.inf)
        k = int(np.argmin(cand))
        best = cand.flat[k]
        if defer is not None and not best < defer[i]:
            continue  # stays unstarted
        if not np.isfinite(best):
            raise AssertionError(
                "rounding found no fitting configuration although the fallback fits"
            )
        w[i], p[i] = np.unravel_index(k, (W, P))
        w[i] += 1
        p[i] += 1
        leftover = leftover - grid_use[w[i] - 1, p[i] - 1]
    note = lp.note
    if fill:
        g = knapsack_greedy(obj, alpha, gamma, capacity, defer, start_w=w, start_p=p)
        w, p = g.workers, g.ps
    value = grid_objective(obj, defer, w, p)
    return KnapsackResult(
        w, p, value, lp.bound, "heuristic", lp.backend, note, bound, lp.fractional_jobs
    )


def _use(alpha, gamma, w, p):
    return np.asarray(w, dtype=float) @ alpha + np.asarray(p, dtype=float) @ gamma


def knapsack_greedy(
    obj, alpha, gamma, capacity, defer=None, *, start_w=None, start_p=None, scale=None
) -> KnapsackResult:
    """Greedy upgrades: from (1, 1) (or ``start``), repeatedly take the single w+1 / p+1 step
    (or, where jobs may stay out, the start of a job at (1, 1)) with the largest objective
    decrease per unit of normalised resource (sum_r demand_r / capacity_r) that still fits.
    """
    n, _W, _P = obj.shape
    capacity = np.asarray(capacity, dtype=float)
    if scale is None:
        scale = np.where(capacity > 0, capacity, 1.0)
    if start_w is None:
        if defer is None:
            w = np.ones(n, dtype=int)
            p = np.ones(n, dtype=int)
        else:
            w = np.zeros(n, dtype=int)
            p = np.zeros(n, dtype=int)
    else:
        w = np.array(start_w, dtype=int)
        p = np.array(start_p, dtype=int)
    left = capacity - _use(alpha, gamma, w, p)
    if not fits(capacity - left, capacity):
        raise Infeasible("the greedy start allocation does not fit the capacity")
    tol = 1e-9 * np.maximum(1.0, np.abs(capacity))
    left_l = (left + tol).tolist()
    a_l = alpha.tolist()
    g_l = gamma.tolist()
    s_l = (alpha + gamma).tolist()
    na = np.maximum((alpha / scale).sum(axis=1), 1e-12).tolist()
    ng = np.maximum((gamma / scale).sum(axis=1), 1e-12).tolist()
    ns = np.maximum(((alpha + gamma) / scale).sum(axis=1), 1e-12).tolist()
    o = obj.tolist()
    d_l = defer.tolist() if defer is not None else None
    wl, pl = w.tolist(), p.tolist()
    caps_w = [int(np.isfinite(obj[i, :, 0]).sum()) for i in range(n)]
    caps_p = [int(np.isfinite(obj[i, 0, :]).sum()) for i in range(n)]
    K = len(left_l)
    dead_w = [False] * n
    dead_p = [False] * n
    dead_s = [False] * n
    version = [0] * n
    heap: list[tuple[float, int, int, int]] = []

    def cur(i: int) -> float:
        if wl[i] > 0:
            return o[i][wl[i] - 1][pl[i] - 1]
        assert d_l is not None  # a job at 0 workers exists only where jobs may stay out
        return d_l[i]

    def push(i):
        c = cur(i)
        v = version[i]
        if wl[i] == 0:
            if not dead_s[i]:
                gain = c - o[i][0][0]
                if gain > 0:
                    heapq.heappush(heap, (-gain / ns[i], i, 2, v))
            return
        if wl[i] < caps_w[i] and not dead_w[i]:
            gain = c - o[i][wl[i]][pl[i] - 1]
            if gain > 0:
                heapq.heappush(heap, (-gain / na[i], i, 0, v))
        if pl[i] < caps_p[i] and not dead_p[i]:
            gain = c - o[i][wl[i] - 1][pl[i]]
            if gain > 0:
                heapq.heappush(heap, (-gain / ng[i], i, 1, v))

    for i in range(n):
        push(i)
    while heap:
        _, i, kind, v = heapq.heappop(heap)
        if v != version[i]:
            continue
        need = a_l[i] if kind == 0 else g_l[i] if kind == 1 else s_l[i]
        if any(need[r] > left_l[r] for r in range(K)):
            # capacity only shrinks and a step's demand does not depend on the state: never fits again
            (dead_w, dead_p, dead_s)[kind][i] = True
            continue
        for r in range(K):
            left_l[r] -= need[r]
        if kind == 0:
            wl[i] += 1
        elif kind == 1:
            pl[i] += 1
        else:
            wl[i] = pl[i] = 1
        version[i] += 1
        push(i)
    w = np.array(wl, dtype=int)
    p = np.array(pl, dtype=int)
    value = grid_objective(obj, defer, w, p)
    return KnapsackResult(w, p, value, -math.inf, "heuristic", "numpy")


Knapsack = Literal["exact", "lp_round", "greedy", "hull"]
KNAPSACKS: tuple[Knapsack, ...] = get_args(Knapsack)
