"""Speed target: one Gavel-mode round (``smdlab.sim.gavel_mode``) with 100 active jobs on 36 GPUs
(12 K80, 12 P100, 12 V100) under 50 ms, for each of Gavel's policies: a round that recomputes the
allocation (LP or FIFO, then priorities and the greedy pass) and a round that does not. The 100
jobs are the two shipped 60-job Gavel traces' first 100 lines, all arriving at t = 0. Each LP
policy with each solver installed (HiGHS; ECOS with the ``gavel`` extra); the packed policy (every
same-scale-factor pair of the 100 jobs: an LP of about ten thousand variables) over its first
``--packed-rounds`` rounds only. Prints a Markdown table (medians over the first ``--rounds``
rounds).

    python benchmarks/bench_gavel_mode.py [--rounds N] [--packed-rounds N] [--clock cpu|wall]

``--clock cpu`` (default) times each round in this process's CPU seconds (``time.process_time``),
which a machine shared with other work does not inflate; ``wall``: ``time.perf_counter``.
"""

from __future__ import annotations

import argparse
import dataclasses
import time

import numpy as np

from smdlab.paths import data_dir
from smdlab.sim.gavel_mode import GAVEL_MODE_POLICIES, simulate_gavel_mode
from smdlab.solve.gavel_lp import ecos_available
from smdlab.workloads.gavel import read_gavel_trace

TARGET_S = 0.05


def jobs_100() -> list:
    """100 Gavel jobs from the shipped traces, renumbered 0..99, all arriving at 0."""
    d = data_dir() / "traces" / "gavel"
    lines = read_gavel_trace(d / "seed3_rate0.4_60jobs.trace")
    lines += read_gavel_trace(d / "seed4_rate0.4_60jobs.trace")[:40]
    return [dataclasses.replace(j, job_id=i, arrival=0.0) for i, j in enumerate(lines)]


def main() -> None:
    """Run each policy for a few rounds and print the per-round times."""
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--rounds", type=int, default=40)
    p.add_argument("--packed-rounds", type=int, default=3)
    p.add_argument("--clock", choices=("cpu", "wall"), default="cpu")
    a = p.parse_args()
    clock = time.process_time if a.clock == "cpu" else time.perf_counter
    jobs = jobs_100()
    spec = {"k80": 12, "p100": 12, "v100": 12}
    solvers = ["highs", "ecos"] if ecos_available() else ["highs"]
    print(
        f"| Gavel-mode round, 100 jobs, 36 GPUs | solver | recompute round s ({a.clock}) "
        f"| other round s ({a.clock}) | target s |"
    )
    print("|---|---|---|---|---|")
    for policy, (objective, _) in GAVEL_MODE_POLICIES.items():
        packed = objective == "packed"
        for solver in ["none"] if objective == "fifo" else solvers:
            rounds = a.packed_rounds if packed else a.rounds
            res = simulate_gavel_mode(
                jobs, spec, policy, solver="highs" if solver == "none" else solver,
                max_rounds=rounds, clock=clock,
            )  # fmt: skip
            t = np.array(res.round_wall_s)
            r = np.array(res.round_recomputed)
            re = f"{np.median(t[r]):.4f}" if r.any() else "-"
            other = f"{np.median(t[~r]):.4f}" if (~r).any() else "-"
            print(f"| {policy} | {res.solver} | {re} | {other} | {TARGET_S} |")


if __name__ == "__main__":
    main()
