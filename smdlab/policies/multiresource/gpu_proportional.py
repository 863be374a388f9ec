"""GPU-proportional allocation: the baseline Synergy compares against.

Source: Mohan et al., "Looking Beyond GPUs for DNN Scheduling on Multi-Tenant Clusters", OSDI
2022 (section 2: today's schedulers give a job CPU and memory in proportion to its GPUs).
Mode: preemptive lease rounds (``LEASE_S`` = 300 s; run with ``slot_s=LEASE_S``), as every policy
of Synergy's simulator. Each picked job's workers get the GPU-proportional share
(``synergy_rounds.proportional_levels``) whatever the job needs; a job whose tasks do not fit
waits for the next round. Order: the ``base`` policy (fifo, srtf or las), default fifo.
Assumptions: those of ``smdlab.policies.multiresource._rounds``.
"""

from __future__ import annotations

from collections.abc import Sequence

from smdlab.model.cluster import Cluster
from smdlab.model.job import Job
from smdlab.policies.base import ClusterState
from smdlab.policies.multiresource._rounds import Planned, SynergyRounds, proportional_levels


class GPUProportional(SynergyRounds):
    """Every worker gets the cluster's CPU and memory per GPU (less its PSs' share)."""

    name = "gpu_proportional"

    def sort_levels(self, job: Job, workers: int, ps: int, cluster: Cluster) -> tuple[float, float]:
        """SRTF assumes the proportional share: the levels this policy gives."""
        return proportional_levels(job, workers, ps, cluster)

    def levels(self, plans: Sequence[Planned], cluster: Cluster, state: ClusterState) -> None:
        """Proportional levels for every picked job, placed in priority order."""
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
