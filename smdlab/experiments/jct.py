"""JCT sweeps: mean job completion time of every policy as one property of the base scenario changes.

Setting (EXPERIMENTS.md): a batch of jobs submitted together (the offline instances of the paper's
numerical experiments), served online by the simulator: each policy runs in its natural execution mode (config
``execution``; SMD, the MILP, Optimus and DRF re-allocate every 1,200 s slot and at events, FIFO,
SRTF and Tetris keep allocations, Tiresias preempts), with the configuration's ``restart_s``. One simulation per (sweep point, seed, policy); the rows
are per seed, and the figures show the mean over seeds with its standard error.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from multiprocessing import get_context

import pandas as pd

from smdlab.errors import check_choice, check_int
from smdlab.experiments.config import ExperimentConfig, get_config
from smdlab.experiments.scenario import (
    base_cluster,
    batch_jobs,
    median_comm_comp_ratio,
    with_bandwidth,
    with_comm_scale,
)
from smdlab.model.cluster import Cluster
from smdlab.model.job import Job


@dataclass(frozen=True)
class Sweep:
    """One JCT sweep: the column it varies, its axis title and the config field with its values."""

    name: str
    column: str
    axis_title: str
    values_field: str
    log_x: bool
    log_y: bool


SWEEPS: dict[str, Sweep] = {
    "jobs": Sweep("jobs", "n_jobs", "jobs in the batch", "jobs_values", False, False),
    "machines": Sweep(
        "machines", "machines", "servers in the cluster", "machines_values", False, False
    ),
    # Bandwidth and communication volume change JCT by orders of magnitude: both axes logarithmic.
    "bandwidth": Sweep(
        "bandwidth", "bw_gbps", "NIC bandwidth per task (Gbps)", "bandwidth_values", True, True
    ),
    "comm_scale": Sweep(
        "comm_scale",
        "comm_scale",
        "per-layer communication/computation ratio (× bundled profiles)",
        "comm_scale_values",
        True,
        True,
    ),
}

# Columns of every JCT sweep frame after the sweep's own x column; no timing columns, so two runs
# write byte-identical CSV files.
JCT_COLUMNS = (
    "seed",
    "policy",
    "label",
    "jobs",
    "jobs_completed",
    "mean_jct_s",
    "mean_jct_lower_bound_s",
    "median_jct_s",
    "p95_jct_s",
    "makespan_s",
    "mean_queueing_delay_s",
    "util_gpu",
    "util_bw_gbps",
    "comm_comp_ratio",
    "execution",
    "restarts",
)


def policies_of(config: ExperimentConfig) -> tuple[str, ...]:
    """The policies a configuration compares (every registered one by default)."""
    from smdlab.policies.registry import list_policies

    return tuple(config.policies) if config.policies is not None else tuple(list_policies())


def scenario(
    config: ExperimentConfig, sweep: str, value: float, seed: int
) -> tuple[list[Job], Cluster]:
    """Jobs and cluster of one sweep point: the base scenario with the sweep's property set to ``value``."""
    check_choice("sweep", sweep, SWEEPS)
    if sweep == "jobs":
        # Nested batches: the first n jobs of the largest batch, so more jobs only add jobs.
        n_max = max(config.jobs_values)
        return batch_jobs(config, seed, n_max)[: check_int("n_jobs", value, 1)], base_cluster(
            config
        )
    jobs = batch_jobs(config, seed)
    if sweep == "machines":
        return jobs, base_cluster(config, machines=check_int("machines", value, 1))
    if sweep == "bandwidth":
        return with_bandwidth(jobs, float(value)), base_cluster(config, task_bw_gbps=float(value))
    return with_comm_scale(jobs, float(value)), base_cluster(config)


def _point(task: tuple[ExperimentConfig, str, float, int, tuple[str, ...]]) -> list[dict]:
    """Simulate every policy on one (sweep point, seed); one row per policy."""
    from smdlab.policies.registry import get_policy
    from smdlab.sim import simulate
    from smdlab.viz.style import policy_label

    config, sweep, value, seed, policies = task
    jobs, cluster = scenario(config, sweep, value, seed)
    ratio = median_comm_comp_ratio(jobs)
    rows = []
    for policy in policies:
        res = simulate(
            jobs,
            cluster,
            get_policy(policy),
            mode=config.mode,
            execution=config.execution,
            restart_s=config.restart_s,
            record_history=False,
        )
        s = res.summary
        util = s["utilization"]
        rows.append(
            {
                SWEEPS[sweep].column: value,
                "seed": seed,
                "policy": policy,
                "label": policy_label(policy),
                "jobs": s["jobs"],
                "jobs_completed": s["jobs_completed"],
                "mean_jct_s": s["mean_jct"],
                # the same for every policy of the point (NaN for runs outside its model)
                "mean_jct_lower_bound_s": s["mean_jct_lower_bound"],
                "median_jct_s": s["median_jct"],
                "p95_jct_s": s["p95_jct"],
                "makespan_s": s["makespan"],
                "mean_queueing_delay_s": s["mean_queueing_delay"],
                "util_gpu": util.get("gpu", float("nan")),
                "util_bw_gbps": util.get("bw_gbps", float("nan")),
                "comm_comp_ratio": ratio,
                "execution": s["execution"],
                "restarts": s["restarts"],
            }
        )
    return rows


def run_tasks(fn: Callable, tasks: Sequence, workers: int = 1) -> list:
    """``[fn(t) for t in tasks]``, in worker processes when ``workers`` > 1 (results in task order)."""
    workers = check_int("workers", workers, 1, 256)
    if workers == 1 or len(tasks) <= 1:
        return [fn(t) for t in tasks]
    # forkserver: no fork of a process holding threads (kaleido, ipykernel), and no re-import of __main__.
    with ProcessPoolExecutor(
        max_workers=min(workers, len(tasks)), mp_context=get_context("forkserver")
    ) as pool:
        done = list(pool.map(_recording, [(fn, t) for t in tasks]))
    # The workers' warnings, issued here (each distinct one once per call), not by each worker.
    registry: dict = {}
    for _, caught in done:
        for text, category, filename, lineno in caught:
            warnings.warn_explicit(text, category, filename, lineno, registry=registry)
    return [out for out, _ in done]


def _recording(task: tuple[Callable, object]) -> tuple[object, list[tuple]]:
    """``fn(t)`` in a worker, with the warnings it issued (text, category, file, line)."""
    fn, t = task
    with warnings.catch_warnings(record=True) as caught:
        out = fn(t)
    return out, [(str(w.message), w.category, w.filename, w.lineno) for w in caught]


def jct_sweep(
    sweep: str, config: str | ExperimentConfig = "quick", *, workers: int = 1
) -> pd.DataFrame:
    """Mean/median/p95 JCT of every policy at every point of ``sweep`` (one row per point, seed and policy)."""
    check_choice("sweep", sweep, SWEEPS)
    cfg = get_config(config)
    spec = SWEEPS[sweep]
    policies = policies_of(cfg)
    tasks = [
        (cfg, sweep, v, seed, policies)
        for v in getattr(cfg, spec.values_field)
        for seed in cfg.seeds
    ]
    rows = [row for part in run_tasks(_point, tasks, workers) for row in part]
    df = pd.DataFrame(rows, columns=[spec.column, *JCT_COLUMNS])
    df.attrs.update(
        experiment=f"jct_vs_{sweep}",
        sweep=sweep,
        x=spec.column,
        x_title=spec.axis_title,
        log_x=spec.log_x,
        log_y=spec.log_y,
        config=cfg.name,
    )
    return df


def jct_vs_jobs(config: str | ExperimentConfig = "quick", *, workers: int = 1) -> pd.DataFrame:
    """JCT of every policy versus the number of jobs in the batch."""
    return jct_sweep("jobs", config, workers=workers)


def jct_vs_cluster(config: str | ExperimentConfig = "quick", *, workers: int = 1) -> pd.DataFrame:
    """JCT of every policy versus the number of servers."""
    return jct_sweep("machines", config, workers=workers)


def jct_vs_bandwidth(config: str | ExperimentConfig = "quick", *, workers: int = 1) -> pd.DataFrame:
    """JCT of every policy versus the NIC bandwidth of every task (servers' NICs scaled alike)."""
    return jct_sweep("bandwidth", config, workers=workers)


def jct_vs_comm_ratio(
    config: str | ExperimentConfig = "quick", *, workers: int = 1
) -> pd.DataFrame:
    """JCT of every policy versus the per-layer communication/computation ratio (parameter bytes scaled)."""
    return jct_sweep("comm_scale", config, workers=workers)
