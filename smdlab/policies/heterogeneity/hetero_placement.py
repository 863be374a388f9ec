"""``hetero_placement``: GPU type and consolidation chosen together from measured sensitivity.

Inspired by "Scheduling Distributed Deep Learning Jobs in Heterogeneous Cluster with Placement
Awareness" (Internetware 2020), of which only the title is public: this is smdlab's policy in
its spirit, not a reconstruction. Mode: non-preemptive (a started job keeps its GPUs).

Rule: queued jobs in arrival order (later jobs may start past one that waits). For each job and
each GPU type, its request (``Job.gang_allocation``) is placed on that type's machines only
(``toolkit.gang_placement``: one machine if it fits, else spread) and scored by the expected speed
``speed_ratio(network, type) * (consolidation_ratio(network, type, gpus) if spread else 1)``,
both from Gavel's measurements (``smdlab.model.gpu_types``). The job starts on its best-scoring
option if that reaches ``patience`` times the best score it could get on an empty cluster, or
if no job is running (so it never waits forever); otherwise it waits for a better option. A job
whose request fits on no type alone starts across types (a gang job) or with as many bundles as
fit anywhere (``toolkit.max_allocation``). Assumption: the simulator's speed follows the slowest GPU type and,
for all-reduce rings, the machines spanned; the measured consolidation penalty is the policy's
own estimate, it does not change PS jobs' simulated speed.
"""

from __future__ import annotations

import numpy as np

from smdlab.errors import check_positive
from smdlab.model.gpu_types import consolidation_ratio, speed_ratio
from smdlab.model.job import Job
from smdlab.policies.base import Allocation, ClusterState, Decision, Policy
from smdlab.policies.toolkit import gang_placement, max_allocation
from smdlab.solve.placement import Placement, capacity_matrix, placement_usage


class HeteroPlacement(Policy):
    """Start each job on the GPU type and consolidation with the best measured speed."""

    name = "hetero_placement"
    execution = "non_elastic"
    executions = ("non_elastic",)

    def __init__(self, patience: float = 0.5) -> None:
        self.patience = check_positive("patience", patience)
        if self.patience > 1:
            from smdlab.errors import InvalidInput

            raise InvalidInput(f"patience must be in (0, 1], got {patience!r}")

    def _score(self, job: Job, gpu_type: str, placement: Placement) -> float:
        net, dev = job.profile.network, job.profile.device
        score = speed_ratio(net, gpu_type, dev)
        if len(set(placement.machines)) > 1:
            score *= consolidation_ratio(net, gpu_type, placement.workers)
        return score

    def _best(
        self, job: Job, free: np.ndarray, types: list[str], res
    ) -> tuple[float, Placement | None]:
        best, where = 0.0, None
        for t in dict.fromkeys(types):
            rows = np.array([x == t for x in types])
            pl = gang_placement(job, np.where(rows[:, None], free, 0.0), res)
            if pl is not None:
                s = self._score(job, t, pl)
                if s > best:
                    best, where = s, pl
        return best, where

    def decide(self, state: ClusterState) -> Decision:
        """Queued jobs in arrival order, each on its best (type, consolidation) if good enough."""
        cluster, res = state.cluster, state.cluster.resources
        types = [m.gpu_type for m in cluster.machines] or [""]
        free = np.array(state.free, dtype=float)
        empty = capacity_matrix(cluster)
        busy = bool(state.running)
        allocations = []
        for q in state.queued:
            job = q.job
            score, pl = self._best(job, free, types, res)
            ideal, _ = self._best(job, empty, types, res)
            if pl is not None and (not busy or score >= self.patience * ideal):
                w, p = job.gang_allocation
            elif pl is None and ideal == 0.0:
                # The request fits on no type alone: a gang across types, else fewer bundles.
                if job.gang:
                    pl = gang_placement(job, free, res)
                    w, p = job.gang_allocation
                else:
                    w, p, pl = max_allocation(job, free, res)
                if pl is None or w == 0:
                    continue
            else:
                continue
            free -= placement_usage(job, pl, free.shape[0], res)
            allocations.append(Allocation(job.name, w, p, pl))
            busy = True
        return Decision(tuple(allocations))
