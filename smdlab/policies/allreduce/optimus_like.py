"""Optimus-like allocation: spare GPUs by marginal gain, all jobs at once.

Source: the Optimus-like baseline of OMRU (Li, Chang, Hu, Fu et al., Future Generation Computer
Systems, 2021) as its public implementation (GitHub 1a2yd09/gpu-scheduling-algorithm) runs it,
after Optimus' marginal-gain allocation (Peng et al., EuroSys 2018). With at least as many GPUs
as jobs: one GPU each, then each remaining GPU to the job with the largest utility
(T(g) - T(g+1)) / g, T(g) its completion time on g GPUs. With more jobs than GPUs: one GPU per
job, jobs sorted by completion time, shortest first, list-scheduled on G slices. Mode: offline,
non-preemptive. Assumptions: completion times from the layered model; a job at its cap gets no
more GPUs; ties go to the job listed first. Not Optimus itself (``optimus`` is that, per its paper).
"""

from __future__ import annotations

import numpy as np

from smdlab.policies.allreduce._batch_plan import (
    BatchPlan,
    BatchPlanPolicy,
    Entry,
    EpochTable,
    sorting_allocation,
)


class OptimusLike(BatchPlanPolicy):
    """Marginal-gain GPU allocation, one batch."""

    name = "optimus_like"

    def plan(self, table: EpochTable) -> BatchPlan:
        """One batch with marginal-gain spare GPUs, or list scheduling when jobs outnumber GPUs."""
        n, G = len(table.names), table.gpus
        if n > G:
            return sorting_allocation(table, G, longest_first=False)
        g = np.ones(n, dtype=np.int64)
        E, T = table.epochs, table.epoch_time
        for _ in range(G - n):
            nxt = np.minimum(g + 1, G)
            ok = (g < G) & np.isfinite(T[np.arange(n), nxt])
            if not ok.any():
                break
            now = E * T[np.arange(n), g]
            gain = np.where(ok, (now - E * T[np.arange(n), nxt]) / g, -np.inf)
            i = int(np.argmax(gain))
            g[i] += 1
        c = E * T[np.arange(n), g]
        return BatchPlan(
            (tuple(Entry(table.names[i], int(g[i])) for i in range(n)),), (), float(c.max())
        )
