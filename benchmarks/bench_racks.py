"""Speed target for rack-aware placement: one placement decision on a 32-rack,
512-machine cluster under 50 ms. Times one ``liquid`` decision placing one queued 16-worker job
(best fit over the racks that can hold it), one ``fifo`` decision through the shared rack-aware
rule, and, for scale, one ``liquid`` decision starting a batch of four 4-worker jobs (best fit
plus the seeded GA). Half of the machines hold work (a random number of GPUs in use, seeded).
Prints a Markdown table (best of ``--repeat``).

    python benchmarks/bench_racks.py [--repeat N]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from smdlab.model.cluster import Cluster
from smdlab.model.job import make_job
from smdlab.policies.base import ClusterState, QueuedJob
from smdlab.policies.heterogeneity.liquid import Liquid
from smdlab.policies.ps.fifo import FIFO
from smdlab.solve.placement import capacity_matrix, rack_layout

NETS = ("resnet50", "lstm_lm", "bert_base", "densenet121")


def _state(cluster: Cluster, workers: int, n: int) -> ClusterState:
    kw = {"requested_workers": workers, "max_workers": workers, "max_ps": workers}
    jobs = [make_job(f"j{i}", NETS[i % len(NETS)], samples=1e6, **kw) for i in range(n)]
    free = capacity_matrix(cluster)
    rng = np.random.default_rng(0)
    busy = rng.random(free.shape[0]) < 0.5
    gpu = cluster.resources.index("gpu")
    free[busy, gpu] -= rng.integers(1, 9, size=int(busy.sum()))
    queued = tuple(QueuedJob(j, j.samples) for j in jobs)
    return ClusterState(0.0, cluster, queued, (), free)


def best_of(policy, state: ClusterState, repeat: int) -> float:
    """Best wall time (s) of ``policy.decide(state)`` over ``repeat`` runs (racks active)."""
    best = np.inf
    for _ in range(repeat):
        policy.reset()
        with rack_layout(state.cluster):
            t0 = time.perf_counter()
            policy.decide(state)
            best = min(best, time.perf_counter() - t0)
    return best


def main() -> None:
    """Run the three timings and print the table."""
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--repeat", type=int, default=3)
    args = p.parse_args()
    cluster = Cluster.racks(racks=32, machines_per_rack=16, gpu=8)
    print("| benchmark | seconds | target s | ratio |")
    print("|---|---|---|---|")
    for label, policy, state, target in (
        ("liquid: one 16-worker job (best fit)", Liquid(), _state(cluster, 16, 1), 0.05),
        ("fifo: one 16-worker job (shared rack-aware rule)", FIFO(), _state(cluster, 16, 1), 0.05),
        ("liquid: four 4-worker jobs (best fit + GA)", Liquid(), _state(cluster, 4, 4), None),
    ):
        s = best_of(policy, state, args.repeat)
        ratio = f"{s / target:.2f}" if target else "-"
        print(f"| {label}, 32 racks x 16 machines | {s:.4f} | {target or '-'} | {ratio} |")


if __name__ == "__main__":
    main()
