"""Sequential execution (SeqEx): each job in turn on every GPU of the cluster.

Source: the "sequential" baseline of OMRU (Li, Chang, Hu, Fu et al., Future Generation Computer
Systems, 2021), as its public implementation (GitHub 1a2yd09/gpu-scheduling-algorithm) runs it:
jobs in the order given, one batch per job, each on all G GPUs. Mode: offline, non-preemptive.
Assumptions: the order is the queue's (arrival, then name); a job whose cap is below G gets its
cap; completion times from the layered model (``smdlab.policies.allreduce._batch_plan``).
"""

from __future__ import annotations

from smdlab.policies.allreduce._batch_plan import BatchPlan, BatchPlanPolicy, Entry, EpochTable


class SeqEx(BatchPlanPolicy):
    """One job at a time on all GPUs."""

    name = "seqex"

    def plan(self, table: EpochTable) -> BatchPlan:
        """One batch per job, in order, each on G GPUs (or the job's cap)."""
        G = table.gpus
        batches, total = [], 0.0
        for i, name in enumerate(table.names):
            g = max(k for k in range(1, G + 1) if table.epoch_time[i, k] < float("inf"))
            batches.append((Entry(name, g),))
            total += float(table.epochs[i] * table.epoch_time[i, g])
        return BatchPlan(tuple(batches), (), total)
