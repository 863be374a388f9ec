"""Data a training job sends across rack uplinks per iteration (``cross_rack_gb`` accounting).

PS architecture: every iteration each worker pushes its gradient (P bytes, the model's
parameters) and pulls the parameters (P bytes), split evenly over the ``ps`` PSs, so a
(worker, PS) pair exchanges ``2 P / ps``; the pairs on machines of different racks cross uplinks.
Ring all-reduce: each worker sends ``2 (n - 1) / n * P`` per iteration along the ring; with the
ring ordered rack by rack, a ring spanning k > 1 racks crosses k rack boundaries, each carrying
that amount. This accounts traffic only; speeds do not read the uplinks yet.
"""

from __future__ import annotations

from collections.abc import Sequence

from smdlab.model.job import Job

__all__ = ["cross_rack_bytes_per_iteration", "samples_per_iteration"]


def samples_per_iteration(job: Job, workers: int) -> int:
    """Samples one iteration processes at ``workers`` workers."""
    return job.global_batch if job.batch_mode == "global" else workers * job.batch


def cross_rack_bytes_per_iteration(
    job: Job, tasks: Sequence[tuple[int, int, int]], rack_of: Sequence[int]
) -> float:
    """Bytes one iteration of ``job`` at placement ``tasks`` sends across rack boundaries."""
    size = float(job.profile.param_bytes.sum())
    if job.arch == "allreduce":
        n = sum(w for _, w, _ in tasks)
        racks = {rack_of[m] for m, w, _ in tasks if w > 0}
        if n < 2 or len(racks) < 2:
            return 0.0
        return len(racks) * 2.0 * (n - 1) / n * size
    ps = sum(p for _, _, p in tasks)
    if ps == 0:
        return 0.0
    cross_pairs = sum(
        w * p for m1, w, _ in tasks for m2, _, p in tasks if w and p and rack_of[m1] != rack_of[m2]
    )
    return cross_pairs * 2.0 * size / ps
