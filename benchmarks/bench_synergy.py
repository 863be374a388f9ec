"""smdlab's run of Synergy's variants on the authors' jobs, timed in CPU seconds.

Usage: python benchmarks/bench_synergy.py [--jobs CSV] [--machines N] [--stop-h H]
       [--variants V ...] [--authors-cpu-s S] [--reference CSV] [--authors-times DIR --load L]

Runs each variant of ``data/scenarios/synergy_16x8.toml`` on a Synergy job dump (default: the
bundled 4 x 8 fixture, ``data/traces/synergy/jobs_seed7_load2.25.csv``, with 4 machines) on the
jobs arriving before ``--stop-h`` hours (default: all), and prints the CPU seconds of each run
(reading the jobs included). ``--reference``: the authors' per-job finishes
(``data/traces/synergy/reference_seed42_load9.csv``); each variant then runs on the jobs arriving
before the authors' run of it stopped (its last measured finish), as ``tools/synergy_parity.py``
does. ``--authors-cpu-s``: the authors' simulator's CPU seconds for all the runs together;
``--authors-times DIR``: a folder of the ``/usr/bin/time -v`` outputs of the authors' runs
(``time_{FIFO,SRTF,LAS}_{fair,tune}_load{L}.txt``), whose user + system seconds are set beside
each variant. The ratio authors / smdlab is printed against the target of 5.
"""

from __future__ import annotations

import argparse
import csv
import re
import time
from pathlib import Path

from smdlab.paths import data_dir
from smdlab.sim.runner import run_policies, simulation_options
from smdlab.workloads.scenario import load_scenario
from smdlab.workloads.synergy import AUTHORS_SCHEDULERS as AUTHORS, read_synergy

TARGET_RATIO = 5.0
# smdlab variant -> the authors' scheduler name in their output files


def authors_cpu_s(folder: Path, variant: str, load: str) -> float | None:
    """User + system CPU seconds of the authors' run of ``variant`` (``/usr/bin/time -v``), or None."""
    path = folder / f"time_{AUTHORS[variant]}_load{load}.txt"
    if not path.is_file():
        return None
    text = path.read_text()
    found = re.findall(r"(?:User|System) time \(seconds\): ([0-9.]+)", text)
    return sum(map(float, found)) if len(found) == 2 else None


def stops(reference: Path) -> dict[str, float]:
    """variant -> the authors' last measured finish (s), from a wide reference CSV."""
    out: dict[str, float] = {}
    for row in csv.DictReader(reference.open()):
        for v in AUTHORS:
            if row.get(v):
                out[v] = max(out.get(v, 0.0), float(row[v]))
    return out


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
    ap.add_argument("--reference", type=Path, default=None)
    ap.add_argument("--authors-times", type=Path, default=None)
    ap.add_argument("--load", default="9", help="load in the authors' time file names")
    args = ap.parse_args()
    sc = load_scenario(data_dir() / "scenarios" / "synergy_16x8.toml").with_changes(
        cluster={"machines": args.machines}
    )
    cut = stops(args.reference) if args.reference is not None else {}
    total = theirs_total = 0.0
    print(
        "| variant | jobs | measured mean JCT (h) | smdlab (CPU s) | authors (CPU s) | authors / smdlab |"
    )
    print("|---|---|---|---|---|---|")
    for v in args.variants:
        t0 = time.process_time()
        cluster = sc.build_cluster()
        jobs = read_synergy(args.jobs, cluster=cluster)
        stop = args.stop_h * 3600 if args.stop_h is not None else cut.get(v)
        if stop is not None:
            jobs = [j for j in jobs if j.arrival <= stop]
        res = run_policies(
            jobs, cluster, [v], variants=sc.variants, record_history=False, **simulation_options(sc)
        )[v]
        spent = time.process_time() - t0
        total += spent
        theirs = (
            authors_cpu_s(args.authors_times, v, args.load)
            if args.authors_times is not None
            else None
        )
        if theirs is not None:
            theirs_total += theirs
        cells = ("-", "-") if theirs is None else (f"{theirs:.1f}", f"{theirs / spent:.2f}x")
        print(
            f"| {v} | {len(jobs)} | {res.summary['mean_jct'] / 3600:.3f} | {spent:.1f} | "
            f"{cells[0]} | {cells[1]} |",
            flush=True,
        )
    print(f"total: {total:.1f} CPU s")
    theirs_all = args.authors_cpu_s if args.authors_cpu_s is not None else theirs_total or None
    if theirs_all is not None:
        overall = theirs_all / total
        verdict = "met" if overall >= TARGET_RATIO else "MISSED"
        print(
            f"authors {theirs_all:.1f} CPU s / smdlab {total:.1f} = {overall:.2f} "
            f"(target >= {TARGET_RATIO:g}: {verdict})"
        )


if __name__ == "__main__":
    main()
