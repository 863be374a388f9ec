"""The storage problems: CBA's closed-form cache/IO split and AutoCBA's welfare program.

CBA (fixed GPUs): choose cache c_k in [0, d_k] per dataset, total <= C, to minimise the cost rate
p_c sum_k c_k + p_b sum_k a_k (1 - c_k/d_k) with the remote need sum_k a_k (1 - c_k/d_k) <= B,
where a_k is the remote GB/s dataset k's jobs need at their compute speeds with nothing cached.
``cba_split`` is the closed form of docs/storage.md (greedy by a_k/d_k, one clamp).

AutoCBA: choose one GPU option per job (or none), and the datasets to cache whole, to maximise
the sum of the jobs' utilities within a budget per hour, the cluster's GPUs, the cache and the
remote pool. ``autocba_exact`` is its 0/1 program (``smdlab.solve.binary_program``);
``autocba_greedy`` the fast heuristic; ``autocba_solve`` the greedy refined by the program;
``autocba_bound`` the program's LP relaxation, an upper bound that certifies a solution's gap.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np
import scipy.sparse as sp

from smdlab.errors import InvalidInput, check_positive
from smdlab.solve.binary_program import solve_binary

__all__ = [
    "AutoCBAProblem",
    "AutoCBASolution",
    "CacheSplit",
    "autocba_bound",
    "autocba_exact",
    "autocba_greedy",
    "autocba_solve",
    "cba_split",
    "split_cost",
    "utility",
]

UTILITIES = ("linear", "sqrt", "log")


def utility(kind: str, x: float | np.ndarray) -> float | np.ndarray:
    """A job's utility of its normalised speed ``x`` (1 at its reference speed), per ``kind``."""
    if kind == "linear":
        return x
    if kind == "sqrt":
        return np.sqrt(x)
    if kind == "log":
        return np.log1p(x) / math.log(2.0)
    raise InvalidInput(f"utility must be one of {', '.join(UTILITIES)}; got {kind!r}")


@dataclass(frozen=True)
class CacheSplit:
    """CBA's split: cache GB per dataset, remote GB/s needed, its cost per hour, and feasibility.

    feasible: False when even a full cache leaves a remote need above the pool (jobs then run
    IO-bound; ``remote_gbps`` is the pool).
    """

    cache_gb: np.ndarray
    remote_gbps: float
    cost: float
    feasible: bool


def split_cost(
    cache_gb: np.ndarray,
    sizes: np.ndarray,
    demand: np.ndarray,
    cache_price: float,
    remote_price: float,
) -> tuple[float, float]:
    """(cost per hour, remote GB/s needed) of caching ``cache_gb`` of datasets with ``demand``."""
    need = float(np.sum(demand * (1.0 - cache_gb / sizes)))
    return cache_price * float(np.sum(cache_gb)) + remote_price * need, need


def cba_split(
    sizes: Sequence[float] | np.ndarray,
    demand: Sequence[float] | np.ndarray,
    cache_capacity: float,
    remote_pool: float,
    cache_price: float,
    remote_price: float,
) -> CacheSplit:
    """The cost-minimising cache split for fixed compute speeds (closed form, docs/storage.md).

    sizes: d_k (GB). demand: a_k, remote GB/s dataset k's jobs need with nothing cached.
    """
    d = np.asarray(sizes, dtype=float)
    a = np.asarray(demand, dtype=float)
    if np.any(d <= 0) or np.any(a < 0):
        raise InvalidInput("cba_split: sizes must be > 0 and demands >= 0")
    cap = check_positive("cache_capacity", cache_capacity, allow_zero=True, allow_inf=True)
    pool = check_positive("remote_pool", remote_pool, allow_zero=True, allow_inf=True)
    w = a / d  # remote GB/s saved per GB cached
    order = np.argsort(-w, kind="stable")
    d_sorted, w_sorted = d[order], w[order]
    ends = np.cumsum(d_sorted)
    x_max = min(cap, float(ends[-1])) if len(d) else 0.0
    # Price point: cache every dataset whose GB saves more than it costs.
    x_price = float(np.sum(d_sorted[remote_price * w_sorted > cache_price]))
    # Least cache that brings the remote need within the pool (fill in w order).
    total = float(a.sum())
    x_pool = 0.0
    if total > pool:
        saved = np.concatenate([[0.0], np.cumsum(w_sorted * d_sorted)])
        excess = total - pool
        i = int(np.searchsorted(saved, excess - 1e-12 * max(1.0, excess)))
        if i > len(d):
            x_pool = math.inf
        else:
            before = float(ends[i - 2]) if i >= 2 else 0.0
            x_pool = before + (excess - saved[i - 1]) / w_sorted[i - 1]
    feasible = x_pool <= x_max * (1 + 1e-12) + 1e-12
    x = min(max(x_price, x_pool), x_max) if feasible else x_max
    c_sorted = np.clip(x - np.concatenate([[0.0], ends[:-1]]), 0.0, d_sorted)
    c = np.empty_like(d)
    c[order] = c_sorted
    cost, need = split_cost(c, d, a, cache_price, remote_price)
    if not feasible:
        need = pool
        cost = cache_price * float(c.sum()) + remote_price * pool
    return CacheSplit(c, need, cost, bool(feasible))


@dataclass(frozen=True)
class AutoCBAProblem:
    """One AutoCBA decision: per job its GPU options, their utilities and remote needs.

    gpus[j], value[j], remote[j]: arrays over job j's options (GPUs >= 1; its utility; remote
    GB/s it needs at that option with nothing cached). dataset[j]: index into ``sizes`` (-1:
    none). required[j]: the job must get an option (a running job is never stopped).
    sizes: dataset sizes (GB). Prices per hour: gpu_price per GPU, cache_price per GB,
    remote_price per GB/s. budget: cost per hour allowed. gpu_cap, cache_cap, pool_cap: limits.
    """

    gpus: tuple[np.ndarray, ...]
    value: tuple[np.ndarray, ...]
    remote: tuple[np.ndarray, ...]
    dataset: np.ndarray
    required: np.ndarray
    sizes: np.ndarray
    gpu_price: float
    cache_price: float
    remote_price: float
    budget: float
    gpu_cap: float
    cache_cap: float
    pool_cap: float
    at_least_one: bool = False


@dataclass(frozen=True)
class AutoCBASolution:
    """Chosen option per job (-1: none), cached datasets, welfare, cost per hour, how solved."""

    choice: np.ndarray
    cached: np.ndarray
    welfare: float
    cost: float
    method: str
    seconds: float = 0.0


def _evaluate(
    p: AutoCBAProblem, choice: np.ndarray, cached: np.ndarray
) -> tuple[float, float, bool]:
    """(welfare, cost per hour, feasible) of a choice and cache set."""
    welfare = cost = gpus = pool = 0.0
    if p.at_least_one and not np.any(choice >= 0):
        return -math.inf, math.inf, False
    for j, o in enumerate(choice):
        if o < 0:
            if p.required[j]:
                return -math.inf, math.inf, False
            continue
        welfare += float(p.value[j][o])
        g = float(p.gpus[j][o])
        gpus += g
        cost += p.gpu_price * g
        k = p.dataset[j]
        if k < 0 or not cached[k]:
            r = float(p.remote[j][o])
            pool += r
            cost += p.remote_price * r
    cache = float(np.sum(p.sizes[cached]))
    cost += p.cache_price * cache
    tol = 1e-9
    ok = (
        cost <= p.budget * (1 + tol) + tol
        and gpus <= p.gpu_cap + tol
        and cache <= p.cache_cap * (1 + tol) + tol
        and pool <= p.pool_cap * (1 + tol) + tol
    )
    return welfare, cost, ok


def _greedy_for_cache(p: AutoCBAProblem, cached: np.ndarray) -> tuple[np.ndarray, float] | None:
    """Greedy options for a fixed cache set: required jobs at their cheapest, then the best
    utility per normalised resource, increments along each job's upper hull; None: infeasible."""
    n = len(p.gpus)
    cache_cost = p.cache_price * float(np.sum(p.sizes[cached]))
    left = np.array([p.budget - cache_cost, p.gpu_cap, p.pool_cap], dtype=float)
    if left[0] < -1e-9:
        return None
    uses = []
    for j in range(n):
        k = p.dataset[j]
        remote = p.remote[j] if (k < 0 or not cached[k]) else np.zeros_like(p.remote[j])
        cost = p.gpu_price * p.gpus[j] + p.remote_price * remote
        uses.append(np.stack([cost, p.gpus[j].astype(float), remote], axis=1))
    choice = np.full(n, -1, dtype=np.int64)
    for jr in np.flatnonzero(p.required):
        o = int(np.argmin(uses[jr][:, 0]))
        choice[jr] = o
        left -= uses[jr][o]
    if p.at_least_one and not p.required.any() and n:
        # the cheapest single start that fits, the rest as usual
        fits = [
            (float(uses[j][o][0]), j, o)
            for j in range(n)
            for o in range(len(uses[j]))
            if np.all(uses[j][o] <= left + 1e-9 * np.maximum(1.0, np.abs(left)))
        ]
        if not fits:
            return None
        _, j0, o0 = min(fits)
        choice[j0] = o0
        left -= uses[j0][o0]
    if np.any(left < -1e-9 * np.maximum(1.0, np.abs(left))):
        return None
    scale = 1.0 / np.maximum(np.where(np.isfinite(left), left, 0.0), 1e-12)
    scale[~np.isfinite(left)] = 0.0
    # Increments along each job's upper concave hull of (weighted use, value).
    steps: list[tuple[float, int, int]] = []
    for j in range(n):
        start = int(choice[j])
        base_u = 0.0 if start < 0 else float(p.value[j][start])
        base_w = 0.0 if start < 0 else float(uses[j][start] @ scale)
        ws = uses[j] @ scale
        cur, cw, cu = start, base_w, base_u
        while True:
            best, best_eff = -1, 0.0
            for o in range(len(ws)):
                du, dw = float(p.value[j][o]) - cu, float(ws[o]) - cw
                if du <= 0:
                    continue
                eff = du / dw if dw > 1e-15 else math.inf
                if eff > best_eff or (eff == best_eff and best >= 0 and ws[o] < ws[best]):
                    best, best_eff = o, eff
            if best < 0:
                break
            steps.append((-best_eff, j, best))
            cur, cw, cu = best, float(ws[best]), float(p.value[j][best])
    steps.sort()
    blocked = np.zeros(n, dtype=bool)
    for _, j, o in steps:
        if blocked[j]:
            continue
        cur = int(choice[j])
        delta = uses[j][o] - (uses[j][cur] if cur >= 0 else 0.0)
        if np.all(delta <= left + 1e-9 * np.maximum(1.0, np.abs(left))):
            choice[j] = o
            left -= delta
        else:
            blocked[j] = True  # later hull steps of this job build on this one
    # Fill: one pass, largest possible gain first, each job to its best option that still fits.
    gains = [
        float(np.max(p.value[j])) - (float(p.value[j][c]) if c >= 0 else 0.0)
        for j, c in enumerate(choice)
    ]
    for j in np.argsort(-np.array(gains), kind="stable"):
        cur = int(choice[j])
        held = uses[j][cur] if cur >= 0 else 0.0
        cu = float(p.value[j][cur]) if cur >= 0 else 0.0
        for o in np.argsort(-p.value[j], kind="stable"):
            if float(p.value[j][o]) <= cu + 1e-12:
                break
            delta = uses[j][o] - held
            if np.all(delta <= left + 1e-9 * np.maximum(1.0, np.abs(left))):
                choice[j] = o
                left -= delta
                break
    welfare = sum(float(p.value[j][o]) for j, o in enumerate(choice) if o >= 0)
    return choice, welfare


def autocba_greedy(p: AutoCBAProblem) -> AutoCBASolution:
    """Greedy AutoCBA: datasets in order of the remote cost their caching saves per GB (at each
    job's largest option), each kept if the greedy jobs' welfare grows with it cached."""
    t0 = time.perf_counter()
    k = len(p.sizes)
    saved = np.zeros(k)
    for j, d in enumerate(p.dataset):
        if d >= 0:
            saved[d] += p.remote_price * float(np.max(p.remote[j]))
    order = np.argsort(-(saved - p.cache_price * p.sizes) / p.sizes, kind="stable")
    cached = np.zeros(k, dtype=bool)
    best = _greedy_for_cache(p, cached)
    for i in order:
        if saved[i] <= 0:
            continue
        trial = cached.copy()
        trial[i] = True
        if float(np.sum(p.sizes[trial])) > p.cache_cap * (1 + 1e-9) + 1e-9:
            continue
        got = _greedy_for_cache(p, trial)
        if got is not None and (best is None or got[1] > best[1] + 1e-12):
            cached, best = trial, got
    if best is None:
        raise InvalidInput(_below_minimum(p))
    choice = best[0]
    welfare, cost, _ = _evaluate(p, choice, cached)
    return AutoCBASolution(choice, cached, welfare, cost, "greedy", time.perf_counter() - t0)


def _program(p: AutoCBAProblem, objective: str = "welfare"):
    """The 0/1 program: columns (job, option, cached?) then one per dataset; rows as documented."""
    n, k = len(p.gpus), len(p.sizes)
    cols: list[tuple[int, int, int]] = []
    for j in range(n):
        for o in range(len(p.gpus[j])):
            cols.append((j, o, 0))
            if p.dataset[j] >= 0:
                cols.append((j, o, 1))
    m = len(cols) + k
    value = np.zeros(m)
    rows_i: list[int] = []
    rows_j: list[int] = []
    data: list[float] = []
    lo: list[float] = []
    hi: list[float] = []
    budget_row, gpu_row, cache_row, pool_row = 0, 1, 2, 3
    lo += [-math.inf] * 4
    hi += [p.budget, p.gpu_cap, p.cache_cap, p.pool_cap]
    cost = np.zeros(m)
    for c, (j, o, via_cache) in enumerate(cols):
        g = float(p.gpus[j][o])
        r = 0.0 if via_cache else float(p.remote[j][o])
        value[c] = float(p.value[j][o])
        cost[c] = p.gpu_price * g + p.remote_price * r
        rows_i += [budget_row, gpu_row]
        rows_j += [c, c]
        data += [cost[c], g]
        if r > 0:
            rows_i.append(pool_row)
            rows_j.append(c)
            data.append(r)
    for i in range(k):
        c = len(cols) + i
        cost[c] = p.cache_price * float(p.sizes[i])
        rows_i += [budget_row, cache_row]
        rows_j += [c, c]
        data += [cost[c], float(p.sizes[i])]
    row = 4
    by_job: dict[int, list[int]] = {}
    for c, (j, _, via_cache) in enumerate(cols):
        by_job.setdefault(j, []).append(c)
        if via_cache:  # a cached option needs its dataset cached
            rows_i += [row, row]
            rows_j += [c, len(cols) + int(p.dataset[j])]
            data += [1.0, -1.0]
            lo.append(-math.inf)
            hi.append(0.0)
            row += 1
    for j in range(n):
        for c in by_job.get(j, []):
            rows_i.append(row)
            rows_j.append(c)
            data.append(1.0)
        lo.append(1.0 if p.required[j] else -math.inf)
        hi.append(1.0)
        row += 1
    if p.at_least_one:
        for c in range(len(cols)):
            rows_i.append(row)
            rows_j.append(c)
            data.append(1.0)
        lo.append(1.0)
        hi.append(math.inf)
        row += 1
    a = sp.csr_matrix((data, (rows_i, rows_j)), shape=(row, m))
    hi_arr = np.array(hi, dtype=float)
    return cols, (value if objective == "welfare" else -cost), a, np.array(lo), hi_arr, cost


def _decode(p: AutoCBAProblem, cols, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    choice = np.full(len(p.gpus), -1, dtype=np.int64)
    for c, (j, o, _) in enumerate(cols):
        if x[c] > 0.5:
            choice[j] = o
    cached = x[len(cols) :] > 0.5
    return choice, cached


def minimum_cost(p: AutoCBAProblem) -> float:
    """The cheapest cost per hour at which every required job gets an option (the 0/1 program)."""
    relaxed = replace(p, budget=math.inf)
    _, c, a, lo, hi, _ = _program(relaxed, objective="cost")
    res = solve_binary(c, a, lo, np.where(np.isfinite(hi), hi, 1e30))
    if res.x is None:
        return math.inf
    return -float(res.objective)


def _below_minimum(p: AutoCBAProblem) -> str:
    low = minimum_cost(p)
    if math.isinf(low):
        return "autocba: no allocation of the jobs fits the GPU, cache and pool limits"
    return (
        f"autocba budget must be at least the cheapest feasible allocation, {low:.6g} per hour; "
        f"got {p.budget:g}"
    )


def autocba_bound(p: AutoCBAProblem) -> float:
    """An upper bound on AutoCBA's optimum welfare: the LP relaxation of its 0/1 program (x in
    [0, 1]); (bound - welfare) / bound certifies any solution's gap."""
    from scipy.optimize import Bounds, LinearConstraint, milp

    _, c, a, lo, hi, _ = _program(p)
    res = milp(
        -c,
        constraints=LinearConstraint(a, lo, hi),
        bounds=Bounds(0.0, 1.0),
        integrality=np.zeros(len(c)),
    )
    if res.x is None:  # the relaxation is infeasible, so is the program
        raise InvalidInput(_below_minimum(p))
    return -float(res.fun)


def autocba_exact(
    p: AutoCBAProblem, *, mip_gap: float = 0.0, time_limit: float | None = None, start=None
) -> AutoCBASolution:
    """AutoCBA's 0/1 program solved by HiGHS (``mip_gap`` 0: the exact optimum)."""
    t0 = time.perf_counter()
    cols, c, a, lo, hi, _ = _program(p)
    x0 = None
    if start is not None:
        choice, cached = start
        x0 = np.zeros(a.shape[1])
        for i, (j, o, via_cache) in enumerate(cols):
            if choice[j] == o and bool(via_cache) == bool(
                p.dataset[j] >= 0 and cached[p.dataset[j]]
            ):
                x0[i] = 1.0
        x0[len(cols) :] = cached
    res = solve_binary(
        c,
        a,
        lo,
        np.where(np.isfinite(hi), hi, 1e30),
        time_limit=time_limit,
        start=x0,
        mip_gap=mip_gap,
    )
    if res.x is None:
        if res.status == "infeasible":
            raise InvalidInput(_below_minimum(p))
        raise InvalidInput("autocba: the solver found no allocation within its time limit")
    choice, cached = _decode(p, cols, res.x)
    welfare, cost, _ = _evaluate(p, choice, cached)
    return AutoCBASolution(
        choice, cached, welfare, cost, f"milp_{res.status}", time.perf_counter() - t0
    )


def autocba_solve(
    p: AutoCBAProblem, *, refine_jobs: int = 40, mip_gap: float = 0.01, time_limit: float = 0.5
) -> AutoCBASolution:
    """The greedy, refined by the 0/1 program (warm-started, ``mip_gap``) when at most
    ``refine_jobs`` jobs decide; the better of the two. When the greedy finds nothing, the
    program alone; when nothing fits the remote pool, the same without the pool (the jobs then
    share it and run IO-bound). Raises InvalidInput naming the minimum when the budget is short."""
    t0 = time.perf_counter()
    try:
        best = autocba_greedy(p)
        if len(p.gpus) <= refine_jobs:
            exact = autocba_exact(
                p, mip_gap=mip_gap, time_limit=time_limit, start=(best.choice, best.cached)
            )
            if exact.welfare > best.welfare + 1e-12:
                best = exact
    except InvalidInput:
        try:
            best = autocba_exact(p, mip_gap=mip_gap, time_limit=max(time_limit, 2.0))
        except InvalidInput:
            if math.isinf(p.pool_cap):
                raise
            best = autocba_solve(
                replace(p, pool_cap=math.inf),
                refine_jobs=refine_jobs,
                mip_gap=mip_gap,
                time_limit=time_limit,
            )
    return replace(best, seconds=time.perf_counter() - t0)
