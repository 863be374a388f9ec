"""Parallel execution: every job at once, the spare GPUs to the longest jobs.

Source: the "parallel" baseline of OMRU (Li, Chang, Hu, Fu et al., Future Generation Computer
Systems, 2021), as its public implementation (GitHub 1a2yd09/gpu-scheduling-algorithm) runs it.
With at least as many GPUs as jobs: one batch, one GPU each, then each remaining GPU to the job
with the largest completion time. With more jobs than GPUs: one GPU per job, the jobs sorted by
completion time, longest first; the first G open one slice each and every later job goes on the
slice that ends first (list scheduling). Mode: offline, non-preemptive. Assumptions: completion
times from the layered model (``smdlab.policies.allreduce._batch_plan``).
"""

from __future__ import annotations

from smdlab.policies.allreduce._batch_plan import (
    BatchPlan,
    BatchPlanPolicy,
    Entry,
    EpochTable,
    sorting_allocation,
    spare_to_longest,
)


class Parallel(BatchPlanPolicy):
    """All jobs at once; spare GPUs to the longest."""

    name = "parallel"

    def plan(self, table: EpochTable) -> BatchPlan:
        """One batch with the spare-GPU rule, or list scheduling when jobs outnumber GPUs."""
        n, G = len(table.names), table.gpus
        if n > G:
            return sorting_allocation(table, G, longest_first=True)
        g = spare_to_longest(table, range(n), G)
        c = {i: float(table.epochs[i] * table.epoch_time[i, g[i]]) for i in g}
        return BatchPlan((tuple(Entry(table.names[i], g[i]) for i in g),), (), max(c.values()))
