"""Storage experiments: IO cost, welfare and mean JCT of every storage policy against cache size.

``io_cost_vs_cache``: synthetic online jobs (``storage_jobs`` at load ``storage_load`` on the base
cluster) reading the bundled datasets by task (``smdlab.workloads.storage``), a remote pool of
``storage_remote_gbps`` GB/s and the prices ``storage_cache_price`` (per GB-hour) and
``storage_remote_price`` (per GB/s-hour); one workload per seed of ``storage_seeds``; for each
cache size of ``storage_cache_values``: FIFO's GPUs with each baseline cache rule (none, LRU,
GPU-proportional), CBA and SiloD on FIFO, AutoCBA within ``storage_budget`` per hour (GPUs
at 1 per GPU-hour), plain SMD (storage-oblivious, the run's LRU rule) and ``smd_storage`` (SMD
with the storage rows of (P)), both elastic. One simulation per (cache size, seed, policy). Welfare is ``run_welfare``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import pandas as pd

from smdlab.experiments.config import ExperimentConfig, get_config
from smdlab.model.job import Job
from smdlab.sim.result import SimResult

__all__ = ["STORAGE_POLICIES", "io_cost_vs_cache", "run_welfare"]

# label -> (registered policy, options)
STORAGE_POLICIES: dict[str, tuple[str, dict]] = {
    "no_cache": ("cache_baseline", {"cache": "none"}),
    "lru": ("cache_baseline", {"cache": "lru"}),
    "proportional": ("cache_baseline", {"cache": "proportional"}),
    "silod": ("silod", {}),
    "cba": ("cba", {}),
    "autocba": ("autocba", {}),
    "smd": ("smd", {}),
    "smd_storage": ("smd_storage", {}),
}


def run_welfare(
    result: SimResult, jobs: Sequence[Job], utility: str = "mixed", mode: str = "wfbp"
) -> float:
    """Sum over completed jobs of weight x utility(T*/JCT), T* the job's duration at its
    reference speed (``reference_speed``), with AutoCBA's utility functions (docs/storage.md)."""
    from smdlab.policies.storage import reference_speed, utility_kind
    from smdlab.solve.storage import utility as util

    by_name = {j.name: j for j in jobs}
    total = 0.0
    for name, jct, status in zip(result.jobs["job"], result.jobs["jct"], result.jobs["status"]):
        if status != "completed" or not jct > 0:
            continue
        job = by_name[name]
        ideal = job.samples / reference_speed(job, mode)
        total += job.weight * float(util(utility_kind(job, utility), min(ideal / jct, 1.0)))
    return total


def io_cost_vs_cache(config: str | ExperimentConfig = "quick") -> pd.DataFrame:
    """Rows (cache_gb, seed, policy, io_cost, welfare, mean_jct_s, io_bound_share)."""
    from smdlab.model.cluster import Cluster
    from smdlab.policies.registry import get_policy
    from smdlab.sim.simulator import simulate
    from smdlab.workloads.storage import storage_for
    from smdlab.workloads.synthetic import synthetic

    cfg = get_config(config)
    cluster = Cluster.homogeneous(cfg.machines, gpu=cfg.gpus_per_machine)
    rows = []
    for seed in cfg.storage_seeds:
        jobs = synthetic(cfg.storage_jobs, cluster, load=cfg.storage_load, seed=seed)
        for cache in cfg.storage_cache_values:
            storage = storage_for(
                jobs,
                cache_gb=cache,
                remote_gbps=cfg.storage_remote_gbps,
                cache_price=cfg.storage_cache_price,
                remote_price=cfg.storage_remote_price,
                seed=seed,
            )
            for label, (name, options) in STORAGE_POLICIES.items():
                if name == "autocba":
                    options = {"budget": cfg.storage_budget}
                res = simulate(jobs, cluster, get_policy(name, **options), storage=storage)
                s = res.summary
                rows.append(
                    {
                        "cache_gb": float(cache),
                        "seed": seed,
                        "policy": label,
                        "io_cost": float(s["io_cost"]),
                        "welfare": run_welfare(res, jobs),
                        "mean_jct_s": float(s["mean_jct"]),
                        "io_bound_share": float(s["io_bound_share"]),
                        "jobs_completed": int(s["jobs_completed"]),
                    }
                )
    return pd.DataFrame(rows)


def relative_to(df: pd.DataFrame, column: str, policy: str, baseline: str) -> pd.Series:
    """Per cache size, the seed-mean ``column`` of ``policy`` over that of ``baseline``."""
    means = df.groupby(["cache_gb", "policy"])[column].mean().unstack("policy")
    out = means[policy] / means[baseline]
    return out.where(means[baseline] > 0, math.nan)
