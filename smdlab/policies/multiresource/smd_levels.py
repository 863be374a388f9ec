"""SMD with CPU and memory levels: each queued job's level from the LP of (P) with levels, then SMD.

SMD (the reconstructed model, ``smdlab.policies.ps.smd``) allocates workers and PSs at fixed
per-task demands. This variant lets the configuration span CPU and memory too, in two steps per
decision (assumption: the reconstruction's SMD has no level dimension; this is the cheapest
extension that keeps its algorithm):
1. the LP relaxation of (P) with levels (``smdlab.solve.levels.level_weights``) over the queued
   jobs and the free capacity gives each job a mass per level of its menu; the job takes the
   level with the most mass (ties: the cheaper level);
2. SMD allocates the queued jobs at those levels (and, when elastic, the running ones at theirs),
   exactly as ``smd`` does; every allocation carries its job's CPU and memory per worker.
Running jobs keep the level they started with. Options and execution modes are SMD's. Results
are results of "the reconstructed SMD model".
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from smdlab.model.job import Job
from smdlab.model.pipeline import with_worker_resources
from smdlab.policies.base import ClusterState, Decision
from smdlab.policies.ps.smd import SMD


class SMDLevels(SMD):
    """SMD over (workers, PSs) at LP-chosen CPU/memory levels (module docstring)."""

    name = "smd_levels"
    method = "smd"

    def __init__(self, **options: Any):
        super().__init__(**options)
        self.last_levels: dict[str, tuple[float, float]] = {}

    def _levels(self, state: ClusterState) -> dict[str, tuple[float, float]]:
        from smdlab.solve.levels import level_menu, level_weights

        queued = [q for q in state.queued if q.remaining > 0]
        if not queued:
            return {}
        cluster = state.cluster
        free = np.asarray(state.free, dtype=float)
        if state.execution == "elastic":  # what the running jobs hold is re-allocated too
            free = free + sum((self._held(r, state) for r in state.running), np.zeros_like(free))
        top = (
            float(free[:, cluster.resources.index("cpu")].max())
            if "cpu" in cluster.resources
            else np.inf
        )
        jobs = [q.job.replace(samples=q.remaining) for q in queued]
        menus = [level_menu(j, top) for j in jobs]
        try:
            weights = level_weights(
                jobs, cluster.resources, free.sum(axis=0), menus, mode=state.mode
            )
        except Exception:
            return {}
        return {
            j.name: menu[int(np.argmax(np.round(x, 9)))] for j, menu, x in zip(jobs, menus, weights)
        }

    @staticmethod
    def _held(r, state: ClusterState) -> np.ndarray:
        from smdlab.solve.instance import task_vectors
        from smdlab.solve.placement import usage

        return usage(
            r.placement.tasks, *task_vectors(r.job, state.cluster.resources), state.free.shape[0]
        )

    def decide(self, state: ClusterState) -> Decision:
        """Choose the queued jobs' levels, then decide as SMD; allocations carry the levels."""
        levels = self._levels(state)
        self.last_levels = levels
        as_job: dict[str, Job] = {r.job.name: r.job for r in state.running}
        queued = []
        for q in state.queued:
            job = q.job
            if job.name in levels:
                job = with_worker_resources(job, *levels[job.name])
            as_job[job.name] = job
            queued.append(dataclasses.replace(q, job=job))
        decision = SMD.decide(self, dataclasses.replace(state, queued=tuple(queued)))
        allocations = tuple(
            dataclasses.replace(
                a,
                cpu=as_job[a.job].worker_demand.get("cpu"),
                mem_gb=as_job[a.job].worker_demand.get("mem_gb"),
            )
            for a in decision.allocations
        )
        return dataclasses.replace(decision, allocations=allocations)
