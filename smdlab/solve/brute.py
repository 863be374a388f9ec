"""Exhaustive enumeration of every allocation of a tiny instance (the tests' ground truth).

It enumerates the full (w, p) grid of every job (no dominance pruning, no solver), plus
"not started" where the instance allows it, and keeps the cheapest allocation that fits.
"""

from __future__ import annotations

import numpy as np

from smdlab.errors import InvalidInput
from smdlab.solve.instance import Instance, fits

BRUTE_MAX_COMBINATIONS = 2_000_000


def brute_force(inst: Instance) -> tuple[np.ndarray, np.ndarray, float]:
    """(workers, ps, objective) of the optimal allocation, by enumeration."""
    options = []
    for i, job in enumerate(inst.jobs):
        wg, pg = np.meshgrid(
            np.arange(1, job.max_workers + 1), np.arange(1, job.ps_slots + 1), indexing="ij"
        )
        w, p = wg.ravel(), pg.ravel()
        cost = inst.cost[i, w - 1, p - 1]
        use = np.outer(w, inst.alpha[i]) + np.outer(p, inst.gamma[i])
        if inst.allow_defer:
            w, p = np.append(w, 0), np.append(p, 0)
            cost = np.append(cost, inst.defer_cost[i])
            use = np.vstack([use, np.zeros(inst.K)])
        options.append((w, p, cost, use))
    total = int(np.prod([len(o[0]) for o in options], dtype=float))
    if total > BRUTE_MAX_COMBINATIONS:
        raise InvalidInput(
            f"brute enumerates at most {BRUTE_MAX_COMBINATIONS:,} allocations; this instance has {total:,} "
            f"({inst.n} jobs); use method='milp'"
        )
    # Grow partial allocations job by job; a partial sum over capacity only grows, so drop it early.
    cost = np.zeros(1)
    use = np.zeros((1, inst.K))
    choice = np.zeros((1, 0), dtype=int)
    for _w, _p, c, u in options:
        cost = (cost[:, None] + c[None, :]).ravel()
        use = (use[:, None, :] + u[None, :, :]).reshape(-1, inst.K)
        choice = np.hstack(
            [np.repeat(choice, len(c), axis=0), np.tile(np.arange(len(c)), len(choice))[:, None]]
        )
        ok = fits(use, inst.capacity)
        cost, use, choice = cost[ok], use[ok], choice[ok]
    if cost.size == 0:
        from smdlab.errors import Infeasible

        raise Infeasible("no allocation of the jobs fits the capacity")
    best = int(np.argmin(cost))
    w = np.array([options[i][0][choice[best, i]] for i in range(inst.n)])
    p = np.array([options[i][1][choice[best, i]] for i in range(inst.n)])
    return w, p, float(cost[best])
