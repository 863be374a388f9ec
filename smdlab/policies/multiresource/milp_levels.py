"""MILP with CPU and memory levels: the exact allocation over (workers, PSs, CPU level, memory level).

Problem (P) of docs/solver.md with a menu of per-worker CPU and memory levels per job
(``smdlab.solve.levels``; docs/multiresource.md): SMD's premise that a job's configuration spans
every resource, solved exactly. At each decision the queued jobs (with their remaining work) get
the optimal configurations within the free pooled capacity; each started job is then placed on
the machines by the solver's placement stage (first-fit decreasing, shrinking where it does not
fit) with its level's demands. Mode: ``non_elastic`` (assumption: running jobs keep their
allocations; the elastic re-solve of SMD is not implemented for levels). ``time_limit`` (s,
default 20) bounds each solve; a solve stopped by it uses the incumbent.
"""

from __future__ import annotations

import numpy as np

from smdlab.errors import check_positive
from smdlab.policies.base import Allocation, ClusterState, Decision, Placement, Policy
from smdlab.policies.toolkit import queued_jobs, with_remaining


class MILPLevels(Policy):
    """Exact (w, p, CPU, memory) configurations for the queued jobs at each decision."""

    name = "milp_levels"
    execution = "non_elastic"
    executions = ("non_elastic",)

    def __init__(self, time_limit: float = 20.0) -> None:
        self.time_limit = check_positive("time_limit", time_limit)
        self.last_solution: object | None = None  # the latest LevelSolution (inspection)

    def decide(self, state: ClusterState) -> Decision:
        """Solve (P) with levels over the free capacity and place the started jobs."""
        from smdlab.solve import place
        from smdlab.solve.levels import level_menu, solve_levels

        jobs = [with_remaining(q) for q in queued_jobs(state)]
        if not jobs:
            return Decision()
        cluster = state.cluster
        free = np.asarray(state.free, dtype=float)
        top = (
            float(free[:, cluster.resources.index("cpu")].max())
            if "cpu" in cluster.resources
            else np.inf
        )
        sol = solve_levels(
            jobs,
            cluster.resources,
            free.sum(axis=0),
            [level_menu(j, top) for j in jobs],
            mode=state.mode,
            time_limit=self.time_limit,
        )
        self.last_solution = sol
        started = np.flatnonzero(sol.workers > 0)
        if not started.size:
            return Decision()
        variants = [sol.job(jobs, int(i)) for i in started]
        alloc = [(int(sol.workers[i]), int(sol.ps[i])) for i in started]
        placed: list[tuple[int, int, Placement] | None]
        if not cluster.has_machines:
            placed = [(w, p, Placement(((0, w, p),))) for w, p in alloc]
        else:
            pr = place(variants, alloc, cluster, free, state.mode)
            placed = [
                (w, p, pl) if w > 0 else None for w, p, pl in zip(pr.workers, pr.ps, pr.placements)
            ]
        allocations = []
        for v, x in zip(variants, placed):
            if x is None:
                continue
            allocations.append(
                Allocation(
                    v.name,
                    *x,
                    cpu=v.worker_demand.get("cpu"),
                    mem_gb=v.worker_demand.get("mem_gb"),
                )
            )
        return Decision(tuple(allocations))
