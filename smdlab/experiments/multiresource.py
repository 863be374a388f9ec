"""Experiments beyond GPUs: Synergy's CPU-per-GPU sweep and Muri's load sweep (docs/multiresource.md).

Setting of both: an online workload (``synthetic``: Poisson arrivals, per-network demands, the
bundled networks' input pipelines on), ``online_jobs`` jobs per seed, GPU requests from
``ONLINE_GPU_MIX``; each policy in its natural execution mode with the configuration's
``restart_s``; one simulation per (point, seed, policy), rows per seed as in the JCT sweeps.

- ``jct_vs_cpu_per_gpu``: the servers' CPU cores per GPU swept (``cpu_per_gpu_values``; 8 GPUs
  and 256 GB per server, ``machines`` servers); the workload is drawn once per seed at load 1.0
  on the 8-cores-per-GPU cluster, so every point runs the same jobs. Policies:
  ``CPU_POLICIES``.
- ``muri_jct_vs_load``: the offered load swept (``muri_load_values``) on the base cluster (64
  cores per server). Policies: ``MURI_POLICIES``.
"""

from __future__ import annotations

import pandas as pd

from smdlab.experiments.config import ExperimentConfig, get_config
from smdlab.experiments.jct import JCT_COLUMNS, run_tasks
from smdlab.experiments.scenario import MEM_GB_PER_MACHINE, base_cluster
from smdlab.model.cluster import Cluster
from smdlab.model.job import Job

ONLINE_GPU_MIX = {1: 0.5, 2: 0.25, 4: 0.15, 8: 0.1}
CPU_POLICIES = (
    "gpu_proportional",
    "synergy_tune",
    "synergy_opt",
    "smd",
    "smd_levels",
    "milp_levels",
)
MURI_POLICIES = ("muri_s", "muri_l", "srtf", "tiresias", "smd")
REFERENCE_CPU_PER_GPU = 8.0


def online_jobs(config: ExperimentConfig, seed: int, load: float, cluster: Cluster) -> list[Job]:
    """The online workload of one seed (module docstring)."""
    from smdlab.workloads.synthetic import synthetic

    return synthetic(
        config.online_jobs,
        cluster,
        load=load,
        seed=seed,
        gpu_mix=ONLINE_GPU_MIX,
        duration_median_s=config.duration_median_s,
        mode=config.mode,
        task_bw_gbps=config.task_bw_gbps,
    )


def cpu_cluster(config: ExperimentConfig, cpu_per_gpu: float) -> Cluster:
    """The base cluster with ``cpu_per_gpu`` cores per GPU on every server."""
    base = base_cluster(config)
    gpus = config.gpus_per_machine
    return Cluster.homogeneous(
        config.machines,
        gpu=gpus,
        cpu=cpu_per_gpu * gpus,
        mem_gb=MEM_GB_PER_MACHINE,
        bw_gbps=base.machines[0].capacity["bw_gbps"],
    )


def _rows(config, jobs, cluster, policies, column, value, seed) -> list[dict]:
    from smdlab.sim import simulate
    from smdlab.viz.style import policy_label

    rows = []
    for policy in policies:
        s = simulate(
            jobs,
            cluster,
            policy,
            mode=config.mode,
            execution=config.execution,
            restart_s=config.restart_s,
            record_history=False,
        ).summary
        util = s["utilization"]
        rows.append(
            {
                column: value,
                "seed": seed,
                "policy": policy,
                "label": policy_label(policy),
                "jobs": s["jobs"],
                "jobs_completed": s["jobs_completed"],
                "mean_jct_s": s["mean_jct"],
                "median_jct_s": s["median_jct"],
                "p95_jct_s": s["p95_jct"],
                "makespan_s": s["makespan"],
                "mean_queueing_delay_s": s["mean_queueing_delay"],
                "util_gpu": util.get("gpu", float("nan")),
                "util_bw_gbps": util.get("bw_gbps", float("nan")),
                "comm_comp_ratio": float("nan"),
                "execution": s["execution"],
                "restarts": s["restarts"],
            }
        )
    return rows


def _cpu_point(task) -> list[dict]:
    config, value, seed = task
    reference = cpu_cluster(config, REFERENCE_CPU_PER_GPU)
    jobs = online_jobs(config, seed, 1.0, reference)
    return _rows(config, jobs, cpu_cluster(config, value), CPU_POLICIES, "cpu_per_gpu", value, seed)


def _load_point(task) -> list[dict]:
    config, value, seed = task
    cluster = base_cluster(config)
    jobs = online_jobs(config, seed, value, cluster)
    return _rows(config, jobs, cluster, MURI_POLICIES, "load", value, seed)


def jct_vs_cpu_per_gpu(
    config: str | ExperimentConfig = "quick", *, workers: int = 1
) -> pd.DataFrame:
    """Mean JCT of Synergy's policies and SMD versus the servers' CPU cores per GPU."""
    cfg = get_config(config)
    tasks = [(cfg, v, seed) for v in cfg.cpu_per_gpu_values for seed in cfg.seeds]
    rows = [r for part in run_tasks(_cpu_point, tasks, workers) for r in part]
    df = pd.DataFrame(rows, columns=["cpu_per_gpu", *JCT_COLUMNS])
    df.attrs.update(
        experiment="jct_vs_cpu_per_gpu",
        x="cpu_per_gpu",
        x_title="CPU cores per GPU",
        log_x=False,
        log_y=False,
        config=cfg.name,
    )
    return df


def muri_jct_vs_load(config: str | ExperimentConfig = "quick", *, workers: int = 1) -> pd.DataFrame:
    """Mean JCT of Muri-S, Muri-L, SRTF, Tiresias and SMD versus the offered load."""
    cfg = get_config(config)
    tasks = [(cfg, v, seed) for v in cfg.muri_load_values for seed in cfg.seeds]
    rows = [r for part in run_tasks(_load_point, tasks, workers) for r in part]
    df = pd.DataFrame(rows, columns=["load", *JCT_COLUMNS])
    df.attrs.update(
        experiment="muri_jct_vs_load",
        x="load",
        x_title="offered load",
        log_x=False,
        log_y=False,
        config=cfg.name,
    )
    return df


def jct_ratio(df: pd.DataFrame, x: str, numerator: str, denominator: str) -> pd.DataFrame:
    """Per point, mean JCT of ``numerator`` over that of ``denominator`` (means over seeds first)."""
    means = df.groupby([x, "policy"])["mean_jct_s"].mean().unstack("policy")
    return (means[numerator] / means[denominator]).rename("ratio").reset_index()
