"""Mean JCT of DL2 against heuristics on held-out workload seeds (docs/rl.md).

python -m smdlab.rl.evaluate [--seeds 1000 1001 ...] [--policies dl2 drf optimus]
"""

from __future__ import annotations

import argparse
import dataclasses
from collections.abc import Sequence

import pandas as pd

from smdlab.rl.env import default_rl_scenario
from smdlab.sim.simulator import simulate
from smdlab.workloads.scenario import load_scenario

HELD_OUT = tuple(range(1000, 1010))  # training draws seeds from range(100)


def compare(
    policies: Sequence[str] = ("dl2", "drf", "optimus"), seeds: Sequence[int] = HELD_OUT
) -> pd.DataFrame:
    """One row per (seed, policy): mean JCT on the DL2 scenario's workload drawn with that seed."""
    base = load_scenario(default_rl_scenario())
    cluster = base.build_cluster()
    rows = []
    for seed in seeds:
        jobs = dataclasses.replace(base, seed=seed).build_jobs(cluster)
        for name in policies:
            res = simulate(jobs, cluster, name, restart_s=base.simulation["restart_s"])
            rows.append({"seed": seed, "policy": name, "mean_jct": res.summary["mean_jct"]})
    return pd.DataFrame(rows)


def main(argv: Sequence[str] | None = None) -> None:
    """Print the per-policy means and the ratios to DRF and Optimus as Markdown."""
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--seeds", type=int, nargs="+", default=list(HELD_OUT))
    ap.add_argument("--policies", nargs="+", default=["dl2", "drf", "optimus"])
    args = ap.parse_args(argv)
    df = compare(args.policies, args.seeds)
    mean = df.groupby("policy", sort=False)["mean_jct"].mean()
    print(f"held-out seeds: {', '.join(map(str, args.seeds))}")
    print()
    print("| policy | mean JCT (s) | vs DRF | vs Optimus |")
    print("|---|---:|---:|---:|")
    for name, v in mean.items():
        drf = v / mean["drf"] - 1 if "drf" in mean else float("nan")
        opt = v / mean["optimus"] - 1 if "optimus" in mean else float("nan")
        print(f"| {name} | {v:,.0f} | {drf:+.1%} | {opt:+.1%} |")


if __name__ == "__main__":
    main()
