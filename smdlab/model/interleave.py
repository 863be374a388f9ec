"""Muri's interleaving: an iteration's time on each of four resources, and a group's iteration time.

Muri (Zhao et al., SIGCOMM 2022) runs up to four jobs on one set of GPUs, each using a different
resource (storage, CPU, GPU, network) at a time. The stage times come from the layered model and
the data stage (``smdlab.model.timing``, ``smdlab.model.pipeline``), so this module sits above
both. Specification: docs/multiresource.md.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from typing import Literal, get_args

import numpy as np

from smdlab.errors import InvalidInput, check_choice, check_positive
from smdlab.model.job import Job
from smdlab.model.pipeline import data_stage_times, samples_per_worker
from smdlab.model.timing import iteration_time, layered_iteration_time

__all__ = [
    "GROUP_OVERHEAD",
    "JOB_MODELS",
    "MAX_GROUP",
    "STAGES",
    "JobModel",
    "check_stage_times",
    "group_iteration_time",
    "interleaved_time",
    "job_iteration_time",
    "packing_time",
    "solo_iteration_time",
    "stage_times",
]

STAGES = ("storage", "cpu", "gpu", "network")  # Muri's four resources, in pipeline order
# Muri's measured slowdown of an interleaved group over its ideal rotation, per group size
# (Rivendile/Muri, simulator/jobs.py: itertime_overhead_list = [1.015, 1.33/1.015, 1.5/1.015,
# 1.37/1.015]; the first entry scales every job's own iteration time, the others a group's).
GROUP_OVERHEAD: Mapping[int, float] = {1: 1.0, 2: 1.33 / 1.015, 3: 1.5 / 1.015, 4: 1.37 / 1.015}
MAX_GROUP = 4
# How one job's stages make its solo iteration (``solo_iteration_time``).
JobModel = Literal["measured", "sequential", "prefetch"]
JOB_MODELS: tuple[JobModel, ...] = get_args(JobModel)


def stage_times(
    job: Job,
    workers: int,
    ps: int,
    mode: str = "wfbp",
    cpu: float | None = None,
    mem_gb: float | None = None,
) -> dict[str, float]:
    """Muri's per-iteration time on each of its four resources for one worker of ``job``.

    storage: the storage read; cpu: the CPU preprocessing; gpu: forward + backward (F + B);
    network: the part of the layered iteration not hidden behind compute (tau_layered - F - B).
    """
    io, c = data_stage_times(job, workers, cpu, mem_gb)
    tau = layered_iteration_time(job, workers, ps, mode)
    n = float(samples_per_worker(job, np.asarray(workers)))
    gpu = n * (job.profile.forward_total_s + job.profile.backward_total_s)
    return {
        "storage": float(io),
        "cpu": float(c),
        "gpu": min(gpu, tau),
        "network": max(0.0, tau - gpu),
    }


def check_stage_times(field: str, times: Sequence[Sequence[float]]) -> np.ndarray:
    """Stage times as a (jobs x 4) array of finite numbers >= 0, else InvalidInput."""
    try:
        arr = np.asarray(times, dtype=float)
    except (TypeError, ValueError):
        raise InvalidInput(
            f"{field} must be a (jobs x 4) array of seconds, got {times!r}"
        ) from None
    if arr.ndim != 2 or arr.shape[1] != len(STAGES):
        raise InvalidInput(f"{field} must be a (jobs x 4) array of seconds, got shape {arr.shape}")
    if arr.shape[0] < 1 or arr.shape[0] > MAX_GROUP:
        raise InvalidInput(
            f"group size must be in [1, {MAX_GROUP}] (Muri interleaves at most 4 jobs), got {arr.shape[0]}"
        )
    bad = ~np.isfinite(arr) | (arr < 0)
    if bad.any():
        i, k = (int(x) for x in np.argwhere(bad)[0])
        raise InvalidInput(
            f"{field}[{i}][{STAGES[k]!r}] must be a finite stage time >= 0, got {arr[i, k]!r}"
        )
    return arr


def interleaved_time(times: Sequence[Sequence[float]], overhead: bool = True) -> float:
    """Iteration time of a group of jobs interleaving their four stages on one GPU set.

    In slot s of a round, job i (at offset o_i, all distinct) uses stage (s - o_i) mod 4; a slot
    lasts as long as its longest stage and a round is the sum of its four slots. The group runs the
    best assignment of offsets, times Muri's measured overhead for its size (``GROUP_OVERHEAD``).
    A single job's time is its stages' sum (no interleaving with itself).
    """
    t = check_stage_times("stage times", times)
    k = t.shape[0]
    if k == 1:
        return float(t[0].sum())
    best = math.inf
    S = len(STAGES)
    for offsets in itertools.permutations(range(S), k):
        if offsets[0] != 0:  # a rotation of all offsets gives the same round
            continue
        total = 0.0
        for s in range(S):
            total += max(t[i, (s - o) % S] for i, o in enumerate(offsets))
        best = min(best, total)
    return best * (GROUP_OVERHEAD[k] if overhead else 1.0)


def group_iteration_time(jobs: Sequence[Job], workers: int, ps: int, mode: str = "wfbp") -> float:
    """Iteration time of ``jobs`` interleaving on one set of ``workers`` GPUs and ``ps`` PSs.

    Muri's interleaved time of their stage times (``interleaved_time``, with the measured overhead
    per group size), but never below the slowest member's own iteration time: a job alone
    already overlaps its data stage with compute (prefetching), so a group cannot beat that. One
    job: its own iteration time. Jobs with measured stage times (``Job.stage_times_s``, Muri's
    traces) interleave as Muri's simulator times them (``packing_time``), and a job alone takes
    its measured ``iteration_s``.
    """
    if not 1 <= len(jobs) <= MAX_GROUP:
        raise InvalidInput(
            f"group size must be in [1, {MAX_GROUP}] (Muri interleaves at most 4 jobs), got {len(jobs)}"
        )
    if len(jobs) > 1 and all(j.stage_times_s is not None for j in jobs):
        return packing_time([j.stage_times_s for j in jobs])  # type: ignore[misc]
    if len(jobs) == 1 and jobs[0].iteration_s is not None:
        return jobs[0].iteration_s
    solo = max(iteration_time(j, workers, ps, mode) for j in jobs)
    if len(jobs) == 1:
        return solo
    rows = [[stage_times(j, workers, ps, mode)[s] for s in STAGES] for j in jobs]
    return max(solo, interleaved_time(rows))


def solo_iteration_time(
    stages: Sequence[float],
    job_model: str = "prefetch",
    measured_s: float | None = None,
    scale: float = 1.0,
) -> float:
    """One job's iteration time (s) alone on its GPUs from its stage times, under ``job_model``.

    stages: seconds per iteration in each stage, data stage first (Muri's traces: data loading,
    GPU compute, network). ``sequential``: the stages run one after another (their sum);
    ``prefetch``: the data stage of the next iteration overlaps the rest (smdlab's input
    pipeline, docs/model.md), max(stages[0], sum(stages[1:])); ``measured``: ``measured_s``, the
    iteration time measured on the job alone (Muri's simulator times a solo job this way,
    Rivendile/Muri simulator/jobs.py). The result is multiplied by ``scale`` (Muri's simulator:
    1.015 on every job).
    """
    job_model = check_choice("job_model", job_model, JOB_MODELS)
    scale = check_positive("scale", scale)
    t = [check_positive(f"stages[{i}]", x, allow_zero=True) for i, x in enumerate(stages)]
    if not t:
        raise InvalidInput("stages must list at least one stage time, got none")
    if job_model == "measured":
        if measured_s is None:
            raise InvalidInput("job_model 'measured' needs measured_s, the measured iteration time")
        return check_positive("measured_s", measured_s) * scale
    solo = sum(t) if job_model == "sequential" else max(t[0], sum(t[1:]))
    if not solo > 0:
        raise InvalidInput(f"stage times must not all be 0 (an iteration takes time), got {t}")
    return solo * scale


def job_iteration_time(job: Job, workers: int, ps: int, mode: str = "wfbp") -> float:
    """One job's solo iteration time: its measured ``iteration_s``, else the layered model's."""
    if job.iteration_s is not None:
        return job.iteration_s
    return iteration_time(job, workers, ps, mode)


def _rotation_time(p: Sequence[Sequence[float]]) -> float:
    """Steady-state cycle of jobs ``p`` (in this order) rotating over Muri's resource slots.

    Four slots per cycle; stage 0 (data loading) spans two slots, stages 1 (GPU) and 2 (network)
    one each; f[i] is the earliest end of slot i (Rivendile/Muri simulator/matching.py,
    ``_Packing.calc_iteration_time``: its recurrence, restated). The cycle is f[i+1] - f[i-3] once
    two successive cycles agree within 0.1 %, else f[8] - f[4].
    """
    n = len(p)
    f = [0.0] * 9
    for i in range(8):
        if (i + 1) % 4 < n:
            f[i + 1] = max(f[i + 1], f[i] + p[(i + 1) % 4][2])
        if (i + 2) % 4 < n:
            f[i + 1] = max(f[i + 1], f[i] + p[(i + 2) % 4][1])
        if i > 0 and (i + 3) % 4 < n:
            f[i + 1] = max(f[i + 1], f[i - 1] + p[(i + 3) % 4][0])
        if i >= 4 and math.isclose(f[i + 1] - f[i - 3], f[i] - f[i - 4], rel_tol=1e-3):
            cycle = f[i + 1] - f[i - 3]
            if cycle > 0:
                return cycle
            break
    return f[8] - f[4]


def packing_time(stages: Sequence[Sequence[float]], overhead: bool = True) -> float:
    """Iteration time of 2-4 jobs interleaved as Muri's simulator times them.

    stages: per job (data loading, GPU, network) seconds per iteration. The best job order of the
    slot recurrence (``_rotation_time``); for two jobs a, b also max(a0, b1 + b2) + max(b0, a1 +
    a2); times ``GROUP_OVERHEAD`` for the group size (its 1.33, 1.5 or 1.37 over the 1.015 every
    solo job already carries).
    """
    rows = [tuple(float(x) for x in r) for r in stages]
    if not 2 <= len(rows) <= MAX_GROUP or any(len(r) != 3 for r in rows):
        raise InvalidInput(
            f"stages must be 2 to {MAX_GROUP} rows of 3 stage times (data, GPU, network), got {stages!r}"
        )
    best = min(_rotation_time(p) for p in itertools.permutations(rows))
    if len(rows) == 2:
        a, b = rows
        best = min(best, max(a[0], b[1] + b[2]) + max(b[0], a[1] + a[2]))
    return best * (GROUP_OVERHEAD[len(rows)] if overhead else 1.0)
