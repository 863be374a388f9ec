"""The default Philly window (``data/scenarios/philly.toml``): FIFO, SJF, SRTF and Tiresias on it.

GPU-only gangs, arrivals scaled to the scenario's offered load, ``restart_s`` as the scenario
says (0: trace parity with the Tiresias simulator). The ``full`` configuration runs the whole
documented window; ``quick`` and ``tiny`` run its first ``philly_jobs`` jobs on ``philly_machines``
machines (the offered load stays the scenario's, so the queueing stays comparable).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from smdlab.experiments.config import ExperimentConfig, get_config
from smdlab.experiments.jct import run_tasks

PHILLY_POLICIES = ("fifo", "sjf", "srtf", "tiresias")
# Per policy: its summary numbers, then its JCT distribution at these quantiles (the CDF panel).
CDF_QUANTILES = tuple(float(q) for q in np.round(np.linspace(0.0, 1.0, 21), 2))
PHILLY_COLUMNS = (
    "policy",
    "label",
    "execution",
    "jobs",
    "jobs_completed",
    "machines",
    "mean_jct_s",
    "median_jct_s",
    "p95_jct_s",
    "makespan_s",
    "util_gpu",
    "preemptions",
)


def philly_scenario(config: str | ExperimentConfig = "quick"):
    """The default Philly window scenario, cut to ``config``'s jobs and machines where it sets them."""
    from smdlab.paths import data_dir
    from smdlab.workloads.scenario import load_scenario

    cfg = get_config(config)
    sc = load_scenario(data_dir() / "scenarios" / "philly.toml")
    workload = {"jobs": cfg.philly_jobs} if cfg.philly_jobs is not None else None
    cluster = {"machines": cfg.philly_machines} if cfg.philly_machines is not None else None
    return sc.with_changes(workload=workload, cluster=cluster)


def _point(task) -> list[dict]:
    from smdlab.sim import simulate
    from smdlab.viz.style import policy_label
    from smdlab.workloads.scenario import Scenario

    scenario_dict, policy = task

    sc = Scenario(**scenario_dict)
    cluster = sc.build_cluster()
    jobs = sc.build_jobs(cluster)
    sim = sc.simulation
    res = simulate(
        jobs,
        cluster,
        policy,
        mode=sim["mode"],
        restart_s=sim["restart_s"],
        record_history=False,
    )
    s = res.summary
    done = res.jobs[res.jobs["status"] == "completed"]
    jcts = done["jct"].to_numpy(dtype=float)
    row = {
        "policy": policy,
        "label": policy_label(policy),
        "execution": s.get("execution", ""),
        "jobs": s["jobs"],
        "jobs_completed": s["jobs_completed"],
        "machines": len(cluster.machines),
        "mean_jct_s": s["mean_jct"],
        "median_jct_s": s["median_jct"],
        "p95_jct_s": s["p95_jct"],
        "makespan_s": s["makespan"],
        "util_gpu": s["utilization"].get("gpu", float("nan")),
        "preemptions": s["preemptions"],
    }
    for q in CDF_QUANTILES:
        row[f"jct_q{q:g}_s"] = float(np.quantile(jcts, q)) if len(jcts) else float("nan")
    return [row]


def philly_window(config: str | ExperimentConfig = "quick", *, workers: int = 1) -> pd.DataFrame:
    """Mean, median and p95 JCT, JCT quantiles and GPU utilisation per policy on the Philly window."""
    cfg = get_config(config)
    sc = philly_scenario(cfg)
    tasks = [(sc.to_dict(), p) for p in PHILLY_POLICIES]
    rows = [r for part in run_tasks(_point, tasks, workers) for r in part]
    df = pd.DataFrame(rows)
    df.attrs.update(
        experiment="philly_window",
        config=cfg.name,
        window=f"start {sc.workload.get('start')}, {sc.workload.get('jobs')} jobs, "
        f"load {sc.workload.get('load')}, {sc.cluster['machines']} machines",
    )
    return df
