"""Speed targets of the flow-level fabric (docs/network.md).

1. Rate recompute: 500 running jobs on 64 racks of 8 machines (8 GPUs each), every job spread
   over 1 to 4 racks (seeded), one recompute of every job's share (``Network.shares``: the fabric
   state, the policy's scores, water-filling; volumes cached as in a run) per communication
   policy. Target 50 ms.
2. A Philly window under FIFO on 64 racks of 8 machines: CPU time of ``simulate`` with the fabric
   (fair, rack uplinks at 4:1 oversubscription) over the same racked cluster without it.
   Target ratio 3.

    python benchmarks/bench_network.py [--repeat N] [--jobs N]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from smdlab.model.cluster import Cluster, FabricSpec
from smdlab.model.job import make_job
from smdlab.policies.base import Placement
from smdlab.policies.network import COMMUNICATION_POLICIES
from smdlab.sim.network import Network
from smdlab.sim.running import Run

NETS = ("resnet50", "vgg16", "bert_base", "densenet121")
RACKS, PER_RACK = 64, 8


class _Engine:
    """The part of a run's engine the fabric reads: its cluster."""

    def __init__(self, cluster: Cluster):
        self.cluster = cluster


def _runs(n: int, seed: int = 0) -> list[Run]:
    """``n`` running jobs, each 2-16 workers over machines of 1-4 random racks (seeded)."""
    rng = np.random.default_rng(seed)
    runs = []
    for i in range(n):
        w = int(rng.integers(2, 17))
        racks = rng.choice(RACKS, size=int(rng.integers(1, 5)), replace=False)
        tasks: dict[int, list[int]] = {}
        for k in range(w):
            m = int(racks[k % len(racks)]) * PER_RACK + int(rng.integers(PER_RACK))
            tasks.setdefault(m, [0, 0])[0] += 1
        ps_machine = next(iter(tasks))
        tasks[ps_machine][1] += 1
        arch = "allreduce" if i % 2 else "ps"
        job = make_job(f"j{i}", NETS[i % len(NETS)], 1e6, arch=arch, max_workers=16)
        placed = tuple((m, wk, 0 if arch == "allreduce" else p) for m, (wk, p) in tasks.items())
        runs.append(
            Run(
                job,
                w,
                0 if arch == "allreduce" else 1,
                Placement(placed),
                np.zeros(0),
                np.zeros((0, 4)),
                0.0,
                0.0,
                0.0,
                1e6,
                0.0,
                100.0,
                float(w),
                1e4,
                0,
                base=100.0,
            )
        )
    return runs


def recompute_ms(repeat: int) -> dict[str, float]:
    """Best milliseconds of one share recompute with 500 jobs, per communication policy."""
    cluster = Cluster.racks(racks=RACKS, machines_per_rack=PER_RACK, uplink_gbps=200)
    runs = _runs(500)
    out = {}
    for name in COMMUNICATION_POLICIES:
        net = Network(_Engine(cluster.with_fabric(FabricSpec(name))), FabricSpec(name))
        talking = [r for r in runs if net.volumes(r)]  # volumes cached, as in a run
        best = np.inf
        for _ in range(repeat):
            t0 = time.perf_counter()
            net.shares(talking, 0.0)
            best = min(best, time.perf_counter() - t0)
        out[name] = best * 1e3
    return out


def philly_ratio(jobs_n: int) -> tuple[float, float]:
    """CPU seconds of FIFO on a Philly window: racked without, then with the fabric."""
    from smdlab.sim import simulate
    from smdlab.workloads import load_philly

    cluster = Cluster.racks(racks=RACKS, machines_per_rack=PER_RACK, uplink_gbps=200)
    jobs = load_philly(first=jobs_n)
    times = []
    for c in (cluster, cluster.with_fabric(FabricSpec("fair"))):
        t0 = time.process_time()
        simulate(jobs, c, "fifo", restart_s=0, record_history=False)
        times.append(time.process_time() - t0)
    return times[0], times[1]


def main() -> None:
    """Run both timings and print a Markdown table."""
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--jobs", type=int, default=5000, help="Philly jobs (first N of the trace)")
    args = p.parse_args()
    print("| benchmark | value | target | ratio |")
    print("|---|---|---|---|")
    for name, ms in recompute_ms(args.repeat).items():
        print(f"| recompute, 500 jobs, 64 racks, {name} | {ms:.1f} ms | 50 ms | {ms / 50:.2f} |")
    flat, fab = philly_ratio(args.jobs)
    print(
        f"| Philly first {args.jobs:,} jobs, FIFO, fabric / racked CPU time | "
        f"{fab:.1f} s / {flat:.1f} s = {fab / flat:.2f}x | 3x | {fab / flat / 3:.2f} |"
    )


if __name__ == "__main__":
    main()
