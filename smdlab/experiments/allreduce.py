"""All-reduce experiments: the epoch-time models against OMRU's measurements, and OMRU-style
makespans of every batch policy on 2, 4 and 8 machines of 4 GPUs.

``epoch_validation``: both epoch models (``smdlab.model.epochs``) fitted on g in {1, 2, 4, 8},
one row per held-out measurement (g in {3, 5, 6, 7}) with both predictions.
``makespan_vs_nodes``: the ``omru-image`` and ``omru-action`` workloads (epoch counts assumed from
each network's standard recipe, ``smdlab.workloads.omru``) under SeqEx, Parallel, Optimus-like,
OMRU without reuse, OMRU and SJF-BCO; makespan and time-weighted GPU utilisation per run. A run
whose jobs may use more than the 8 measured GPUs (16 and 32-GPU clusters) is ``extrapolated``.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from smdlab.experiments.config import ExperimentConfig, get_config

TRAIN_GPUS = (1, 2, 4, 8)
MAKESPAN_POLICIES = ("seqex", "parallel", "optimus_like", "omru_noreuse", "omru", "sjf_bco")
MAKESPAN_MACHINES = (2, 4, 8)
GPUS_PER_MACHINE = 4
# GA generations per configuration: OMRU's 1,000 in full; fewer where the run must be short.
GA_GENERATIONS = {"full": 1000, "quick": 300, "tiny": 20}


def epoch_validation(config: str | ExperimentConfig = "quick") -> pd.DataFrame:
    """Measured vs predicted epoch time of every held-out row, generic and layered models."""
    from smdlab.model.epochs import (
        fit_epoch_model,
        fit_layered_epoch_model,
        load_epoch_times,
    )

    get_config(config)
    table = load_epoch_times()
    generic = fit_epoch_model(table, TRAIN_GPUS)
    layered = fit_layered_epoch_model(table, TRAIN_GPUS)
    test = table[~table["num_gpus"].isin(TRAIN_GPUS)].reset_index(drop=True)
    out = test[["model", "task", "num_gpus"]].copy()
    out["measured"] = test["epoch_time"]
    out["predicted_generic"] = generic.predict(test)
    has = test["model"].isin(layered.models)
    pred = np.full(len(test), np.nan)
    pred[has.to_numpy()] = layered.predict(test[has])
    out["predicted_layered"] = pred
    for form in ("generic", "layered"):
        out[f"error_{form}_pct"] = (
            (out[f"predicted_{form}"] - out["measured"]) / out["measured"] * 100
        )
    return out


def makespan_vs_nodes(config: str | ExperimentConfig = "quick", workers: int = 1) -> pd.DataFrame:
    """One row per (workload, machines, policy): makespan (h), mean JCT (h), GPU utilisation."""
    from smdlab.policies.registry import get_policy
    from smdlab.sim import simulate
    from smdlab.workloads.omru import MEASURED_GPUS, omru_cluster, omru_jobs

    cfg = get_config(config)
    generations = GA_GENERATIONS.get(cfg.name, 1000)
    rows = []
    for workload in ("omru-image", "omru-action"):
        jobs = omru_jobs(workload, gpus_per_machine=GPUS_PER_MACHINE)
        for machines in MAKESPAN_MACHINES:
            cluster = omru_cluster(machines, GPUS_PER_MACHINE)
            gpus = machines * GPUS_PER_MACHINE
            for name in MAKESPAN_POLICIES:
                opts = {"generations": generations} if name.startswith("omru") else {}
                r = simulate(jobs, cluster, get_policy(name, **opts))
                s = r.summary
                rows.append(
                    {
                        "workload": workload,
                        "machines": machines,
                        "gpus": gpus,
                        "policy": name,
                        "makespan_h": s["makespan"] / 3600,
                        "mean_jct_h": s["mean_jct"] / 3600,
                        "gpu_utilization": s["utilization"]["gpu"],
                        "max_job_gpus": int(r.jobs["workers"].max()),
                        "extrapolated": bool(gpus > MEASURED_GPUS),
                        "ga_generations": generations if name.startswith("omru") else 0,
                    }
                )
    return pd.DataFrame(rows)


__all__ = ["MAKESPAN_MACHINES", "MAKESPAN_POLICIES", "epoch_validation", "makespan_vs_nodes"]
