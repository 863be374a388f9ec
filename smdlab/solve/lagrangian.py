"""A lower bound on (P) from its Lagrangian relaxation: prices on the resources instead of an LP.

Relaxing the capacity constraint with prices mu >= 0 (one per resource) splits (P) into one
problem per job:
    L(mu) = sum_i min(defer_i, min_c cost_i(c) + mu . use_i(c)) - mu . capacity.
Every mu >= 0 gives a valid lower bound (weak duality), and the best mu gives the LP relaxation's
value (each job's choice is a multiple-choice set, whose LP hull the Lagrangian dual reaches).
``lagrangian_bound`` evaluates L on the undominated configurations (a dominated one costs and
uses at least as much, so it never sets a minimum) and climbs by a cutting-plane method in a
trust region; it stops when its model promises less than ``rtol`` more. The value it returns is
L at the best prices it evaluated: valid however early it stops.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.optimize import linprog

from smdlab.errors import check_int, check_positive


@dataclass(frozen=True)
class LagrangianBound:
    """A Lagrangian lower bound: its value, the prices that gave it, and the evaluations spent."""

    bound: float
    prices: np.ndarray
    evaluations: int
    model_gap: float  # how much more the cutting-plane model still promised when it stopped


class _Dual:
    """L(mu) and a supergradient, on the undominated configurations as flat job-major columns."""

    def __init__(self, cost, mask, alpha, gamma, capacity, defer):
        job, wi, pi = np.nonzero(mask)
        self.cost = cost[job, wi, pi]
        self.use = alpha[job] * (wi + 1)[:, None] + gamma[job] * (pi + 1)[:, None]
        self.n = cost.shape[0]
        self.starts = np.searchsorted(job, np.arange(self.n))
        self.has = np.bincount(job, minlength=self.n) > 0
        self.job = job
        self.capacity = np.asarray(capacity, dtype=float)
        self.defer = None if defer is None else np.asarray(defer, dtype=float)

    def __call__(self, mu: np.ndarray) -> tuple[float, np.ndarray]:
        """(L(mu), supergradient: the chosen configurations' use minus the capacity)."""
        priced = self.cost + self.use @ mu
        use = np.zeros(self.capacity.shape)
        if priced.size:
            starts = np.minimum(self.starts, priced.size - 1)
            best = np.minimum.reduceat(priced, starts)
            best = np.where(self.has, best, np.inf)
        else:
            best = np.full(self.n, np.inf)
        if self.defer is not None:
            start = best < self.defer
            total = float(np.where(start, best, self.defer).sum())
        else:
            start = np.ones(self.n, dtype=bool)
            total = float(best.sum())
        if priced.size:
            at = np.flatnonzero((priced == best[self.job]) & start[self.job])
            # one column per started job (the first of equal ones)
            at = at[np.r_[True, self.job[at][1:] != self.job[at][:-1]]] if at.size else at
            use = self.use[at].sum(axis=0)
        return total - float(mu @ self.capacity), use - self.capacity


def lagrangian_bound(
    cost: np.ndarray,
    mask: np.ndarray,
    alpha: np.ndarray,
    gamma: np.ndarray,
    capacity: np.ndarray,
    defer: np.ndarray | None = None,
    *,
    start: np.ndarray | None = None,
    rtol: float = 1e-5,
    max_evaluations: int = 40,
) -> LagrangianBound:
    """Lower bound on min sum cost (+ defer for jobs left out) s.t. capacity, by resource prices.

    cost: (n, W, P), +inf where a configuration does not exist; mask: configurations to price
    (the undominated ones suffice); defer: (n,) cost of a job left unstarted, or None when every
    job must start. start: prices to begin from (a previous decision's), else a scan of one
    common price per unit of capacity. rtol: stop when the model promises at most this relative
    improvement. max_evaluations: largest number of evaluations of L.
    """
    check_positive("rtol", rtol)
    check_int("max_evaluations", max_evaluations, 1)
    capacity = np.asarray(capacity, dtype=float)
    dual = _Dual(cost, mask, alpha, gamma, capacity, defer)
    K = capacity.size
    scale = np.where(capacity > 0, capacity, 1.0)  # prices per unit of capacity: comparable units
    cuts_x: list[np.ndarray] = []
    cuts_v: list[float] = []
    cuts_g: list[np.ndarray] = []

    def evaluate(nu: np.ndarray) -> float:
        v, g = dual(nu / scale)
        cuts_x.append(nu.copy())
        cuts_v.append(v)
        cuts_g.append(g / scale)
        return v

    if start is not None:
        best_x = np.maximum(np.asarray(start, dtype=float), 0.0) * scale
    else:
        # one common price theta per unit of capacity, by doubling then bisection on the slope
        unit = np.ones(K)
        theta, hi = 0.0, None
        lo_v = evaluate(theta * unit)
        step = max(1e-12, abs(lo_v)) / max(1.0, float(K)) * 1e-3
        while len(cuts_v) < max_evaluations // 3:
            t = theta + step if hi is None else 0.5 * (theta + hi)
            evaluate(t * unit)
            slope = float(cuts_g[-1] @ unit)
            if slope > 0:  # still rising: the optimum lies further
                theta = t
                if hi is None:
                    step *= 4
            else:
                hi = t
            if hi is not None and hi - theta <= 1e-3 * max(hi, 1e-300):
                break
        best_x = np.full(K, theta)
    best_v = evaluate(best_x) if start is not None else max(cuts_v)
    if start is None:
        best_x = cuts_x[int(np.argmax(cuts_v))]
    radius = max(float(best_x.max()), 1e-12)
    model_gap = np.inf
    while len(cuts_v) < max_evaluations:
        # maximise t subject to t <= v_k + g_k . (x - x_k) over the trust region around best_x
        G = np.array(cuts_g)
        rhs = np.array(cuts_v) - np.einsum("ij,ij->i", G, np.array(cuts_x))
        c = np.r_[np.zeros(K), -1.0]
        A = np.hstack([-G, np.ones((len(cuts_v), 1))])
        bounds = [(max(0.0, x - radius), x + radius) for x in best_x] + [(None, None)]
        res = linprog(c, A_ub=A, b_ub=rhs, bounds=bounds, method="highs")
        if res.status != 0:
            break
        x, promise = res.x[:K], float(res.x[K])
        model_gap = promise - best_v
        if model_gap <= rtol * max(1e-300, abs(best_v)):
            break
        v = evaluate(x)
        if v > best_v + 0.1 * model_gap:  # serious step: move and widen
            best_x, best_v = x, v
            radius *= 2
        else:  # null step: the cut stays, the region narrows
            radius *= 0.5
    return LagrangianBound(best_v, best_x / scale, len(cuts_v), float(model_gap))
