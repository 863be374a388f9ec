"""Optimality gap of SMD versus instance size: against the exact MILP optimum and the LP lower bound.

Offline instances of problem (P) (docs/solver.md): ``n`` synthetic jobs at time 0 on a
cluster of ``ceil(n / gap_jobs_per_machine)`` servers, solved by ``smdlab.solve.solve`` with SMD
(three knapsack methods), LP rounding, the exact MILP and the LP relaxation. Gaps are relative to
the exact optimum ((objective - MILP) / MILP) and to the LP bound ((objective - LP) / objective).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import pandas as pd

from smdlab.experiments.config import ExperimentConfig, get_config
from smdlab.experiments.jct import run_tasks
from smdlab.experiments.scenario import base_cluster
from smdlab.model.job import DEFAULT_PS_DEMAND, DEFAULT_WORKER_DEMAND
from smdlab.viz.style import SMD_LABEL, method_label

if TYPE_CHECKING:
    from smdlab.solve.api import Method

# (variant name, solve method, options, display label): the heuristics whose gap is measured.
VARIANTS: tuple[tuple[str, Method, dict, str], ...] = (
    ("smd", "smd", {}, SMD_LABEL),  # default: hull knapsack, then the local search
    # the specification's iteration alone (no local search), with each knapsack method
    ("smd_iteration", "smd", {"polish": False}, f"{SMD_LABEL}, iteration only"),
    (
        "smd_exact",
        "smd",
        {"knapsack": "exact", "polish": False},
        f"{SMD_LABEL}, exact knapsack, iteration only",
    ),
    (
        "smd_greedy",
        "smd",
        {"knapsack": "greedy", "polish": False},
        f"{SMD_LABEL}, greedy knapsack, iteration only",
    ),
    ("lp_round", "lp_round", {}, method_label("lp_round")),
)

GAP_COLUMNS = (
    "n_jobs",
    "machines",
    "seed",
    "variant",
    "label",
    "objective",
    "jobs_started",
    "iterations",
    "converged",
    "lp_bound",
    "milp_objective",
    "milp_bound",
    "milp_status",
    "gap_to_milp",
    "gap_to_lp",
)


def gap_instance(config: ExperimentConfig, n_jobs: int, seed: int):
    """Jobs and cluster of one gap instance: ``n_jobs`` jobs at time 0 on ceil(n / jobs per server) servers."""
    from smdlab.workloads.synthetic import synthetic

    cluster = base_cluster(config, machines=math.ceil(n_jobs / config.gap_jobs_per_machine))
    wd = {**DEFAULT_WORKER_DEMAND, "bw_gbps": config.task_bw_gbps}
    pd_ = {**DEFAULT_PS_DEMAND, "bw_gbps": config.task_bw_gbps}
    jobs = synthetic(
        n_jobs,
        cluster,
        seed=seed,
        gpu_mix=dict(config.gpu_mix),
        cap_factor=config.cap_factor,
        duration_median_s=config.duration_median_s,
        mode=config.mode,
        worker_demand=wd,
        ps_demand=pd_,
    )
    return [j.replace(arrival=0.0) for j in jobs], cluster


def _instance(task: tuple[ExperimentConfig, int, int]) -> list[dict]:
    """Solve one instance by every method; one row per heuristic variant."""
    from smdlab.solve import solve

    config, n, seed = task
    jobs, cluster = gap_instance(config, n, seed)
    # place=False: the gap is a property of the pooled allocation problem (P), before placement.
    lp = solve(jobs, cluster, "lp", mode=config.mode, place=False)
    milp = solve(
        jobs, cluster, "milp", mode=config.mode, place=False, time_limit=config.milp_time_limit
    )
    rows = []
    for variant, method, options, label in VARIANTS:
        opts = dict(options, bound=False) if method == "smd" else dict(options)
        s = solve(jobs, cluster, method, mode=config.mode, place=False, **opts)
        rows.append(
            {
                "n_jobs": n,
                "machines": len(cluster.machines),
                "seed": seed,
                "variant": variant,
                "label": label,
                "objective": s.objective,
                "jobs_started": len(s.started),
                "iterations": s.iterations,
                "converged": s.converged if s.converged is not None else "",
                "lp_bound": lp.objective,
                "milp_objective": milp.objective,
                "milp_bound": milp.lower_bound,
                "milp_status": milp.status,
                "gap_to_milp": (s.objective - milp.objective) / milp.objective,
                "gap_to_lp": (s.objective - lp.objective) / s.objective,
            }
        )
    return rows


def optimality_gap(config: str | ExperimentConfig = "quick", *, workers: int = 1) -> pd.DataFrame:
    """Gap of SMD (and LP rounding) to the exact MILP and to the LP bound, per instance size and seed."""
    cfg = get_config(config)
    tasks = [(cfg, n, seed) for n in cfg.gap_sizes for seed in cfg.gap_seeds]
    rows = [row for part in run_tasks(_instance, tasks, workers) for row in part]
    df = pd.DataFrame(rows, columns=list(GAP_COLUMNS))
    df.attrs.update(experiment="optimality_gap", config=cfg.name)
    return df
