"""Local search for the multiple-choice knapsack: improve a feasible allocation by moves until none helps.

SMD polishes its allocation with it; tests compare it against exhaustive moves. ``defer_search``
adds moves that start, stop and exchange jobs where jobs may wait.
"""

from __future__ import annotations

import math
from operator import add, gt, le
from typing import Any

import numpy as np


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
    limit = 10 * n + 100 if max_rounds is None else max_rounds
    if n <= SMALL_JOBS:
        tables = _FloatTables(value, mask, alpha, gamma)
        if tables.usable and tables.fits(w, p):
            return _local_search_small(tables, list(range(n)), capacity, tol, w, p, rtol, limit)
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
    moves = 0
    for _ in range(limit):
        cur = V[rows, (w - 1) * P + (p - 1)]
        held = alpha * w[:, None] + gamma * p[:, None]
        left = capacity - held.sum(axis=0)
        eps = rtol * max(1e-300, float(np.abs(cur).sum()))
        # (1) best configuration of each job within spare + own capacity
        ok = (col_use <= (left + held + tol)[job_c]).all(axis=1)
        cand = np.where(ok, col_val, np.inf)
        best_val = np.minimum.reduceat(cand, starts)
        best_at = (cand == best_val[job_c]).nonzero()[0]
        jb = job_c[best_at]
        first = best_at[np.concatenate(([True], jb[1:] != jb[:-1]))]  # first best column per job
        gain_re = cur - best_val
        # gain, jobs, new (w, p) per job, resource change: one entry per candidate move
        found: list[tuple[float, tuple[tuple[int, int, int], ...], np.ndarray]] = []
        for i in (gain_re > eps).nonzero()[0].tolist():
            c = int(first[i])  # (1, 1) always fits, so every job has a best column
            found.append(
                (float(gain_re[i]), ((i, int(wi[c]) + 1, int(pi[c]) + 1),), col_use[c] - held[i])
            )
        # (2) job a gives up tasks (loss), job b != a takes tasks (gain); per taking task its best giver
        cw, cp, cc = w[cand_job], p[cand_job], cur[cand_job]
        dn_ok = (cw - cand_dw >= 1) & (cp - cand_dp >= 1)
        up_ok = (cw + cand_dw <= W) & (cp + cand_dp <= P)
        # integer clips by minimum/maximum (np.clip costs more than the arithmetic here)
        dn = _clip(cw - cand_dw - 1, W - 1) * P + _clip(cp - cand_dp - 1, P - 1)
        up = _clip(cw + cand_dw - 1, W - 1) * P + _clip(cp + cand_dp - 1, P - 1)
        loss = np.where(dn_ok, V[cand_job, dn] - cc, np.inf)
        gain = np.where(up_ok, cc - V[cand_job, up], -np.inf)
        r_ok = np.isfinite(loss).nonzero()[0]
        a_ok = (gain > eps).nonzero()[0]
        if r_ok.size and a_ok.size:
            out, inn = _best_givers(r_ok, a_ok, loss, gain, cand_job, cand_use, left, tol, eps)
            net = gain[inn] - loss[out]
            for k in range(out.size):
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
            if any(j in touched for j, _, _ in change) or (extra > room).any():
                continue
            room = room - extra
            for j, nw, np_ in change:
                w[j], p[j] = nw, np_
                touched.add(j)
            moves += 1
    return w, p, moves


# Up to this many jobs ``local_search`` runs on Python floats: a few dozen numpy calls per round
# on arrays of a handful of jobs cost more than the arithmetic itself.
SMALL_JOBS = 32
_DELTAS = ((1, 0), (0, 1), (1, 1))


class _FloatTables:
    """Each job's kept columns of a (value, mask, alpha, gamma) set as Python floats, by increasing
    cost (ties in column order), for plain-float local searches on any subset of its jobs.

    ``usable`` is False where the plain-float path could differ from the array one (other than
    float64 tables, a job without a column, a NaN cost): the caller then uses the arrays.
    """

    def __init__(self, value: np.ndarray, mask: np.ndarray, alpha: np.ndarray, gamma: np.ndarray):
        n, W, P = value.shape
        self.W, self.P = W, P
        keep = mask.copy()
        keep[:, 0, 0] |= np.isfinite(value[:, 0, 0])
        job_c, wi, pi = np.nonzero(keep)  # job-major, as ``local_search`` lists them
        self.usable = (
            value.dtype == alpha.dtype == gamma.dtype == np.float64
            and np.unique(job_c).size == n
            and not np.isnan(value).any()
        )
        if not self.usable:
            return
        self.item = value.reshape(n, W * P).item
        self.al, self.ga = alpha.tolist(), gamma.tolist()
        use = (alpha[job_c] * (wi + 1)[:, None] + gamma[job_c] * (pi + 1)[:, None]).tolist()
        vals = value[job_c, wi, pi]
        val = vals.tolist()
        conf = list(zip((wi + 1).tolist(), (pi + 1).tolist()))
        bounds = np.searchsorted(job_c, np.arange(n + 1)).tolist()
        # by increasing cost, ties in column order: the first that fits is the array version's
        # choice (its least cost, the first column among equals)
        by_cost = np.lexsort((vals, job_c)).tolist()
        self.cols = [
            [(val[c], use[c], conf[c]) for c in by_cost[bounds[i] : bounds[i + 1]]]
            for i in range(n)
        ]
        # per (job, workers, PSs): its cost, what it holds, and its exchange moves' losses and
        # gains, filled as the searches meet them (``_job_state``)
        self.memo: dict[tuple[int, int, int], tuple] = {}
        # per job, what a worker, a PS, or one of each uses (the exchange moves' changes)
        self.delta = [
            [[x * dw + y * dp for x, y in zip(self.al[i], self.ga[i])] for dw, dp in _DELTAS]
            for i in range(n)
        ]

    def fits(self, w: np.ndarray, p: np.ndarray) -> bool:
        """Whether every configuration lies inside the grid (numpy would wrap an index outside it)."""
        return bool(
            w.size <= SMALL_JOBS
            and (w >= 1).all()
            and (w <= self.W).all()
            and (p >= 1).all()
            and (p <= self.P).all()
        )


def _pairwise_sum(x: list[float], lo: int, n: int) -> float:
    """numpy's sum of the contiguous ``x[lo:lo + n]`` (its pairwise summation, the same rounding)."""
    if n < 8:
        res = 0.0
        for i in range(lo, lo + n):
            res += x[i]
        return res
    if n <= 128:
        r = x[lo : lo + 8]
        i = 8
        while i < n - n % 8:
            for j in range(8):
                r[j] += x[lo + i + j]
            i += 8
        res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]))
        for k in range(lo + i, lo + n):
            res += x[k]
        return res
    half = n // 2
    half -= half % 8
    return _pairwise_sum(x, lo, half) + _pairwise_sum(x, lo + half, n - half)


def _local_search_small(t: _FloatTables, jobs, capacity, tol_a, w, p, rtol, limit):
    """``local_search`` of the table rows ``jobs`` on Python floats: the same operations in the
    same order, so the same moves; (workers, ps, moves) of those jobs."""
    ww, pp, moves = _local_search_lists(
        t, jobs, capacity.tolist(), tol_a.tolist(), w.tolist(), p.tolist(), rtol, limit
    )
    return np.array(ww, dtype=int), np.array(pp, dtype=int), moves


def _job_state(t: _FloatTables, g: int, w: int, p: int) -> tuple:
    """(cost, held, losses, gains) of table row ``g`` at (w, p), kept in ``t.memo``: losses and
    gains per move of ``_DELTAS`` (giving up: +inf where it cannot; taking: -inf)."""
    key = (g, w, p)
    s = t.memo.get(key)
    if s is None:
        item, W, P, inf = t.item, t.W, t.P, math.inf
        cur = item(g, (w - 1) * P + (p - 1))
        held = [a * w + b * p for a, b in zip(t.al[g], t.ga[g])]
        loss = tuple(
            item(g, (w - dw - 1) * P + (p - dp - 1)) - cur if w - dw >= 1 and p - dp >= 1 else inf
            for dw, dp in _DELTAS
        )
        gain = tuple(
            cur - item(g, (w + dw - 1) * P + (p + dp - 1)) if w + dw <= W and p + dp <= P else -inf
            for dw, dp in _DELTAS
        )
        s = t.memo[key] = (cur, held, loss, gain)
    return s


def _local_search_lists(t: _FloatTables, jobs, cap, tol, ww, pp, rtol, limit):
    """``_local_search_small`` on lists (capacity, tolerances, workers, PSs); (ww, pp, moves)."""
    n, cols, delta = len(jobs), t.cols, t.delta
    K = len(cap)
    # exchange candidates in the array version's order: (delta, job), with the resource change
    cands = [(i, dw, dp, delta[jobs[i]][k]) for k, (dw, dp) in enumerate(_DELTAS) for i in range(n)]
    ww, pp = list(ww), list(pp)
    moves = 0
    for _ in range(limit):
        states = [_job_state(t, g, ww[i], pp[i]) for i, g in enumerate(jobs)]
        cur = [x[0] for x in states]
        held = [x[1] for x in states]
        if K == 1:  # a contiguous column: numpy sums it pairwise
            tot = [_pairwise_sum([h[0] for h in held], 0, n)]
        else:
            tot = list(held[0])
            for h in held[1:]:
                tot = [x + y for x, y in zip(tot, h)]
        left = [c - x for c, x in zip(cap, tot)]
        eps = rtol * max(1e-300, _pairwise_sum([abs(c) for c in cur], 0, n))
        found: list[tuple[float, tuple[tuple[int, int, int], ...], list[float]]] = []
        # (1) best configuration of each job within spare + own capacity
        for i, g in enumerate(jobs):
            lim = [(x + y) + e for x, y, e in zip(left, held[i], tol)]
            ci = cur[i]
            for v, use, conf in cols[g]:
                gain = ci - v
                if not gain > eps:
                    break  # costs only grow along the scan: no later column gains more
                if all(map(le, use, lim)):
                    found.append((gain, ((i, *conf),), [u - h for u, h in zip(use, held[i])]))
                    break
        # (2) job a gives up tasks (loss), job b != a takes tasks (gain); per taker its best giver
        loss = [x[2][k] for k in range(len(_DELTAS)) for x in states]  # the candidates' order
        gain_x = [x[3][k] for k in range(len(_DELTAS)) for x in states]
        order = sorted(
            (o for o in range(len(cands)) if math.isfinite(loss[o])), key=loss.__getitem__
        )
        # per giver, in increasing loss (ties: candidate order): what it frees, plus the tolerance
        givers = [(loss[o], cands[o][0], list(map(add, cands[o][3], tol)), o) for o in order]
        if givers:
            for k in range(len(cands)):
                gk = gain_x[k]
                if not gk > eps:
                    continue
                jk, dwk, dpk, uk = cands[k]
                need = [u - x for u, x in zip(uk, left)]  # a giver fits when it frees this much
                for lo, jo, frees, o in givers:
                    if not gk - lo > eps:
                        break  # losses only grow along the scan
                    if jo != jk and all(map(le, need, frees)):
                        _, dwo, dpo, uo = cands[o]
                        found.append((gk - lo,
                                      ((jo, ww[jo] - dwo, pp[jo] - dpo),
                                       (jk, ww[jk] + dwk, pp[jk] + dpk)),
                                      [x - y for x, y in zip(uk, uo)]))  # fmt: skip
                        break
        if not found:
            break
        found.sort(key=lambda m: -m[0])
        touched: set[int] = set()
        room = [x + e for x, e in zip(left, tol)]
        for _, change, extra in found:
            if any(j in touched for j, _, _ in change) or any(map(gt, extra, room)):
                continue
            room = [r - e for r, e in zip(room, extra)]
            for j, nw, np_ in change:
                ww[j], pp[j] = nw, np_
                touched.add(j)
            moves += 1
    return ww, pp, moves


def _clip(x: np.ndarray, hi: int) -> np.ndarray:
    """``x`` clipped to [0, hi] (integers: the same values as ``np.clip``)."""
    return np.minimum(np.maximum(x, 0), hi)


def _best_givers(r_ok, a_ok, loss, gain, cand_job, cand_use, left, tol, eps):
    """(givers, takers): per taking candidate in ``a_ok``, the giving candidate of ``r_ok`` with the least loss that pays, belongs to another job and fits.

    Givers are scanned in blocks in increasing order of loss (ties: the earlier candidate): a
    taker is settled by the first block holding a valid giver, or as soon as the block's losses
    no longer pay, so only takers not settled yet meet the next, larger block.
    """
    givers = r_ok[np.argsort(loss[r_ok], kind="stable")]
    g_loss = loss[givers]
    out = np.full(a_ok.size, -1)
    todo = np.arange(a_ok.size)
    lo, size = 0, 64
    while todo.size and lo < givers.size:
        blk = givers[lo : lo + size]
        t = a_ok[todo]
        ok = gain[t][:, None] - g_loss[lo : lo + size][None, :] > eps
        ok &= cand_job[t][:, None] != cand_job[blk][None, :]
        room = cand_use[t] - left  # a giver fits when it frees at least this
        for r in range(cand_use.shape[1]):
            ok &= room[:, r : r + 1] <= cand_use[blk, r][None, :] + tol[r]
        first = ok.argmax(axis=1)
        hit = ok[np.arange(todo.size), first]
        out[todo[hit]] = blk[first[hit]]
        # losses only grow along the scan: a taker whose gain no longer covers the last loss is done
        more = ~hit & (gain[t] - g_loss[min(lo + size, givers.size) - 1] > eps)
        todo = todo[more]
        lo += size
        size *= 4
    sel = out >= 0
    return out[sel], a_ok[sel]


def defer_search(
    value: np.ndarray,
    mask: np.ndarray,
    defer: np.ndarray,
    alpha: np.ndarray,
    gamma: np.ndarray,
    capacity: np.ndarray,
    workers: np.ndarray,
    ps: np.ndarray,
    *,
    rtol: float = 1e-6,
    max_rounds: int | None = None,
    shrink_candidates: int = 8,
    repair_candidates: int = 8,
    exchange_candidates: int = 64,
) -> tuple[np.ndarray, np.ndarray, int]:
    """Improve a feasible allocation where jobs may wait (cost ``defer``) by starting, stopping and exchanging jobs; (workers, ps, moves).

    value: (n, W, P) cost of each configuration (+inf where none); defer: (n,) cost of a job left
    unstarted (w = p = 0). Moves: stop a started job; start a waiting job at its best
    configuration that fits the spare capacity; exchange a started job (among the
    ``exchange_candidates`` cheapest to stop) for a waiting one (among the 8 x
    ``exchange_candidates`` most valuable columns) that takes its configuration in the spare
    capacity plus what the stopped job held; start a
    waiting job at a configuration (the ``shrink_candidates`` with the best gain per resource)
    after removing single tasks of started jobs, cheapest loss per freed missing resource first,
    until it fits; stop a started job (the ``shrink_candidates`` cheapest to stop) and start
    waiting jobs in the room it leaves, best gain first, while any fits. Each
    round applies the best move, then ``local_search`` on the started jobs; when no move pays
    at once, the ``repair_candidates`` best exchanges are tried with ``local_search`` after
    them, and the first that lowers the objective is kept. On return no such
    move lowers the objective by more than ``rtol`` times it (unless ``max_rounds``, default
    2 n + 10, stopped it first).
    """
    n, W, P = value.shape
    w = np.array(workers, dtype=int)
    p = np.array(ps, dtype=int)
    if n == 0:
        return w, p, 0
    capacity = np.asarray(capacity, dtype=float)
    defer = np.asarray(defer, dtype=float)
    tol = 1e-9 * np.maximum(1.0, np.abs(capacity))
    scale = np.where(capacity > 0, capacity, 1.0)
    keep = mask & np.isfinite(value) & (value < defer[:, None, None])
    job_c, wi, pi = np.nonzero(keep)
    col_use = alpha[job_c] * (wi + 1)[:, None] + gamma[job_c] * (pi + 1)[:, None]
    col_gain = defer[job_c] - value[job_c, wi, pi]  # > 0: starting there beats waiting
    V = value.reshape(n, W * P)
    rows = np.arange(n)
    limit = 2 * n + 10 if max_rounds is None else max_rounds
    moves = 0
    # the local searches after each move run on subsets of the same tables: their plain-float
    # columns are built once here (the same as ``local_search`` builds for each subset)
    tables = _FloatTables(value, mask, alpha, gamma) if n <= 4 * SMALL_JOBS else None
    tol_ls = 1e-9 * np.maximum(1.0, np.abs(capacity))

    def polish(s: np.ndarray, sw: np.ndarray, sp: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``local_search`` of the started jobs ``s`` at (sw, sp)."""
        if tables is not None and tables.usable and tables.fits(sw, sp):
            ls = 10 * s.size + 100
            sw, sp, _ = _local_search_small(tables, s.tolist(), capacity, tol_ls, sw, sp, rtol, ls)
            return sw, sp
        sw, sp, _ = local_search(value[s], mask[s], alpha[s], gamma[s], capacity, sw, sp, rtol=rtol)
        return sw, sp

    for _ in range(limit):
        on = w > 0
        cur = np.where(on, V[rows, _clip((w - 1) * P + (p - 1), W * P - 1)], defer)
        held = alpha * w[:, None] + gamma * p[:, None]
        left = capacity - held.sum(axis=0) + tol
        eps = rtol * max(1e-300, float(cur.sum()))
        best_gain = eps
        best_move: tuple[Any, Any] | None = None
        near: list[tuple[float, int, int]] = []
        # stop a started job
        drop = np.where(on, cur - defer, -np.inf)
        i = int(drop.argmax())
        if drop[i] > best_gain:
            best_gain, best_move = float(drop[i]), (i, None)
        waiting = ~on[job_c]
        cw = waiting.nonzero()[0]
        if cw.size:
            use_w, gain_w, job_w = col_use[cw], col_gain[cw], job_c[cw]  # the waiting columns
            # start a waiting job in the spare capacity
            ok = (use_w <= left).all(axis=1)
            if ok.any():
                k = cw[ok][int(gain_w[ok].argmax())]
                if col_gain[k] > best_gain:
                    best_gain, best_move = float(col_gain[k]), (None, k)
            # exchange: stop started job s (loss defer_s - cost_s), start a waiting column in left + held_s
            started = on.nonzero()[0]
            if started.size:
                loss = defer[started] - cur[started]
                # the cheapest jobs to stop and the most valuable columns to start bound the work
                by_loss = np.argsort(loss)
                cheap = by_loss[:exchange_candidates]
                sl, sr = started[cheap], loss[cheap]
                room = left[None, :] + held[sl]  # (S, K)
                cols_x = cw[np.argsort(-gain_w)[: 8 * exchange_candidates]]
                for lo in range(0, cols_x.size, 4096):  # chunks bound the (columns x started) work
                    part = cols_x[lo : lo + 4096]
                    fit = (col_use[part][:, None, :] <= room[None, :, :]).all(axis=2)
                    net = np.where(fit, col_gain[part][:, None] - sr[None, :], -np.inf)
                    a, b = divmod(int(net.argmax()), net.shape[1])
                    if net[a, b] > best_gain:
                        best_gain, best_move = float(net[a, b]), (int(sl[b]), int(part[a]))
                    # the best few that do not pay at once: tried with a repair if nothing else helps
                    flat = net.ravel()
                    top = np.argpartition(-flat, min(repair_candidates, flat.size - 1))
                    for t in top[:repair_candidates].tolist():
                        if np.isfinite(flat[t]):
                            a, b = divmod(t, net.shape[1])
                            near.append((float(flat[t]), int(sl[b]), int(part[a])))
            # stop a started job and fill the room it leaves with waiting jobs (best gain first)
            if started.size:
                for s_ in started[by_loss[:shrink_candidates]].tolist():
                    total, picks = _fill_room(
                        use_w, gain_w, job_w, n, left + held[s_], -float(defer[s_] - cur[s_])
                    )
                    ins = cw[picks].tolist()
                    if len(ins) > 1 and total > best_gain:
                        best_gain, best_move = total, ([(int(s_), 0, 0)], ins)
            # start a waiting job by shrinking started ones (one task at a time, cheapest loss
            # per freed amount of the missing resources first): the most promising columns only
            if started.size:
                size = (use_w / scale).sum(axis=1)
                top = cw[np.argsort(-gain_w / np.maximum(size, 1e-12))[:shrink_candidates]]
                kept = None
                for k in top.tolist():
                    if col_gain[k] <= best_gain:
                        continue
                    if kept is None:
                        kept = _plan_rows(alpha, gamma, scale, w, p, cur, started)
                    plan = _shrink_plan(
                        V, P, alpha, gamma, scale, w, p, cur, started, col_use[k] - left,
                        col_gain[k] - best_gain, kept,
                    )  # fmt: skip
                    if plan is not None and col_gain[k] - plan[0] > best_gain:
                        best_gain, best_move = float(col_gain[k] - plan[0]), (plan[1], int(k))
        if best_move is None:
            # exchanges that lose a little but free room: accept one if the local search then
            # makes the whole allocation better
            base = float(cur.sum())
            tried = sorted(near, reverse=True)[:repair_candidates]
            if tables is not None and tables.usable:  # the same trials on lists
                best_move = _repairs_on_floats(
                    tables, tried, job_c, wi, pi, w, p, defer, capacity, tol_ls, rtol, base - eps,
                    polish,
                )  # fmt: skip
                tried = []
            for _, s_, c_ in tried:
                tw, tp = w.copy(), p.copy()
                tw[s_] = tp[s_] = 0
                j = int(job_c[c_])
                tw[j], tp[j] = int(wi[c_]) + 1, int(pi[c_]) + 1
                st = (tw > 0).nonzero()[0]
                tw[st], tp[st] = polish(st, tw[st], tp[st])
                new_cost = np.where(
                    tw > 0, V[rows, _clip((tw - 1) * P + (tp - 1), W * P - 1)], defer
                ).sum()
                if new_cost < base - eps:
                    best_move = ("set", (tw, tp))
                    break
        if best_move is None:
            break
        out, col = best_move
        if isinstance(out, str):
            w, p = col
            moves += 1
            continue
        if isinstance(out, list):
            for j, nw, np_ in out:
                w[j], p[j] = nw, np_
        elif out is not None:
            w[out] = p[out] = 0
        picked: Any = col
        starts: list[int] = (
            picked if isinstance(picked, list) else [] if picked is None else [picked]
        )
        for c_ in starts:
            j = int(job_c[c_])
            w[j], p[j] = int(wi[c_]) + 1, int(pi[c_]) + 1
        moves += 1
        s = (w > 0).nonzero()[0]
        if s.size:
            w[s], p[s] = polish(s, w[s], p[s])
    return w, p, moves


def _repairs_on_floats(t, tried, job_c, wi, pi, w, p, defer, capacity, tol_a, rtol, below, polish):
    """``defer_search``'s repairs on lists: for each (net, stopped job, started column) of
    ``tried``, that exchange, then the local search of the started jobs; ("set", (w, p)) for the
    first whose objective (numpy's sum, the same rounding) is below ``below``, else None."""
    n, W, P = len(w), t.W, t.P
    item, cap, tol, dl = t.item, capacity.tolist(), tol_a.tolist(), defer.tolist()
    wl, pl = w.tolist(), p.tolist()
    for _, s_, c_ in tried:
        tw, tp = list(wl), list(pl)
        tw[s_] = tp[s_] = 0
        j = int(job_c[c_])
        tw[j], tp[j] = int(wi[c_]) + 1, int(pi[c_]) + 1
        st = [i for i in range(n) if tw[i] > 0]
        sw, sp = [tw[i] for i in st], [tp[i] for i in st]
        if st and len(st) <= SMALL_JOBS and all(1 <= x <= W for x in sw) and all(1 <= x <= P for x in sp):  # fmt: skip
            sw, sp, _ = _local_search_lists(t, st, cap, tol, sw, sp, rtol, 10 * len(st) + 100)
        elif st:  # what ``polish`` does with the arrays
            aw, ap = polish(np.array(st), np.array(sw, dtype=int), np.array(sp, dtype=int))
            sw, sp = aw.tolist(), ap.tolist()
        for i, a, b in zip(st, sw, sp):
            tw[i], tp[i] = a, b
        last = W * P - 1
        costs = [
            item(i, min(max((tw[i] - 1) * P + (tp[i] - 1), 0), last)) if tw[i] > 0 else dl[i]
            for i in range(n)
        ]
        if _pairwise_sum(costs, 0, n) < below:
            return "set", (np.array(tw, dtype=int), np.array(tp, dtype=int))
    return None


def _fill_room(
    use: np.ndarray, gain: np.ndarray, job: np.ndarray, n: int, room: np.ndarray, total: float
) -> tuple[float, list[int]]:
    """Columns (rows of ``use``) started one at a time in ``room``: the best gain that fits (ties:
    the earlier column), at most one per job, while any fits; (``total`` plus their gains, rows).

    Gains are > 0 (a kept column beats waiting), so the best fitting one is an argmax with the
    columns that do not fit at -inf; jobs already started are a boolean row, not a set.
    """
    picks: list[int] = []
    used = np.zeros(n, dtype=bool)
    while True:
        ok = (use <= room).all(axis=1) & ~used[job]
        a = int(np.where(ok, gain, -np.inf).argmax())
        if not ok[a]:
            return total, picks
        total += float(gain[a])
        room = room - use[a]
        used[job[a]] = True
        picks.append(a)


def _plan_rows(alpha, gamma, scale, w, p, cur, started) -> tuple:
    """What ``_shrink_plan`` reads of the started jobs, as lists (one per defer-search round)."""
    return (
        started.tolist(), w[started].tolist(), p[started].tolist(), cur[started].tolist(),
        alpha[started].tolist(), gamma[started].tolist(), scale.tolist(),
        (1e-9 * np.maximum(1.0, scale)).tolist(),
    )  # fmt: skip


def _shrink_plan(V, P, alpha, gamma, scale, w, p, cur, started, deficit, budget, kept=None):
    """(total loss, [(job, w, p), ...]): single-task removals from ``started`` jobs covering ``deficit``.

    Greedy: each step removes the worker or PS (a job keeps at least (1, 1)) with the smallest
    loss per freed amount of the still-missing resources (normalised by ``scale``; ties: the
    earlier job, a worker before a PS). None when the deficit cannot be covered, or the loss
    exceeds ``budget``. ``kept``: ``_plan_rows`` of the same arguments, if made already.
    """
    need_a = np.maximum(np.asarray(deficit, dtype=float), 0.0)
    if not (need_a > 1e-12).any():
        return 0.0, []
    # Plain floats: a few started jobs and resources, where numpy's per-call cost dominates
    # (the same operations in the same order, so the same plan).
    if kept is None:
        kept = _plan_rows(alpha, gamma, scale, w, p, cur, started)
    rows, w0, p0, val0, al, ga, sc, done = kept
    ww, pp, val, need = list(w0), list(p0), list(val0), need_a.tolist()
    item, inf, n = V.item, math.inf, len(rows)
    running = len(sc) < 8  # numpy sums fewer than 8 terms one by one
    loss = 0.0
    for _ in range(4 * n + 8):
        bw = bp = inf
        kw = kp = 0
        dw = dp = inf
        for i in range(n):
            # a job at one worker (PS) cannot give one up: its ratio is inf whatever it frees
            lw = rw = lp = rp = inf
            if ww[i] > 1:
                lw = item(rows[i], max((ww[i] - 2) * P + pp[i] - 1, 0)) - val[i]
                tw = [min(a, b) / c for a, b, c in zip(al[i], need, sc)]
                fw = sum(tw) if running else _row_sum(tw)
                rw = lw / fw if fw > 1e-12 else inf
            if pp[i] > 1:
                lp = item(rows[i], max((ww[i] - 1) * P + pp[i] - 2, 0)) - val[i]
                tp = [min(a, b) / c for a, b, c in zip(ga[i], need, sc)]
                fp = sum(tp) if running else _row_sum(tp)
                rp = lp / fp if fp > 1e-12 else inf
            if rw < bw or i == 0:
                bw, kw, dw = rw, i, lw
            if rp < bp or i == 0:
                bp, kp, dp = rp, i, lp
        if not (math.isfinite(bw) or math.isfinite(bp)):
            return None
        if bw <= bp:
            k, d = kw, dw
            ww[k] -= 1
            need = [x - y for x, y in zip(need, al[k])]
        else:
            k, d = kp, dp
            pp[k] -= 1
            need = [x - y for x, y in zip(need, ga[k])]
        val[k] += d
        loss += d
        if loss >= budget:
            return None
        if not any(x > t for x, t in zip(need, done)):
            return loss, [
                (rows[i], ww[i], pp[i]) for i in range(n) if ww[i] != w0[i] or pp[i] != p0[i]
            ]
    return None


def _row_sum(xs: list[float]) -> float:
    """The sum numpy's ``sum(axis=1)`` gives for this row (pairwise from 8 terms on)."""
    return float(np.sum(np.array(xs)))
