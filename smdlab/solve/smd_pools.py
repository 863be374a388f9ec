"""SMD on a cluster whose machines differ in speed: pools of one GPU type and, where uplinks bind, one rack.

Our extension of the reconstructed model (docs/solver.md, "SMD on pools of machines"). The
pooled (P) treats the cluster as one bin whose every configuration runs at the job's table
speed. On a cluster with several GPU types, or with rack uplinks slower than the NICs they
carry, the simulator's speed of the same configuration depends on where it sits
(``smdlab.model.placement_speed``). Here the machines are split into *pools*: machines of one
GPU type and, when some uplink binds, one rack. A configuration held inside pool g runs at
``r_ig * S_i(w, p)``, with ``r_ig`` the job's GPU-type ratio on the pool's type
(``smdlab.model.gpu_types.speed_ratio``, Gavel's measured throughputs) and no uplink divisor (no
traffic leaves the rack). Each job chooses one option (pool, w, p) or waits:

    minimise   sum_i N_i / (r_ig S_i(w, p))  +  sum over waiting jobs of defer_i
    subject to, per pool g and resource k:  sum over jobs in g of (w alpha_ik + p gamma_ik) <= cap_gk

still a sum of ratios over a multiple-choice multi-dimensional knapsack (G x K dimensions, one
ratio per option). With the pools of the jobs fixed it separates into G pooled problems of the
reconstructed form, each job's denominator scaled by a constant (``work = W_i / r_ig``). So SMD
runs as before with one more choice in its outer selection: the LP relaxation of the whole
problem picks each job's pool (the pool holding most of its LP mass), then SMD (selection,
Jong's iteration, local searches) runs in each pool, and the pool's allocation is placed on the
pool's machines only. A cluster with one pool never reaches this module (``machine_pools``).
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
from smdlab.solve.placement import Placement
from smdlab.solve.shrink_placement import place_checked
from smdlab.solve.smd import smd

__all__ = ["PoolAllocation", "binding_uplinks", "machine_pools", "pool_ratios", "smd_pools"]


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
    """SMD on pools: per job its pool (-1: waits), workers, PSs and placement."""

    pool: np.ndarray
    workers: np.ndarray
    ps: np.ndarray
    placements: tuple[Placement, ...]


def _pool_instance(inst: Instance, idx: np.ndarray, cap: np.ndarray, ratio: np.ndarray) -> Instance:
    """The pooled (P) of jobs ``idx`` in one pool: work W_i / r_ig, the whole problem's deferral costs."""
    sub = Instance(
        tuple(inst.jobs[i] for i in idx),
        inst.resources,
        cap,
        inst.alpha[idx],
        inst.gamma[idx],
        inst.weight[idx],
        tuple(inst.tables[i] for i in idx),
        inst.mode,
        inst.allow_defer,
        inst.pool_vector,
        inst.samples[idx] / ratio,
        None,
    )
    # waiting costs the same whichever pool a job was offered: the whole problem's charge
    sub.__dict__["defer_cost"] = inst.defer_cost[idx]
    return sub


def _assign(inst: Instance, caps: np.ndarray, ratio: np.ndarray) -> np.ndarray:
    """(n,) each job's pool: where the LP relaxation of the pooled-per-pool knapsack puts most of it."""
    G, K = caps.shape
    job, w, p = np.nonzero(inst.pareto)
    w, p = w + 1, p + 1
    use = inst.alpha[job] * w[:, None] + inst.gamma[job] * p[:, None]  # (m, K)
    base = inst.cost[job, w - 1, p - 1]
    cols_cost, cols_use, cols_job, cols_pool = [], [], [], []
    for g in range(G):
        ok = fits(use, caps[g])
        m = int(ok.sum())
        block = np.zeros((m, G * K))
        block[:, g * K : (g + 1) * K] = use[ok]
        cols_cost.append(base[ok] / ratio[job[ok], g] - inst.defer_cost[job[ok]])
        cols_use.append(block)
        cols_job.append(job[ok])
        cols_pool.append(np.full(m, g))
    cj, cp = np.concatenate(cols_job), np.concatenate(cols_pool)
    model = FlatModel(
        np.concatenate(cols_cost) / max(1.0, float(inst.defer_cost.max())),
        np.concatenate(cols_use), cj, inst.n, caps.reshape(-1), eq=False,
    )  # fmt: skip
    x = solve_flat(model, integral=False, backend="highs").x
    mass = np.zeros((inst.n, G))
    np.add.at(mass, (cj, cp), x)
    # a job the LP leaves waiting is offered its fastest pool (the pool's SMD may still start it)
    fastest = np.argmax(ratio, axis=1)
    return np.where(mass.sum(axis=1) > 1e-9, np.argmax(mass, axis=1), fastest)


def smd_pools(
    inst: Instance, cluster: Cluster, free: np.ndarray, pools: Sequence[np.ndarray]
) -> PoolAllocation:
    """SMD on the pools (module docstring), each pool's allocation placed on its own machines."""
    caps = np.array([free[m].sum(axis=0) for m in pools])
    ratio = pool_ratios(inst, cluster, pools)
    home = _assign(inst, caps, ratio)
    w = np.zeros(inst.n, dtype=int)
    p = np.zeros(inst.n, dtype=int)
    pool = np.full(inst.n, -1)
    placements = [Placement(())] * inst.n
    for g, machines in enumerate(pools):
        idx = np.flatnonzero(home == g)
        if not idx.size:
            continue
        r = smd(_pool_instance(inst, idx, caps[g], ratio[idx, g]))
        pairs = np.zeros((inst.n, 2), dtype=int)
        pairs[idx, 0], pairs[idx, 1] = r.workers, r.ps
        only = np.zeros_like(free)
        only[machines] = free[machines]  # the pool's machines only
        placed = place_checked(
            inst.jobs, pairs, cluster, only, inst.mode, (inst.alpha, inst.gamma), inst.defer_cost
        )
        for i in idx.tolist():
            pl = placed.placements[i]
            placements[i] = pl
            if pl.tasks:
                w[i], p[i], pool[i] = pl.workers, pl.ps, g
    return PoolAllocation(pool, w, p, tuple(placements))
