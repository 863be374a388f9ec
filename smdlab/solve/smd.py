"""SMD: outer job selection (Smith's rule knapsack) and Jong's parametric sum-of-ratios iteration.

The core, ``sum_of_ratios``, works on explicit tables so it can be tested on its own:
    minimise sum_i N_i(c_i) / D_i(c_i)   over one configuration c_i = (w, p) per job,
    subject to sum_i alpha_i w_i + gamma_i p_i <= capacity.
For fixed parameters (beta, u) the subproblem SUB(beta, u) = min sum_i u_i (N_i - beta_i D_i) is a
multiple-choice knapsack; Jong's method drives psi(beta, u) = (-N + beta D, -1 + u D) at the SUB
solution to zero by damped Newton steps. With one job it is Dinkelbach's method.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Literal, get_args

import numpy as np

from smdlab.errors import InvalidInput, check_choice, check_int, check_positive
from smdlab.solve.backends import Backend, FlatModel, solve_flat
from smdlab.solve.instance import Instance, fits, pareto_mask
from smdlab.solve.knapsack import (
    KNAPSACKS,
    Knapsack,
    KnapsackResult,
    knapsack_exact,
    knapsack_greedy,
    knapsack_lp_round,
)
from smdlab.solve.knapsack_hull import HullKnapsack
from smdlab.solve.local_search import defer_search, local_search


@dataclass(frozen=True)
class IterationRecord:
    """One iteration of the parametric method.

    iteration: 0 for the start point, then 1, 2, ...
    psi_norm: ||psi|| at the accepted parameters, relative form (psi_i / N_i and u_i D_i - 1).
    objective: true objective sum_i N_i / D_i of this iteration's allocation.
    knapsack_time_s: seconds spent in knapsack solves during the iteration (Armijo trials included).
    knapsack_solves: number of knapsack solves during the iteration.
    step: accepted Newton step length (1 = full step; 0 for the start point).
    beta, u: the parameters after the iteration.
    """

    iteration: int
    psi_norm: float
    objective: float
    knapsack_time_s: float
    knapsack_solves: int
    step: float
    beta: tuple[float, ...]
    u: tuple[float, ...]


@dataclass(frozen=True)
class RatioResult:
    """Result of ``sum_of_ratios``: the best allocation seen and the iteration trace."""

    workers: np.ndarray
    ps: np.ndarray
    objective: float
    converged: bool
    trace: tuple[IterationRecord, ...]
    best_iteration: int
    backends: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    polish_moves: int | None = None
    polish_time_s: float = 0.0
    unpolished_objective: float | None = None


def _values(table: np.ndarray, w: np.ndarray, p: np.ndarray) -> np.ndarray:
    return table[np.arange(len(w)), w - 1, p - 1]


def sum_of_ratios(
    numer: np.ndarray,
    denom: np.ndarray,
    alpha: np.ndarray,
    gamma: np.ndarray,
    capacity: np.ndarray,
    *,
    knapsack: Knapsack = "hull",
    start: tuple[np.ndarray, np.ndarray] | None = None,
    tol: float = 1e-6,
    max_iter: int = 30,
    xi: float = 0.5,
    eps: float = 0.1,
    max_backtracks: int = 3,
    patience: int = 3,
    backend: Backend = "auto",
    time_limit: float | None = None,
    mask: np.ndarray | None = None,
    polish: bool = True,
) -> RatioResult:
    """Jong's damped-Newton parametric method for min sum_i N_i / D_i over configuration tables.

    numer: (n,) constants or (n, W, P) table of N_i(w, p) > 0.
    denom: (n, W, P) table of D_i(w, p) > 0; entries <= 0 or non-finite mark missing configurations.
    alpha, gamma: (n, K) resource use of one worker / one PS; capacity: (K,).
    knapsack: SUB solver, one of exact, lp_round, greedy.
    start: starting allocation (w, p); default: (1, 1) for every job, then greedy on N / D.
    tol: stop when ||psi|| (relative form) falls below it.
    max_iter: largest number of Newton iterations.
    xi, eps: Armijo parameters (step xi^j, sufficient decrease 1 - eps * xi^j).
    max_backtracks: Armijo trials per iteration; none passing ends the iteration (SUB solutions cycle).
    patience: stop after this many accepted iterations in a row that leave the allocation unchanged
        (with discrete configurations psi then only shrinks geometrically; nothing new is found).
    mask: (n, W, P) undominated configurations when N is constant (dominance by D alone), if known.
    polish: finish with ``local_search`` on the true objective from the best iterate (single-job
        reconfigurations and single-task exchanges until none improves; never worse).
    """
    check_choice("knapsack", knapsack, KNAPSACKS)
    check_positive("tol", tol)
    check_int("max_iter", max_iter, 0, 10_000)
    check_int("patience", patience, 1)
    if not (0 < xi < 1) or not (0 < eps < 1):
        raise InvalidInput(f"xi and eps must lie in (0, 1), got xi={xi!r}, eps={eps!r}")
    denom = np.asarray(denom, dtype=float)
    if denom.ndim != 3:
        raise InvalidInput(f"denom must be an (n, W, P) table, got shape {denom.shape}")
    valid = np.isfinite(denom) & (denom > 0)
    if not valid[:, 0, 0].all():
        raise InvalidInput("denom must be > 0 at (1, 1) for every job")
    n = denom.shape[0]
    numer = np.asarray(numer, dtype=float)
    const_numer = numer.ndim == 1
    N = np.broadcast_to(numer[:, None, None], denom.shape) if const_numer else numer
    if N.shape != denom.shape or np.any(~(N[valid] > 0)):
        raise InvalidInput(
            "numer must be (n,) or shaped like denom, and > 0 wherever denom is valid"
        )
    D = np.where(valid, denom, np.nan)
    ratio = np.where(valid, N / np.where(valid, D, 1.0), np.inf)
    # With constant N the dominance structure of SUB is that of D alone: prune once.
    fixed_mask = None
    if const_numer:
        fixed_mask = mask if mask is not None else pareto_mask(np.where(valid, -D, np.inf))
    capacity = np.asarray(capacity, dtype=float)
    hull = start_hull = None
    if const_numer and knapsack == "hull":
        tables = [np.where(valid, D, -np.inf)] + ([-ratio] if start is None else [])
        hull, *rest = HullKnapsack.several(tables, fixed_mask, alpha, gamma, capacity)
        start_hull = rest[0] if rest else None

    knap_time = 0.0
    knap_solves = 0
    backends: dict[str, None] = {}
    notes: dict[str, None] = {}

    def sub(beta: np.ndarray, u: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        nonlocal knap_time, knap_solves
        t0 = time.perf_counter()
        if hull is not None:  # profits lambda_i * D_i with lambda = u * beta: reuse the hulls of D
            hw, hp = hull.solve(u * beta)
            knap_time += time.perf_counter() - t0
            knap_solves += 1
            backends["numpy"] = None
            return hw, hp
        obj = np.where(
            valid, u[:, None, None] * (N - beta[:, None, None] * np.where(valid, D, 0.0)), np.inf
        )
        # Each job takes exactly one configuration, so a per-job constant changes no decision; measured
        # from (1, 1) the objective is the total gain, not a near-zero difference of large terms
        # (which would make a relative MIP gap unreachable).
        obj = obj - obj[:, :1, :1]
        if knapsack == "exact":
            r: KnapsackResult = knapsack_exact(
                obj,
                alpha,
                gamma,
                capacity,
                backend=backend,
                time_limit=time_limit,
                mip_gap=1e-6,
                mask=fixed_mask,
                warm_start=time_limit
                is not None,  # an incumbent only matters if a limit can stop the solve
            )
        elif knapsack == "lp_round":
            r = knapsack_lp_round(
                obj, alpha, gamma, capacity, backend=backend, time_limit=time_limit, mask=fixed_mask
            )
        elif knapsack == "hull":
            hw, hp = HullKnapsack(-obj, pareto_mask(obj), alpha, gamma, capacity).solve(np.ones(n))
            r = KnapsackResult(hw, hp, float("nan"), -np.inf, "heuristic", "numpy")
        else:
            r = knapsack_greedy(obj, alpha, gamma, capacity)
        knap_time += time.perf_counter() - t0
        knap_solves += 1
        backends[r.backend] = None
        if r.note:
            notes[r.note] = None
        return r.workers, r.ps

    # flat copies: one ``take`` per lookup in the loop below
    W, P = D.shape[1:]
    base_index = np.arange(n) * (W * P) - P - 1
    Nf, Df, Rf = np.ravel(N), D.ravel(), ratio.ravel()

    def psi_of(beta, u, w, p):
        k = base_index + w * P + p
        Nx, Dx = Nf.take(k), Df.take(k)
        return np.concatenate([(beta * Dx - Nx) / Nx, u * Dx - 1.0]), Nx, Dx

    def true_obj(w, p) -> float:
        return float(Rf.take(base_index + w * P + p).sum())

    if start is None:
        t0 = time.perf_counter()
        if start_hull is not None:  # marginal gains of N / D itself, by the same hull greedy
            w, p = start_hull.solve(np.ones(n))
        elif knapsack == "hull":
            w, p = HullKnapsack(-ratio, pareto_mask(ratio), alpha, gamma, capacity).solve(
                np.ones(n)
            )
        else:
            g = knapsack_greedy(ratio, alpha, gamma, capacity)
            w, p = g.workers, g.ps
        knap_time += time.perf_counter() - t0
        knap_solves += 1
    else:
        w, p = np.asarray(start[0], dtype=int), np.asarray(start[1], dtype=int)
    Nx, Dx = _values(N, w, p), _values(D, w, p)
    beta, u = Nx / Dx, 1.0 / Dx
    best = (true_obj(w, p), w, p, 0)
    # The start point's own SUB solution defines psi at (beta0, u0).
    w, p = sub(beta, u)
    psi, Nx, Dx = psi_of(beta, u, w, p)
    norm = float(np.linalg.norm(psi))
    obj_now = true_obj(w, p)
    if obj_now < best[0]:
        best = (obj_now, w, p, 0)
    trace = [IterationRecord(0, norm, obj_now, knap_time, knap_solves, 0.0, tuple(beta), tuple(u))]
    converged = norm < tol
    unchanged = 0
    for k in range(1, max_iter + 1):
        if converged:
            break
        knap_time, knap_solves = 0.0, 0
        d_beta, d_u = Nx / Dx - beta, 1.0 / Dx - u  # Newton direction (Jacobian diag(D(x), D(x)))
        step = 1.0
        accepted = None
        for _ in range(max_backtracks + 1):
            b2, u2 = beta + step * d_beta, u + step * d_u
            w2, p2 = sub(b2, u2)
            psi2, N2, D2 = psi_of(b2, u2, w2, p2)
            n2 = float(np.linalg.norm(psi2))
            o2 = true_obj(w2, p2)
            if o2 < best[0]:
                best = (o2, w2, p2, k)
            if n2 <= (1 - eps * step) * norm:
                accepted = (b2, u2, w2, p2, N2, D2, n2, o2)
                break
            step *= xi
        if accepted is None:
            # no sufficient decrease: the discrete SUB solutions cycle; keep the best iterate
            trace.append(
                IterationRecord(k, n2, o2, knap_time, knap_solves, 0.0, tuple(beta), tuple(u))
            )
            break
        same = np.array_equal(accepted[2], w) and np.array_equal(accepted[3], p)
        beta, u, w, p, Nx, Dx, norm, obj_now = accepted
        trace.append(
            IterationRecord(k, norm, obj_now, knap_time, knap_solves, step, tuple(beta), tuple(u))
        )
        converged = norm < tol
        unchanged = unchanged + 1 if same else 0
        if unchanged >= patience:
            break
    moves, polish_time, unpolished = None, 0.0, None
    if polish:
        t0 = time.perf_counter()
        unpolished = best[0]
        pmask = fixed_mask if fixed_mask is not None else pareto_mask(ratio)
        pw, pp, moves = local_search(ratio, pmask, alpha, gamma, capacity, best[1], best[2])
        obj = true_obj(pw, pp)
        if obj < best[0]:
            best = (obj, pw, pp, best[3])
        polish_time = time.perf_counter() - t0
    return RatioResult(
        best[1],
        best[2],
        best[0],
        converged,
        tuple(trace),
        best[3],
        tuple(backends),
        tuple(notes),
        moves,
        polish_time,
        unpolished,
    )


Selection = Literal["objective", "smith"]
SELECTIONS: tuple[Selection, ...] = get_args(Selection)


def _most_profitable_per_demand(
    idx: np.ndarray, profit: np.ndarray, use: np.ndarray, capacity: np.ndarray
) -> np.ndarray:
    """The candidates ``idx`` that an optimal selection needs: per distinct (1, 1) demand, the most profitable ones that fit together.

    Jobs with equal demand are interchangeable in the knapsack, so an optimal selection takes the
    most profitable of them (ties: the earlier job), and at most as many as fit in ``capacity``
    at once; the rest can be dropped without changing the optimum. Long queues of look-alike
    jobs (traces) shrink to a handful of candidates.
    """
    u = use[idx]
    # by demand (columns), then profit (desc), then job: equal demands end up next to each other
    order = np.lexsort((idx, -profit[idx], *u.T[::-1]))
    us = u[order]
    new = np.r_[True, np.any(us[1:] != us[:-1], axis=1)]
    first = np.flatnonzero(new)
    rank = np.arange(order.size) - np.repeat(first, np.diff(np.r_[first, order.size]))
    pos = u > 0
    with np.errstate(divide="ignore", invalid="ignore"):
        per = np.where(
            pos,
            np.floor((capacity + 1e-9 * np.maximum(1, capacity)) / np.where(pos, u, 1.0)),
            np.inf,
        )
    limit = per.min(
        axis=1
    )  # how many of the job's demand fit at once (inf for a job that needs nothing)
    keep = rank < limit[order]
    return np.sort(idx[order[keep]])


UNIT_SELECTION_JOBS = 100  # the second candidate selection pays on small instances only
SLACK_JOBS = 0  # above this many jobs, a slack capacity gives every job its fastest configuration
LP_SELECTION_COLUMNS = (
    4000  # above this many configuration columns the LP costs more than SMD itself
)


def efficiency_selection(inst: Instance) -> np.ndarray:
    """Jobs by decreasing gain over waiting per priced resource, each at its most efficient configuration, while they fit.

    A job's efficiency is max over configurations c of (defer_i - omega_i d_i(c)) / size_i(c),
    size = sum_r use_r(c) * price_r with price_r = load_r / capacity_r and load_r the jobs'
    total use of resource r at their reference configurations over the capacity (scarce
    resources cost more). Jobs are taken in that order at that configuration if it fits the
    capacity left.
    """
    cap = inst.capacity
    scale = np.where(cap > 0, cap, 1.0)
    rw, rp = inst.reference
    load = (rw @ inst.alpha + rp @ inst.gamma) / scale
    price = np.maximum(load, 1e-3) / scale
    W, P = inst.duration.shape[1:]
    size = (inst.alpha @ price)[:, None, None] * np.arange(1, W + 1)[None, :, None] + (
        inst.gamma @ price
    )[:, None, None] * np.arange(1, P + 1)[None, None, :]
    gain = inst.defer_cost[:, None, None] - inst.cost
    ok = inst.pareto & (gain > 0) & inst.fits_alone
    with np.errstate(divide="ignore", invalid="ignore"):
        eff = np.where(ok, gain / np.maximum(size, 1e-300), -np.inf).reshape(inst.n, -1)
    k = np.argmax(eff, axis=1)
    best = eff[np.arange(inst.n), k]
    chosen = np.zeros(inst.n, dtype=bool)
    left = cap + 1e-9 * np.maximum(1.0, np.abs(cap))
    wk, pk = k // P + 1, k % P + 1
    use = inst.alpha * wk[:, None] + inst.gamma * pk[:, None]
    order = np.argsort(-best, kind="stable")
    order = order[np.isfinite(best[order])]
    # one job at a time on Python floats: the same sums in the same order as array arithmetic
    rows, room = use[order].tolist(), left.tolist()
    K = len(room)
    for i, row in zip(order.tolist(), rows):
        if all(row[r] <= room[r] for r in range(K)):
            for r in range(K):
                room[r] -= row[r]
            chosen[i] = True
    return chosen


def select_jobs(
    inst: Instance,
    *,
    rule: str = "objective",
    backend: Backend = "auto",
    time_limit: float | None = None,
) -> tuple[np.ndarray, str]:
    """Outer selection (6.3): which jobs start now.

    rule: ``objective`` (default): the jobs the rounded LP relaxation of (P) starts (the
        objective the MILP solves, deferral charge included; above ``LP_SELECTION_COLUMNS``
        configuration columns ``efficiency_selection`` instead); every job when all fit at
        their reference configurations at once. ``smith`` (the specification's rule): a 0/1 knapsack
        over the (1, 1) demands with profit omega_i / d_i(1, 1) (weighted shortest first); every
        job when all fit at (1, 1).
    Returns (mask of selected jobs, note).
    """
    check_choice("selection", rule, SELECTIONS)
    chosen = np.zeros(inst.n, dtype=bool)
    if rule == "objective":
        rw, rp = inst.reference
        if fits(rw @ inst.alpha + rp @ inst.gamma, inst.capacity):
            return np.ones(inst.n, dtype=bool), ""
        if int(inst.pareto.sum()) <= LP_SELECTION_COLUMNS:
            r = knapsack_lp_round(
                inst.cost, inst.alpha, inst.gamma, inst.capacity, inst.defer_cost,
                backend=backend, time_limit=time_limit, mask=inst.pareto, fill=False,
            )  # fmt: skip
            return r.workers > 0, r.note
        return efficiency_selection(inst), ""
    if fits(inst.base_use.sum(axis=0), inst.capacity) or not inst.allow_defer:
        return np.ones(inst.n, dtype=bool), ""
    profit = inst.weight / inst.base_duration
    fit_alone = np.all(inst.base_use <= inst.capacity + 1e-9 * np.maximum(1, inst.capacity), axis=1)
    idx = np.flatnonzero(fit_alone)
    if idx.size == 0:
        return chosen, "no job fits at (1, 1) in the capacity"
    idx = _most_profitable_per_demand(idx, profit, inst.base_use, inst.capacity)
    if fits(inst.base_use[idx].sum(axis=0), inst.capacity):  # profits are > 0: take every candidate
        chosen[idx] = True
        return chosen, ""
    # normalise so the objective has a sane scale for the MILP tolerances
    scale = profit[idx].max()
    model = FlatModel(
        -profit[idx] / scale,
        inst.base_use[idx],
        np.arange(idx.size),
        idx.size,
        inst.capacity,
        eq=False,
    )
    res = solve_flat(model, integral=True, backend=backend, time_limit=time_limit, mip_gap=1e-9)
    chosen[idx[res.x > 0.5]] = True
    note = res.note
    if res.status != "optimal":
        note = (note + "; " if note else "") + "outer selection stopped at its time limit"
    return chosen, note


@dataclass(frozen=True)
class SmdResult:
    """Allocation of all jobs by SMD, with selection and iteration details."""

    workers: np.ndarray
    ps: np.ndarray
    selected: np.ndarray
    ratio: RatioResult | None
    note: str


def _unit_selection(
    inst: Instance, backend: Backend, time_limit: float | None
) -> tuple[np.ndarray, str]:
    """The 0/1 knapsack over the (1, 1) demands with profit defer_i - omega_i d_i(1, 1) (> 0 only)."""
    profit = inst.defer_cost - inst.weight * inst.base_duration
    fit_alone = np.all(inst.base_use <= inst.capacity + 1e-9 * np.maximum(1, inst.capacity), axis=1)
    idx = np.flatnonzero(fit_alone & (profit > 0))
    chosen = np.zeros(inst.n, dtype=bool)
    if idx.size == 0:
        return chosen, ""
    idx = _most_profitable_per_demand(idx, profit, inst.base_use, inst.capacity)
    if fits(inst.base_use[idx].sum(axis=0), inst.capacity):
        chosen[idx] = True
        return chosen, ""
    model = FlatModel(
        -profit[idx] / profit[idx].max(), inst.base_use[idx], np.arange(idx.size), idx.size,
        inst.capacity, eq=False,
    )  # fmt: skip
    res = solve_flat(model, integral=True, backend=backend, time_limit=time_limit, mip_gap=1e-9)
    chosen[idx[res.x > 0.5]] = True
    return chosen, res.note


def takes_fastest(n: int, use: np.ndarray, capacity: np.ndarray) -> bool:
    """Whether ``smd`` gives each of ``n`` jobs its fastest configuration, ``use`` being their sum.

    Capacity slack: above ``SLACK_JOBS`` jobs, when every job's fastest configuration fits at
    once, that allocation is an optimum of (P) (each job's term is at its minimum, and starting
    never costs more than waiting: omega d(c*) <= omega d(r) <= omega (H + d(r))).
    """
    return n > SLACK_JOBS and bool(fits(use, capacity))


def smd(
    inst: Instance,
    *,
    knapsack: Knapsack = "hull",
    selection: Selection = "objective",
    tol: float = 1e-6,
    max_iter: int = 30,
    backend: Backend = "auto",
    time_limit: float | None = None,
    polish: bool = True,
) -> SmdResult:
    """SMD on an instance: select the jobs to start, then Jong's iteration on their speeds (then local searches).

    With ``selection="objective"`` and at most ``UNIT_SELECTION_JOBS`` jobs, a second candidate
    selection, the 0/1 knapsack over the jobs' (1, 1) demands with profit
    defer_i - omega_i d_i(1, 1), is allocated the same way and the better of the two
    allocations is kept. With ``polish``, after the iteration's own
    local search, ``defer_search`` may start, stop or exchange jobs where that lowers the
    objective of (P) (deferral charge included); with ``selection="smith"`` the selection is
    kept as the rule made it. Above ``SLACK_JOBS`` jobs (0: always), when every job's fastest
    configuration fits the capacity at once, that allocation (an optimum of (P)) is returned
    without iterating.
    """
    if inst.n > SLACK_JOBS:
        fw, fp = inst.fastest
        if takes_fastest(inst.n, fw @ inst.alpha + fp @ inst.gamma, inst.capacity):
            return SmdResult(fw, fp, np.ones(inst.n, dtype=bool), None, "")
    selected, note = select_jobs(inst, rule=selection, backend=backend, time_limit=time_limit)
    kw: dict[str, Any] = dict(knapsack=knapsack, tol=tol, max_iter=max_iter, backend=backend,
              time_limit=time_limit, polish=polish)  # fmt: skip
    best = _allocate(inst, selected, search=selection == "objective", **kw)
    if (
        selection == "objective"
        and inst.allow_defer
        and not selected.all()
        and inst.n <= UNIT_SELECTION_JOBS
    ):
        unit, unit_note = _unit_selection(inst, backend, time_limit)
        if unit.any() and not np.array_equal(unit, selected):
            other = _allocate(inst, unit, search=True, **kw)
            if inst.objective(other[0], other[1]) < inst.objective(best[0], best[1]) * (1 - 1e-12):
                best, selected = other, unit
                note = unit_note
    w, p, r, extra = best
    note = "; ".join(x for x in (note, extra) if x)
    return SmdResult(w, p, selected, r, note)


def _allocate(inst: Instance, selected: np.ndarray, *, search: bool, knapsack: Knapsack, tol: float,
              max_iter: int, backend: Backend, time_limit: float | None, polish: bool):  # fmt: skip
    """(w, p, RatioResult or None, note): Jong's iteration on the ``selected`` jobs, then (``search`` and ``polish``) ``defer_search``."""
    w = np.zeros(inst.n, dtype=int)
    p = np.zeros(inst.n, dtype=int)
    idx = np.flatnonzero(selected)
    r = None
    if idx.size:
        sub = inst.subset(idx)  # grids of the selected jobs only (cropped to their caps)
        r = sum_of_ratios(
            sub.weight * sub.samples,
            sub.speed,
            sub.alpha,
            sub.gamma,
            inst.capacity,
            knapsack=knapsack,
            tol=tol,
            max_iter=max_iter,
            backend=backend,
            time_limit=time_limit,
            mask=sub.pareto,  # cost = omega W / S per job: the same dominance as the speeds
            polish=polish,
        )
        w[idx] = r.workers
        p[idx] = r.ps
    note = ""
    if polish and search and inst.allow_defer:
        before = inst.objective(w, p)
        w, p, moves = defer_search(
            inst.cost, inst.pareto, inst.defer_cost, inst.alpha, inst.gamma, inst.capacity, w, p
        )
        if moves:
            note = (
                f"defer search: {moves} start/stop move(s), objective "
                f"{before:.6g} -> {inst.objective(w, p):.6g}"
            )
    return w, p, r, note
