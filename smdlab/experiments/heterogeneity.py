"""Heterogeneity gain: Gavel-style allocation against the same rounds blind to GPU types.

A K80/P100/V100 cluster (equal GPU counts per type, each type its own rack) runs a stream of
single-GPU jobs over five bundled networks (``NETWORKS``; their Gavel job types in
``smdlab.model.gpu_types.GAVEL_JOB_TYPES``) under ``gavel_max_min`` and ``gavel_max_sum``, each
heterogeneity-aware (``aware=True``) and agnostic (``aware=False``: one throughput per job).
Speeds on each type follow Gavel's measured throughput ratios.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from smdlab.experiments.config import ExperimentConfig, get_config
from smdlab.model.cluster import Cluster
from smdlab.model.job import Job, make_job

NETWORKS = ("resnet50", "lstm_lm", "bert_base", "densenet121", "vgg16")
POLICIES = ("gavel_max_min", "gavel_max_sum")
GPU_TYPES = ("k80", "p100", "v100")
# (machines per type, jobs) per configuration level; 4 GPUs per machine.
SIZES = {"tiny": (1, 12), "quick": (1, 24), "full": (2, 48)}
INTERARRIVAL_S = 300.0
DURATION_H = (0.5, 3.0)  # each job's duration on one V100, drawn uniformly


def hetero_cluster(machines_per_type: int = 1, gpus: int = 4) -> Cluster:
    """``machines_per_type`` machines of ``gpus`` GPUs for each of K80, P100 and V100, one rack per type."""
    return Cluster.groups(
        [{"name": t, "machines": machines_per_type, "gpu_type": t, "gpu": gpus} for t in GPU_TYPES]
    )


def hetero_jobs(n: int, seed: int) -> list[Job]:
    """``n`` single-GPU jobs cycling over ``NETWORKS``, one arrival every 5 minutes."""
    from smdlab.solve.instance import job_speeds

    rng = np.random.default_rng(seed)
    kw: dict = {"requested_workers": 1, "max_workers": 1, "max_ps": 1}
    jobs = []
    for i in range(n):
        net = NETWORKS[i % len(NETWORKS)]
        v100 = float(job_speeds(make_job("probe", net, samples=1.0, **kw))[0, 0])
        duration = float(rng.uniform(*DURATION_H)) * 3600
        jobs.append(
            make_job(f"j{i}", net, samples=v100 * duration, arrival=INTERARRIVAL_S * i, **kw)
        )
    return jobs


def heterogeneity_gain(config: str | ExperimentConfig = "quick", workers: int = 1) -> pd.DataFrame:
    """One row per (seed, policy, allocation): mean JCT (h), makespan (h), GPU utilisation per type."""
    from smdlab.policies.registry import get_policy
    from smdlab.sim import simulate

    cfg = get_config(config)
    per_type, n = SIZES.get(cfg.name, SIZES["quick"])
    cluster = hetero_cluster(per_type)
    rows = []
    for seed in cfg.seeds:
        jobs = hetero_jobs(n, seed)
        for name in POLICIES:
            for aware in (True, False):
                s = simulate(jobs, cluster, get_policy(name, aware=aware)).summary
                u = s["utilization"]
                rows.append(
                    {
                        "seed": seed,
                        "policy": name,
                        "allocation": "aware" if aware else "agnostic",
                        "jobs": n,
                        "gpus": len(cluster.machines) * 4,
                        "mean_jct_h": s["mean_jct"] / 3600,
                        "makespan_h": s["makespan"] / 3600,
                        **{f"util_{t}": u[f"gpu_{t}"] for t in GPU_TYPES},
                    }
                )
    return pd.DataFrame(rows)


def gain_ratios(df: pd.DataFrame) -> dict[str, float]:
    """Mean JCT agnostic / aware per policy (averaged over seeds): the heterogeneity gain."""
    means = df.groupby(["policy", "allocation"])["mean_jct_h"].mean()
    m = {
        (str(k[0]), str(k[1])): float(v) for k, v in zip(means.index, means.to_numpy(), strict=True)
    }
    return {p: m[p, "agnostic"] / m[p, "aware"] for p, a in m if a == "aware"}
