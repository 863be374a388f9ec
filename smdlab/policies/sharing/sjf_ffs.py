"""SJF-FFS: shortest job first with first-fit sharing (the aggressive GPU-sharing baseline).

Source: the baseline of Luo et al., "Scheduling Deep Learning Jobs in Multi-Tenant GPU Clusters
via Wise Resource Sharing" (arXiv 2407.13088, 2024): jobs in SJF order, each placed on the first
GPUs it can use, sharing GPUs with running jobs whenever that is possible. Mode: non-preemptive,
as in the paper (no preemption, no migration); execution ``non_elastic``.

Rule here: queued jobs by remaining time at their request (``srtf.request``), ties by arrival;
each job first joins the first sharing group (in start order) with room: fewer than the sharing
degree members, the same (workers, PSs) and a predicted memory fit
(``smdlab.model.colocation``); otherwise it starts alone, first-fit, as a new group others may
join. A job that neither packs nor fits waits. Assumptions: "possible" means the co-location
model predicts the memory fits (the paper checks GPU memory); jobs share only GPU sets of the
same size and placement (Gavel's data measure pairs of equal GPU counts); default sharing
degree 2 (pairs, as in the paper).
"""

from __future__ import annotations

import numpy as np

from smdlab.errors import check_int
from smdlab.policies.base import Allocation, ClusterState, Decision, Policy
from smdlab.policies.sharing._groups import (
    can_share,
    factors,
    place_alone,
    running_shares,
    sjf_order,
    start_alone,
    try_join,
)


class SJFFFS(Policy):
    """Shortest job first; pack onto shared GPUs whenever memory allows, else first fit alone."""

    name = "sjf_ffs"
    execution = "non_elastic"
    executions = ("non_elastic",)

    def __init__(self, sharing_degree: int = 2) -> None:
        self.sharing_degree = check_int("sharing_degree", sharing_degree, 1)

    def decide(self, state: ClusterState) -> Decision:
        """Each queued job in SJF order: join the first group with room, else start alone."""
        k = state.sharing_degree
        free = np.array(state.free, dtype=float)
        shares = running_shares(state) if k > 1 else []
        out: list[Allocation] = []
        for q in sjf_order(state):
            job = q.job
            host = next(
                (
                    s
                    for s in shares
                    if len(s.jobs) < k
                    and can_share(s, job)
                    and factors([*s.jobs, job]) is not None
                    and try_join(s, job, free, state)
                ),
                None,
            )
            if host is not None:
                host.jobs.append(job)
                out.append(
                    Allocation(
                        job.name,
                        host.workers,
                        host.ps,
                        host.placement,
                        group=host.label,
                        sharing="space",
                    )
                )
                continue
            alone = place_alone(job, free, state)
            if alone is None:
                continue
            start_alone(q, alone, "ffs", free, state, shares, out)
        return Decision(tuple(out))
