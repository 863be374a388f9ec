"""Gavel's allocation LPs over time fractions X[job, gpu type] (HiGHS).

Narayanan et al., "Heterogeneity-Aware Cluster Scheduling Policies for Deep Learning Workloads",
OSDI 2020, section 4 (policies as optimisation problems over an allocation matrix). ``X[j, t]``
is the fraction of time job ``j`` spends on GPU type ``t``; its effective throughput is
``sum_t X[j, t] * T[j, t]``. Constraints (Gavel's base constraints): ``X >= 0``,
``sum_t X[j, t] <= 1`` per job, ``sum_j X[j, t] * g_j <= G_t`` per type (``g_j``: GPUs the job
uses at once, its scale factor; ``G_t``: GPUs of type ``t``).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from smdlab.errors import InvalidInput
from smdlab.solve.backends import solve_lp

__all__ = ["equal_share", "max_min_allocation", "max_sum_allocation"]


def _check(throughput: np.ndarray, gpus: np.ndarray, capacity: np.ndarray):
    T = np.asarray(throughput, dtype=float)
    g = np.asarray(gpus, dtype=float)
    G = np.asarray(capacity, dtype=float)
    if T.ndim != 2 or T.shape != (g.size, G.size) or T.size == 0:
        raise InvalidInput(
            f"throughput must be (jobs x types) = ({g.size} x {G.size}), got shape {T.shape}"
        )
    if np.any(T < 0) or np.any(g <= 0) or np.any(G < 0) or not np.all(np.isfinite(T)):
        raise InvalidInput("throughput and capacity must be >= 0 and finite, gpus > 0")
    return T, g, G


def _base_rows(n: int, k: int, g: np.ndarray, G: np.ndarray, extra: int):
    """Rows of sum_t X <= 1 (per job) and sum_j g_j X <= G_t (per type) over n*k (+extra) columns."""
    jobs = sp.kron(sp.eye(n), np.ones((1, k)))
    types = sp.kron(g[None, :], sp.eye(k))
    a = sp.vstack([jobs, types]).tocsr()
    if extra:
        a = sp.hstack([a, sp.csr_matrix((a.shape[0], extra))]).tocsr()
    return a, np.concatenate([np.ones(n), G])


def max_sum_allocation(
    throughput: np.ndarray, gpus: np.ndarray, capacity: np.ndarray
) -> np.ndarray:
    """X maximising the sum of effective throughputs (Gavel's max-sum-throughput policy)."""
    T, g, G = _check(throughput, gpus, capacity)
    n, k = T.shape
    a_ub, b_ub = _base_rows(n, k, g, G, 0)
    a_eq = sp.csr_matrix((0, n * k))
    res = solve_lp(-T.ravel(), a_ub, b_ub, a_eq, np.zeros(0), np.zeros(n * k), backend="highs")
    return np.clip(res.x.reshape(n, k), 0.0, 1.0)


def equal_share(gpus_per_type: np.ndarray, jobs: int) -> np.ndarray:
    """Gavel's X^equal row: each job gets G_t / jobs of every type, scaled so the row sums to <= 1."""
    G = np.asarray(gpus_per_type, dtype=float)
    row = G / max(jobs, 1)
    return row / max(float(row.sum()), 1.0)


def max_min_allocation(
    throughput: np.ndarray, gpus: np.ndarray, capacity: np.ndarray
) -> np.ndarray:
    """X maximising the smallest normalised throughput (Gavel's heterogeneity-aware max-min fairness).

    Job j's effective throughput is divided by its throughput under ``equal_share`` (Gavel's
    X^equal) and multiplied by its scale factor g_j; the LP maximises the minimum of these.
    """
    T, g, G = _check(throughput, gpus, capacity)
    n, k = T.shape
    share = T @ equal_share(G, n)
    if np.any(share <= 0):
        raise InvalidInput("every job needs a positive throughput on some GPU type")
    a_base, b_base = _base_rows(n, k, g, G, 1)
    # z - g_j * (T_j . X_j) / share_j <= 0 for each job j
    coef = (T * (g / share)[:, None]).ravel()
    rows = np.repeat(np.arange(n), k)
    a_fair = sp.hstack(
        [sp.csr_matrix((-coef, (rows, np.arange(n * k))), shape=(n, n * k)), np.ones((n, 1))]
    ).tocsr()
    a_ub = sp.vstack([a_base, a_fair]).tocsr()
    b_ub = np.concatenate([b_base, np.zeros(n)])
    cost = np.zeros(n * k + 1)
    cost[-1] = -1.0
    res = solve_lp(
        cost, a_ub, b_ub, sp.csr_matrix((0, n * k + 1)), np.zeros(0), np.zeros(n * k + 1),
        backend="highs",
    )  # fmt: skip
    return np.clip(res.x[: n * k].reshape(n, k), 0.0, 1.0)
