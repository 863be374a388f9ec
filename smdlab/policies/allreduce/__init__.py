"""All-reduce family: OMRU and its baselines (SeqEx, Parallel, Optimus-like, OMRU without reuse)
and SJF-BCO (notebook 06). ``_batch_plan`` is the batch-plan machinery OMRU and its baselines
share (the epoch table, plans and their policy base)."""
