"""The lower bound on the mean JCT a simulation reports (``summary["mean_jct_lower_bound"]``), cached per workload."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pandas as pd

from smdlab.caches import WORKLOAD_BOUNDS
from smdlab.model.cluster import Cluster
from smdlab.model.job import Job

SIM_BOUND_MAX_JOBS = 64  # larger workloads: the LP takes longer than the simulations it bounds
SIM_BOUND_RATIO = 1.25  # growth of the LP's time intervals in simulations (docs/bound.md)
# Seconds; an LP stopped early gives no bound (NaN). The 64-job LP takes about 13 s on a loaded
# 2-core machine; a stalled solve must not hold a notebook cell for two minutes.
SIM_BOUND_TIME_LIMIT = 30.0


def workload_bound(jobs: Sequence[Job], cluster: Cluster, mode: str = "wfbp") -> float:
    """Lower bound on the mean JCT of every schedule of ``jobs`` on ``cluster`` (NaN beyond ``SIM_BOUND_MAX_JOBS`` or when the LP fails); cached per workload."""
    from smdlab.errors import SmdlabError
    from smdlab.solve.schedule_bound import mean_jct_lower_bound

    jobs = tuple(jobs)
    if not jobs or len(jobs) > SIM_BOUND_MAX_JOBS:
        return math.nan
    key = (
        tuple(j.value_key for j in jobs),
        tuple(cluster.resources),
        tuple(float(x) for x in cluster.capacity_vector),
        mode,
    )
    hit = WORKLOAD_BOUNDS.get(key)
    if hit is not None:
        return hit
    try:
        value = mean_jct_lower_bound(
            jobs, cluster, mode=mode, weights=[1.0] * len(jobs), ratio=SIM_BOUND_RATIO,
            time_limit=SIM_BOUND_TIME_LIMIT,
        ).value  # fmt: skip
    except SmdlabError:
        value = math.nan
    return WORKLOAD_BOUNDS.put(key, value)


def closed_form_bound(jobs: Sequence[Job], cluster: Cluster, mode: str = "wfbp") -> float:
    """Closed-form lower bound on the mean JCT of every schedule of ``jobs`` on ``cluster`` (NaN when a job fits nowhere); docs/bound.md."""
    from smdlab.solve.instance import build_instance

    jobs = tuple(jobs)
    if not jobs:
        return math.nan
    pool = np.asarray(cluster.capacity_vector, dtype=float)
    inst = build_instance(jobs, cluster, pool, mode)
    fits = inst.fits_alone
    if not np.all(fits.reshape(len(jobs), -1).any(axis=1)):
        return math.nan  # no schedule runs a job that fits nowhere: no mean JCT to bound
    speed = np.where(fits, inst.speed, 0.0)
    work = inst.samples
    # d_i: no job finishes faster than its work at its fastest configuration that fits
    fastest = work / speed.reshape(len(jobs), -1).max(axis=1)
    W, P = speed.shape[1:]
    wg = np.arange(1, W + 1, dtype=float)[None, :, None]
    pg = np.arange(1, P + 1, dtype=float)[None, None, :]
    # B_k: the k jobs finished first used at least the k smallest resource-times of each resource
    finish_k = np.zeros(len(jobs))
    with np.errstate(divide="ignore", invalid="ignore"):
        for r, cap in enumerate(pool):
            if cap <= 0:
                continue
            use = inst.alpha[:, r][:, None, None] * wg + inst.gamma[:, r][:, None, None] * pg
            per_sample = np.where(fits, use / speed, np.inf).reshape(len(jobs), -1).min(axis=1)
            finish_k = np.maximum(finish_k, np.cumsum(np.sort(work * per_sample / cap)))
    arrival = np.array([j.arrival for j in jobs], dtype=float)
    # k-th completion >= max(first arrival + B_k, a + d of the job finishing k-th); sorted a + d
    # is the assignment minimising the sum (max(x, b) has decreasing differences in b)
    completion = np.maximum(arrival.min() + finish_k, np.sort(arrival + fastest))
    return float((completion.sum() - arrival.sum()) / len(jobs))


def run_bound(sim, job_df: pd.DataFrame) -> float:
    """The bound for a finished run: over its completed jobs, NaN when the run left the bound's model (GPU-sharing groups, per-worker CPU/memory levels) or was asked for none."""
    if getattr(sim, "beyond_bound", False) or not getattr(sim, "with_bound", True):
        return math.nan
    done = set(job_df.loc[job_df.status == "completed", "job"])
    jobs = [j for j in sim.jobs if j.name in done]
    return workload_bound(jobs, sim.cluster, sim.mode)
