"""The ``interruption_vs_load`` figure's cost, per load and provisioner, and its CSV.

Usage: python benchmarks/bench_batch_figure.py [--config quick] [--loads 0.8] [--names ...]
                                               [--workers 1] [--csv out.csv]

Runs ``interruption_vs_load`` (loads and provisioners as given, default every one of the
configuration's) and prints CPU seconds of this process per step (setting, training, run; a
step ends at each progress message) beside the total CPU and wall time. ``--csv`` writes the
figure's CSV as ``reproduce`` does (``csv_bytes``), to compare two versions byte for byte.
"""

from __future__ import annotations

import argparse
import platform
import time


def main() -> int:
    """Run the benchmark and print its Markdown section."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--config", default="quick")
    ap.add_argument("--loads", default=None, help="comma-separated loads (default: config's)")
    ap.add_argument("--names", default=None, help="comma-separated provisioners (default: all)")
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--csv", default=None, help="write the figure's CSV here")
    args = ap.parse_args()

    from smdlab.experiments.batch import interruption_vs_load
    from smdlab.experiments.config import get_config
    from smdlab.experiments.reproduce import csv_bytes

    cfg = get_config(args.config)
    if args.loads:
        cfg = cfg.replace(batch_loads=tuple(float(x) for x in args.loads.split(",")))
    kw = {"names": tuple(args.names.split(","))} if args.names else {}
    print(
        f"python {platform.python_version()}, config {cfg.name}, loads {cfg.batch_loads}, "
        f"{cfg.batch_jobs} jobs, {cfg.batch_chains} chains, workers {args.workers}\n"
    )
    print("| step | CPU (s) |")
    print("|---|---:|")
    last = [time.process_time()]

    def progress(msg: str) -> None:
        now = time.process_time()
        print(f"| {msg} | {now - last[0]:.1f} |", flush=True)
        last[0] = now

    c0, w0 = time.process_time(), time.perf_counter()
    df = interruption_vs_load(cfg, args.workers, progress=progress, **kw)
    cpu, wall = time.process_time() - c0, time.perf_counter() - w0
    print(f"\ntotal: {cpu:.1f} CPU s (this process), {wall:.1f} s wall, {len(df)} rows")
    if args.csv:
        with open(args.csv, "wb") as f:
            f.write(csv_bytes(df))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
