"""smdlab's run of Synergy's variants on the authors' jobs, timed in CPU seconds.

Usage: python benchmarks/bench_synergy.py [--jobs CSV] [--machines N] [--stop-h H]
       [--variants V ...] [--authors-cpu-s S]

Runs each variant of ``data/scenarios/synergy_16x8.toml`` on a Synergy job dump (default: the
bundled 4 x 8 fixture, ``data/traces/synergy/jobs_seed7_load2.25.csv``, with 4 machines) on the
jobs arriving before ``--stop-h`` hours (default: all), and prints the CPU seconds of each run
(reading the jobs included). ``--authors-cpu-s``: the authors' simulator's CPU seconds for the
same runs on this machine (``/usr/bin/time`` user time); the ratio authors / smdlab is printed
against the target of 5.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from smdlab.paths import data_dir
from smdlab.sim.runner import run_policies, simulation_options
from smdlab.workloads.scenario import load_scenario
from smdlab.workloads.synergy import read_synergy

TARGET_RATIO = 5.0


def main() -> None:
    """Time smdlab's variants on a Synergy job dump; compare with the authors' CPU time if given."""
    ap = argparse.ArgumentParser()
    ap.add_argument(
        "--jobs", type=Path, default=data_dir() / "traces/synergy/jobs_seed7_load2.25.csv"
    )
    ap.add_argument("--machines", type=int, default=4)
    ap.add_argument("--stop-h", type=float, default=None)
    ap.add_argument("--variants", nargs="*", default=["fifo_proportional", "fifo_tune"])
    ap.add_argument("--authors-cpu-s", type=float, default=None)
    args = ap.parse_args()
    sc = load_scenario(data_dir() / "scenarios" / "synergy_16x8.toml").with_changes(
        cluster={"machines": args.machines}
    )
    total = 0.0
    for v in args.variants:
        t0 = time.process_time()
        cluster = sc.build_cluster()
        jobs = read_synergy(args.jobs, cluster=cluster)
        if args.stop_h is not None:
            jobs = [j for j in jobs if j.arrival <= args.stop_h * 3600]
        res = run_policies(
            jobs, cluster, [v], variants=sc.variants, record_history=False, **simulation_options(sc)
        )[v]
        spent = time.process_time() - t0
        total += spent
        print(
            f"{v}: {len(jobs)} jobs, mean JCT of measured jobs {res.summary['mean_jct'] / 3600:.3f} h, "
            f"{spent:.1f} CPU s"
        )
    print(f"total: {total:.1f} CPU s")
    if args.authors_cpu_s is not None:
        ratio = args.authors_cpu_s / total
        verdict = "met" if ratio >= TARGET_RATIO else "MISSED"
        print(f"authors / smdlab = {ratio:.2f} (target >= {TARGET_RATIO:g}: {verdict})")


if __name__ == "__main__":
    main()
