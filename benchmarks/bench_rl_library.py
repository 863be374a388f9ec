"""MaskablePPO's training cost on DL2's environment: one environment with rollouts of 1,024 steps
against 8 environments of 128 (the same rollout size; ``smdlab.rl.library``). Prints CPU seconds
per 1,000 environment steps of each, PPO's updates included, and their ratio. CPU time, not wall
time: the machine's cores are shared.

    python benchmarks/bench_rl_library.py [--steps N] [--workload dl2_small]
"""

from __future__ import annotations

import argparse
import tempfile

from smdlab.rl.library import WORKLOADS, PPOConfig, train


def cost(workload: str, steps: int, n_envs: int) -> float:
    """CPU seconds per 1,000 environment steps of a seeded MaskablePPO run."""
    cfg = PPOConfig(workload=workload, timesteps=steps, n_envs=n_envs, n_steps=1024 // n_envs)
    with tempfile.TemporaryDirectory() as out:
        summary = train(out, cfg, force=True)
    return 1000 * summary["cpu_seconds"] / summary["timesteps"]


def main() -> None:
    """Print the table."""
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--steps", type=int, default=4096)
    ap.add_argument("--workload", choices=WORKLOADS, default="dl2_small")
    args = ap.parse_args()
    cost(args.workload, 1024, 8)  # imports and first-call costs out of the measurement
    one, eight = cost(args.workload, args.steps, 1), cost(args.workload, args.steps, 8)
    print("| environments x steps per rollout | CPU s per 1,000 steps |")
    print("|---|---:|")
    print(f"| 1 x 1,024 | {one:.2f} |")
    print(f"| 8 x 128 | {eight:.2f} |")
    print(f"\nratio (1 env / 8 envs): {one / eight:.2f}")


if __name__ == "__main__":
    main()
