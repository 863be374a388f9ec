"""``slo_vs_load``: deadline misses and best-effort JCT of the deadline-aware policies against offered load.

Workload: windows of Chronus' Philly MIX2 trace (``data/traces/chronus/chronus_philly_mix2.csv``,
MIT, from the Chronus artifact; strict, soft and best-effort jobs with the trace's own deadlines):
``slo_jobs`` jobs in submit order from each start in ``slo_windows``, on ``slo_machines`` machines
of 8 GPUs (the artifact's machine). Each window's arrivals are stretched or squeezed about its first
arrival so that its offered load on that cluster (``smdlab.workloads.base.offered_load``: GPU-time
at the request over GPU capacity x arrival span) is each value of ``slo_load_values``; job sizes,
durations and relative deadlines stay the trace's. Policies: ``slo_policies`` (default ``smdlab.experiments.config.SLO_POLICIES``), each in its natural
mode, with the Chronus reader's restart cost (30 (1 + log2 g) s per restart).

The trace's durations are heavy-tailed (the longest 5% of a window's jobs hold 30-80% of its
GPU-time), so a window at offered load 1 still meets most deadlines: misses start near load 1 and
grow with it (EXPERIMENTS.md, "Deadlines").
"""

from __future__ import annotations

import warnings

import pandas as pd

from smdlab.errors import check_int, check_positive
from smdlab.experiments.config import ExperimentConfig, get_config
from smdlab.experiments.jct import run_tasks
from smdlab.model.cluster import Cluster
from smdlab.model.job import Job

SLO_TRACE = "chronus/chronus_philly_mix2.csv"
SLO_COLUMNS = (
    "load",
    "window",
    "policy",
    "label",
    "jobs",
    "slo_jobs",
    "best_effort_jobs",
    "jobs_completed",
    "hard_miss_rate",
    "weighted_miss_rate",
    "best_effort_mean_jct_s",
    "mean_jct_s",
    "execution",
)


def slo_cluster(machines: int) -> Cluster:
    """``machines`` machines of the Chronus artifact's kind: 8 GPUs, 128 CPUs, 256 GB, 100 Gb/s."""
    return Cluster.homogeneous(
        check_int("machines", machines, 1), gpu=8, cpu=128, mem_gb=256, bw_gbps=100
    )


def at_load(jobs: list[Job], cluster: Cluster, load: float) -> list[Job]:
    """``jobs`` with arrivals scaled about the first so that their offered load on ``cluster`` is ``load``."""
    from smdlab.workloads.base import offered_load

    load = check_positive("load", load)
    natural = float(offered_load(jobs, cluster))  # type: ignore[arg-type]
    t0 = min(j.arrival for j in jobs)
    stretch = natural / load
    return [j.replace(arrival=t0 + (j.arrival - t0) * stretch) for j in jobs]


def slo_window(start: int, n_jobs: int) -> list[Job]:
    """``n_jobs`` jobs of the MIX2 trace from the ``start``-th in submit order (num_gpu 0 rows skipped)."""
    from smdlab.paths import data_dir
    from smdlab.workloads.chronus import load_chronus

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the num_gpu 0 rows, skipped as the artifact does
        return load_chronus(data_dir() / "traces" / SLO_TRACE, start=start, first=n_jobs)


def _point(task) -> list[dict]:
    from smdlab.sim import simulate
    from smdlab.viz.deadlines import SLO_LABELS
    from smdlab.viz.style import policy_label

    cfg, load, window, policies = task
    cluster = slo_cluster(cfg.slo_machines)
    jobs = at_load(slo_window(window, cfg.slo_jobs), cluster, load)
    rows = []
    for policy in policies:
        s = simulate(jobs, cluster, policy, record_history=False).summary
        rows.append(
            {
                "load": load,
                "window": window,
                "policy": policy,
                "label": SLO_LABELS.get(policy, policy_label(policy)),
                "jobs": s["jobs"],
                "slo_jobs": s["slo_jobs"],
                "best_effort_jobs": s["best_effort_jobs"],
                "jobs_completed": s["jobs_completed"],
                "hard_miss_rate": s["hard_miss_rate"],
                "weighted_miss_rate": s["weighted_miss_rate"],
                "best_effort_mean_jct_s": s["best_effort_mean_jct"],
                "mean_jct_s": s["mean_jct"],
                "execution": s["execution"],
            }
        )
    return rows


def slo_vs_load(config: str | ExperimentConfig = "quick", *, workers: int = 1) -> pd.DataFrame:
    """Hard and weighted miss rates and best-effort mean JCT per (load, window, policy) (module docstring)."""
    cfg = get_config(config)
    policies = cfg.slo_policies
    tasks = [(cfg, v, w, policies) for v in cfg.slo_load_values for w in cfg.slo_windows]
    rows = [r for part in run_tasks(_point, tasks, workers) for r in part]
    df = pd.DataFrame(rows, columns=list(SLO_COLUMNS))
    df.attrs.update(
        experiment="slo_vs_load",
        config=cfg.name,
        machines=cfg.slo_machines,
        window_jobs=cfg.slo_jobs,
    )
    return df
