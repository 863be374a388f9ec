"""``jct_vs_oversubscription``: SMD, Liquid, FIFO and Tiresias as the rack uplinks shrink.

A racked cluster (``SIZES``: racks of 8-GPU machines with 100 Gbps NICs) runs one synthetic
workload per seed (``smdlab.workloads.synthetic``, Poisson arrivals at load 0.9, the default GPU
mix and per-network demands) with every job a gang on its request, so every policy runs the same
jobs on the same number of workers and the comparison is one of order and placement. The rack
uplink is swept through ``OVERSUBSCRIPTION``: the ratio of a rack's NIC total to its uplink
(``uplink_gbps = machines_per_rack x 100 / ratio``; ratio 1: the uplink never binds). Speeds read
the uplinks through ``smdlab.model.traffic.Uplinks`` (docs/model.md, Rack uplinks); each policy
runs in its natural mode. One row per (seed, ratio, policy): mean JCT (h), makespan (h) and the
data sent across rack uplinks (TB, the summary's ``cross_rack_gb``).
"""

from __future__ import annotations

import pandas as pd

from smdlab.experiments.config import ExperimentConfig, get_config
from smdlab.model.cluster import Cluster

POLICIES = ("smd", "liquid", "fifo", "tiresias")
OVERSUBSCRIPTION = (1.0, 2.0, 4.0, 8.0, 16.0)
NIC_GBPS = 100.0
# (racks, machines per rack, jobs, seeds used) per configuration level
SIZES = {"tiny": (2, 2, 10, 1), "quick": (4, 2, 24, 2), "full": (4, 4, 60, 3)}
LOAD = 0.9


def racked_cluster(racks: int, per_rack: int, ratio: float) -> Cluster:
    """``racks`` racks of ``per_rack`` 8-GPU machines whose uplink is their NIC total / ``ratio``."""
    return Cluster.racks(
        racks=racks,
        machines_per_rack=per_rack,
        gpu=8,
        bw_gbps=NIC_GBPS,
        uplink_gbps=per_rack * NIC_GBPS / ratio,
    )


def _point(task: tuple) -> list[dict]:
    from smdlab.policies.registry import get_policy
    from smdlab.sim import simulate
    from smdlab.workloads.synthetic import synthetic

    racks, per_rack, n, seed, ratio = task
    cluster = racked_cluster(racks, per_rack, ratio)
    jobs = [j.replace(gang=True) for j in synthetic(n, cluster, seed=seed, load=LOAD)]
    rows = []
    for name in POLICIES:
        s = simulate(jobs, cluster, get_policy(name), record_history=False).summary
        rows.append(
            {
                "seed": seed,
                "oversubscription": ratio,
                "uplink_gbps": per_rack * NIC_GBPS / ratio,
                "policy": name,
                "jobs": n,
                "racks": racks,
                "machines": racks * per_rack,
                "mean_jct_h": s["mean_jct"] / 3600,
                "makespan_h": s["makespan"] / 3600,
                "cross_rack_tb": s["cross_rack_gb"] / 1000,
            }
        )
    return rows


def jct_vs_oversubscription(
    config: str | ExperimentConfig = "quick", workers: int = 1
) -> pd.DataFrame:
    """One row per (seed, oversubscription, policy): mean JCT, makespan, cross-rack traffic."""
    from smdlab.experiments.jct import run_tasks

    cfg = get_config(config)
    racks, per_rack, n, k = SIZES.get(cfg.name, SIZES["quick"])
    tasks = [
        (racks, per_rack, n, seed, ratio) for seed in cfg.seeds[:k] for ratio in OVERSUBSCRIPTION
    ]
    return pd.DataFrame([r for part in run_tasks(_point, tasks, workers) for r in part])
