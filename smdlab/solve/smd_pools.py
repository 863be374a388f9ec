"""SMD on a cluster whose machines differ in speed: pools of one GPU type and, where uplinks bind, one rack.

Our extension of the reconstructed model (docs/solver.md, "SMD on pools of machines"). The
pooled (P) treats the cluster as one bin whose every configuration runs at the job's table
speed. On a cluster with several GPU types, or with rack uplinks slower than the NICs they
carry, the simulator's speed of the same configuration depends on where it sits
(``smdlab.model.placement_speed``): the slowest worker's GPU type, and the uplink divisors of a
job whose tasks span racks. Here the machines are split into *pools* (one GPU type and, when
some uplink binds, one rack) and *regions* (one rack when some uplink binds, else the whole
cluster). A job started in pool g has its workers on g's machines and its PSs anywhere in g's
region (a PS's GPU type does not change the speed), so it runs at ``r_ig * S_i(w, p)`` with
``r_ig`` its GPU-type ratio on g's type (``smdlab.model.gpu_types.speed_ratio``, Gavel's
measured throughputs) and no uplink divisor (no traffic leaves the rack). Each job chooses one
option (pool, w, p) or waits:

    minimise   sum_i N_i / (r_ig S_i(w, p))  +  sum over waiting jobs of defer_i
    subject to, per pool g and resource k:    sum over jobs in g of w alpha_ik <= cap_gk
               per region q and resource k:  sum over jobs in pools of q of (w alpha_ik + p gamma_ik) <= cap_qk

still a sum of ratios over a multiple-choice multi-dimensional knapsack: one ratio per option,
(pools + regions) x K linear dimensions. With each job's pool fixed it *is* the reconstructed
pooled (P) with longer demand vectors: a worker of job i demands alpha_i in g's block and in q's
block, a PS gamma_i in q's block, and the ratio's denominator is scaled by a constant (work
W_i / r_ig). So SMD runs unchanged on that instance, with one more choice in its outer
selection: the LP relaxation of the whole problem picks each job's pool (the one holding most
of its LP mass). Placement then puts each pool's jobs on its machines, their PSs in the region.
A cluster with one pool never reaches this module (``machine_pools``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from smdlab.model.cluster import Cluster
from smdlab.model.gpu_types import speed_ratio
from smdlab.model.traffic import Uplinks
from smdlab.solve.backends import FlatModel, solve_flat
from smdlab.solve.instance import Instance, fits
from smdlab.solve.placement import TOL, Placement, evaluate, set_rack_layout
from smdlab.solve.shrink_placement import place_checked
from smdlab.solve.smd import smd

__all__ = [
    "PoolAllocation",
    "binding_uplinks",
    "machine_pools",
    "place_on_pools",
    "pool_instance",
    "pool_ratios",
    "regions",
    "smd_pools",
]


def binding_uplinks(cluster: Cluster) -> bool:
    """Whether some rack or domain uplink of ``cluster`` is slower than the NICs it carries."""
    up = Uplinks.of(cluster)
    return up is not None and max((*up.rack_ratio, *up.domain_ratio, 1.0)) > 1.0


def machine_pools(cluster: Cluster) -> tuple[np.ndarray, ...]:
    """Machine indices of each pool: one GPU type and, when some uplink binds, one rack.

    One pool (every machine) when the cluster has one GPU type and no binding uplink: then SMD's
    pooled problem is the one to solve.
    """
    types = [m.gpu_type for m in cluster.machines]
    racks = list(cluster.rack_of) if binding_uplinks(cluster) else [0] * len(types)
    keys: dict[tuple[str, int], list[int]] = {}
    for h, key in enumerate(zip(types, racks, strict=True)):
        keys.setdefault(key, []).append(h)
    return tuple(np.array(v, dtype=np.int64) for v in keys.values())


def pool_ratios(inst: Instance, cluster: Cluster, pools: Sequence[np.ndarray]) -> np.ndarray:
    """(n, G) each job's speed on a pool's GPU type relative to its table speed (1 untyped)."""
    out = np.ones((inst.n, len(pools)))
    for g, machines in enumerate(pools):
        t = cluster.machines[int(machines[0])].gpu_type
        if t:
            for i, job in enumerate(inst.jobs):
                out[i, g] = speed_ratio(job.profile.network, t, job.profile.device)
    return out


@dataclass(frozen=True)
class PoolAllocation:
    """SMD on pools: per job its pool (-1: waits), workers, PSs and placement; ``planned``: the
    objective of SMD's allocation on the pools before placement (what placement could keep)."""

    pool: np.ndarray
    workers: np.ndarray
    ps: np.ndarray
    placements: tuple[Placement, ...]
    planned: float


def regions(cluster: Cluster, pools: Sequence[np.ndarray]) -> np.ndarray:
    """(G,) the region of each pool: its rack when some uplink binds, else 0 (the whole cluster)."""
    if not binding_uplinks(cluster):
        return np.zeros(len(pools), dtype=np.int64)
    racks = sorted({cluster.rack_of[int(m[0])] for m in pools})
    return np.array([racks.index(cluster.rack_of[int(m[0])]) for m in pools], dtype=np.int64)


def _demands(inst: Instance, home: np.ndarray, region: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(alpha, gamma) over the pool blocks then the region blocks, each job in pool ``home``."""
    n, K = inst.alpha.shape
    G, Q = len(region), int(region.max()) + 1
    alpha = np.zeros((n, (G + Q) * K))
    gamma = np.zeros((n, (G + Q) * K))
    rows = np.arange(n)[:, None]
    k = np.arange(K)[None, :]
    alpha[rows, home[:, None] * K + k] = inst.alpha
    alpha[rows, (G + region[home])[:, None] * K + k] = inst.alpha
    gamma[rows, (G + region[home])[:, None] * K + k] = inst.gamma
    return alpha, gamma


def _capacity(free: np.ndarray, pools: Sequence[np.ndarray], region: np.ndarray) -> np.ndarray:
    """((G + Q) * K,) free capacity of each pool, then of each region."""
    pool_cap = [free[m].sum(axis=0) for m in pools]
    Q = int(region.max()) + 1
    reg_cap = [
        sum((pool_cap[g] for g in np.flatnonzero(region == q)), np.zeros(free.shape[1]))
        for q in range(Q)
    ]
    return np.concatenate(pool_cap + reg_cap)


_STAY = 1e-6  # the LP's tie-break towards a job's current pool, relative to the largest cost


def _assign(
    inst: Instance, cap: np.ndarray, ratio: np.ndarray, region: np.ndarray, current: np.ndarray
) -> np.ndarray:
    """(n,) each job's pool: where the LP relaxation of the problem on pools puts most of it
    (among equally good pools, the one it runs in now, ``current``; -1: none)."""
    G = len(region)
    job, w, p = np.nonzero(inst.pareto)
    w, p = w + 1, p + 1
    base = inst.cost[job, w - 1, p - 1]
    cost, use, cols_job, cols_pool = [], [], [], []
    for g in range(G):
        a, c = _demands(inst, np.full(inst.n, g), region)
        u = a[job] * w[:, None] + c[job] * p[:, None]
        ok = np.asarray(fits(u, cap), dtype=bool)
        cost.append(base[ok] / ratio[job[ok], g] - inst.defer_cost[job[ok]])
        if (current == g).any():  # a tie goes to the pool a job runs in: no move for nothing
            cost[-1] = cost[-1] - _STAY * inst.defer_cost.max() * (current[job[ok]] == g)
        use.append(u[ok])
        cols_job.append(job[ok])
        cols_pool.append(np.full(int(ok.sum()), g))
    cj, cp = np.concatenate(cols_job), np.concatenate(cols_pool)
    model = FlatModel(
        np.concatenate(cost) / max(1.0, float(inst.defer_cost.max())), np.concatenate(use), cj,
        inst.n, cap, eq=False,
    )  # fmt: skip
    x = solve_flat(model, integral=False, backend="highs").x
    mass = np.zeros((inst.n, G))
    np.add.at(mass, (cj, cp), x)
    # a job the LP leaves waiting is offered its fastest pool (SMD's selection may still start it)
    fastest = np.argmax(ratio, axis=1)
    return np.where(mass.sum(axis=1) > 1e-9, np.argmax(mass, axis=1), fastest)


def pool_instance(
    inst: Instance, home: np.ndarray, ratio: np.ndarray, region: np.ndarray, cap: np.ndarray
) -> Instance:
    """The pooled (P) of the jobs in pools ``home`` (module docstring): longer demand vectors,
    work W_i / r_ig, and the whole problem's deferral costs.

    Dimensions that cannot bind are left out (the search is the same, with fewer of them): a
    pool that is its region's only pool (the region's row covers it), and any dimension that
    holds every job at its largest configuration at once.
    """
    alpha, gamma = _demands(inst, home, region)
    G, Q, K = len(region), int(region.max()) + 1, inst.K
    names = [f"{r}@pool{g}" for g in range(G) for r in inst.resources]
    names += [f"{r}@region{q}" for q in range(Q) for r in inst.resources]
    W = np.array([t.shape[0] for t in inst.tables], dtype=float)
    P = np.array([t.shape[1] for t in inst.tables], dtype=float)
    keep = W @ alpha + P @ gamma > cap + 1e-9 * np.maximum(1.0, cap)
    for g in range(G):
        if np.count_nonzero(region == region[g]) == 1:
            keep[g * K : (g + 1) * K] = False
    if not keep.any():
        keep[G * K] = True  # one dimension, never binding: the instance needs one
    out = Instance(
        inst.jobs, tuple(np.array(names)[keep].tolist()), cap[keep], alpha[:, keep],
        gamma[:, keep], inst.weight, inst.tables, inst.mode, inst.allow_defer, cap[keep],
        inst.samples / ratio[np.arange(inst.n), home], None,
    )  # fmt: skip
    # waiting costs the same whichever pool a job was offered: the whole problem's charge
    out.__dict__["defer_cost"] = inst.defer_cost
    return out


def _fit(
    free: np.ndarray, rows: np.ndarray, demand: np.ndarray, n: int, scale: np.ndarray, best: bool
) -> list[int]:
    """Up to ``n`` tasks of ``demand``, one at a time on the machine of ``rows`` that it leaves
    with the least (``best``) or the most free capacity, summed over resources as fractions of
    ``scale``; the machines used, ``free`` updated in place."""
    out = []
    tol = TOL * np.maximum(1.0, demand)
    for _ in range(n):
        left = free[rows] - demand
        ok = np.all(left >= -tol, axis=1)
        if not ok.any():
            break
        room = (left / scale).sum(axis=1)
        k = int(
            np.argmin(np.where(ok, room, np.inf))
            if best
            else np.argmax(np.where(ok, room, -np.inf))
        )
        m = int(rows[k])
        free[m] -= demand
        out.append(m)
    return out


def _count(tasks: dict[int, list[int]], machines: list[int], kind: int) -> None:
    """Add one task of ``kind`` (0: worker, 1: PS) per entry of ``machines`` to ``tasks``."""
    for m in machines:
        tasks.setdefault(m, [0, 0])[kind] += 1


def _as_placement(tasks: dict[int, list[int]]) -> Placement:
    """``tasks`` ({machine: [workers, PSs]}) as a Placement, machines in order."""
    return Placement(tuple((m, w, p) for m, (w, p) in sorted(tasks.items())))


def _place_whole(
    inst: Instance,
    cluster: Cluster,
    free: np.ndarray,
    pools: Sequence[np.ndarray],
    areas: dict[int, np.ndarray],
    region: np.ndarray,
    home: np.ndarray,
    workers: np.ndarray,
    ps: np.ndarray,
) -> list[Placement]:
    """Each pool's jobs placed whole by smdlab's placement on the pool's machines and, without
    the resources only workers demand, the rest of its region (so only PSs land there)."""
    free = free.copy()
    out = [Placement(())] * inst.n
    for g, machines in enumerate(pools):
        idx = np.flatnonzero((home == g) & (workers > 0))
        if not idx.size:
            continue
        pairs = np.zeros((inst.n, 2), dtype=int)
        pairs[idx, 0], pairs[idx, 1] = workers[idx], ps[idx]
        area = areas[int(region[g])]
        mine = np.zeros_like(free)
        mine[area] = free[area]
        only_w = (inst.alpha[idx] > 0).any(axis=0) & (inst.gamma[idx] == 0).all(axis=0)
        mine[np.ix_(np.setdiff1d(area, machines), np.flatnonzero(only_w))] = 0.0
        placed = place_checked(
            inst.jobs, pairs, cluster, mine, inst.mode, (inst.alpha, inst.gamma), inst.defer_cost
        )
        free -= mine - placed.free  # what this pool's jobs took
        for i in idx.tolist():
            out[i] = placed.placements[i]
    return out


def _workers_by_worst_fit(
    inst: Instance,
    free: np.ndarray,
    pools: Sequence[np.ndarray],
    home: np.ndarray,
    workers: np.ndarray,
    scale: np.ndarray,
) -> dict[int, dict[int, list[int]]]:
    """Each job's workers one at a time by worst fit on its pool (the machine with most room
    left: the pool's room stays spread for the PSs), largest jobs first."""
    run = np.flatnonzero(workers > 0)
    size = workers[run] * (inst.alpha[run] / scale).max(axis=1)
    tasks: dict[int, dict[int, list[int]]] = {}
    for i in run[np.argsort(-size, kind="stable")].tolist():
        on = _fit(free, pools[int(home[i])], inst.alpha[i], int(workers[i]), scale, False)
        if on:
            tasks[i] = {}
            _count(tasks[i], on, 0)
    return tasks


def _place_split(
    inst: Instance,
    free: np.ndarray,
    pools: Sequence[np.ndarray],
    areas: Sequence[np.ndarray],
    home: np.ndarray,
    workers: np.ndarray,
    ps: np.ndarray,
) -> list[Placement]:
    """Every job's workers on its pool's machines by worst fit, then its PSs by best fit anywhere
    in its region, largest first; a job keeps the tasks that fit (no PS: it waits)."""
    free = free.copy()
    total = free.sum(axis=0)
    scale = np.where(total > 0, total, 1.0)
    tasks = _workers_by_worst_fit(inst, free, pools, home, workers, scale)
    run = np.flatnonzero(workers > 0)
    size = ps[run] * (inst.gamma[run] / scale).max(axis=1)
    for i in run[np.argsort(-size, kind="stable")].tolist():
        if i not in tasks:
            continue
        on = _fit(free, areas[i], inst.gamma[i], int(ps[i]), scale, True)
        if not on:  # no PS fits: the job waits and its workers' room is given back
            for m, (w, _) in tasks.pop(i).items():
                free[m] += w * inst.alpha[i]
            continue
        _count(tasks[i], on, 1)
    out = [Placement(())] * inst.n
    for i, t in tasks.items():
        out[i] = _as_placement(t)
    return out


def _areas(cluster: Cluster, pools: Sequence[np.ndarray], region: np.ndarray) -> list[np.ndarray]:
    """The machines of each region (its rack, or every machine when no uplink binds)."""
    rack = np.array(cluster.rack_of) if region.max() > 0 else np.zeros(len(cluster.machines), int)
    first = [
        int(pools[int(np.flatnonzero(region == q)[0])][0]) for q in range(int(region.max()) + 1)
    ]
    return [np.flatnonzero(rack == rack[m]) for m in first]


def _restart_left_out(
    inst: Instance,
    cluster: Cluster,
    free: np.ndarray,
    pools: Sequence[np.ndarray],
    areas: Sequence[np.ndarray],
    region: np.ndarray,
    placements: list[Placement],
    workers: np.ndarray,
    ps: np.ndarray,
) -> list[Placement]:
    """``placements`` plus jobs the plan started that placement left out, each started in the
    fastest pool that still holds it (its planned configuration, else one worker and one PS; by
    best fit) where that costs less than waiting."""
    lost = np.flatnonzero((workers > 0) & np.array([not pl.tasks for pl in placements]))
    if not lost.size:
        return placements
    out = list(placements)
    left = free.astype(float).copy()
    for i, pl in enumerate(out):
        for m, w, p in pl.tasks:
            left[m] -= w * inst.alpha[i] + p * inst.gamma[i]
    total = free.sum(axis=0)
    scale = np.where(total > 0, total, 1.0)
    ratio = pool_ratios(inst.subset(lost), cluster, pools)
    for k, i in enumerate(lost.tolist()):
        done = False
        for g in np.argsort(-ratio[k], kind="stable").tolist():
            for w, p in dict.fromkeys(((int(workers[i]), int(ps[i])), (1, 1))):
                trial = left.copy()
                on_w = _fit(trial, pools[g], inst.alpha[i], w, scale, False)
                on_p = _fit(trial, areas[int(region[g])], inst.gamma[i], p, scale, True)
                if len(on_w) < w or len(on_p) < p:
                    continue
                tasks: dict[int, list[int]] = {}
                _count(tasks, on_w, 0)
                _count(tasks, on_p, 1)
                one = [Placement(())] * inst.n
                one[i] = _as_placement(tasks)
                if evaluate(inst, cluster, one)[i] < inst.defer_cost[i]:
                    out[i], left, done = one[i], trial, True
                    break
            if done:
                break
    return out


def place_on_pools(
    inst: Instance,
    cluster: Cluster,
    free: np.ndarray,
    pools: Sequence[np.ndarray],
    home: np.ndarray,
    workers: np.ndarray,
    ps: np.ndarray,
) -> tuple[float, list[Placement]]:
    """(objective, placements) of an allocation whose jobs run in pools ``home``: the cheaper,
    by the simulator's speeds (``evaluate``), of two placements (whole jobs by smdlab's
    placement; workers by worst fit, then PSs by best fit), each followed by a second chance, in
    any pool, for the jobs it left out."""
    region = regions(cluster, pools)
    areas = _areas(cluster, pools, region)
    area = [areas[int(region[g])] for g in home.tolist()]
    by_region = dict(enumerate(areas))
    prev = set_rack_layout(None)  # inside a region no machine changes the speed: no rack rule
    try:
        whole = _place_whole(inst, cluster, free, pools, by_region, region, home, workers, ps)
    finally:
        set_rack_layout(prev)
    split = _place_split(inst, free, pools, area, home, workers, ps)
    tried = [
        _restart_left_out(inst, cluster, free, pools, areas, region, pl, workers, ps)
        for pl in (whole, split)
    ]
    return min(((float(evaluate(inst, cluster, pl).sum()), pl) for pl in tried), key=lambda t: t[0])


PACKING_MARGINS = (0.0, 0.25, 0.5)  # per machine, as fractions of a planned task's mean demand
PACKING_LOSS = 0.02  # placement above this share of the plan's objective: plan again with a margin


def smd_pools(
    inst: Instance,
    cluster: Cluster,
    free: np.ndarray,
    pools: Sequence[np.ndarray],
    current: np.ndarray | None = None,
) -> PoolAllocation:
    """SMD on the pools (module docstring), each pool's jobs placed on its machines and region.

    SMD's capacities are pooled, so a plan that fills them can lose tasks in placement (machines
    are bins). When the placed objective is more than ``PACKING_LOSS`` above the plan's, SMD
    plans again with each pool's and region's capacity lowered by a packing margin
    (``PACKING_MARGINS``: per machine, that fraction of a planned task's mean demand in every
    resource), while that lowers the placed objective. Each plan is placed by
    ``place_on_pools``. current: per job the pool it runs in now (-1: none; default none), which
    it keeps where another pool is no better.
    """
    region = regions(cluster, pools)
    cap = _capacity(free, pools, region)
    ratio = pool_ratios(inst, cluster, pools)
    now = np.full(inst.n, -1) if current is None else np.asarray(current, dtype=int)
    home = _assign(inst, cap, ratio, region, now)
    per_block = np.array([len(m) for m in pools] + [len(a) for a in _areas(cluster, pools, region)])
    best: tuple[float, list[Placement]] | None = None
    planned = mean = np.nan
    for margin in PACKING_MARGINS:
        lowered = np.maximum(cap - margin * np.kron(per_block, mean), 0.0) if margin else cap
        plan = pool_instance(inst, home, ratio, region, lowered)
        r = smd(plan)
        placed = place_on_pools(inst, cluster, free, pools, home, r.workers, r.ps)
        value = plan.objective(r.workers, r.ps)
        if not margin:
            planned = value
            run = r.workers > 0
            count = int(r.workers[run].sum() + r.ps[run].sum())
            mean = (r.workers[run] @ inst.alpha[run] + r.ps[run] @ inst.gamma[run]) / max(count, 1)
        elif best is not None and placed[0] >= best[0]:
            break  # a larger margin no longer pays
        if best is None or placed[0] < best[0]:
            best = placed
        if placed[0] <= value * (1 + PACKING_LOSS):
            break  # placement kept the plan
    assert best is not None  # PACKING_MARGINS is not empty
    placements = best[1]
    w = np.array([pl.workers for pl in placements], dtype=int)
    p = np.array([pl.ps for pl in placements], dtype=int)
    pool = np.where(w > 0, home, -1)
    return PoolAllocation(pool, w, p, tuple(placements), float(planned))
