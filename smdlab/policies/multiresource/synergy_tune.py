"""Synergy-TUNE: resource-sensitive CPU and memory on top of a GPU ordering policy.

Source: Mohan, Phanishayee, Kulkarni, Chidambaram, "Looking Beyond GPUs for DNN Scheduling on
Multi-Tenant Clusters", OSDI 2022, section 4 (Synergy-TUNE); simulator msr-fiddle/synergy (MIT).
Mode: preemptive lease rounds (``LEASE_S`` = 300 s; run with ``slot_s=LEASE_S``).

Rule, per round, for the jobs the ``base`` policy (fifo, srtf or las) picks while GPUs last, in
priority order:
1. give the job its best-case demand (its worker demand: the smallest CPU and memory that reach
   its peak speed) where that fits on the machines;
2. otherwise its GPU-proportional share;
3. when even that does not fit, shrink peers already placed this round that hold more than
   their proportional share back to it (lowest priority first, one at a time) until it fits;
   a job that still does not fit waits for the next round.
Assumptions: those of ``smdlab.policies.multiresource._rounds`` (PSs keep their demand; the proportional
share of a worker is the cluster's per-GPU share less its PSs' share). Synergy's profiling is
exact here: the best-case demand is the model's, not a measured estimate.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from smdlab.model.cluster import Cluster
from smdlab.model.pipeline import with_worker_resources
from smdlab.policies.base import ClusterState
from smdlab.policies.multiresource._rounds import (
    Planned,
    SynergyRounds,
    best_levels,
    proportional_levels,
)
from smdlab.solve.instance import task_vectors
from smdlab.solve.placement import usage


class SynergyTune(SynergyRounds):
    """Best-case demand where it fits, else the proportional share, shrinking greedy peers."""

    name = "synergy_tune"

    def levels(self, plans: Sequence[Planned], cluster: Cluster, state: ClusterState) -> None:
        """TUNE's three steps for each picked job in priority order (module docstring)."""
        free = self.start_free(cluster)
        placed: list[Planned] = []
        for plan in plans:
            job = self._job(plan)
            prop = proportional_levels(job, plan.workers, plan.ps, cluster)
            plan.cpu, plan.mem_gb = best_levels(job)
            if self.try_place(plan, free, cluster):
                placed.append(plan)
                continue
            plan.cpu, plan.mem_gb = prop
            ok = self.try_place(plan, free, cluster)
            for peer in reversed(placed):
                if ok:
                    break
                self._shrink(peer, free, cluster)
                ok = self.try_place(plan, free, cluster)
            if not ok:
                ok = self.fallback_place(plan, free, cluster)
            if ok:
                placed.append(plan)
            else:
                plan.tasks = None

    def _shrink(self, peer: Planned, free: np.ndarray, cluster: Cluster) -> None:
        """Lower ``peer`` to its proportional share where it holds more, on the same machines."""
        job = self._job(peer)
        pc, pm = proportional_levels(job, peer.workers, peer.ps, cluster)
        new = (min(peer.cpu, pc), min(peer.mem_gb, pm))
        if new == (peer.cpu, peer.mem_gb) or peer.tasks is None:
            return
        old_a, g = task_vectors(
            with_worker_resources(job, peer.cpu, peer.mem_gb), cluster.resources
        )
        new_a, _ = task_vectors(with_worker_resources(job, *new), cluster.resources)
        free += usage(peer.tasks, old_a, g, free.shape[0]) - usage(
            peer.tasks, new_a, g, free.shape[0]
        )
        peer.cpu, peer.mem_gb = new
