"""Batch-queue policies (FIFO, EASY and conservative backfilling, fair share) and chain
provisioners (reactive, fixed lead, oracle, learned); ``smdlab.sim.batch`` runs them."""

from smdlab.policies.batch.provision import (
    FEATURES,
    ChainView,
    FixedLead,
    Learned,
    Oracle,
    Provisioner,
    ProvisionState,
    Reactive,
    provisioner,
)
from smdlab.policies.batch.queue import (
    BACKFILLS,
    BATCH_QUEUES,
    BatchState,
    QueuedBatch,
    QueuePolicy,
    RunningBatch,
    queue_policy,
    shadow,
)

__all__ = [
    "BACKFILLS",
    "BATCH_QUEUES",
    "FEATURES",
    "BatchState",
    "ChainView",
    "FixedLead",
    "Learned",
    "Oracle",
    "ProvisionState",
    "Provisioner",
    "QueuePolicy",
    "QueuedBatch",
    "Reactive",
    "RunningBatch",
    "provisioner",
    "queue_policy",
    "shadow",
]
