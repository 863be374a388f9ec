"""The SMD policy against SMD on pools (``smd_pools``) in the simulator, on typed and racked clusters.

Instances: ``placement_instance(kind, 24, 8, seed)`` (docs/solver.md), the jobs arriving every
600 s. Each policy runs the whole instance in both execution modes; reported per instance: the
total weighted JCT (sum of weight x JCT, s), restarts, and the CPU time of the run.

Run:  .venv/bin/python benchmarks/bench_smd_pools_policy.py            (seeds 3-5; ~10 s)
      .venv/bin/python benchmarks/bench_smd_pools_policy.py --seeds 3  (one seed)
"""

from __future__ import annotations

import argparse
import time

from smdlab.sim.simulator import simulate
from smdlab.solve.placement_milp import placement_instance


def run(kind: str, seed: int, policy: str, execution: str) -> tuple[float, int, float]:
    """(total weighted JCT s, restarts, CPU s) of one simulation."""
    jobs, cluster = placement_instance(kind, 24, 8, seed=seed)
    jobs = [j.replace(arrival=600.0 * i) for i, j in enumerate(jobs)]
    t0 = time.process_time()
    df = simulate(jobs, cluster, policy, execution=execution).jobs
    cpu = time.process_time() - t0
    return float((df["weight"] * df["jct"]).sum()), int(df["restarts"].sum()), cpu


def main() -> None:
    """Print one markdown row per kind, seed and execution mode."""
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--seeds", default="3,4,5", help="comma-separated instance seeds")
    args = ap.parse_args()
    print(
        "| kind | seed | execution | smd: weighted JCT s / restarts / CPU s "
        "| smd_pools: weighted JCT s / restarts / CPU s | smd_pools / smd |"
    )
    print("|---|---:|---|---|---|---:|")
    for kind in ("typed", "racked"):
        for seed in (int(s) for s in args.seeds.split(",")):
            for execution in ("elastic", "non_elastic"):
                a = run(kind, seed, "smd", execution)
                b = run(kind, seed, "smd_pools", execution)
                print(
                    f"| {kind} | {seed} | {execution} | {a[0]:,.0f} / {a[1]} / {a[2]:.2f} "
                    f"| {b[0]:,.0f} / {b[1]} / {b[2]:.2f} | {b[0] / a[0]:.3f} |",
                    flush=True,
                )


if __name__ == "__main__":
    main()
