"""``solve``: one entry point for every allocation method of the reconstructed SMD model.

Each method is one function ``_solve_<method>(inst, options)`` with its own options dataclass
(``OPTIONS[method]``), which checks its fields when built; ``solve`` checks the common inputs,
builds the instance, runs the method and, for every method alike, places, prices and reports.
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from types import MappingProxyType
from typing import Any, Literal, get_args

import numpy as np

from smdlab.errors import (
    Infeasible,
    InvalidInput,
    check_bool,
    check_choice,
    check_int,
    check_positive,
)
from smdlab.model.cluster import Cluster
from smdlab.model.job import Job
from smdlab.solve.backends import BACKENDS, Backend
from smdlab.solve.brute import brute_force
from smdlab.solve.instance import (
    Instance,
    ValueTerm,
    as_amounts,
    build_instance,
    check_cluster,
    fits,
)
from smdlab.solve.knapsack import (
    KNAPSACKS,
    Knapsack,
    knapsack_exact,
    knapsack_lp,
    knapsack_lp_round,
)
from smdlab.solve.lagrangian import lagrangian_bound
from smdlab.solve.placement import TOL as PLACE_TOL
from smdlab.solve.shrink_placement import place_checked
from smdlab.solve.smd import SELECTIONS, Selection, smd as smd_run
from smdlab.solve.solution import Solution

Method = Literal["smd", "milp", "lp", "lp_round", "brute"]
BoundMethod = Literal["lp", "lagrangian"]
BOUND_METHODS: tuple[BoundMethod, ...] = get_args(BoundMethod)
METHODS: tuple[Method, ...] = get_args(Method)
DEFAULT_KNAPSACK: Knapsack = "hull"
DEFAULT_MILP_TIME_LIMIT = 60.0
DEFAULT_MIP_GAP = 1e-6


def _time_limit(value: float | None) -> float | None:
    return None if value is None else check_positive("time_limit", value)


@dataclass(frozen=True)
class MilpOptions:
    """Options of method ``milp``: backend, seconds per solver call, relative MIP gap."""

    backend: Backend = "auto"
    time_limit: float | None = DEFAULT_MILP_TIME_LIMIT
    mip_gap: float = DEFAULT_MIP_GAP

    def __post_init__(self) -> None:
        object.__setattr__(self, "backend", check_choice("backend", self.backend, BACKENDS))
        object.__setattr__(self, "time_limit", _time_limit(self.time_limit))
        gap = check_positive("mip_gap", self.mip_gap, allow_zero=True)
        if gap >= 1:
            raise InvalidInput(f"mip_gap must be a relative gap in [0, 1), got {self.mip_gap!r}")
        object.__setattr__(self, "mip_gap", gap)


@dataclass(frozen=True)
class LpOptions:
    """Options of methods ``lp`` and ``lp_round``: backend, seconds per solver call."""

    backend: Backend = "auto"
    time_limit: float | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "backend", check_choice("backend", self.backend, BACKENDS))
        object.__setattr__(self, "time_limit", _time_limit(self.time_limit))


@dataclass(frozen=True)
class SmdOptions:
    """Options of method ``smd`` (docs/solver.md): the SUB solver, the selection, the iteration.

    bound: also compute a lower bound for ``lower_bound`` and ``gap``, by ``bound_method``:
    ``lp`` (default: the LP relaxation) or ``lagrangian`` (resource prices: at most the LP's
    value, within a few millionths of it on the benchmark instances, at a fraction of its
    cost). polish: finish with the local search.
    """

    backend: Backend = "auto"
    time_limit: float | None = None
    knapsack: Knapsack = DEFAULT_KNAPSACK
    selection: Selection = "objective"
    tol: float = 1e-6
    max_iter: int = 30
    bound: bool = True
    bound_method: BoundMethod = "lp"
    polish: bool = True

    def __post_init__(self) -> None:
        checked = {
            "backend": check_choice("backend", self.backend, BACKENDS),
            "time_limit": _time_limit(self.time_limit),
            "knapsack": check_choice("knapsack", self.knapsack, KNAPSACKS),
            "tol": check_positive("tol", self.tol),
            "max_iter": check_int("max_iter", self.max_iter, 0, 10_000),
            "bound": check_bool("bound", self.bound),
            "bound_method": check_choice("bound_method", self.bound_method, BOUND_METHODS),
            "selection": check_choice("selection", self.selection, SELECTIONS),
            "polish": check_bool("polish", self.polish),
        }
        for name, value in checked.items():
            object.__setattr__(self, name, value)


@dataclass(frozen=True)
class BruteOptions:
    """Method ``brute`` takes no options."""


Options = MilpOptions | LpOptions | SmdOptions | BruteOptions

OPTIONS: Mapping[Method, type[Options]] = MappingProxyType(
    {
        "smd": SmdOptions,
        "milp": MilpOptions,
        "lp": LpOptions,
        "lp_round": LpOptions,
        "brute": BruteOptions,
    }
)
"""The options dataclass of each method (read-only)."""

SOLVE_OPTIONS: Mapping[Method, frozenset[str]] = MappingProxyType(
    {m: frozenset(f.name for f in fields(cls)) for m, cls in OPTIONS.items()}
)
"""The keyword options ``solve`` accepts for each method (read-only)."""


@dataclass
class _Raw:
    """What one method returns before placement: pooled allocation, bound, status, notes."""

    workers: np.ndarray
    ps: np.ndarray
    lower: float
    status: str
    backends: list[str]
    notes: list[str] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)
    objective: float | None = None  # the LP's own objective (method lp); None: the allocation's
    bound_kind: str = "lp"  # which bound ``lower`` is (Solution.bound_kind)


def _defer(inst: Instance) -> np.ndarray | None:
    return inst.defer_cost if inst.allow_defer else None


def _remaining(o: Options, t0: float) -> Options:
    """``o`` with its time limit less the time the call has spent so far (it bounds the whole call)."""
    limit = getattr(o, "time_limit", None)
    if limit is None:
        return o
    return dataclasses.replace(o, time_limit=max(1e-3, limit - (time.perf_counter() - t0)))


def _solve_milp(inst: Instance, o: MilpOptions) -> _Raw:
    r = knapsack_exact(
        inst.cost, inst.alpha, inst.gamma, inst.capacity, _defer(inst),
        backend=o.backend, time_limit=o.time_limit, mip_gap=o.mip_gap, mask=inst.pareto,
    )  # fmt: skip
    out = _Raw(r.workers, r.ps, r.bound, r.status, [r.backend], [r.note], bound_kind="milp")
    if not math.isfinite(r.bound):
        # stopped before the solver proved a bound: resource prices still prove one, cheaply
        out.lower, out.bound_kind = _lagrangian(inst), "lagrangian"
        out.notes.append("bound: Lagrangian (the solver had proved none by its time limit)")
    if r.status == "time_limit":
        gap = (r.objective - out.lower) / r.objective if r.objective > 0 else math.nan
        out.notes.append(
            f"MILP stopped by its time limit: incumbent and bound reported "
            f"(gap proven by then {gap:.3g})"
        )
    return out


def _lp(inst: Instance, o: LpOptions | SmdOptions):
    return knapsack_lp(
        inst.cost, inst.alpha, inst.gamma, inst.capacity, _defer(inst),
        backend=o.backend, time_limit=o.time_limit, mask=inst.pareto,
    )  # fmt: skip


def _solve_lp(inst: Instance, o: LpOptions) -> _Raw:
    r = _lp(inst, o)
    frac: list[list[tuple[int, int, float]]] = [[] for _ in range(inst.n)]
    for (j, cw, cp), v in zip(r.lp_cols, r.lp_x):
        if v > 1e-9:
            frac[j].append((int(cw), int(cp), float(v)))
    w = np.zeros(inst.n, dtype=int)
    p = np.zeros(inst.n, dtype=int)
    for j, entries in enumerate(frac):
        share = sum(e[2] for e in entries)
        if entries and (not inst.allow_defer or share >= 0.5):
            top = max(entries, key=lambda e: e[2])
            w[j], p[j] = top[0], top[1]
    out = _Raw(w, p, r.bound, "relaxation", [r.backend], [r.note], objective=r.objective)
    out.extra["fractional"] = tuple(tuple(sorted(e)) for e in frac)
    if r.fractional_jobs:
        out.notes.append(f"{len(r.fractional_jobs)} job(s) fractional in the LP")
    return out


def _solve_lp_round(inst: Instance, o: LpOptions) -> _Raw:
    r = knapsack_lp_round(
        inst.cost, inst.alpha, inst.gamma, inst.capacity, _defer(inst),
        backend=o.backend, time_limit=o.time_limit, mask=inst.pareto,
    )  # fmt: skip
    out = _Raw(r.workers, r.ps, r.bound, "heuristic", [r.backend], [r.note])
    out.extra["rounding_bound"] = r.rounding_bound
    out.notes.append(
        f"{len(r.fractional_jobs)} job(s) fractional in the LP, rounded (additive bound {r.rounding_bound:.6g})"
    )
    return out


def _solve_smd(inst: Instance, o: SmdOptions) -> _Raw:
    s = smd_run(
        inst, knapsack=o.knapsack, selection=o.selection, tol=o.tol, max_iter=o.max_iter,
        backend=o.backend, time_limit=o.time_limit, polish=o.polish,
    )  # fmt: skip
    out = _Raw(s.workers, s.ps, -math.inf, "heuristic", [], [s.note])
    if s.ratio:
        out.backends.extend(s.ratio.backends)
        out.notes.extend(s.ratio.notes)
        out.extra.update(
            trace=s.ratio.trace, converged=s.ratio.converged, polish_moves=s.ratio.polish_moves
        )
        before = s.ratio.unpolished_objective
        if s.ratio.polish_moves and before is not None:
            gain = (before - s.ratio.objective) / before
            out.notes.append(
                f"polish: {s.ratio.polish_moves} move(s) lowered the objective by {gain:.3g} (relative)"
            )
    out.extra["knapsack"] = o.knapsack
    out.extra["selected"] = tuple(np.asarray(s.selected, dtype=bool).tolist())
    if o.bound and o.bound_method == "lp":
        lb = _lp(inst, o)
        out.lower = lb.bound
        out.backends.append(lb.backend)
        out.notes.append(lb.note)
    elif o.bound:
        out.lower, out.bound_kind = _lagrangian(inst), "lagrangian"
    return out


def _lagrangian(inst: Instance) -> float:
    return lagrangian_bound(
        inst.cost, inst.pareto, inst.alpha, inst.gamma, inst.capacity, _defer(inst)
    ).bound


def _solve_brute(inst: Instance, o: BruteOptions) -> _Raw:
    w, p, value = brute_force(inst)
    return _Raw(w, p, value, "optimal", ["numpy"], bound_kind="exact")


_SOLVERS: Mapping[Method, Callable[[Instance, Any], _Raw]] = MappingProxyType(
    {
        "smd": _solve_smd,
        "milp": _solve_milp,
        "lp": _solve_lp,
        "lp_round": _solve_lp_round,
        "brute": _solve_brute,
    }
)


def _options(method: Method, options: Mapping[str, Any]) -> Options:
    """The options dataclass of ``method`` from keyword options, or InvalidInput naming the first bad one."""
    unknown = set(options) - SOLVE_OPTIONS[method]
    if unknown:
        allowed = ", ".join(sorted(SOLVE_OPTIONS[method])) or "none"
        raise InvalidInput(
            f"option {sorted(unknown)[0]!r} does not apply to method {method!r}; allowed: {allowed}"
        )
    return OPTIONS[method](**options)


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


def _check_place(place: Any, cluster: Cluster, method: Method) -> bool:
    """Whether to place on machines (None: when the cluster has machines and the method is not lp)."""
    if check_bool("place", place, allow_none=True) is None:
        return cluster.has_machines and method != "lp"
    if place and not cluster.has_machines:
        raise InvalidInput("place=True needs a cluster with machines (this cluster is pooled)")
    if place and method == "lp":
        raise InvalidInput("place=True does not apply to method 'lp' (its solution is fractional)")
    return bool(place)


class PooledSolve:
    """A method's pooled allocation of a built instance (no placement); its ``Solution`` is built on first use.

    workers, ps: per job, the allocation (0 and 0: not started); note: the method's remarks.
    """

    def __init__(self, inst: Instance, cluster: Cluster, method: Method, raw: _Raw, t0: float):
        self.workers: tuple[int, ...] = tuple(np.asarray(raw.workers, dtype=int).tolist())
        self.ps: tuple[int, ...] = tuple(np.asarray(raw.ps, dtype=int).tolist())
        self.note = "; ".join(x for x in raw.notes if x)
        self._args = (inst, raw, cluster, method, False, None, inst.work is not None, t0)
        self._wall = time.perf_counter() - t0
        self._solution: Solution | None = None

    @property
    def solution(self) -> Solution:
        """The Solution ``solve(..., place=False)`` returns for the same instance (costs, horizon, bound)."""
        if self._solution is None:
            self._solution = _report(*self._args, wall=self._wall)
        return self._solution


def solve_pooled(
    inst: Instance, cluster: Cluster, method: Method = "smd", **options: Any
) -> PooledSolve:
    """Allocate a built instance's jobs by ``method`` without placing them; the report (costs, H) waits until asked for.

    inst: from ``build_instance`` or ``InstanceRows.build`` on ``cluster``; options: as ``solve``'s.
    For a caller that needs the allocation only (a simulated policy at every decision), this is
    ``solve(..., place=False)`` without pricing every job for the Solution.
    """
    t0 = time.perf_counter()
    check_cluster(cluster)
    method = check_choice("method", method, METHODS)
    if not isinstance(inst, Instance):
        raise InvalidInput(f"inst must be an Instance (build_instance), got {type(inst).__name__}")
    opts = _options(method, options)
    return PooledSolve(inst, cluster, method, _allocate(inst, cluster, method, opts, t0), t0)


def solve(
    jobs: Sequence[Job],
    cluster: Cluster,
    method: Method = "smd",
    *,
    mode: str = "wfbp",
    place: bool | None = None,
    free: np.ndarray | None = None,
    work: Sequence[float] | np.ndarray | None = None,
    value_term: ValueTerm | None = None,
    **options: Any,
) -> Solution:
    """Allocate workers and PSs to ``jobs`` on ``cluster`` (free capacity ``free``) by ``method``.

    method: smd (default), milp, lp, lp_round or brute; see docs/solver.md.
    mode: timing overlap mode (sequential, wfbp, wfbp_prefetch).
    place: place the allocation on machines (default: when the cluster has machines).
    free: free capacity, (machines x resources) or, for a pooled cluster, (resources,); default all.
    work: samples each job processes instead of its ``samples`` (a scheduler's remaining work,
        without copying its jobs); default: the jobs' own.
    value_term: charge SLO jobs the value they lose at each configuration
        (``smdlab.solve.instance.ValueTerm``, ours; docs/deadlines.md); default: none.
    options: the fields of the method's options dataclass (``OPTIONS[method]``): backend
        (auto|highs|gurobi), time_limit (s), mip_gap (milp); for smd: knapsack
        (hull|exact|lp_round|greedy), selection (objective|smith), tol, max_iter, bound (compute a
        lower bound, default True), bound_method (lp|lagrangian), polish (finish with a local search, default True).
    """
    t0 = time.perf_counter()
    check_cluster(cluster)  # jobs are checked by build_instance below, before any use
    method = check_choice("method", method, METHODS)
    opts = _options(method, options)
    place = _check_place(place, cluster, method)
    capacity = _capacity(cluster, free)
    inst = build_instance(jobs, cluster, capacity, mode, work, value_term)
    raw = _allocate(inst, cluster, method, opts, t0)
    return _report(inst, raw, cluster, method, place, free, work is not None, t0)


def _allocate(inst: Instance, cluster: Cluster, method: Method, opts: Options, t0: float) -> _Raw:
    """The method's pooled allocation of ``inst``, checked against the caps and the capacity."""
    _check_jobs_fit_cluster(inst, cluster)
    raw = _SOLVERS[method](inst, _remaining(opts, t0))
    if method != "lp":
        inst.check_allocation(
            raw.workers, raw.ps
        )  # a violated capacity is a bug, never a user error
    return raw


def _report(
    inst: Instance,
    raw: _Raw,
    cluster: Cluster,
    method: Method,
    place: bool,
    free: np.ndarray | None,
    own_work: bool,
    t0: float,
    wall: float | None = None,
) -> Solution:
    """The Solution of ``raw``: placed (``place``), priced and described; ``wall``: seconds to report (default: until now)."""
    mode = inst.mode
    w, p, notes, extra = raw.workers, raw.ps, list(raw.notes), dict(raw.extra)
    pooled_w, pooled_p = w.copy(), p.copy()
    placement = None
    if place:
        free_m = cluster.machine_matrix if free is None else np.asarray(free, dtype=float)
        placed_jobs = inst.jobs
        if own_work:  # placement reads each job's samples
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
    costs = inst.job_cost(w, p)
    objective = float(costs.sum()) if raw.objective is None else raw.objective
    durations = inst.durations_at(w, p)
    lower = min(raw.lower, objective)
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
        bound_kind=raw.bound_kind if np.isfinite(lower) else "",
        status=raw.status,
        backend=",".join(dict.fromkeys(raw.backends)),
        note=note,
        fallback="fallback to HiGHS" in note,
        wall_time_s=time.perf_counter() - t0 if wall is None else wall,
        horizon=inst.horizon,
        mode=mode,
        pooled_workers=tuple(np.asarray(pooled_w, dtype=int).tolist()),
        pooled_ps=tuple(np.asarray(pooled_p, dtype=int).tolist()),
        placement=placement,
        shrink_steps=placement.shrink_steps if placement else 0,
        **extra,
    )
