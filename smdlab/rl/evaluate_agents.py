"""Mean JCT of the placement agents (deeprm, sched2) against heuristics on held-out seeds (docs/rl.md).

Every policy runs in its natural mode on the ``locality_small`` scenario's workload drawn with
each held-out seed (training draws seeds 0-99).

python -m smdlab.rl.evaluate_agents [--seeds 1000 1001 ...] [--policies deeprm sched2 drf tiresias]
"""

from __future__ import annotations

import argparse
import dataclasses
from collections.abc import Mapping, Sequence

import pandas as pd

from smdlab.policies.registry import get_policy
from smdlab.rl.evaluate import HELD_OUT
from smdlab.rl.placement_env import locality_scenario
from smdlab.sim.simulator import simulate
from smdlab.workloads.scenario import load_scenario

POLICIES = ("deeprm", "sched2", "drf", "tiresias", "fifo")


def compare(
    policies: Sequence[str] = POLICIES,
    seeds: Sequence[int] = HELD_OUT,
    weights: Mapping[str, str] | None = None,
    scenario: str | None = None,
) -> pd.DataFrame:
    """One row per (seed, policy): mean JCT and makespan on the scenario's workload drawn with
    that seed (``weights``: agent name -> weights file; default: the shipped ones)."""
    base = load_scenario(scenario or locality_scenario())
    cluster = base.build_cluster()
    weights = dict(weights or {})
    rows = []
    for seed in seeds:
        jobs = dataclasses.replace(base, seed=seed).build_jobs(cluster)
        for name in policies:
            options = {"weights": weights[name]} if name in weights else {}
            res = simulate(
                jobs,
                cluster,
                get_policy(name, **options),
                mode=base.simulation["mode"],
                restart_s=base.simulation["restart_s"],
            )
            rows.append(
                {
                    "seed": seed,
                    "policy": name,
                    "mean_jct": res.summary["mean_jct"],
                    "makespan": res.summary["makespan"],
                }
            )
    return pd.DataFrame(rows)


def main(argv: Sequence[str] | None = None) -> None:
    """Print each policy's mean JCT and makespan and the JCT ratios to DRF and Tiresias as Markdown."""
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--seeds", type=int, nargs="+", default=list(HELD_OUT))
    ap.add_argument("--policies", nargs="+", default=list(POLICIES))
    ap.add_argument("--deeprm-weights", help="deeprm's weights file (default: the shipped one)")
    ap.add_argument("--sched2-weights", help="sched2's weights file (default: the shipped one)")
    args = ap.parse_args(argv)
    weights = {
        k: v for k, v in (("deeprm", args.deeprm_weights), ("sched2", args.sched2_weights)) if v
    }
    df = compare(args.policies, args.seeds, weights)
    mean = df.groupby("policy", sort=False)[["mean_jct", "makespan"]].mean()
    print(f"held-out seeds: {', '.join(map(str, args.seeds))}")
    print()
    refs = [r for r in ("drf", "tiresias") if r in mean.index]
    print(
        "| policy | mean JCT (s) | makespan (s) | " + " | ".join(f"JCT vs {r}" for r in refs) + " |"
    )
    print("|---|---:|---:|" + "---:|" * len(refs))
    for name, row in mean.iterrows():
        ratios = " | ".join(f"{row.mean_jct / mean.loc[r, 'mean_jct'] - 1:+.1%}" for r in refs)
        print(f"| {name} | {row.mean_jct:,.0f} | {row.makespan:,.0f} | {ratios} |")


if __name__ == "__main__":
    main()
