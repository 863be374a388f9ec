"""Muri's grouping (candidate selection + Blossom matching) over 200 queued jobs, against 1 s.

Usage: python benchmarks/bench_muri.py [--jobs N] [--repeat R]

Builds N queued jobs on the bundled networks with their data stages (seeded), on a cluster with
N/4 GPUs (4 x 4 machines of 8 GPUs for N = 200 would hold all; the cluster is sized so that the
candidates need matching) and times one ``decide`` of Muri-S (best of R runs, fresh policy
each run so nothing is cached); prints the time, the target and time/target, and the groups.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from smdlab import Cluster, list_profiles, make_job
from smdlab.policies.base import ClusterState, QueuedJob
from smdlab.policies.multiresource.muri import Muri
from smdlab.solve.placement import capacity_matrix

TARGET_S = 1.0


def main() -> None:
    """Time one Muri-S decision over a queue of N jobs."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--jobs", type=int, default=200)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    nets = list_profiles()
    jobs = [
        make_job(
            f"q{i:03d}",
            str(rng.choice(nets)),
            float(rng.uniform(1e5, 1e6)),
            pipeline=True,
            max_workers=1,
            max_ps=1,
            requested_workers=1,
        )
        for i in range(args.jobs)
    ]
    machines = max(1, args.jobs // 32)  # 8 GPUs each: a quarter of the jobs' GPUs
    cl = Cluster.homogeneous(machines, gpu=8, cpu=1024, mem_gb=4096, bw_gbps=1000)
    free = capacity_matrix(cl)
    free.setflags(write=False)
    state = ClusterState(0.0, cl, tuple(QueuedJob(j, j.samples) for j in jobs), (), free)
    best = float("inf")
    for _ in range(args.repeat):
        pol = Muri("s")
        t0 = time.perf_counter()
        pol.decide(state)
        best = min(best, time.perf_counter() - t0)
    sizes = np.bincount([len(g) for g in pol.last_groups], minlength=5)[1:]
    print(
        f"muri decide over {args.jobs} queued jobs, {machines * 8} GPUs: {best:.3f} s "
        f"(target {TARGET_S:.1f} s, ratio {best / TARGET_S:.2f}); groups of 1/2/3/4: {sizes.tolist()}"
    )


if __name__ == "__main__":
    main()
