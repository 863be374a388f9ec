"""The multiple-choice multi-dimensional knapsack over jobs' (w, p) grids: exact, LP, LP+rounding, greedy.

Every function minimises ``obj`` (n, W, P) (+inf where a configuration does not exist) subject to
sum_i alpha_i w_i + gamma_i p_i <= capacity, choosing one configuration per job; with ``defer``
(an (n,) cost of leaving a job unstarted) a job may also take no configuration at that cost.
A maximisation (SMD's weighted-speed subproblem) passes ``-profit``.
"""

from __future__ import annotations

import heapq
import math
from dataclasses import dataclass

import numpy as np

from smdlab.errors import Infeasible, SolverError
from smdlab.solve.backends import FlatModel, FlatResult, solve_flat
from smdlab.solve.instance import fits, pareto_mask

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
    """
    model, cols, offset = _model(obj, alpha, gamma, capacity, defer, mask)
    start = _start_vector(obj, alpha, gamma, capacity, defer, cols) if warm_start else None
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


KNAPSACKS = ("exact", "lp_round", "greedy", "hull")


def local_search(
    value: np.ndarray,
    mask: np.ndarray,
    alpha: np.ndarray,
    gamma: np.ndarray,
    capacity: np.ndarray,
    workers: np.ndarray,
    ps: np.ndarray,
    *,
    rtol: float = 1e-6,
    max_rounds: int | None = None,
) -> tuple[np.ndarray, np.ndarray, int]:
    """Improve a feasible allocation of min sum_i value_i(w_i, p_i) by moves until none helps; (workers, ps, moves).

    value: (n, W, P), +inf where a configuration does not exist; every job keeps a configuration.
    mask: (n, W, P) configurations a job may move to (the undominated ones suffice: a dominated
        configuration uses at least the resources of one at least as good).
    Moves: (1) one job moves to its best configuration that fits in the spare capacity plus what
    it holds (the others fixed; adding tasks to use spare capacity is such a move); (2) one job
    gives up a worker, a PS or one of each and another job takes a worker, a PS or one of each,
    where that fits. A move counts as improving when it lowers the objective by more than
    ``rtol`` times the objective. Each round lists the improving moves (per job its best
    reconfiguration, per receiving task its best giving task) and applies them in decreasing
    order of gain while they touch jobs not yet moved in the round and still fit. Every applied
    move lowers the objective (a sum over jobs, so moves of disjoint jobs add up), so the search
    ends; on return no move of either kind lowers the objective by more than ``rtol`` times it
    (unless ``max_rounds``, default 10 n + 100, stopped it first).
    """
    n, W, P = value.shape
    w = np.array(workers, dtype=int)
    p = np.array(ps, dtype=int)
    if n == 0:
        return w, p, 0
    capacity = np.asarray(capacity, dtype=float)
    tol = 1e-9 * np.maximum(1.0, np.abs(capacity))
    keep = mask.copy()
    keep[:, 0, 0] |= np.isfinite(value[:, 0, 0])
    job_c, wi, pi = np.nonzero(keep)  # job-major: each job's columns are contiguous
    col_use = alpha[job_c] * (wi + 1)[:, None] + gamma[job_c] * (pi + 1)[:, None]
    col_val = value[job_c, wi, pi]
    starts = np.searchsorted(job_c, np.arange(n))
    V = value.reshape(n, W * P)
    rows = np.arange(n)
    # exchange candidates: (job, dw, dp) for a worker, a PS, or one of each
    deltas = ((1, 0), (0, 1), (1, 1))
    cand_job = np.tile(rows, len(deltas))
    cand_dw = np.repeat([d[0] for d in deltas], n)
    cand_dp = np.repeat([d[1] for d in deltas], n)
    cand_use = alpha[cand_job] * cand_dw[:, None] + gamma[cand_job] * cand_dp[:, None]
    limit = 10 * n + 100 if max_rounds is None else max_rounds
    moves = 0
    for _ in range(limit):
        cur = V[rows, (w - 1) * P + (p - 1)]
        held = alpha * w[:, None] + gamma * p[:, None]
        left = capacity - held.sum(axis=0)
        eps = rtol * max(1e-300, float(np.abs(cur).sum()))
        # (1) best configuration of each job within spare + own capacity
        ok = np.all(col_use <= (left + held + tol)[job_c], axis=1)
        cand = np.where(ok, col_val, np.inf)
        best_val = np.minimum.reduceat(cand, starts)
        best_at = np.flatnonzero(cand == best_val[job_c])
        first = best_at[
            np.r_[True, job_c[best_at][1:] != job_c[best_at][:-1]]
        ]  # first best column per job
        gain_re = cur - best_val
        # gain, jobs, new (w, p) per job, resource change: one entry per candidate move
        found: list[tuple[float, tuple[tuple[int, int, int], ...], np.ndarray]] = []
        for i in np.flatnonzero(gain_re > eps).tolist():
            c = int(first[i])  # (1, 1) always fits, so every job has a best column
            found.append(
                (float(gain_re[i]), ((i, int(wi[c]) + 1, int(pi[c]) + 1),), col_use[c] - held[i])
            )
        # (2) job a gives up tasks (loss), job b != a takes tasks (gain); per taking task its best giver
        cw, cp, cc = w[cand_job], p[cand_job], cur[cand_job]
        dn_ok = (cw - cand_dw >= 1) & (cp - cand_dp >= 1)
        up_ok = (cw + cand_dw <= W) & (cp + cand_dp <= P)
        dn = np.clip(cw - cand_dw - 1, 0, W - 1) * P + np.clip(cp - cand_dp - 1, 0, P - 1)
        up = np.clip(cw + cand_dw - 1, 0, W - 1) * P + np.clip(cp + cand_dp - 1, 0, P - 1)
        loss = np.where(dn_ok, V[cand_job, dn] - cc, np.inf)
        gain = np.where(up_ok, cc - V[cand_job, up], -np.inf)
        r_ok = np.flatnonzero(np.isfinite(loss))
        a_ok = np.flatnonzero(gain > eps)
        if r_ok.size and a_ok.size:
            # improving pairs first (few near a local optimum), then their fit, then the best giver per taker
            ri, ai = np.nonzero(gain[None, a_ok] - loss[r_ok, None] > eps)
            out, inn = r_ok[ri], a_ok[ai]
            keep_pair = cand_job[out] != cand_job[inn]
            out, inn = out[keep_pair], inn[keep_pair]
            keep_pair = np.all(cand_use[inn] - left <= cand_use[out] + tol, axis=1)
            out, inn = out[keep_pair], inn[keep_pair]
            net = gain[inn] - loss[out]
            order = np.lexsort((-net, inn))
            head = order[np.r_[True, inn[order][1:] != inn[order][:-1]]] if order.size else order
            for k in head.tolist():
                o, t = int(out[k]), int(inn[k])
                jo, ji = int(cand_job[o]), int(cand_job[t])
                found.append((float(net[k]),
                              ((jo, int(w[jo] - cand_dw[o]), int(p[jo] - cand_dp[o])),
                               (ji, int(w[ji] + cand_dw[t]), int(p[ji] + cand_dp[t]))),
                              cand_use[t] - cand_use[o]))  # fmt: skip
        if not found:
            break
        found.sort(key=lambda m: -m[0])
        touched: set[int] = set()
        room = left + tol
        for _, change, extra in found:
            if any(j in touched for j, _, _ in change) or np.any(extra > room):
                continue
            room = room - extra
            for j, nw, np_ in change:
                w[j], p[j] = nw, np_
                touched.add(j)
            moves += 1
    return w, p, moves


def _first_over(cum: np.ndarray, cap: np.ndarray) -> int:
    """First column where any resource row of ``cum`` (K x m) exceeds ``cap`` (K x 1); m if none."""
    first = cum.shape[1]
    for r in range(cum.shape[0]):
        row = cum[r, :first] > cap[r, 0]
        k = int(row.argmax()) if first else 0
        if first and row[k]:
            first = k
    return first


def _hull_segments(value, mask, alpha, gamma, scale):
    """Upper-hull segments (job, from, to flat index, slope) of every job, job-major in hull order."""
    n, W, P = value.shape
    wg = np.repeat(np.arange(1, W + 1), P)
    pg = np.tile(np.arange(1, P + 1), W)
    keep = mask.reshape(n, W * P).copy()
    keep[:, 0] = True  # (1, 1) is every job's start vertex
    # gather each job's kept configurations into a narrow padded table (flat index 0 first)
    counts = keep.sum(axis=1)
    width = int(counts.max())
    jr, fc = np.nonzero(keep)  # row-major: each job's kept flat indices, ascending
    pos = np.arange(len(jr)) - np.repeat(np.cumsum(counts) - counts, counts)
    cols = np.zeros((n, width), dtype=int)
    cols[jr, pos] = fc
    keep = np.zeros((n, width), dtype=bool)
    keep[jr, pos] = True
    V = value.reshape(n, W * P)[np.arange(n)[:, None], cols]
    wk, pk = wg[cols], pg[cols]
    size = (alpha / scale).sum(axis=1)[:, None] * wk + (gamma / scale).sum(axis=1)[:, None] * pk
    keep &= np.isfinite(V)
    cur = np.zeros(n, dtype=int)
    seg_job, seg_from, seg_to, seg_slope = [], [], [], []
    act = np.arange(n)  # jobs whose hull may continue
    # gift wrapping of the upper hull, vectorised over the active jobs: next vertex = steepest point to the right
    while act.size:
        c = cur[act]
        sz, vv, kk = size[act], V[act], keep[act]
        r = np.arange(act.size)
        ds = sz - sz[r, c][:, None]
        dv = vv - vv[r, c][:, None]
        # only configurations that add tasks (w' >= w, p' >= p): every upgrade then uses more of
        # every resource, so a segment that does not fit now never fits later (see ``solve``)
        wa, pa = wk[act], pk[act]
        ok = kk & (wa >= wa[r, c][:, None]) & (pa >= pa[r, c][:, None]) & (ds > 1e-12)
        with np.errstate(divide="ignore", invalid="ignore"):
            slope = np.where(ok, dv / np.where(ok, ds, 1.0), -np.inf)
        best = slope.max(axis=1)
        good = best > 0
        if not good.any():
            break
        # among the steepest, the farthest point (skips collinear vertices)
        tie = (slope >= best[:, None] * (1 - 1e-12)) & ok
        nxt = np.where(tie, sz, -np.inf).argmax(axis=1)
        idx = act[good]
        seg_job.append(idx)
        seg_from.append(cols[idx, c[good]])
        seg_to.append(cols[idx, nxt[good]])
        seg_slope.append(best[good])
        cur[idx] = nxt[good]
        act = idx
    if not seg_job:
        empty = np.zeros(0, dtype=int)
        return empty, empty, empty, np.zeros(0)
    # segments were produced round by round; return them job-major, in hull order
    job = np.concatenate(seg_job)
    rnd = np.concatenate([np.full(len(s), k) for k, s in enumerate(seg_job)])
    order = np.lexsort((rnd, job))
    return (
        job[order],
        np.concatenate(seg_from)[order],
        np.concatenate(seg_to)[order],
        np.concatenate(seg_slope)[order],
    )


class HullKnapsack:
    """Convex-hull greedy for the knapsack with profits lambda_i * V_i(c) (maximised), V fixed.

    Each job's kept configurations are reduced to one scalar size, sum_r use_r / scale_r; the
    upper concave hull of (size, V) from (1, 1) gives the job's efficient upgrades (a jump from
    one hull vertex to the next, possibly several tasks at once). For given lambda the segments
    of all jobs are taken in decreasing order of lambda_i * slope while they fit the capacity in
    every resource; a segment that does not fit ends that job's upgrades (classical aggregate-
    resource greedy for multiple-choice knapsacks, Sinha-Zoltners/Toyoda style). With one
    resource this is the rounded-down optimum of the LP relaxation. The hulls depend only on V,
    so repeated solves with new lambda (SMD's iterations) reuse them.
    """

    def __init__(
        self,
        value: np.ndarray,
        mask: np.ndarray,
        alpha: np.ndarray,
        gamma: np.ndarray,
        capacity: np.ndarray,
        segments: tuple | None = None,
    ):
        n, W, P = value.shape
        self.n, self.W, self.P = n, W, P
        self.capacity = np.asarray(capacity, dtype=float)
        self.alpha, self.gamma = alpha, gamma
        if segments is None:
            segments = _hull_segments(
                value, mask, alpha, gamma, np.where(self.capacity > 0, self.capacity, 1.0)
            )
        self.seg_job, self.seg_from, self.seg_to, self.seg_slope = segments
        wg = np.repeat(np.arange(1, W + 1), P)
        pg = np.tile(np.arange(1, P + 1), W)
        wt, pt = wg[self.seg_to], pg[self.seg_to]
        wf, pf = wg[self.seg_from], pg[self.seg_from]
        self.seg_w, self.seg_p = wt, pt
        self.seg_duse = (
            alpha[self.seg_job] * (wt - wf)[:, None] + gamma[self.seg_job] * (pt - pf)[:, None]
        )
        self.seg_duse_t = np.ascontiguousarray(self.seg_duse.T)
        self.base = (alpha + gamma).sum(axis=0)
        self.tol = 1e-9 * np.maximum(1.0, np.abs(self.capacity))
        # position of each segment in its job's hull chain
        starts = np.searchsorted(self.seg_job, np.arange(n))
        self.seg_start = starts
        self.seg_rank = (
            np.arange(len(self.seg_job)) - starts[self.seg_job]
            if len(self.seg_job)
            else np.zeros(0, dtype=int)
        )

    @classmethod
    def several(cls, values, mask, alpha, gamma, capacity) -> list[HullKnapsack]:
        """One knapsack per value table (same mask and demands), hulls computed in one vectorised pass."""
        k, n = len(values), values[0].shape[0]
        capacity = np.asarray(capacity, dtype=float)
        job, fr, to, slope = _hull_segments(
            np.concatenate(values), np.concatenate([mask] * k), np.tile(alpha, (k, 1)), np.tile(gamma, (k, 1)),
            np.where(capacity > 0, capacity, 1.0),
        )  # fmt: skip
        out = []
        for j in range(k):
            sel = (job >= j * n) & (job < (j + 1) * n)
            out.append(
                cls(
                    values[j],
                    mask,
                    alpha,
                    gamma,
                    capacity,
                    (job[sel] - j * n, fr[sel], to[sel], slope[sel]),
                )
            )
        return out

    def _apply(self, taken: np.ndarray, w: np.ndarray, p: np.ndarray) -> None:
        """Move each job with taken segments to the end vertex of its furthest one."""
        if not taken.size:
            return
        far = np.full(self.n, -1)
        np.maximum.at(far, self.seg_job[taken], self.seg_rank[taken])
        jobs = np.flatnonzero(far >= 0)
        seg = self.seg_start[jobs] + far[jobs]
        w[jobs] = self.seg_w[seg]
        p[jobs] = self.seg_p[seg]

    def solve(self, lam: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(workers, ps) for profits lambda_i * V_i (lambda > 0)."""
        w = np.ones(self.n, dtype=int)
        p = np.ones(self.n, dtype=int)
        if not len(self.seg_job):
            return w, p
        eff = np.asarray(lam, dtype=float)[self.seg_job] * self.seg_slope
        order = np.argsort(-eff, kind="stable")
        cap = (self.capacity + self.tol)[:, None]
        # resources x segments, so cumulative sums run along contiguous rows
        cum = self.base[:, None] + np.cumsum(self.seg_duse_t[:, order], axis=1)
        first = _first_over(cum, cap)
        self._apply(order[:first], w, p)
        if first < len(order):
            # The rest, with the sequential rule (take a segment if it fits, else close its job) done
            # in vectorised rounds. Upgrades only add resources, so a segment that does not fit the
            # current slack will not fit when its turn comes: it closes its job at once.
            used = cum[:, first - 1 : first] if first > 0 else self.base[:, None].copy()
            rest = order[first:]
            rank = self.seg_rank
            while rest.size:
                d = self.seg_duse_t[:, rest]
                slack = cap - used
                fail = d[0] > slack[0]
                for r in range(1, d.shape[0]):  # row by row: contiguous and cheap
                    fail |= d[r] > slack[r]
                if fail.any():
                    # close each failing job from its first failing segment (in hull order) onwards
                    cut = np.full(self.n, np.iinfo(np.int64).max)
                    np.minimum.at(cut, self.seg_job[rest[fail]], rank[rest[fail]])
                    alive = rank[rest] < cut[self.seg_job[rest]]
                    rest, d = rest[alive], d[:, alive]
                    if not rest.size:
                        break
                cum = used + np.cumsum(d, axis=1)
                stop = _first_over(cum, cap)
                self._apply(rest[:stop], w, p)
                if stop == len(rest):
                    break
                used = cum[:, stop - 1 : stop] if stop > 0 else used
                j = self.seg_job[rest[stop]]
                later = rest[stop:]
                rest = later[(self.seg_job[later] != j)]
        return w, p
