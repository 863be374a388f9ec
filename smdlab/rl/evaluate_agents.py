"""Mean JCT of the placement agents (deeprm, sched2) against heuristics on held-out seeds (docs/rl.md).

Every policy runs in its natural mode on the ``locality_small`` scenario's workload drawn with
each held-out seed (training draws seeds 0-99).

python -m smdlab.rl.evaluate_agents [--seeds 1000 1001 ...] [--policies deeprm sched2 drf tiresias]
    [--sizes]

``--sizes`` prints, per placement agent, how it uses its size levels (``size_choices``) and the
mean JCT of its teacher with and without a smaller-size fallback (``SizedTeacher``).
"""

from __future__ import annotations

import argparse
import dataclasses
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from smdlab.errors import InvalidInput
from smdlab.policies.base import Policy
from smdlab.policies.learned.deeprm import DeepRM
from smdlab.policies.learned.sched2 import Sched2
from smdlab.policies.registry import get_policy
from smdlab.rl.evaluate import HELD_OUT
from smdlab.rl.placement_builder import PlacementBuilder
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


class _Recorder:
    """Wraps a placement agent's ``act``: per action, its size level and the masked softmax
    mass the actor gives to starts below the request."""

    def __init__(self, policy: DeepRM | Sched2) -> None:
        self.policy = policy
        self.counts = {"decisions": 0, "starts": 0, "below": 0, "only_below": 0, "started_below": 0}
        self.mass: list[float] = []
        inner = policy.act
        policy.act = self._act  # type: ignore[method-assign]
        self._inner = inner

    def _act(self, builder: PlacementBuilder) -> int:
        a = self._inner(builder)
        mask = builder.mask()
        S = builder.sizes
        starts = np.flatnonzero(mask[:-1])
        level = starts % builder.per % S
        self.counts["decisions"] += 1
        if len(starts) and not (level == 0).any():  # a job may start now only below its request
            self.counts["only_below"] += 1
        obs = builder.observation(self.policy.observation)
        from smdlab.rl.placement_builder import logits, net_inputs

        rows, wait = net_inputs(
            self.policy.agent, obs, builder.n_machines, builder.window, builder.horizon
        )
        z = np.where(mask, logits(self.policy.row_net, self.policy.wait_net, rows, wait), -np.inf)
        p = np.exp(z - z.max())
        p /= p.sum()
        self.mass.append(float(p[starts[level > 0]].sum()) if len(starts) else 0.0)
        if a != builder.n_actions - 1:
            self.counts["starts"] += 1
            if a % builder.per % S:
                self.counts["below"] += 1
                if not (level == 0).any():
                    self.counts["started_below"] += 1
        return a


class SizedTeacher(Sched2):
    """The placement agents' warm-up teacher as a policy with ``sizes`` size levels: with
    ``fallback`` its ``smaller`` variant, which starts a job below its request where the teacher
    would wait (``PlacementBuilder.expert_action``). It reads no weights."""

    agent = "sched2"
    observation = "sched2"
    action = "locality"

    def __init__(self, sizes: int = 3, fallback: bool = True) -> None:
        self.window, self.horizon, self.step_s = 10, 10, 1800.0
        self.sizes, self.max_actions, self.fallback = sizes, 10_000, fallback
        self.name = "teacher+smaller" if fallback else "teacher"
        self._facts = None
        self._key = None

    def act(self, builder: PlacementBuilder) -> int:
        """The teacher's next action (``PlacementBuilder.expert_action``)."""
        return builder.expert_action(smaller=self.fallback)


def held_out_mean_jct(policy: Policy, seeds: Sequence[int] = HELD_OUT) -> float:
    """``policy``'s mean JCT over ``locality_small``'s workloads drawn with ``seeds``."""
    base = load_scenario(locality_scenario())
    cluster = base.build_cluster()
    jcts = []
    for seed in seeds:
        jobs = dataclasses.replace(base, seed=seed).build_jobs(cluster)
        res = simulate(
            jobs,
            cluster,
            policy,
            mode=base.simulation["mode"],
            restart_s=base.simulation["restart_s"],
            record_history=False,
        )
        jcts.append(float(res.summary["mean_jct"]))
    return float(np.mean(jcts))


def size_choices(
    agent: str, seeds: Sequence[int] = HELD_OUT, weights: str | None = None
) -> dict[str, float]:
    """How ``agent`` (deeprm or sched2) uses its size levels on ``locality_small``'s held-out
    workloads: decision steps, starts, starts below the request, steps where a job may start only
    below its request and how often it then does, and the mean softmax mass on starts below."""
    policy = get_policy(agent, **({"weights": weights} if weights else {}))
    if not isinstance(policy, DeepRM | Sched2):
        raise InvalidInput(f"agent: {agent!r} is not a placement agent (deeprm, sched2)")
    rec = _Recorder(policy)
    jct = held_out_mean_jct(policy, seeds)
    out: dict[str, float] = dict(rec.counts)
    out["mass_below"] = float(np.mean(rec.mass)) if rec.mass else 0.0
    out["mean_jct"] = jct
    return out


def main(argv: Sequence[str] | None = None) -> None:
    """Print each policy's mean JCT and makespan and the JCT ratios to DRF and Tiresias as Markdown."""
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--seeds", type=int, nargs="+", default=list(HELD_OUT))
    ap.add_argument("--policies", nargs="+", default=list(POLICIES))
    ap.add_argument("--deeprm-weights", help="deeprm's weights file (default: the shipped one)")
    ap.add_argument("--sched2-weights", help="sched2's weights file (default: the shipped one)")
    ap.add_argument("--sizes", action="store_true", help="print how the agents use sizes")
    args = ap.parse_args(argv)
    weights = {
        k: v for k, v in (("deeprm", args.deeprm_weights), ("sched2", args.sched2_weights)) if v
    }
    if args.sizes:
        _print_sizes(args.seeds, weights)
        return
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


def _print_sizes(seeds: Sequence[int], weights: Mapping[str, str]) -> None:
    print(f"held-out seeds: {', '.join(map(str, seeds))}")
    print()
    print(
        "| agent | decision steps | starts | starts below request | steps where only a smaller "
        "size starts a job | of those, started below | mean mass on smaller sizes | mean JCT (s) |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for agent in ("deeprm", "sched2"):
        c = size_choices(agent, seeds, weights.get(agent))
        print(
            f"| {agent} | {c['decisions']:.0f} | {c['starts']:.0f} | {c['below']:.0f} | "
            f"{c['only_below']:.0f} | {c['started_below']:.0f} | {c['mass_below']:.4f} | "
            f"{c['mean_jct']:,.0f} |"
        )
    for fallback in (False, True):
        policy = SizedTeacher(fallback=fallback)
        print(f"| {policy.name} (3 sizes) | | | | | | | {held_out_mean_jct(policy, seeds):,.0f} |")


if __name__ == "__main__":
    main()
