"""Speed target: DL2's environment takes at least 2,000 steps per second with a random
masked policy on 20-job windows. Prints a Markdown table: steady state (the workload pool already
drawn once) and cold (every episode a new workload draw; the environment skips the lower bound's LP).

    python benchmarks/bench_rl.py [--steps N] [--pool K]
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np

from smdlab.rl import make_env


def run(env, steps: int, seed: int) -> tuple[float, float, int]:
    """Steps per wall second and per CPU second of a uniformly random valid action, and episodes."""
    rng = np.random.default_rng(seed)
    _, info = env.reset(seed=seed)
    episodes = 0
    t0, c0 = time.perf_counter(), time.process_time()
    for _ in range(steps):
        a = rng.choice(np.flatnonzero(info["action_mask"]))
        _, _, term, trunc, info = env.step(a)
        if term or trunc:
            episodes += 1
            _, info = env.reset()
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    return steps / wall, steps / cpu, episodes


def main() -> None:
    """Print the table."""
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--steps", type=int, default=20_000)
    ap.add_argument("--pool", type=int, default=8, help="workload seeds the episodes draw from")
    args = ap.parse_args()
    env = make_env(train_seeds=args.pool)
    for s in range(args.pool):  # draw every workload of the pool once (and its bound)
        env.reset(options={"workload_seed": s})
        run(env, 1, s)
    warm, warm_cpu, eps = run(env, args.steps, 1)
    cold_env = make_env(train_seeds=10**6)
    cold, cold_cpu, cold_eps = run(cold_env, max(1, args.steps // 4), 2)
    # steps per CPU second: the machine's cores are shared, wall time counts other processes
    print(f"load average (1 min) {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    print()
    print(
        "| DL2 env, random masked policy, window 20 | steps/s (wall) | steps/CPU-s | episodes | target |"
    )
    print("|---|---:|---:|---:|---:|")
    print(
        f"| steady state (pool of {args.pool} workloads) | {warm:,.0f} | {warm_cpu:,.0f} | {eps} | 2,000 |"
    )
    print(
        f"| cold (a new workload every episode) | {cold:,.0f} | {cold_cpu:,.0f} | {cold_eps} | - |"
    )


if __name__ == "__main__":
    main()
