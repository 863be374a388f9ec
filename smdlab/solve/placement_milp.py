"""The placement-aware problem as an exact MILP, and SMD followed by placement on the same scale.

(P) with per-machine placement: every task (worker or PS) sits on a machine, every machine's
capacity holds in every resource, and a job's speed is the simulator's speed on its placement
(``smdlab.model.placement_speed.placement_speed``, with the cluster's rack uplinks and GPU
types). Objective: ``sum_i omega_i * W_i / S_i(placement_i)``, and ``Instance.defer_cost`` for a
job left unstarted, as in the pooled (P).

Linearisation (docs/solver.md, "The placement-aware model"): for a parameter-server job the
simulator's speed depends on the placement only through

- the tasks per rack (uplink divisors, ``Uplinks.divisors``: which fraction of a worker's PSs
  sits in another rack), when some rack or domain uplink is slower than the NICs it carries;
- the slowest GPU type among the worker machines (``type_factor``).

So each job chooses one *pattern* (binary ``z``): a configuration (w, p), its split over the racks
(only where uplinks can bind) and a GPU-type level; the pattern's cost is the simulator's speed
of any placement with that split and level. Integer task counts ``x[i, m]`` (workers) and
``y[i, m]`` (PSs) per machine are tied to the pattern by one equality per job, rack and task kind,
and the level by "no worker on a machine whose type is slower than the level". A minimising
solver picks the tightest level, so at an optimum the model's objective equals the simulator's
evaluation of the placement it returns (``evaluate``); an incumbent under a time limit is
re-evaluated and can only be cheaper than the model says.

Outside this model (refused with one line): all-reduce jobs (their speed depends on how many
machines the ring spans) and clusters with a flow-level fabric.
"""

from __future__ import annotations

import itertools
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from smdlab.errors import Infeasible, InvalidInput, SolverError, check_choice, check_int
from smdlab.model.cluster import Cluster
from smdlab.model.gpu_types import speed_ratio
from smdlab.model.job import Job
from smdlab.model.placement_speed import placement_speed
from smdlab.model.traffic import Uplinks
from smdlab.solve.api import MilpOptions, solve
from smdlab.solve.backends import new_highs
from smdlab.solve.cases import tight_instance
from smdlab.solve.instance import Instance, as_amounts, build_instance, check_cluster
from smdlab.solve.placement import TOL, Placement, evaluate, placed_speeds, rack_layout

__all__ = [
    "DEFAULT_MAX_PATTERNS",
    "PLACEMENT_KINDS",
    "PlacedResult",
    "evaluate",
    "placed_speeds",
    "placement_instance",
    "smd_placed",
    "solve_placed",
]

DEFAULT_MAX_PATTERNS = 200_000


@dataclass(frozen=True)
class PlacedResult:
    """A placed decision, priced by the simulator's speeds.

    placements: per job, where its tasks run (empty: not started). workers, ps: per job.
    costs: per job, omega_i * W_i / speed on its placement, or its deferral cost.
    objective: sum of costs (the simulator's evaluation). model_objective: the MILP's own value
    of the same solution (SMD on pools: its allocation's value before placement; nan for SMD). bound: a proven lower bound (-inf when none).
    gap: (objective - bound) / objective. status: optimal, time_limit or heuristic.
    time_limit_reached: whether the solver stopped at its limit. wall_time_s, cpu_time_s: the
    whole call. patterns, variables, rows: the model's size (0 for SMD).
    """

    method: str
    placements: tuple[Placement, ...]
    workers: tuple[int, ...]
    ps: tuple[int, ...]
    costs: tuple[float, ...]
    objective: float
    model_objective: float
    bound: float
    gap: float
    status: str
    time_limit_reached: bool
    wall_time_s: float
    cpu_time_s: float
    patterns: int = 0
    variables: int = 0
    rows: int = 0


@dataclass(frozen=True)
class _Setting:
    """What the speeds read from a cluster: uplinks (None: none can bind) and GPU types."""

    uplinks: Uplinks | None
    types: tuple[str, ...] | None
    groups: tuple[np.ndarray, ...]  # machine indices per rack group (one group: no binding uplink)


def _setting(cluster: Cluster) -> _Setting:
    up = Uplinks.of(cluster)
    types = tuple(m.gpu_type for m in cluster.machines)
    typed = types if any(types) else None
    binds = up is not None and max((*up.rack_ratio, *up.domain_ratio, 1.0)) > 1.0
    H = len(cluster.machines)
    if not binds:
        return _Setting(up, typed, (np.arange(H),))
    rack = np.array(cluster.rack_of)
    if np.any(rack < 0):
        raise InvalidInput("every machine of a racked cluster must be in a rack (placement model)")
    return _Setting(up, typed, tuple(np.flatnonzero(rack == r) for r in np.unique(rack)))


def _check_jobs(jobs: Sequence[Job], cluster: Cluster) -> None:
    for j in jobs:
        if j.arch != "ps":
            raise InvalidInput(
                f"job {j.name!r}: arch must be 'ps' in the placement-aware model, got {j.arch!r} "
                "(an all-reduce ring's speed depends on the machines it spans)"
            )
    if cluster.fabric is not None:
        raise InvalidInput("cluster: a flow-level fabric is outside the placement-aware model")


def _free(cluster: Cluster, free) -> np.ndarray:
    full = cluster.machine_matrix
    if free is None:
        return full.astype(float)
    arr = as_amounts("free", free, f"{full.shape}")
    if arr.shape != full.shape or np.any(~np.isfinite(arr)) or np.any(arr < -TOL):
        raise InvalidInput(
            f"free must be a finite (machines x resources) = {full.shape} matrix >= 0, got shape {arr.shape}"
        )
    return np.maximum(arr, 0.0)


def _splits(total: int, parts: int) -> list[tuple[int, ...]]:
    """Every way to write ``total`` as ``parts`` ordered non-negative integers."""
    if parts == 1:
        return [(total,)]
    out = []
    for bars in itertools.combinations(range(total + parts - 1), parts - 1):
        edges = (-1, *bars, total + parts - 1)
        out.append(tuple(edges[k + 1] - edges[k] - 1 for k in range(parts)))
    return out


@dataclass
class _Patterns:
    """Every job's patterns: job, cost, workers and PSs per rack group, GPU-type level."""

    job: list[int]
    cost: list[float]
    wg: list[tuple[int, ...]]
    pg: list[tuple[int, ...]]
    level: list[float]


def _levels(job: Job, types: tuple[str, ...] | None) -> list[float]:
    if types is None:
        return [1.0]
    net, dev = job.profile.network, job.profile.device
    return sorted({speed_ratio(net, t, dev) for t in types})


def _patterns(inst: Instance, s: _Setting, max_patterns: int) -> _Patterns:
    """Enumerate the patterns of every job and price each with the simulator's speed."""
    out = _Patterns([], [], [], [], [])
    G = len(s.groups)
    reps = [int(g[0]) for g in s.groups]  # speeds read a machine's rack only: any stands for it
    mask = inst.pareto if G == 1 else np.isfinite(inst.duration)  # dominance is valid unracked
    for i, job in enumerate(inst.jobs):
        W, P = inst.tables[i].shape
        levels = _levels(job, s.types)
        work = float(inst.weight[i] * inst.samples[i])
        for w, p in zip(*np.nonzero(mask[i, :W, :P]), strict=True):
            w, p = int(w) + 1, int(p) + 1
            ws, ps = _splits(w, G), _splits(p, G)
            if len(out.job) + len(ws) * len(ps) * len(levels) > max_patterns:
                raise InvalidInput(
                    f"max_patterns: the placement-aware model needs more than {max_patterns:,} "
                    "patterns here (fewer jobs, racks or smaller caps, or a larger max_patterns)"
                )
            for a in ws:
                for b in ps:
                    tasks = tuple((reps[g], a[g], b[g]) for g in range(G) if a[g] or b[g])
                    base = placement_speed(job, w, p, inst.mode, tasks=tasks, uplinks=s.uplinks)
                    for r in levels:
                        out.job.append(i)
                        out.cost.append(work / (base * r))
                        out.wg.append(a)
                        out.pg.append(b)
                        out.level.append(r)
    return out


@dataclass
class _Model:
    """A MILP in HiGHS' column form: min c x + offset, lo <= A x <= hi, bounds, integrality."""

    c: np.ndarray
    a: sp.csc_matrix
    lo: np.ndarray
    hi: np.ndarray
    col_hi: np.ndarray
    offset: float
    n_pat: int


def _build(inst: Instance, s: _Setting, free: np.ndarray, pat: _Patterns) -> _Model:
    n, H = inst.n, free.shape[0]
    Z = len(pat.job)
    pj = np.array(pat.job, dtype=np.int64)
    # columns: z (Z patterns), then x[i, m] (workers), then y[i, m] (PSs)
    xcol = Z + np.arange(n * H).reshape(n, H)
    ycol = Z + n * H + np.arange(n * H).reshape(n, H)
    rows: list[np.ndarray] = []
    cols: list[np.ndarray] = []
    vals: list[np.ndarray] = []
    lo: list[float] = []
    hi: list[float] = []
    r0 = 0

    def add(r, c, v):
        r = np.asarray(r, dtype=np.int64).ravel()
        rows.append(r)
        cols.append(np.asarray(c, dtype=np.int64).ravel())
        vals.append(np.broadcast_to(np.asarray(v, dtype=float), r.shape))

    # one pattern per job at most (none: the job waits and pays its deferral cost)
    add(r0 + pj, np.arange(Z), np.ones(Z))
    lo += [-np.inf] * n
    hi += [1.0] * n
    r0 += n
    # tasks per job, rack group and kind equal the chosen pattern's
    wg, pg = np.array(pat.wg, dtype=float), np.array(pat.pg, dtype=float)
    for g, machines in enumerate(s.groups):
        for kind, (col, split) in enumerate(((xcol, wg), (ycol, pg))):
            base = r0 + (2 * g + kind) * n
            add(base + np.repeat(np.arange(n), machines.size), col[:, machines].ravel(), 1.0)
            add(base + pj, np.arange(Z), -split[:, g])
    G = len(s.groups)
    lo += [0.0] * (2 * G * n)
    hi += [0.0] * (2 * G * n)
    r0 += 2 * G * n
    # GPU-type level: no worker on a machine slower than the chosen pattern's level
    level = np.array(pat.level)
    if s.types is not None:
        for i, job in enumerate(inst.jobs):
            ratio = np.array(
                [speed_ratio(job.profile.network, t, job.profile.device) for t in s.types]
            )
            W = inst.tables[i].shape[0]
            mine = np.flatnonzero(pj == i)
            for r in _levels(job, s.types)[1:]:
                slow = np.flatnonzero(ratio < r)
                below = mine[level[mine] < r]
                add(np.full(slow.size, r0), xcol[i, slow], 1.0)
                add(np.full(below.size, r0), below, -float(W))
                lo.append(-np.inf)
                hi.append(0.0)
                r0 += 1
    # capacity of every machine in every resource some task uses
    for k in np.flatnonzero((inst.alpha > 0).any(axis=0) | (inst.gamma > 0).any(axis=0)):
        rr = r0 + np.arange(H)
        for col, dem in ((xcol, inst.alpha[:, k]), (ycol, inst.gamma[:, k])):
            on = np.flatnonzero(dem > 0)
            add(np.tile(rr, on.size), col[on].ravel(), np.repeat(dem[on], H))
        lo += [-np.inf] * H
        hi += list(free[:, k] + TOL)
        r0 += H
    a = sp.csc_matrix(
        (np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))),
        shape=(r0, Z + 2 * n * H),
    )
    a.sum_duplicates()
    a.sort_indices()
    defer = inst.defer_cost
    c = np.concatenate([np.array(pat.cost) - defer[pj], np.zeros(2 * n * H)])
    caps_w = np.array([t.shape[0] for t in inst.tables], dtype=float)
    caps_p = np.array([t.shape[1] for t in inst.tables], dtype=float)
    col_hi = np.concatenate([np.ones(Z), np.repeat(caps_w, H), np.repeat(caps_p, H)])
    return _Model(c, a, np.array(lo), np.array(hi), col_hi, float(defer.sum()), Z)


def _run(
    model: _Model, time_limit: float, mip_gap: float
) -> tuple[np.ndarray | None, float, float, bool]:
    """(x or None, objective, bound, stopped by the time limit) of the MILP with HiGHS."""
    import highspy

    a, m = model.a, len(model.c)
    h = new_highs()
    inf = highspy.kHighsInf
    h.passModel(
        m, a.shape[0], a.nnz, 1, 1, model.offset,
        model.c.astype(np.float64), np.zeros(m), model.col_hi.astype(np.float64),
        np.where(np.isinf(model.lo), -inf, model.lo), np.where(np.isinf(model.hi), inf, model.hi),
        a.indptr.astype(np.int32), a.indices.astype(np.int32), a.data.astype(np.float64),
        np.ones(m, dtype=np.int32),
    )  # fmt: skip
    h.setOptionValue("time_limit", float(time_limit))
    h.setOptionValue("mip_rel_gap", float(mip_gap))
    t0 = time.perf_counter()
    ran = h.run()
    status = h.getModelStatus()
    S = highspy.HighsModelStatus
    info = h.getInfo()
    if status == S.kInfeasible:  # cannot happen: leaving every job out is feasible
        raise Infeasible("the placement-aware model has no feasible solution")
    stopped = status != S.kOptimal
    # a run stopped early (seen under heavy load) can leave the model status unset with a warning
    at_limit = status == S.kNotset and (
        ran == highspy.HighsStatus.kWarning or time.perf_counter() - t0 >= 0.9 * time_limit
    )
    if stopped and not at_limit and status not in (S.kTimeLimit, S.kInterrupt, S.kSolutionLimit):
        raise SolverError(
            f"HiGHS stopped with status {h.modelStatusToString(status)!r} ({ran}) after "
            f"{time.perf_counter() - t0:.2f} s of its {time_limit:.2f} s"
        )
    bound = float(info.mip_dual_bound) if np.isfinite(info.mip_dual_bound) else -math.inf
    if info.primal_solution_status != 2:
        return None, math.inf, bound, stopped
    x = np.round(np.asarray(h.getSolution().col_value, dtype=float))
    return x, float(info.objective_function_value), bound, stopped


def _decode(x: np.ndarray | None, n: int, H: int, Z: int) -> list[Placement]:
    if x is None:
        return [Placement(())] * n
    xs = x[Z : Z + n * H].reshape(n, H).astype(int)
    ys = x[Z + n * H :].reshape(n, H).astype(int)
    out = []
    for i in range(n):
        on = np.flatnonzero((xs[i] > 0) | (ys[i] > 0))
        out.append(Placement(tuple((int(m), int(xs[i, m]), int(ys[i, m])) for m in on)))
    return out


def _result(
    method: str,
    inst: Instance,
    cluster: Cluster,
    placements: Sequence[Placement],
    t0: tuple[float, float],
    **extra,
) -> PlacedResult:
    costs = evaluate(inst, cluster, placements)
    objective = float(costs.sum())
    bound = float(extra.pop("bound", -math.inf))
    bound = min(bound, objective)
    gap = (objective - bound) / objective if objective > 0 and math.isfinite(bound) else math.nan
    return PlacedResult(
        method=method,
        placements=tuple(placements),
        workers=tuple(p.workers for p in placements),
        ps=tuple(p.ps for p in placements),
        costs=tuple(costs.tolist()),
        objective=objective,
        bound=bound,
        gap=gap,
        wall_time_s=time.perf_counter() - t0[0],
        cpu_time_s=time.process_time() - t0[1],
        **extra,
    )


def _prepare(jobs, cluster, free, mode) -> tuple[Instance, np.ndarray]:
    check_cluster(cluster)
    if not cluster.has_machines:
        raise InvalidInput(
            "cluster must have machines for the placement-aware model (this one is pooled)"
        )
    f = _free(cluster, free)
    inst = build_instance(jobs, cluster, f.sum(axis=0), mode)
    _check_jobs(inst.jobs, cluster)
    return inst, f


def solve_placed(
    jobs: Sequence[Job],
    cluster: Cluster,
    *,
    mode: str = "wfbp",
    free: np.ndarray | None = None,
    time_limit: float = 60.0,
    mip_gap: float = 1e-6,
    max_patterns: int = DEFAULT_MAX_PATTERNS,
) -> PlacedResult:
    """Solve the placement-aware (P) exactly with HiGHS (module docstring), within ``time_limit`` s.

    The limit bounds the whole call (enumeration and model building are taken from it).
    mip_gap: relative gap at which the search stops, in [0, 1). free: free capacity per machine
    (machines x resources; default all). Returns the best incumbent and the proven bound.
    """
    t0 = (time.perf_counter(), time.process_time())
    opts = MilpOptions(time_limit=time_limit, mip_gap=mip_gap)  # the pooled MILP's checks
    limit = float(opts.time_limit)  # type: ignore[arg-type]  # not None: a number was checked
    max_patterns = check_int("max_patterns", max_patterns, 1)
    inst, f = _prepare(jobs, cluster, free, mode)
    s = _setting(cluster)
    pat = _patterns(inst, s, max_patterns)
    model = _build(inst, s, f, pat)
    left = max(1e-3, limit - (time.perf_counter() - t0[0]))
    x, value, bound, stopped = _run(model, left, opts.mip_gap)
    placements = _decode(x, inst.n, f.shape[0], model.n_pat)
    return _result(
        "placement milp",
        inst,
        cluster,
        placements,
        t0,
        model_objective=value,
        bound=bound,
        status="time_limit" if stopped else "optimal",
        time_limit_reached=stopped,
        patterns=model.n_pat,
        variables=len(model.c),
        rows=model.a.shape[0],
    )


def smd_placed(
    jobs: Sequence[Job], cluster: Cluster, *, mode: str = "wfbp", free: np.ndarray | None = None
) -> PlacedResult:
    """SMD (no bound, as the policies call it) then smdlab's placement (rack-aware on a racked
    cluster, as in the simulator), priced by the simulator's speeds like ``solve_placed``.

    On a cluster with several GPU types or binding uplinks, SMD on pools of machines
    (``smdlab.solve.smd_pools``); otherwise SMD on the pooled (P).
    """
    from smdlab.solve.smd_pools import machine_pools, smd_pools  # imports this module's siblings

    t0 = (time.perf_counter(), time.process_time())
    inst, f = _prepare(jobs, cluster, free, mode)
    pools = machine_pools(cluster)
    if len(pools) > 1:
        with rack_layout(cluster):
            alloc = smd_pools(inst, cluster, f, pools)
        return _result(
            "smd on pools + placement",
            inst,
            cluster,
            alloc.placements,
            t0,
            model_objective=alloc.planned,
            status="heuristic",
            time_limit_reached=False,
        )
    with rack_layout(cluster):
        sol = solve(jobs, cluster, "smd", mode=mode, free=f, place=True, bound=False)
    assert sol.placement is not None  # place=True on a cluster with machines
    return _result(
        "smd + placement",
        inst,
        cluster,
        sol.placement.placements,
        t0,
        model_objective=math.nan,
        status="heuristic",
        time_limit_reached=False,
    )


PLACEMENT_KINDS = ("flat", "typed", "racked")


def placement_instance(
    kind: str, n: int, machines: int, seed: int = 0
) -> tuple[list[Job], Cluster]:
    """(jobs, cluster) of the placement benchmarks: ``n`` held-out-class jobs on ``machines`` machines.

    kind: ``flat`` (identical untyped servers; caps 16 workers and 16 PSs), ``typed`` (half K80,
    half V100 servers in two racks whose uplinks never bind; caps 4 and 4) or ``racked`` (two racks
    of V100 servers whose uplinks carry half of their NICs' total; caps 4 and 4).
    """
    kind = check_choice("kind", kind, PLACEMENT_KINDS)
    n = check_int("n", n, 1)
    machines = check_int("machines", machines, 2 if kind != "flat" else 1)
    jobs, _ = tight_instance(n, seed, machines=1)
    if kind == "flat":
        return jobs, Cluster.homogeneous(machines)
    jobs = [j.replace(max_workers=4, max_ps=4) for j in jobs]
    half = machines // 2
    sizes = (half, machines - half)
    if kind == "typed":  # an uplink as fast as the rack's NICs: only the GPU types matter
        racks = [
            {"machines": k, "gpu_type": t, "uplink_gbps": 100.0 * k}
            for k, t in zip(sizes, ("k80", "v100"))
        ]
    else:
        racks = [{"machines": k, "uplink_gbps": 50.0 * k} for k in sizes]
    return jobs, Cluster.groups(racks)
