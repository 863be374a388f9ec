"""GPU-sharing experiments: the co-location model's validation and JCT against the sharing degree.

- ``colocation_seeds``: for several hold-out seeds, each model kind's 5-fold cross-validated MAPE
  on the training pairs (the model-selection criterion) and its hold-out metrics (docs/model.md).
- ``sharing_validation``: predicted against measured co-located throughput (steps/s) of each job
  of every held-out pair that fits (hold-out seed ``validation_seed``, 20% of the unordered
  job-type pairs), for the factorised model and the log-additive baseline, both fitted on the rest.
- ``jct_vs_sharing_degree``: mean JCT, makespan and GPU utilisation of Gandiva, Horus, SJF-BSBF,
  SJF-FFS and Tiresias versus the most jobs a GPU may hold (``sharing_degree_values``), and of
  no sharing (SJF-FFS at degree 1 at every point). Workload: the online workload of the Muri
  experiment (``smdlab.experiments.multiresource.online_jobs``: Poisson arrivals, half the jobs
  on one GPU) at load ``sharing_load`` (2.0: oversubscribed, the setting sharing is for) on the
  base cluster; each policy in its natural mode; one simulation per (degree, seed, policy).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from smdlab.errors import check_int
from smdlab.experiments.config import ExperimentConfig, get_config

HOLDOUT = 0.2  # share of the unordered job-type pairs held out (docs/model.md)


def colocation_seeds(
    seeds: Sequence[int] = (0, 1, 2, 3, 4), *, holdout: float = HOLDOUT, folds: int = 5
) -> pd.DataFrame:
    """Return, per seed and model kind, the CV MAPE on the training pairs and hold-out metrics."""
    from smdlab.model.colocation import (
        COLOCATION_MODELS,
        colocation_metrics,
        cross_validate_colocation,
        fit_colocation_model,
        load_gavel_pairs,
        load_gavel_solo,
        split_pairs,
    )

    pairs, solo = load_gavel_pairs(), load_gavel_solo()
    rows = []
    for seed in seeds:
        seed = check_int("seed", seed, 0)
        test = split_pairs(pairs, holdout, seed)
        cv = cross_validate_colocation(pairs[~test], solo, folds=folds, seed=seed)
        cv_mape = dict(zip(cv["model"], cv["cv_mape_pct"], strict=True))
        for kind in COLOCATION_MODELS:
            model = fit_colocation_model(pairs[~test], solo, kind=kind)
            met = colocation_metrics(model, pairs[test])
            rows.append(
                {
                    "seed": seed,
                    "model": kind,
                    "cv_mape_pct": cv_mape[kind],
                    "holdout_mape_pct": met["mape_pct"],
                    "holdout_fit_accuracy": met["fit_accuracy"],
                    "holdout_fit_accuracy_single_gpu": met["fit_accuracy_single_gpu"],
                }
            )
    return pd.DataFrame(rows)


def sharing_validation(config: str | ExperimentConfig = "quick") -> pd.DataFrame:
    """Return measured and predicted co-located rates of the held-out pairs that fit (both models)."""
    from smdlab.model.colocation import (
        COLOCATION_MODELS,
        fit_colocation_model,
        load_gavel_pairs,
        load_gavel_solo,
        split_pairs,
    )

    cfg = get_config(config)
    pairs, solo = load_gavel_pairs(), load_gavel_solo()
    test = split_pairs(pairs, HOLDOUT, cfg.validation_seed)
    held = pairs[test]
    # single-GPU pair rows are the same for both placements: one copy of each
    held = held[(held["steps_per_s_a"] > 0) & (held["steps_per_s_b"] > 0)]
    held = held[held["placement"] == "consolidated"].reset_index(drop=True)
    rows = []
    for kind in (k for k in COLOCATION_MODELS if k != "factorised_no_overhead"):
        model = fit_colocation_model(pairs[~test], solo, kind=kind)
        a = model._ix(held["job_a"], "job")
        b = model._ix(held["job_b"], "job")
        g = model._ix(held["gpu_type"], "gpu")
        fits = model.fits(a, b, g)
        for side, own, partner, o, q in (
            ("a", "job_a", "job_b", a, b),
            ("b", "job_b", "job_a", b, a),
        ):
            solo_rate = model.solo.loc[
                list(
                    zip(
                        held["gpu_type"], held["placement"], held[own], held[f"scale_factor_{side}"]
                    )
                )
            ].to_numpy(dtype=float)
            pred = solo_rate * np.exp(model.log_ratio(o, q, g))
            meas = held[f"steps_per_s_{side}"].to_numpy(dtype=float)
            rows.append(
                pd.DataFrame(
                    {
                        "model": kind,
                        "gpu_type": held["gpu_type"],
                        "job": held[own],
                        "partner": held[partner],
                        "solo_steps_per_s": solo_rate,
                        "measured_steps_per_s": meas,
                        "predicted_steps_per_s": pred,
                        "error_pct": 100 * (pred - meas) / meas,
                        "predicted_fits": fits,
                    }
                )
            )
    df = pd.concat(rows, ignore_index=True)
    df.attrs.update(experiment="sharing_validation", config=cfg.name, seed=cfg.validation_seed)
    return df


NO_SHARING = "no_sharing"
SHARING_POLICIES: tuple[str, ...] = ("gandiva", "horus", "sjf_bsbf", "sjf_ffs", "tiresias")


def _degree_point(task) -> list[dict]:
    from smdlab.experiments.multiresource import online_jobs
    from smdlab.experiments.scenario import base_cluster
    from smdlab.sim import simulate
    from smdlab.viz.style import policy_label

    cfg, degree, seed = task
    cluster = base_cluster(cfg)
    jobs = online_jobs(cfg, seed, cfg.sharing_load, cluster)
    rows = []
    for policy in (NO_SHARING, *SHARING_POLICIES):
        s = simulate(
            jobs,
            cluster,
            "sjf_ffs" if policy == NO_SHARING else policy,
            mode=cfg.mode,
            execution=cfg.execution,
            restart_s=cfg.restart_s,
            sharing_degree=1 if policy == NO_SHARING else degree,
            record_history=False,
        ).summary
        rows.append(
            {
                "sharing_degree": degree,
                "seed": seed,
                "policy": policy,
                "label": "no sharing" if policy == NO_SHARING else policy_label(policy),
                "jobs": s["jobs"],
                "jobs_completed": s["jobs_completed"],
                "mean_jct_s": s["mean_jct"],
                "p95_jct_s": s["p95_jct"],
                "makespan_s": s["makespan"],
                "util_gpu": s["utilization"].get("gpu", float("nan")),
                "gpu_sharing": s["gpu_sharing"],
                "execution": s["execution"],
            }
        )
    return rows


def jct_vs_sharing_degree(
    config: str | ExperimentConfig = "quick", *, workers: int = 1
) -> pd.DataFrame:
    """Return mean JCT, makespan, GPU utilisation and sharing per (degree, seed, policy)."""
    from smdlab.experiments.jct import run_tasks

    cfg = get_config(config)
    for k in cfg.sharing_degree_values:
        check_int("sharing_degree", k, 1)
    tasks = [(cfg, k, seed) for k in cfg.sharing_degree_values for seed in cfg.seeds]
    df = pd.DataFrame([r for part in run_tasks(_degree_point, tasks, workers) for r in part])
    df.attrs.update(experiment="jct_vs_sharing_degree", config=cfg.name)
    return df
