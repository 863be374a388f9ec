"""Synergy-OPT: the LP reference that maximises the cluster's total (normalised) throughput.

Source: Mohan et al., "Looking Beyond GPUs for DNN Scheduling on Multi-Tenant Clusters", OSDI
2022, section 4 (Synergy-OPT: an LP over the round's jobs that chooses CPU and memory per job to
maximise the sum of throughputs, each relative to the job's proportional-share throughput,
subject to the cluster's CPU and memory; an upper bound, since it ignores machine boundaries).

``synergy_opt_lp`` solves that LP for one round with the pooled capacity: variables x[j, l] >= 0
(job j runs at menu level l, ``synergy_rounds.level_menu``), sum_l x[j, l] = 1, and the workers'
CPU and memory plus the PSs' demands within the cluster's. The policy ``synergy_opt`` runs the
round loop of ``synergy_rounds`` (mode: preemptive lease rounds of 300 s) and gives each picked
job the level with the largest x (ties: the cheaper level), falling back to its proportional share
and then to waiting when that does not fit on the machines (the rounding the paper's OPT omits;
assumption). The LP's optimum is reported in ``last_bound`` (normalised throughput).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy.optimize import linprog

from smdlab.errors import InvalidInput
from smdlab.model.cluster import Cluster
from smdlab.model.job import Job
from smdlab.model.timing import speed
from smdlab.policies.base import ClusterState
from smdlab.policies.multiresource._rounds import (
    Planned,
    SynergyRounds,
    level_menu,
    proportional_levels,
)


@dataclass(frozen=True)
class OptRound:
    """One round's LP: its optimum and, per job, the menu and the LP weights over it."""

    bound: float
    menus: tuple[tuple[tuple[float, float], ...], ...]
    weights: tuple[np.ndarray, ...]


def synergy_opt_lp(
    jobs: Sequence[Job],
    allocations: Sequence[tuple[int, int]],
    cluster: Cluster,
    mode: str = "wfbp",
) -> OptRound:
    """Synergy-OPT's LP for ``jobs`` at (workers, PSs) ``allocations`` on the pooled ``cluster``."""
    if len(jobs) != len(allocations):
        raise InvalidInput(
            f"allocations must give one (workers, ps) per job ({len(jobs)}), got {len(allocations)}"
        )
    menus, values, rows = [], [], []
    for job, (w, p) in zip(jobs, allocations):
        menu = level_menu(job, w, p, cluster)
        base = speed(job, w, p, mode, *proportional_levels(job, w, p, cluster))
        menus.append(tuple(menu))
        values.append([speed(job, w, p, mode, c, m) / base for c, m in menu])
        rows.append([(w * c, w * m) for c, m in menu])
    n_var = sum(len(m) for m in menus)
    if n_var == 0:
        return OptRound(0.0, (), ())
    c_obj = -np.concatenate(values)
    cap = cluster.capacity
    ps_cpu = sum(p * j.ps_demand.get("cpu", 0.0) for j, (_, p) in zip(jobs, allocations))
    ps_mem = sum(p * j.ps_demand.get("mem_gb", 0.0) for j, (_, p) in zip(jobs, allocations))
    a_ub = np.array(
        [
            np.concatenate([[r[0] for r in x] for x in rows]),
            np.concatenate([[r[1] for r in x] for x in rows]),
        ]
    )
    b_ub = np.array([cap.get("cpu", np.inf) - ps_cpu, cap.get("mem_gb", np.inf) - ps_mem])
    a_eq = np.zeros((len(menus), n_var))
    start = 0
    for i, m in enumerate(menus):
        a_eq[i, start : start + len(m)] = 1
        start += len(m)
    keep = np.isfinite(b_ub)
    res = linprog(
        c_obj,
        A_ub=a_ub[keep] if keep.any() else None,
        b_ub=b_ub[keep] if keep.any() else None,
        A_eq=a_eq,
        b_eq=np.ones(len(menus)),
        bounds=(0, None),
        method="highs",
    )
    if res.status != 0:  # the PSs and smallest levels alone exceed the pool: no LP point
        return OptRound(0.0, tuple(menus), tuple(np.zeros(len(m)) for m in menus))
    x, out, start = res.x, [], 0
    for m in menus:
        out.append(x[start : start + len(m)])
        start += len(m)
    return OptRound(float(-res.fun), tuple(menus), tuple(out))


class SynergyOpt(SynergyRounds):
    """Each picked job at the level its round's LP weights most (module docstring)."""

    name = "synergy_opt"

    def reset(self) -> None:
        """Forget cached state and the last LP bound."""
        super().reset()
        self.last_bound = float("nan")

    def levels(self, plans: Sequence[Planned], cluster: Cluster, state: ClusterState) -> None:
        """LP levels, placed in priority order; proportional share or waiting where they do not fit."""
        jobs = [self._job(p) for p in plans]
        lp = synergy_opt_lp(jobs, [(p.workers, p.ps) for p in plans], cluster, state.mode)
        self.last_bound = lp.bound
        for plan, menu, x in zip(plans, lp.menus, lp.weights):
            k = int(np.argmax(np.round(x, 9)))  # first maximum: the cheapest level among ties
            plan.cpu, plan.mem_gb = menu[k]

        def rule(plan: Planned, free: np.ndarray) -> bool:
            if self.try_place(plan, free, cluster):
                return True
            plan.cpu, plan.mem_gb = proportional_levels(
                self._job(plan), plan.workers, plan.ps, cluster
            )
            return self.try_place(plan, free, cluster) or self.fallback_place(plan, free, cluster)

        self.place_plans(plans, cluster, rule)
