"""Local search for the multiple-choice knapsack: improve a feasible allocation by moves until none helps.

SMD polishes its allocation with it; tests compare it against exhaustive moves.
"""

from __future__ import annotations

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
