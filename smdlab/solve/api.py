"""``solve``: one entry point for every allocation method of the reconstructed SMD model."""

from __future__ import annotations

import math
import time
from collections.abc import Mapping, Sequence
from types import MappingProxyType

import numpy as np

from smdlab.errors import Infeasible, InvalidInput, check_choice, check_int, check_positive
from smdlab.model.cluster import Cluster
from smdlab.model.job import Job
from smdlab.solve.backends import BACKENDS
from smdlab.solve.brute import brute_force
from smdlab.solve.instance import Instance, as_amounts, build_instance, check_cluster, fits
from smdlab.solve.knapsack import KNAPSACKS, knapsack_exact, knapsack_lp, knapsack_lp_round
from smdlab.solve.placement import TOL as PLACE_TOL
from smdlab.solve.shrink_placement import place_checked
from smdlab.solve.smd import SELECTIONS, smd as smd_run
from smdlab.solve.solution import Solution

METHODS = ("smd", "milp", "lp", "lp_round", "brute")
DEFAULT_KNAPSACK = "hull"
DEFAULT_MILP_TIME_LIMIT = 60.0
DEFAULT_MIP_GAP = 1e-6

SOLVE_OPTIONS: Mapping[str, frozenset[str]] = MappingProxyType(
    {
        "milp": frozenset({"backend", "time_limit", "mip_gap"}),
        "lp": frozenset({"backend", "time_limit"}),
        "lp_round": frozenset({"backend", "time_limit"}),
        "smd": frozenset(
            {"backend", "time_limit", "knapsack", "selection", "tol", "max_iter", "bound", "polish"}
        ),
        "brute": frozenset(),
    }
)
"""The keyword options ``solve`` accepts for each method (read-only)."""


def _capacity(cluster: Cluster, free) -> np.ndarray:
    if free is None:
        return cluster.capacity_vector
    K = len(cluster.resources)
    shape = f"({len(cluster.machines)}, {K})" if cluster.has_machines else f"({K},)"
    arr = as_amounts("free", free, shape)
    if cluster.has_machines and arr.shape == (len(cluster.machines), K):
        if np.any(~np.isfinite(arr)) or np.any(arr < -PLACE_TOL):
            raise InvalidInput(
                f"free must be a finite (machines x resources) = {shape} matrix >= 0, got {free!r:.80}"
            )
        return arr.sum(axis=0)
    if arr.shape == (K,):
        if cluster.has_machines:
            raise InvalidInput(
                f"free must be a (machines x resources) = ({len(cluster.machines)}, {K}) matrix for a cluster with machines, got shape {arr.shape}"
            )
        return arr
    raise InvalidInput(
        f"free must have shape ({len(cluster.machines)}, {K}) or ({K},), got {arr.shape}"
    )


def _check_jobs_fit_cluster(inst: Instance, cluster: Cluster) -> None:
    total = cluster.capacity_vector
    too_big = ~np.asarray(fits(inst.base_use, total))
    if too_big.any():
        i = int(np.argmax(too_big))
        r = int(np.argmax(inst.base_use[i] - total))
        raise Infeasible(
            f"job {inst.jobs[i].name!r} needs {inst.base_use[i][r]:g} {inst.resources[r]} at (1 worker, 1 PS), "
            f"more than the whole cluster's {total[r]:g}"
        )


def solve(
    jobs: Sequence[Job],
    cluster: Cluster,
    method: str = "smd",
    *,
    mode: str = "wfbp",
    place: bool | None = None,
    free: np.ndarray | None = None,
    work: Sequence[float] | np.ndarray | None = None,
    **options,
) -> Solution:
    """Allocate workers and PSs to ``jobs`` on ``cluster`` (free capacity ``free``) by ``method``.

    method: smd (default), milp, lp, lp_round or brute; see docs/solver.md.
    mode: timing overlap mode (sequential, wfbp, wfbp_prefetch).
    place: place the allocation on machines (default: when the cluster has machines).
    free: free capacity, (machines x resources) or, for a pooled cluster, (resources,); default all.
    work: samples each job processes instead of its ``samples`` (a scheduler's remaining work,
        without copying its jobs); default: the jobs' own.
    options: backend (auto|highs|gurobi), time_limit (s), mip_gap (milp); for smd: knapsack
        (hull|exact|lp_round|greedy), selection (objective|smith), tol, max_iter, bound (compute the
        LP lower bound, default True), polish (finish with a local search, default True).
    """
    t0 = time.perf_counter()
    check_cluster(cluster)  # jobs are checked by build_instance below, before any use
    check_choice("method", method, METHODS)
    unknown = set(options) - SOLVE_OPTIONS[method]
    if unknown:
        allowed = ", ".join(sorted(SOLVE_OPTIONS[method])) or "none"
        raise InvalidInput(
            f"option {sorted(unknown)[0]!r} does not apply to method {method!r}; allowed: {allowed}"
        )
    backend = check_choice("backend", options.get("backend", "auto"), BACKENDS)
    time_limit = options.get("time_limit", DEFAULT_MILP_TIME_LIMIT if method == "milp" else None)
    if time_limit is not None:
        time_limit = check_positive("time_limit", time_limit)
    if place is None:
        place = cluster.has_machines and method != "lp"
    elif not isinstance(place, bool):
        raise InvalidInput(f"place must be True, False or None, got {place!r}")
    elif place and not cluster.has_machines:
        raise InvalidInput("place=True needs a cluster with machines (this cluster is pooled)")
    elif place and method == "lp":
        raise InvalidInput("place=True does not apply to method 'lp' (its solution is fractional)")
    capacity = _capacity(cluster, free)
    inst = build_instance(jobs, cluster, capacity, mode, work)
    _check_jobs_fit_cluster(inst, cluster)
    defer = inst.defer_cost if inst.allow_defer else None

    extra: dict = {}
    notes: list[str] = []
    if method == "milp":
        mip_gap = options.get("mip_gap", DEFAULT_MIP_GAP)
        mip_gap = check_positive("mip_gap", mip_gap, allow_zero=True)
        r = knapsack_exact(
            inst.cost, inst.alpha, inst.gamma, inst.capacity, defer,
            backend=backend, time_limit=time_limit, mip_gap=mip_gap, mask=inst.pareto,
        )  # fmt: skip
        w, p, lower, status, backends = r.workers, r.ps, r.bound, r.status, [r.backend]
        notes.append(r.note)
        if status == "time_limit":
            notes.append(
                f"MILP stopped at time_limit={time_limit:g} s: incumbent and bound reported"
            )
    elif method == "lp":
        r = knapsack_lp(
            inst.cost,
            inst.alpha,
            inst.gamma,
            inst.capacity,
            defer,
            backend=backend,
            time_limit=time_limit,
            mask=inst.pareto,
        )
        frac: list[list[tuple[int, int, float]]] = [[] for _ in range(inst.n)]
        for (j, cw, cp), v in zip(r.lp_cols, r.lp_x):
            if v > 1e-9:
                frac[j].append((int(cw), int(cp), float(v)))
        w = np.zeros(inst.n, dtype=int)
        p = np.zeros(inst.n, dtype=int)
        for j, entries in enumerate(frac):
            share = sum(e[2] for e in entries)
            if entries and (defer is None or share >= 0.5):
                top = max(entries, key=lambda e: e[2])
                w[j], p[j] = top[0], top[1]
        extra["fractional"] = tuple(tuple(sorted(e)) for e in frac)
        lower, status, backends = r.bound, "relaxation", [r.backend]
        notes.append(r.note)
        if r.fractional_jobs:
            notes.append(f"{len(r.fractional_jobs)} job(s) fractional in the LP")
    elif method == "lp_round":
        r = knapsack_lp_round(
            inst.cost,
            inst.alpha,
            inst.gamma,
            inst.capacity,
            defer,
            backend=backend,
            time_limit=time_limit,
            mask=inst.pareto,
        )
        w, p, lower, status, backends = r.workers, r.ps, r.bound, "heuristic", [r.backend]
        extra["rounding_bound"] = r.rounding_bound
        notes.append(r.note)
        notes.append(
            f"{len(r.fractional_jobs)} job(s) fractional in the LP, rounded (additive bound {r.rounding_bound:.6g})"
        )
    elif method == "smd":
        knapsack = check_choice("knapsack", options.get("knapsack", DEFAULT_KNAPSACK), KNAPSACKS)
        tol = check_positive("tol", options.get("tol", 1e-6))
        max_iter = check_int("max_iter", options.get("max_iter", 30), 0, 10_000)
        want_bound = options.get("bound", True)
        if not isinstance(want_bound, bool):
            raise InvalidInput(f"bound must be True or False, got {want_bound!r}")
        selection = check_choice("selection", options.get("selection", "objective"), SELECTIONS)
        polish = options.get("polish", True)
        if not isinstance(polish, bool):
            raise InvalidInput(f"polish must be True or False, got {polish!r}")
        s = smd_run(
            inst, knapsack=knapsack, selection=selection, tol=tol, max_iter=max_iter, backend=backend,
            time_limit=time_limit, polish=polish,
        )  # fmt: skip
        w, p = s.workers, s.ps
        backends = list(s.ratio.backends) if s.ratio else []
        notes.append(s.note)
        if s.ratio:
            notes.extend(s.ratio.notes)
            extra.update(
                trace=s.ratio.trace, converged=s.ratio.converged, polish_moves=s.ratio.polish_moves
            )
            before = s.ratio.unpolished_objective
            if s.ratio.polish_moves and before is not None:
                gain = (before - s.ratio.objective) / before
                notes.append(
                    f"polish: {s.ratio.polish_moves} move(s) lowered the objective by {gain:.3g} (relative)"
                )
        extra["knapsack"] = knapsack
        extra["selected"] = tuple(bool(x) for x in s.selected)
        lower = -math.inf
        if want_bound:
            lb = knapsack_lp(
                inst.cost,
                inst.alpha,
                inst.gamma,
                inst.capacity,
                defer,
                backend=backend,
                time_limit=time_limit,
                mask=inst.pareto,
            )
            lower = lb.bound
            backends.append(lb.backend)
            notes.append(lb.note)
        status = "heuristic"
    else:  # brute
        w, p, value = brute_force(inst)
        lower, status, backends = value, "optimal", ["numpy"]

    if method != "lp":
        inst.check_allocation(w, p)  # a violated capacity is a bug here, never a user error
    pooled_w, pooled_p = w.copy(), p.copy()
    placement = None
    if place:
        free_m = cluster.machine_matrix if free is None else np.asarray(free, dtype=float)
        placed_jobs = inst.jobs
        if work is not None:  # placement reads each job's samples
            placed_jobs = tuple(
                j.replace(samples=x) for j, x in zip(inst.jobs, inst.samples.tolist())
            )
        placement = place_checked(
            placed_jobs,
            np.column_stack([w, p]),
            cluster,
            free_m,
            mode,
            (inst.alpha, inst.gamma),
            inst.defer_cost,
        )
        w, p = np.array(placement.workers, dtype=int), np.array(placement.ps, dtype=int)
        if placement.shrink_steps:
            notes.append(f"placement shrank the allocation in {placement.shrink_steps} step(s)")
    if method == "lp":
        costs = inst.job_cost(w, p)
        objective = r.objective
    else:
        costs = inst.job_cost(w, p)
        objective = float(costs.sum())
    durations = inst.durations_at(w, p)
    lower = min(lower, objective)
    gap = (objective - lower) / objective if objective > 0 and np.isfinite(lower) else math.nan
    note = "; ".join(x for x in notes if x)
    if "selected" not in extra:
        extra["selected"] = tuple((np.asarray(pooled_w) > 0).tolist())
    return Solution(
        method=method,
        jobs=tuple(j.name for j in inst.jobs),
        workers=tuple(np.asarray(w, dtype=int).tolist()),
        ps=tuple(np.asarray(p, dtype=int).tolist()),
        durations=tuple(np.asarray(durations, dtype=float).tolist()),
        costs=tuple(np.asarray(costs, dtype=float).tolist()),
        objective=float(objective),
        lower_bound=float(lower),
        gap=float(gap),
        status=status,
        backend=",".join(dict.fromkeys(backends)),
        note=note,
        fallback="fallback to HiGHS" in note,
        wall_time_s=time.perf_counter() - t0,
        horizon=inst.horizon,
        mode=mode,
        pooled_workers=tuple(np.asarray(pooled_w, dtype=int).tolist()),
        pooled_ps=tuple(np.asarray(pooled_p, dtype=int).tolist()),
        placement=placement,
        shrink_steps=placement.shrink_steps if placement else 0,
        **extra,
    )
