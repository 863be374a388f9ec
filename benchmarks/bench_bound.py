"""Lower bound on the mean JCT of a schedule: tightness against the exact optimum of tiny batches, and LP size and time.

Tiny batches: ``smdlab.solve.cases.small_instance`` with 3 and 4 jobs (all released at time 0,
unit weights, pooled capacity), seeds 0-9; the exact optimum over every schedule with free
reconfiguration (``optimal_batch_mean_jct``) divided by the bound (``mean_jct_lower_bound``) at
interval growth 1.1 (the library default) and 1.25 (what ``simulate`` uses). Then the bound of
the quick configuration's JCT batches (24 and 64 jobs, seed 0): LP size and wall time, beside
the simulated mean JCT of SMD, the MILP policy and SRTF in their natural modes.

Run:  .venv/bin/python benchmarks/bench_bound.py            (a few minutes)
      .venv/bin/python benchmarks/bench_bound.py --quick    (3-job batches, seeds 0-4; 24 jobs only)
"""

from __future__ import annotations

import argparse
import os
import platform
import time

import numpy as np

from smdlab.solve.cases import small_instance
from smdlab.solve.schedule_bound import mean_jct_lower_bound, optimal_batch_mean_jct


def tiny_rows(sizes, seeds):
    rows = []
    for n in sizes:
        for seed in seeds:
            jobs, cluster = small_instance(seed, jobs=n)
            jobs = [j.replace(arrival=0.0, weight=1.0) for j in jobs]
            opt, _ = optimal_batch_mean_jct(jobs, cluster)
            b1 = mean_jct_lower_bound(jobs, cluster, ratio=1.1).value
            b2 = mean_jct_lower_bound(jobs, cluster, ratio=1.25).value
            rows.append(dict(n=n, seed=seed, opt=opt, r11=opt / b1, r125=opt / b2))
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    t0 = time.perf_counter()
    sizes, seeds = ((3,), range(5)) if args.quick else ((3, 4), range(10))
    rows = tiny_rows(sizes, seeds)
    print(
        f"Machine: {platform.machine()}, {os.cpu_count()} CPUs, load average "
        f"{os.getloadavg()[0]:.2f}; numpy {np.__version__}"
    )
    print()
    print(
        "| jobs | instances | optimum / bound, growth 1.1: max / mean | growth 1.25: max / mean |"
    )
    print("|---:|---:|---|---|")
    for n in sizes:
        rs = [r for r in rows if r["n"] == n]
        a, b = [r["r11"] for r in rs], [r["r125"] for r in rs]
        print(
            f"| {n} | {len(rs)} | {max(a):.3f} / {np.mean(a):.3f} | {max(b):.3f} / {np.mean(b):.3f} |"
        )
    ok = all(r["r11"] >= 1 - 1e-7 and r["r125"] >= 1 - 1e-7 for r in rows)
    print()
    print(f"bound <= exact optimum on every tiny batch: {'met' if ok else 'MISSED'}")
    from smdlab.experiments.config import get_config
    from smdlab.experiments.jct import scenario
    from smdlab.sim import simulate

    cfg = get_config("quick")
    print()
    print(
        "| batch jobs | LP variables | LP constraints | intervals | LP s | bound (s) | SMD (s) | MILP (s) | SRTF (s) |"
    )
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for n in (24,) if args.quick else (24, 64):
        jobs, cluster = scenario(cfg, "jobs", n, 0)
        b = mean_jct_lower_bound(jobs, cluster, mode=cfg.mode, weights=[1.0] * n, ratio=1.25)
        sims = {
            p: simulate(jobs, cluster, p, mode=cfg.mode, record_history=False).summary["mean_jct"]
            for p in ("smd", "milp", "srtf")
        }
        print(
            f"| {n} | {b.variables} | {b.constraints} | {b.intervals} | {b.wall_time_s:.2f} | "
            f"{b.value:.0f} | {sims['smd']:.0f} | {sims['milp']:.0f} | {sims['srtf']:.0f} |"
        )
    print(f"total {time.perf_counter() - t0:.0f} s")


if __name__ == "__main__":
    main()
