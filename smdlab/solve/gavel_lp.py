"""Gavel's allocation LPs over time fractions X[job, gpu type] (HiGHS, or ECOS as Gavel solves them).

Narayanan et al., "Heterogeneity-Aware Cluster Scheduling Policies for Deep Learning Workloads",
OSDI 2020, section 4 (policies as optimisation problems over an allocation matrix). ``X[j, t]``
is the fraction of time job ``j`` spends on GPU type ``t``; its effective throughput is
``sum_t X[j, t] * T[j, t]``. Constraints (Gavel's base constraints): ``X >= 0``,
``sum_t X[j, t] <= 1`` per job, ``sum_j X[j, t] * g_j <= G_t`` per type (``g_j``: GPUs the job
uses at once, its scale factor; ``G_t``: GPUs of type ``t``).
"""

from __future__ import annotations

import importlib.util
import warnings
from collections.abc import Sequence

import numpy as np
import scipy.sparse as sp

from smdlab.errors import InvalidInput, SolverError, check_choice
from smdlab.solve.backends import solve_lp

__all__ = [
    "GAVEL_SOLVERS",
    "ecos_available",
    "equal_share",
    "gavel_fifo",
    "gavel_max_min_fairness",
    "gavel_max_min_fairness_packed",
    "gavel_max_sum_throughput",
    "gavel_solver",
    "max_min_allocation",
    "max_sum_allocation",
]


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


# Gavel's own policies, as its code states them (stanford-futuredata/gavel, MIT licence,
# ``scheduler/policies``: max_min_fairness.py, max_sum_throughput.py, fifo.py). Jobs with equal
# rows (throughputs, GPUs, weight) share one set of variables, so identical jobs get identical
# shares, as ECOS's interior-point solution gives them in Gavel.


GAVEL_SOLVERS = ("auto", "ecos", "highs")


def ecos_available() -> bool:
    """True when cvxpy and ECOS (the ``gavel`` extra) can be imported."""
    return all(importlib.util.find_spec(m) is not None for m in ("cvxpy", "ecos"))


def gavel_solver(solver: str) -> str:
    """The solver a ``solver`` option names: "ecos" or "highs" ("auto": ECOS when installed)."""
    check_choice("solver", solver, GAVEL_SOLVERS)
    if solver == "auto":
        if ecos_available():
            return "ecos"
        warnings.warn(
            "Gavel LPs: cvxpy/ecos not installed, solved with HiGHS; where the optimum is not "
            "unique, per-job results differ from Gavel's (pip install 'smdlab[gavel]')",
            stacklevel=2,
        )
        return "highs"
    if solver == "ecos" and not ecos_available():
        raise InvalidInput(
            "solver 'ecos' needs cvxpy and ecos (pip install 'smdlab[gavel]'); "
            "allowed without them: auto, highs"
        )
    return solver


def _ecos_lp(T: np.ndarray, sf: np.ndarray, w: np.ndarray, cap: np.ndarray, objective: str):
    """Gavel's LP stated as its cvxpy code states it, solved with ECOS, clipped to [0, 1].

    Same variable shape, expression order and constraint order as Gavel's
    ``MaxMinFairnessPolicyWithPerf`` and ``ThroughputNormalizedByCostSumWithPerfSLOs``
    (``scheduler/policies``, stanford-futuredata/gavel c4fa400, MIT licence), so cvxpy hands ECOS
    the same problem and ECOS returns the same point of a non-unique optimum.
    """
    import cvxpy as cp

    m, n = T.shape
    sfa = np.zeros((m, n))
    sfa[:, :] = sf[:, None]  # Gavel's scale_factors_array
    x = cp.Variable((m, n))
    if objective == "max_min":
        # Gavel's proportional policy: every job cap_t / m of each type, rows scaled to sum <= 1
        prop_x = np.array([[c / m for c in cap] for _ in range(m)])
        prop_x = prop_x / np.sum(prop_x, axis=1).max()
        prop = np.sum(np.multiply(T, prop_x), axis=1).reshape((m, 1))
        if np.any(prop <= 0):
            raise InvalidInput("every job needs a positive throughput on some GPU type")
        pw = np.multiply((1.0 / w).reshape((m, 1)), 1.0 / prop.reshape((m, 1)))
        coef = np.multiply(T * pw.reshape((m, 1)), sfa)
        goal = cp.Maximize(cp.min(cp.sum(cp.multiply(coef, x), axis=1)))
    else:
        goal = cp.Maximize(cp.sum(cp.sum(cp.multiply(T / np.ones((1, n)), x), axis=1)))
    constraints = [
        x >= 0,
        cp.sum(cp.multiply(sfa, x), axis=0) <= [int(c) if c == int(c) else c for c in cap],
        cp.sum(x, axis=1) <= 1,
    ]
    problem = cp.Problem(goal, constraints)
    problem.solve(solver="ECOS")
    if x.value is None:
        raise SolverError(f"ECOS found no allocation (status {problem.status})")
    return np.asarray(x.value).clip(min=0.0).clip(max=1.0)


def _classes(*cols: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Index of each row's class and the first row of each class (equal rows: one class)."""
    keys: dict[tuple[float, ...], int] = {}
    idx = np.array(
        [
            keys.setdefault(tuple(np.hstack([c[i] for c in cols])), len(keys))
            for i in range(len(cols[0]))
        ]
    )
    first = np.array([int(np.flatnonzero(idx == c)[0]) for c in range(len(keys))])
    return idx, first


def _class_lp(T, sf, w, n, cap, objective: str) -> np.ndarray:
    """Per-job shares x[class, type] maximising Gavel's max-min or max-sum objective.

    Solved by HiGHS' interior point without crossover: an inner point of the optimal face, nearer
    the one Gavel's ECOS returns than a simplex vertex is (docs/heterogeneity.md).
    """
    m, k = T.shape
    nv = m * k + (objective == "max_min")
    rows = [sp.kron(sp.eye(m), np.ones((1, k))), sp.kron((n * sf)[None, :], sp.eye(k))]
    b = [np.ones(m), cap]
    cost = np.zeros(nv)
    if objective == "max_min":
        prop = T @ (cap / cap.sum())  # Gavel's proportional policy: every job G_t / sum G
        if np.any(prop <= 0):
            raise InvalidInput("every job needs a positive throughput on some GPU type")
        coef = (T * (sf / (w * prop))[:, None]).ravel()
        fair = sp.csr_matrix((-coef, (np.repeat(np.arange(m), k), np.arange(m * k))), (m, m * k))
        rows = [sp.hstack([r, sp.csr_matrix((r.shape[0], 1))]) for r in rows]
        rows.append(sp.hstack([fair, np.ones((m, 1))]))
        b.append(np.zeros(m))
        cost[-1] = -1.0
    else:
        cost[:] = -(T * n[:, None]).ravel()
    res = solve_lp(
        cost, sp.vstack(rows).tocsr(), np.concatenate(b), sp.csr_matrix((0, nv)), np.zeros(0),
        np.zeros(nv), backend="highs", interior=True,
    )  # fmt: skip
    return np.clip(res.x[: m * k].reshape(m, k), 0.0, 1.0)


def gavel_max_min_fairness(
    throughput: np.ndarray,
    gpus: np.ndarray,
    capacity: np.ndarray,
    weights: np.ndarray | None = None,
    *,
    aware: bool = True,
    solver: str = "highs",
) -> np.ndarray:
    """X of Gavel's max_min_fairness(_perf): maximise min_j g_j T_j.X_j / (w_j T_j.x_prop).

    x_prop gives every job G_t / sum(G) of each type (Gavel's proportional policy). aware=False
    (Gavel's agnostic LAS): every throughput is 1. solver: "ecos" states the LP as Gavel does and
    solves it with ECOS (Gavel's optimal point); "highs": identical jobs share one set of
    variables, the agnostic total is split over the types by their share of the GPUs (the
    symmetric point ECOS returns), solved by HiGHS' interior point; "auto": ECOS when installed.
    """
    T, g, G = _check(throughput, gpus, capacity)
    w = np.ones(g.size) if weights is None else np.asarray(weights, dtype=float)
    if gavel_solver(solver) == "ecos":
        return _ecos_lp(T if aware else np.ones(T.shape), g, w, G, "max_min")
    if not aware:
        T = np.ones((g.size, 1))
        cls, first = _classes(g[:, None], w[:, None])
        n = np.bincount(cls).astype(float)
        y = _class_lp(T[first], g[first], w[first], n, np.array([G.sum()]), "max_min")[:, 0]
        return (y[:, None] * (G / G.sum())[None, :])[cls]
    cls, first = _classes(T, g[:, None], w[:, None])
    n = np.bincount(cls).astype(float)
    return _class_lp(T[first], g[first], w[first], n, G, "max_min")[cls]


def gavel_max_sum_throughput(
    throughput: np.ndarray, gpus: np.ndarray, capacity: np.ndarray, *, solver: str = "highs"
) -> np.ndarray:
    """X of Gavel's max_sum_throughput_perf: maximise sum_j T_j.X_j (raw throughputs summed).

    solver: as ``gavel_max_min_fairness``.
    """
    T, g, G = _check(throughput, gpus, capacity)
    if gavel_solver(solver) == "ecos":
        return _ecos_lp(T, g, np.ones(g.size), G, "max_sum")
    cls, first = _classes(T, g[:, None])
    n = np.bincount(cls).astype(float)
    return _class_lp(T[first], g[first], np.ones(first.size), n, G, "max_sum")[cls]


def gavel_fifo(throughput: np.ndarray, gpus: np.ndarray, capacity: np.ndarray) -> np.ndarray:
    """X of Gavel's fifo_perf: rows in arrival order, each whole on the fastest type with room
    (ties: the first type; a zero throughput there: passed over); stop at the first row that fits
    nowhere."""
    T, g, G = _check(throughput, gpus, capacity)
    x = np.zeros(T.shape)
    left = G.copy()
    for i in range(T.shape[0]):
        room = [k for k in range(T.shape[1]) if left[k] >= g[i]]
        if not room:
            break
        best = room[0]
        for k in room[1:]:
            if T[i, k] > T[i, best]:
                best = k
        if T[i, best] <= 0:  # Gavel passes over it (no stop)
            continue
        x[i, best] = 1.0
        left[best] -= g[i]
    return x


def gavel_max_min_fairness_packed(
    throughput: np.ndarray,
    gpus: np.ndarray,
    capacity: np.ndarray,
    pairs: Sequence[tuple[int, int]],
    pair_throughput: np.ndarray,
    weights: np.ndarray | None = None,
    *,
    solver: str = "highs",
) -> np.ndarray:
    """X[combination, type] of Gavel's max_min_fairness_packed: rows are the jobs, then ``pairs``.

    Combination c is a job alone or a pair (i, j) sharing its GPUs (both of scale factor
    ``gpus[i]``); ``pair_throughput[p, 0 or 1, t]`` is the first or second member's steps/s on
    type t while paired (0: they do not share there). Maximise min_i sum_{c holding i} sum_t
    T_i[c, t] g_c X[c, t] / (w_i T_i.x_prop) subject to X >= 0, sum_c g_c X[c, t] <= G_t and, per
    job, sum over its combinations and types <= 1. solver: as ``gavel_max_min_fairness``.
    """
    T, g, G = _check(throughput, gpus, capacity)
    m, k = T.shape
    P = np.asarray(pair_throughput, dtype=float).reshape(len(pairs), 2, k)
    if np.any(P < 0) or not np.all(np.isfinite(P)):
        raise InvalidInput("pair throughputs must be >= 0 and finite")
    if any(not (0 <= a < b < m) or g[a] != g[b] for a, b in pairs):
        raise InvalidInput("pairs must be (i, j), 0 <= i < j < jobs, of equal scale factors")
    w = np.ones(m) if weights is None else np.asarray(weights, dtype=float)
    combos = m + len(pairs)
    # (job, combination) memberships: each job alone, then both members of each pair
    first, second = np.asarray(pairs, dtype=int).reshape(-1, 2).T
    in_pair = m + np.arange(len(pairs))
    job_of = np.concatenate([np.arange(m), first, second])
    combo_of = np.concatenate([np.arange(m), in_pair, in_pair])
    # Ti[i, c, t]: job i's steps/s in combination c; Gavel keeps this table in float32
    Ti = np.zeros((m, combos, k), dtype=np.float32)
    Ti[np.arange(m), np.arange(m)] = T
    Ti[first, in_pair] = P[:, 0]
    Ti[second, in_pair] = P[:, 1]
    for i in range(m):
        Ti[i] /= w[i]
    sf = np.concatenate([g, g[[a for a, _ in pairs]]]) if pairs else g.copy()
    prop_x = np.array([[c / m for c in G] for _ in range(m)])
    prop_x = prop_x / np.sum(prop_x, axis=1).max()
    prop = np.sum(np.multiply(T, prop_x), axis=1).reshape((m, 1))
    if np.any(prop <= 0):
        raise InvalidInput("every job needs a positive throughput on some GPU type")
    if gavel_solver(solver) == "ecos":
        # member[i] = the combinations holding job i (itself first, then its pairs in order)
        member: list[list[int]] = [[i] for i in range(m)]
        for p, (a, b) in enumerate(pairs):
            member[a].append(m + p)
            member[b].append(m + p)
        return _ecos_packed(Ti, sf, G, member, prop)
    nv = combos * k + 1
    rows = [sp.hstack([sp.kron(sf[None, :], sp.eye(k)), sp.csr_matrix((k, 1))])]
    rhs = [G]
    # Per job i and combination c holding it, columns c*k .. c*k+k-1: 1 in its own row (the job's
    # share) and -T_i[c, t] g_c / prop_i in its fairness row, which also holds the objective's 1.
    cols = (combo_of[:, None] * k + np.arange(k)).ravel()
    at = np.repeat(job_of, k)
    own = sp.csr_matrix((np.ones(cols.size), (at, cols)), shape=(m, nv))
    gain = -(Ti[job_of, combo_of].astype(float) * sf[combo_of, None]) / prop[job_of]
    fair = sp.csr_matrix(
        (
            np.concatenate([gain.ravel(), np.ones(m)]),
            (np.concatenate([at, np.arange(m)]), np.concatenate([cols, np.full(m, nv - 1)])),
        ),
        shape=(m, nv),
    )
    fair.eliminate_zeros()  # a pair that does not share on a type (rate 0) has no entry there
    own.sort_indices()
    fair.sort_indices()
    rows += [own, fair]
    rhs += [np.ones(m), np.zeros(m)]
    cost = np.zeros(nv)
    cost[-1] = -1.0
    res = solve_lp(
        cost, sp.vstack(rows).tocsr(), np.concatenate(rhs), sp.csr_matrix((0, nv)), np.zeros(0),
        np.zeros(nv), backend="highs", interior=True,
    )  # fmt: skip
    return np.clip(res.x[: combos * k].reshape(combos, k), 0.0, 1.0)


def _ecos_packed(
    Ti: np.ndarray, sf: np.ndarray, G: np.ndarray, member: list[list[int]], prop: np.ndarray
) -> np.ndarray:
    """Gavel's packed max-min LP stated as its cvxpy code states it (loop form), solved by ECOS.

    ``MaxMinFairnessPolicyWithPacking.get_allocation`` and ``PolicyWithPacking
    .get_base_constraints`` (``scheduler/policies``, stanford-futuredata/gavel c4fa400, MIT
    licence; the loop form of the commit before its vectorised builders, which run in
    simulation).
    """
    import cvxpy as cp

    combos, k = Ti.shape[1], Ti.shape[2]
    sfa = np.zeros((combos, k))
    sfa[:, :] = sf[:, None]
    x = cp.Variable((combos, k))
    terms = [
        cp.sum(cp.multiply(np.multiply(Ti[i][idx], sfa[idx]), x[idx])) / prop[i]
        for i, idx in enumerate(member)
    ]
    goal = cp.Maximize(terms[0] if len(terms) == 1 else cp.minimum(*terms))
    constraints = [
        x >= 0,
        cp.sum(cp.multiply(sfa, x), axis=0) <= np.array([int(c) for c in G]),
        cp.vstack([cp.sum(x[idx]) for idx in member]) <= 1,
    ]
    problem = cp.Problem(goal, constraints)
    problem.solve(solver="ECOS")
    if x.value is None:
        raise SolverError(f"ECOS found no allocation (status {problem.status})")
    return np.asarray(x.value).clip(min=0.0).clip(max=1.0)
