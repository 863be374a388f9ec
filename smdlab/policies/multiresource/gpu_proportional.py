"""GPU-proportional allocation: the baseline Synergy compares against.

Source: Mohan et al., "Looking Beyond GPUs for DNN Scheduling on Multi-Tenant Clusters", OSDI
2022 (section 2: today's schedulers give a job CPU and memory in proportion to its GPUs).
Mode: preemptive lease rounds (``LEASE_S`` = 300 s; run with ``slot_s=LEASE_S``), as every policy
of Synergy's simulator. Each picked job's workers get the GPU-proportional share
(``synergy_rounds.proportional_levels``) whatever the job needs; a job whose tasks do not fit
waits for the next round. Order: the ``base`` policy (fifo, srtf or las), default fifo.
``rule="simulator"`` places as the authors' simulator does (msr-fiddle/synergy
``resources/cluster.py`` ``allocate_synergy_random``; single-worker jobs without PS, else the
rule above): each job on the lowest-numbered machine that holds its share (first fit).
Assumptions: those of ``smdlab.policies.multiresource._rounds``.
"""

from __future__ import annotations

from collections.abc import Sequence
from operator import sub

from smdlab.errors import check_choice
from smdlab.model.cluster import Cluster
from smdlab.model.job import Job
from smdlab.policies.base import ClusterState
from smdlab.policies.multiresource._rounds import (
    RULES,
    Planned,
    SynergyRounds,
    first_fit,
    first_with_gpu,
    proportional_levels,
)
from smdlab.solve.placement import TOL


class GPUProportional(SynergyRounds):
    """Every worker gets the cluster's CPU and memory per GPU (less its PSs' share)."""

    name = "gpu_proportional"

    def __init__(
        self,
        base: str = "fifo",
        round_decisions: bool = False,
        starvation_h: float | None = None,
        rule: str = "paper",
    ) -> None:
        self.rule = check_choice("rule", rule, RULES)
        super().__init__(base, round_decisions, starvation_h)

    def reset(self) -> None:
        """Forget cached shares as well (the simulator calls this before a run)."""
        super().reset()
        self._shares: dict[str, tuple[tuple[float, float], tuple[float, ...], list[float]]] = {}

    def sort_levels(self, job: Job, workers: int, ps: int, cluster: Cluster) -> tuple[float, float]:
        """SRTF assumes the proportional share: the levels this policy gives."""
        return proportional_levels(job, workers, ps, cluster)

    def levels(self, plans: Sequence[Planned], cluster: Cluster, state: ClusterState) -> None:
        """Proportional levels for every picked job, placed in priority order."""
        if self.rule == "simulator" and all((p.workers, p.ps) == (1, 0) for p in plans):
            free = [list(map(float, row)) for row in self.start_free(cluster)]
            gi = cluster.resources.index("gpu")
            lo = 0  # machines before lo hold no free GPU
            shares = self._shares  # job name -> (share, worker vector, its fit threshold)
            for plan in plans:
                hit = shares.get(plan.entry.job.name)
                if hit is None:
                    levels = self.single_share(plan, cluster)
                    v = self.worker_vector(plan, levels, cluster)
                    hit = shares[plan.entry.job.name] = (levels, v, [b - TOL for b in v])
                levels, v, low = hit
                lo = first_with_gpu(free, gi, lo)
                m = first_fit(free, v, gi, lo if v[gi] > TOL else 0, low)
                plan.cpu, plan.mem_gb = levels
                plan.tasks = None if m is None else ((m, 1, 0),)
                if m is not None:
                    free[m] = list(map(sub, free[m], v))
            return
        for plan in plans:
            plan.cpu, plan.mem_gb = proportional_levels(
                self._job(plan), plan.workers, plan.ps, cluster
            )

        self.place_plans(
            plans,
            cluster,
            lambda plan, free: (
                self.try_place(plan, free, cluster) or self.fallback_place(plan, free, cluster)
            ),
        )
