"""Speed target: DeepRM's own environment takes at least 2,000 steps per second with a random
masked policy (the environment alone), and with DeepRM's greedy network choosing (the policy's
forward pass included). Prints a Markdown table, per wall second and per CPU second (the
machine's cores are shared).

    python benchmarks/bench_deeprm_env.py [--steps N] [--load L]
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np

from smdlab.rl.deeprm_env import DeepRMEnv
from smdlab.rl.deeprm_train import DeepRMAgent


def run(env: DeepRMEnv, steps: int, agent: DeepRMAgent | None) -> tuple[float, float, int]:
    """Steps per wall second and per CPU second, and episodes finished."""
    rng = np.random.default_rng(0)
    obs, _ = env.reset(seed=0)
    episodes = 0
    t0, c0 = time.perf_counter(), time.process_time()
    for _ in range(steps):
        mask = env.action_masks()
        a = rng.choice(np.flatnonzero(mask)) if agent is None else agent.act(obs, mask)
        obs, _, term, trunc, _ = env.step(a)
        if term or trunc:
            episodes += 1
            obs, _ = env.reset()
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    return steps / wall, steps / cpu, episodes


def main() -> None:
    """Print the table."""
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--steps", type=int, default=20_000)
    ap.add_argument("--load", type=float, default=1.3)
    args = ap.parse_args()
    env = DeepRMEnv(args.load)
    print(f"load average (1 min) {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    print()
    print(
        f"| DeepRM's environment, load {args.load:.0%} | steps/s (wall) | steps/CPU-s | episodes | target |"
    )
    print("|---|---:|---:|---:|---:|")
    for name, agent in (("random masked policy", None), ("DeepRM, greedy", DeepRMAgent())):
        wall, cpu, eps = run(env, args.steps, agent)
        print(f"| {name} | {wall:,.0f} | {cpu:,.0f} | {eps} | 2,000 |")


if __name__ == "__main__":
    main()
