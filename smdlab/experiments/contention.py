"""``jct_vs_contention``: the communication policies on a shared fabric as the rack uplinks shrink.

A racked cluster (``RACKS`` racks of ``PER_RACK`` 8-GPU machines, 100 Gbps NICs) with the
flow-level fabric (docs/network.md) runs one synthetic workload per seed (Poisson arrivals at
``LOAD``, the default GPU mix, every job a gang on its request) under FIFO allocation; only the
communication policy changes: fair, scf, lcof, crux and jcs (inspired by JCS). The rack uplink is
swept through ``ExperimentConfig.contention_values``: the ratio of a rack's NIC total to its
uplink. One row per (seed, ratio, communication policy): mean JCT (h) and GPU compute
utilisation, the share of held GPU-seconds spent computing (``gpu_compute_utilisation``).
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from smdlab.experiments.config import ExperimentConfig, get_config
from smdlab.model.cluster import Cluster, FabricSpec
from smdlab.model.fabric import compute_seconds
from smdlab.model.job import Job
from smdlab.sim.result import SimResult

COMMUNICATION = ("fair", "scf", "lcof", "crux", "jcs")
RACKS, PER_RACK, NIC_GBPS = 4, 2, 100.0
LOAD = 1.2
SEEDS = {"tiny": 1, "quick": 2, "full": 3}


def fabric_cluster(ratio: float, communication: str = "fair") -> Cluster:
    """The experiment's racked cluster at oversubscription ``ratio``, with the fabric on."""
    c = Cluster.racks(
        racks=RACKS,
        machines_per_rack=PER_RACK,
        gpu=8,
        bw_gbps=NIC_GBPS,
        uplink_gbps=PER_RACK * NIC_GBPS / ratio,
    )
    return c.with_fabric(FabricSpec(communication))


def gpu_compute_utilisation(result: SimResult, jobs: Sequence[Job]) -> float:
    """Share of the GPU-seconds ``jobs`` held in ``result`` that their GPUs spent computing."""
    by_name = {j.name: j for j in jobs}
    h = result.history
    busy = held = 0.0
    for name, start, end, workers, samples in zip(
        h["job"].tolist(),
        h["start"].tolist(),
        h["end"].tolist(),
        h["workers"].tolist(),
        h["samples"].tolist(),
        strict=True,
    ):
        job = by_name[name]
        gpus = workers * job.worker_demand.get("gpu", 0.0)
        held += (end - start) * gpus
        if samples > 0:
            iters = samples / job.samples_per_iteration(workers)
            busy += iters * compute_seconds(job, workers) * gpus
    return busy / held if held > 0 else float("nan")


def _point(task: tuple) -> list[dict]:
    from smdlab.sim import simulate
    from smdlab.workloads.synthetic import synthetic

    n, seed, ratio = task
    jobs = [j.replace(gang=True) for j in synthetic(n, fabric_cluster(ratio), seed=seed, load=LOAD)]
    rows = []
    for comm in COMMUNICATION:
        r = simulate(jobs, fabric_cluster(ratio, comm), "fifo")
        rows.append(
            {
                "seed": seed,
                "oversubscription": ratio,
                "uplink_gbps": PER_RACK * NIC_GBPS / ratio,
                "communication": comm,
                "jobs": n,
                "mean_jct_h": r.summary["mean_jct"] / 3600,
                "gpu_util": gpu_compute_utilisation(r, jobs),
            }
        )
    return rows


def jct_vs_contention(config: str | ExperimentConfig = "quick", workers: int = 1) -> pd.DataFrame:
    """One row per (seed, oversubscription, communication policy): mean JCT, GPU utilisation."""
    from smdlab.experiments.jct import run_tasks

    cfg = get_config(config)
    k = SEEDS.get(cfg.name, 2)
    tasks = [
        (cfg.contention_jobs, seed, r) for seed in cfg.seeds[:k] for r in cfg.contention_values
    ]
    return pd.DataFrame([r for part in run_tasks(_point, tasks, workers) for r in part])


def against_fair(df: pd.DataFrame) -> pd.DataFrame:
    """Per (oversubscription, policy): mean JCT change and GPU utilisation change vs ``fair`` (%)."""
    m = df.groupby(["oversubscription", "communication"])[["mean_jct_h", "gpu_util"]].mean()
    fair = m.xs("fair", level="communication")
    out = m.join(fair, on="oversubscription", rsuffix="_fair")
    out["jct_vs_fair_pct"] = 100 * (out["mean_jct_h"] / out["mean_jct_h_fair"] - 1)
    out["gpu_util_vs_fair_pct"] = 100 * (out["gpu_util"] / out["gpu_util_fair"] - 1)
    return out[["mean_jct_h", "gpu_util", "jct_vs_fair_pct", "gpu_util_vs_fair_pct"]].reset_index()
