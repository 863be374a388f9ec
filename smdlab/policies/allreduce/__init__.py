"""All-reduce family: OMRU and its baselines (SeqEx, Parallel, Optimus-like, OMRU without reuse)
and SJF-BCO (notebook 06). ``_batch_plan`` is the batch-plan machinery OMRU and its baselines
share (plans and their policy base); its epoch table (``epoch_table``: each job's epoch time at
each GPU count) is public here."""

from smdlab.policies.allreduce._batch_plan import EpochTable, epoch_table

__all__ = ["EpochTable", "epoch_table"]
