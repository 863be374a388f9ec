"""Speed targets: OMRU's GA (1,000 generations, 11 jobs) under 10 s; SJF-BCO's
decision on 200 queued all-reduce jobs under 1 s. Prints a Markdown table (best of ``--repeat``).

    python benchmarks/bench_allreduce.py [--repeat N]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from smdlab.model.cluster import Cluster
from smdlab.policies.allreduce import epoch_table
from smdlab.policies.allreduce.omru import ga
from smdlab.policies.allreduce.sjf_bco import SJFBCO
from smdlab.policies.base import ClusterState, QueuedJob
from smdlab.solve.placement import capacity_matrix
from smdlab.workloads.omru import omru_jobs


def bench_ga(gpus: int, repeat: int) -> float:
    jobs = omru_jobs("omru-image") + omru_jobs("omru-action")
    table = epoch_table(jobs, [j.samples for j in jobs], gpus, "wfbp")
    best = np.inf
    for _ in range(repeat):
        t0 = time.perf_counter()
        ga(table, population=50, generations=1000, seed=0)
        best = min(best, time.perf_counter() - t0)
    return best


def bench_sjf_bco(n: int, repeat: int) -> float:
    rng = np.random.default_rng(0)
    base = omru_jobs("omru-image") + omru_jobs("omru-action")
    jobs = [
        base[i % len(base)].replace(name=f"j{i}", requested_workers=int(rng.choice([1, 2, 4, 8])))
        for i in range(n)
    ]
    cluster = Cluster.homogeneous(64, gpu=4, cpu=64, mem_gb=256, bw_gbps=400)
    free = capacity_matrix(cluster)
    state = ClusterState(0.0, cluster, tuple(QueuedJob(j, j.samples) for j in jobs), (), free)
    best = np.inf
    for _ in range(repeat):
        t0 = time.perf_counter()
        SJFBCO().decide(state)
        best = min(best, time.perf_counter() - t0)
    return best


def main() -> None:
    """Run both benchmarks and print the table."""
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--repeat", type=int, default=3)
    args = p.parse_args()
    print("| benchmark | seconds | target s | ratio |")
    print("|---|---|---|---|")
    for gpus in (8, 16, 32):
        s = bench_ga(gpus, args.repeat)
        print(
            f"| OMRU GA, 11 jobs, 50 x 1000 generations, G = {gpus} | {s:.2f} | 10 | {s / 10:.2f} |"
        )
    s = bench_sjf_bco(200, args.repeat)
    print(f"| SJF-BCO decision, 200 jobs, 64 machines x 4 GPUs | {s:.3f} | 1 | {s:.2f} |")


if __name__ == "__main__":
    main()
