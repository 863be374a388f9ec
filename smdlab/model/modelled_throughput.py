"""Measured-throughput tables modelled by smdlab's layered model (``layered_throughput``).

Kept apart from ``smdlab.model.measured_speed``, which ``Job`` imports: this module builds jobs
and reads the timing model, so it sits above both.
"""

from __future__ import annotations

from smdlab.model.demands import task_demands
from smdlab.model.input_pipeline import bundled_pipeline
from smdlab.model.job import Job
from smdlab.model.measured_speed import REFERENCE_SHARE, MeasuredThroughput
from smdlab.model.pipeline import with_worker_resources
from smdlab.model.profiles import LayerProfile
from smdlab.model.timing import speed_table

__all__ = ["layered_throughput"]


def layered_throughput(
    like: MeasuredThroughput,
    profile: LayerProfile,
    global_batch: int,
    *,
    ps: bool = False,
    mode: str = "wfbp",
    reference: tuple[float, float] = REFERENCE_SHARE,
) -> MeasuredThroughput:
    """smdlab's model of one network as a profile on ``like``'s grid (docs/model.md).

    The relative throughput at each (CPU, memory) grid level is the layered model with the
    network's bundled input pipeline (``smdlab.model.input_pipeline``; data stage prefetched),
    one worker and, with ``ps``, one PS, over its value at ``reference``; the best-case demand is
    the smallest levels that reach the peak. ``iter_time_s`` and ``batch`` stay ``like``'s, so a
    job keeps its duration at the reference share and only the shape of its CPU and memory
    sensitivity changes.
    """
    wd, pd_ = task_demands(profile)
    probe = Job(
        f"probe:{profile.network}",
        profile,
        1.0,
        global_batch,
        wd,
        pd_ if ps else {},
        max_workers=1,
        max_ps=1 if ps else 0,
        arch="ps" if ps else "allreduce",
        pipeline=bundled_pipeline(profile),
    )

    def speed(c: float, g: float) -> float:
        return float(speed_table(with_worker_resources(probe, c, g), mode)[0, 0])

    ref = speed(*reference)
    rel = [[speed(c, g) / ref for g in like.mem_levels] for c in like.cpu_levels]
    peak = max(max(r) for r in rel)
    best = min(
        (c, g)
        for i, c in enumerate(like.cpu_levels)
        for j, g in enumerate(like.mem_levels)
        if rel[i][j] >= peak * (1 - 1e-9)
    )
    return MeasuredThroughput(
        like.model,
        like.iter_time_s,
        like.batch,
        like.cpu_levels,
        like.mem_levels,
        tuple(tuple(r) for r in rel),
        best[0],
        best[1],
    )
