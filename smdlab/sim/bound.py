"""The lower bound on the mean JCT a simulation reports (``summary["mean_jct_lower_bound"]``), cached per workload."""

from __future__ import annotations

import math
import threading
from collections.abc import Sequence

import pandas as pd

from smdlab.model.cluster import Cluster
from smdlab.model.job import Job

SIM_BOUND_MAX_JOBS = 64  # larger workloads: the LP takes longer than the simulations it bounds
SIM_BOUND_RATIO = 1.25  # growth of the LP's time intervals in simulations (docs/bound.md)
SIM_BOUND_TIME_LIMIT = 120.0  # seconds; an LP stopped early gives no bound (NaN)

_CACHE: dict[tuple, tuple[tuple[Job, ...], float]] = {}
_LOCK = threading.Lock()


def workload_bound(jobs: Sequence[Job], cluster: Cluster, mode: str = "wfbp") -> float:
    """Lower bound on the mean JCT of every schedule of ``jobs`` on ``cluster`` (NaN beyond ``SIM_BOUND_MAX_JOBS`` or when the LP fails); cached per workload."""
    from smdlab.errors import SmdlabError
    from smdlab.solve.schedule_bound import mean_jct_lower_bound

    jobs = tuple(jobs)
    if not jobs or len(jobs) > SIM_BOUND_MAX_JOBS:
        return math.nan
    key = (
        tuple(id(j) for j in jobs),
        tuple(cluster.resources),
        tuple(float(x) for x in cluster.capacity_vector),
        mode,
    )
    with _LOCK:
        hit = _CACHE.get(key)
    if hit is not None and all(a is b for a, b in zip(hit[0], jobs)):
        return hit[1]
    try:
        value = mean_jct_lower_bound(
            jobs, cluster, mode=mode, weights=[1.0] * len(jobs), ratio=SIM_BOUND_RATIO,
            time_limit=SIM_BOUND_TIME_LIMIT,
        ).value  # fmt: skip
    except SmdlabError:
        value = math.nan
    with _LOCK:
        if len(_CACHE) > 256:
            _CACHE.clear()
        _CACHE[key] = (jobs, value)  # holds the jobs, so their ids are not reused meanwhile
    return value


def run_bound(sim, job_df: pd.DataFrame) -> float:
    """The bound for a finished run: over its completed jobs, NaN when the run left the bound's model (GPU-sharing groups, per-worker CPU/memory levels)."""
    if getattr(sim, "beyond_bound", False):
        return math.nan
    done = set(job_df.loc[job_df.status == "completed", "job"])
    jobs = [j for j in sim.jobs if j.name in done]
    return workload_bound(jobs, sim.cluster, sim.mode)
