"""How much two jobs sharing one GPU gain over taking turns: Gavel's measured pairs beside the pairs
of smdlab's own sharing workload (docs/performance.md, "Space sharing").

    python tools/sharing_pair_gain.py [--pair-throughputs JSON] [--config full] [--seeds N]

A pair's gain is the sum of each member's co-located rate over its solo rate: above 1, sharing
does more work than time slicing the GPU between the two. Part 1: every single-GPU pair of
Gavel's measurements per GPU type (the shipped table, or Gavel's own JSON), pairs that fit in
memory only. Part 2: every pair of jobs of the ``jct_vs_sharing_degree`` workload (the Muri
online workload at ``sharing_load``, seeds 0 .. N-1) on the co-location model's GPU type: the
share that fits in memory, and the gain of those that fit, as smdlab's simulator predicts it.
"""

from __future__ import annotations

import argparse

import numpy as np

from smdlab.experiments.config import CONFIGS
from smdlab.experiments.multiresource import online_jobs
from smdlab.experiments.scenario import base_cluster
from smdlab.model.colocation import (
    DEFAULT_SHARING_GPU,
    default_colocation_model,
    gavel_job_type,
    pair_tables,
)
from smdlab.workloads.gavel import GAVEL_TYPES, gavel_pair_throughputs, gavel_throughputs


def main() -> None:
    """Print both parts."""
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--pair-throughputs", default=None, help="Gavel's simulation_throughputs.json")
    p.add_argument("--config", default="full")
    p.add_argument("--seeds", type=int, default=3)
    a = p.parse_args()
    solo = gavel_throughputs()
    pairs = gavel_pair_throughputs(a.pair_throughputs)
    print("| GPU type | measured pairs (unordered) | fit in memory | gain > 1 | median gain |")
    print("|---|---|---|---|---|")
    for k, t in enumerate(GAVEL_TYPES):
        seen = {(x, y) for (g, x, y) in pairs if g == t and x <= y}
        gains = [
            pairs[(t, x, y)][0] / solo[(x, 1)][k] + pairs[(t, x, y)][1] / solo[(y, 1)][k]
            for x, y in seen
            if sum(pairs[(t, x, y)]) > 0
        ]
        g = np.array(gains)
        print(f"| {t} | {len(seen)} | {g.size} | {np.mean(g > 1):.1%} | {np.median(g):.3f} |")
    cfg = CONFIGS[a.config]
    cluster = base_cluster(cfg)
    model = default_colocation_model()
    F, fits = pair_tables(DEFAULT_SHARING_GPU)
    total, fit, gains = 0, 0, []
    for seed in range(a.seeds):
        jobs = online_jobs(cfg, seed, cfg.sharing_load, cluster)
        ix = [model.jobs.index(gavel_job_type(j)) for j in jobs]
        for i in range(len(jobs)):
            for j in range(i + 1, len(jobs)):
                total += 1
                if fits[ix[i], ix[j]]:
                    fit += 1
                    gains.append(F[ix[i], ix[j]] + F[ix[j], ix[i]])
    g = np.array(gains)
    print(
        f"smdlab's jct_vs_sharing_degree workload ({a.config}, seeds 0-{a.seeds - 1}, "
        f"{DEFAULT_SHARING_GPU}): {total} job pairs, {fit / total:.1%} fit in memory; of those, "
        f"gain > 1 for {np.mean(g > 1):.1%}, median gain {np.median(g):.3f}"
    )


if __name__ == "__main__":
    main()
