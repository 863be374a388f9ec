"""Mean JCT of DL2 against heuristics on held-out workload seeds (docs/rl.md).

A name ending in ``@slot`` runs that policy at slot boundaries only (``SlotOnly``), as DL2's
simulator runs its baselines; plain names run as in every smdlab comparison (elastic policies
also decide at arrivals and completions).

python -m smdlab.rl.evaluate [--seeds 1000 1001 ...] [--policies dl2 drf optimus] [--slot-s S]
    [--scenario FILE] [--weights FILE]
"""

from __future__ import annotations

import argparse
import dataclasses
from collections.abc import Sequence

import pandas as pd

from smdlab.policies.base import ClusterState, Decision, Policy, policy_settings
from smdlab.policies.registry import get_policy
from smdlab.rl.env import default_rl_scenario
from smdlab.rl.slot_builder import at_slot
from smdlab.sim.simulator import simulate
from smdlab.workloads.scenario import load_scenario

HELD_OUT = tuple(range(1000, 1010))  # training draws seeds from range(100)


class SlotOnly(Policy):
    """``inner`` asked at slot boundaries only; between them nothing changes."""

    def __init__(self, inner: Policy) -> None:
        self.inner = inner
        self.name = f"{inner.name}@slot"
        settings = policy_settings(inner)
        self.execution, self.executions = settings.execution, settings.executions
        self.slot_s = settings.slot_s

    def reset(self) -> None:
        """Reset the inner policy."""
        self.inner.reset()

    def decide(self, state: ClusterState) -> Decision:
        """The inner decision at a slot boundary, else no change."""
        if state.slot_s is not None and not at_slot(state.time, state.slot_s):
            return Decision()
        return self.inner.decide(state)


def _policy(name: str, weights: str | None = None) -> Policy:
    base, _, mode = name.partition("@")
    options = {"weights": weights} if base == "dl2" and weights else {}
    inner = get_policy(base, **options)
    return SlotOnly(inner) if mode == "slot" else inner


def compare(
    policies: Sequence[str] = ("dl2", "drf", "optimus"),
    seeds: Sequence[int] = HELD_OUT,
    weights: str | None = None,
    slot_s: float | None = None,
    scenario: str | None = None,
) -> pd.DataFrame:
    """One row per (seed, policy): mean JCT on the DL2 scenario's workload drawn with that seed
    (``weights``: DL2's weights file, None: the shipped one; ``slot_s``: the slot length, None:
    each policy's own, 1,200 s for DL2 and the elastic baselines; ``scenario``: a scenario file,
    None: the bundled dl2_small.toml)."""
    base = load_scenario(scenario or default_rl_scenario())
    cluster = base.build_cluster()
    rows = []
    for seed in seeds:
        jobs = dataclasses.replace(base, seed=seed).build_jobs(cluster)
        for name in policies:
            res = simulate(
                jobs,
                cluster,
                _policy(name, weights),
                restart_s=base.simulation["restart_s"],
                slot_s=slot_s,
            )
            rows.append({"seed": seed, "policy": name, "mean_jct": res.summary["mean_jct"]})
    return pd.DataFrame(rows)


def main(argv: Sequence[str] | None = None) -> None:
    """Print the per-policy means and the ratios to DRF and Optimus as Markdown."""
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--seeds", type=int, nargs="+", default=list(HELD_OUT))
    ap.add_argument(
        "--policies", nargs="+", default=["dl2", "drf", "optimus", "drf@slot", "optimus@slot"]
    )
    ap.add_argument("--weights", help="DL2's weights file (default: data/dl2/weights.npz)")
    ap.add_argument("--slot-s", type=float, help="slot length in seconds (default: 1,200)")
    ap.add_argument("--scenario", help="scenario file (default: data/scenarios/dl2_small.toml)")
    args = ap.parse_args(argv)
    df = compare(args.policies, args.seeds, args.weights, args.slot_s, args.scenario)
    mean = df.groupby("policy", sort=False)["mean_jct"].mean()
    print(f"held-out seeds: {', '.join(map(str, args.seeds))}")
    print()
    refs = [r for r in ("drf", "optimus", "drf@slot", "optimus@slot") if r in mean]
    print("| policy | mean JCT (s) | " + " | ".join(f"vs {r}" for r in refs) + " |")
    print("|---|---:|" + "---:|" * len(refs))
    for name, v in mean.items():
        ratios = " | ".join(f"{v / mean[r] - 1:+.1%}" for r in refs)
        print(f"| {name} | {v:,.0f} | {ratios} |")


if __name__ == "__main__":
    main()
