"""Speed targets: one placement decision on a 32-rack, 512-machine cluster under
50 ms (``hetero_placement`` placing one queued job, every GPU type tried); one ``gavel_max_min``
decision (LP plus round) over 200 jobs on the same cluster, reported for scale. Prints a Markdown
table (best of ``--repeat``).

    python benchmarks/bench_hetero.py [--repeat N]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from smdlab.model.cluster import Cluster
from smdlab.model.job import make_job
from smdlab.policies.base import ClusterState, QueuedJob
from smdlab.policies.heterogeneity.gavel_max_min import GavelMaxMin
from smdlab.policies.heterogeneity.hetero_placement import HeteroPlacement
from smdlab.solve.placement import capacity_matrix

NETS = ("resnet50", "lstm_lm", "bert_base", "densenet121", "vgg16")


def racked_cluster(racks: int = 32, per_rack: int = 16) -> Cluster:
    """``racks`` racks of ``per_rack`` 8-GPU machines, GPU types K80/P100/V100 in turn."""
    types = ("k80", "p100", "v100")
    return Cluster.groups(
        [{"name": f"r{i}", "machines": per_rack, "gpu_type": types[i % 3]} for i in range(racks)]
    )


def _state(cluster: Cluster, n: int) -> ClusterState:
    kw = {"requested_workers": 4, "max_workers": 4, "max_ps": 4}
    jobs = [make_job(f"j{i}", NETS[i % len(NETS)], samples=1e6, **kw) for i in range(n)]
    queued = tuple(QueuedJob(j, j.samples) for j in jobs)
    return ClusterState(0.0, cluster, queued, (), capacity_matrix(cluster), execution="preemptive")


def best_of(policy, state: ClusterState, repeat: int) -> float:
    """Best wall time (s) of ``policy.decide(state)`` over ``repeat`` runs."""
    best = np.inf
    for _ in range(repeat):
        policy.reset()
        t0 = time.perf_counter()
        policy.decide(state)
        best = min(best, time.perf_counter() - t0)
    return best


def main() -> None:
    """Run both benchmarks and print the table."""
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--repeat", type=int, default=3)
    args = p.parse_args()
    cluster = racked_cluster()
    print("| benchmark | seconds | target s | ratio |")
    print("|---|---|---|---|")
    s = best_of(HeteroPlacement(), _state(cluster, 1), args.repeat)
    print(
        f"| hetero_placement: one job, 32 racks x 16 machines | {s:.4f} | 0.05 | {s / 0.05:.2f} |"
    )
    s = best_of(GavelMaxMin(), _state(cluster, 200), args.repeat)
    print(f"| gavel_max_min decision: 200 jobs, 32 racks x 16 machines | {s:.3f} | - | - |")


if __name__ == "__main__":
    main()
