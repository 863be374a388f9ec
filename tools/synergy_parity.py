"""Per-job parity with Synergy's simulator: smdlab's six variants on the authors' jobs.

Usage::

    python tools/synergy_parity.py JOBS.csv REFERENCE [--machines 16] [--variants fifo_tune ...]

JOBS.csv: the authors' job dump (``--workload synergy:PATH``). REFERENCE: a folder of the
authors' per-job results (``results_{FIFO,SRTF,LAS}_{fair,tune}_load*.csv``), a CSV
``variant, job_id, finish_s`` (``data/traces/synergy/reference_seed7_load2.25.csv``) or a CSV
``job_id`` plus one finish column per variant (``data/traces/synergy/reference_seed42_load9.csv``). Each
variant runs on ``data/scenarios/synergy_16x8.toml`` with ``--machines`` servers, on the jobs
that arrive before the authors' run stopped (its last measured finish). Prints one row per
variant: measured jobs, the share within 5% of the authors' JCT, both mean JCTs (h), their
difference, and smdlab's wall time; then the proportional / TUNE ratios.
"""

from __future__ import annotations

import argparse
import csv
import tempfile
import time
from pathlib import Path

from smdlab.paths import data_dir
from smdlab.sim.runner import run_policies, simulation_options
from smdlab.workloads.scenario import load_scenario
from smdlab.workloads.synergy import AUTHORS_SCHEDULERS as AUTHORS


def reference(ref: Path, load: str | None) -> dict[str, dict[str, float]]:
    """variant -> {job_id: authors' finish (s)} of the measured jobs that finished."""
    out: dict[str, dict[str, float]] = {}
    if ref.is_file():
        rows = csv.DictReader(ref.open())
        wide = [c for c in rows.fieldnames or () if c in AUTHORS]  # job_id, one column per variant
        for r in rows:
            if wide:
                for v in wide:
                    if r[v]:
                        out.setdefault(v, {})[r["job_id"]] = float(r[v])
            elif r["finish_s"]:
                out.setdefault(r["variant"], {})[r["job_id"]] = float(r["finish_s"])
        return out
    for variant, stem in AUTHORS.items():
        files = sorted(ref.glob(f"results_{stem}_load{load or '*'}.csv"))
        if not files:
            continue
        rows = csv.DictReader(files[0].open())
        out[variant] = {
            r["job_id"]: float(r["finish_s"])
            for r in rows
            if r["measured"] == "1" and r["finish_s"]
        }
    return out


def compare(
    jobs_csv: Path,
    ref: dict[str, dict[str, float]],
    machines: int,
    per_job: list[tuple[str, str, float, float]] | None = None,
) -> list[dict]:
    """One row per variant: agreement of measured jobs' JCT with the authors'.

    per_job: if given, (variant, job_id, authors' JCT, smdlab's JCT) rows are appended to it.
    """
    arrival = {r["job_id"]: float(r["arrival_s"]) for r in csv.DictReader(jobs_csv.open())}
    scenario = load_scenario(data_dir() / "scenarios" / "synergy_16x8.toml")
    rows = []
    for variant, finish in ref.items():
        stop = max(finish.values())
        with tempfile.TemporaryDirectory() as tmp:
            cut = Path(tmp) / "jobs.csv"
            with jobs_csv.open() as src, cut.open("w") as dst:
                lines = src.read().splitlines()
                head = lines[0].split(",").index("arrival_s")
                keep = [ln for ln in lines[1:] if float(ln.split(",")[head]) <= stop]
                dst.write("\n".join([lines[0], *keep]) + "\n")
            sc = scenario.with_changes(cluster={"machines": machines}, workload={"path": str(cut)})
            cluster = sc.build_cluster()
            jobs = sc.build_jobs(cluster)
            t0 = time.perf_counter()
            res = run_policies(
                jobs,
                cluster,
                [variant],
                variants=sc.variants,
                record_history=False,
                **simulation_options(sc),
            )[variant]
            wall = time.perf_counter() - t0
        ours = dict(zip(res.jobs["job"], res.jobs["jct"], strict=True))
        pairs = [(f - arrival[j], float(ours[j])) for j, f in finish.items()]
        if per_job is not None:
            per_job.extend((variant, j, a, o) for j, (a, o) in zip(finish, pairs, strict=True))
        close = sum(abs(o - a) <= 0.05 * a for a, o in pairs)
        ma = sum(a for a, _ in pairs) / len(pairs)
        mo = sum(o for _, o in pairs) / len(pairs)
        rows.append(
            {
                "variant": variant,
                "jobs": len(pairs),
                "within_5pct": close / len(pairs),
                "authors_mean_h": ma / 3600,
                "smdlab_mean_h": mo / 3600,
                "mean_diff_pct": (mo - ma) / ma * 100,
                "smdlab_wall_s": wall,
            }
        )
    return rows


def main() -> None:
    """Print the per-variant table and the proportional / TUNE ratios."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("jobs", type=Path)
    ap.add_argument("reference", type=Path)
    ap.add_argument("--machines", type=int, default=16)
    ap.add_argument("--load", help="load in the reference file names (a folder of results)")
    ap.add_argument("--variants", nargs="*", help="default: every variant the reference has")
    ap.add_argument("--per-job", type=Path, help="write variant, job_id, both JCTs (s) here")
    args = ap.parse_args()
    ref = reference(args.reference, args.load)
    if args.variants:
        ref = {v: ref[v] for v in args.variants if v in ref}
    per_job: list[tuple[str, str, float, float]] = []
    rows = compare(args.jobs, ref, args.machines, per_job)
    if args.per_job:
        with args.per_job.open("w", newline="") as fh:
            w = csv.writer(fh)
            w.writerow(["variant", "job_id", "authors_jct_s", "smdlab_jct_s"])
            w.writerows(per_job)
    print(
        "| variant | measured jobs | within 5% | authors mean JCT (h) | smdlab mean JCT (h) "
        "| mean diff | smdlab wall (s) |"
    )
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        print(
            f"| {r['variant']} | {r['jobs']} | {r['within_5pct']:.1%} | {r['authors_mean_h']:.3f} "
            f"| {r['smdlab_mean_h']:.3f} | {r['mean_diff_pct']:+.2f}% | {r['smdlab_wall_s']:.1f} |"
        )
    by = {r["variant"]: r for r in rows}
    for base in ("fifo", "srtf", "las"):
        p, t = by.get(f"{base}_proportional"), by.get(f"{base}_tune")
        if p and t:
            print(
                f"{base}: proportional / TUNE = authors {p['authors_mean_h'] / t['authors_mean_h']:.3f}x, "
                f"smdlab {p['smdlab_mean_h'] / t['smdlab_mean_h']:.3f}x"
            )


if __name__ == "__main__":
    main()
