"""``smdlab reproduce --quick`` against its 3-minute budget, and static export with one browser vs one per image.

Usage: python benchmarks/bench_reproduce.py [--skip-quick] [--figures N]

1. Runs ``smdlab reproduce --quick`` (every figure, PNG + SVG + CSV) in a fresh process into a
   temporary folder; prints wall time, the 180 s target and time/target. Then runs it again
   into the same folder, where every figure is up to date, and prints the second run's time as a
   fraction of the first's (target: under 0.10).
2. Exports the same N figures (default 4) as PNG + SVG twice, side by side: with one kaleido
   browser kept open (what ``reproduce`` does) and with ``plotly.io.write_image`` starting a browser
   per image; prints both times and their ratio.
Skips part 2 (with a message) when no Chromium is found.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

QUICK_TARGET_S = 180.0
RERUN_TARGET = 0.10  # a second run over unchanged inputs, as a fraction of the first


def _run_quick(out: str) -> tuple[float, subprocess.CompletedProcess]:
    t0 = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "smdlab.cli", "reproduce", "--quick", "--out", out],
        capture_output=True,
        text=True,
    )
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        print(proc.stderr)
        raise SystemExit(f"smdlab reproduce --quick failed with exit status {proc.returncode}")
    return wall, proc


def _quick() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        wall, proc = _run_quick(tmp)
        files = sorted(p.name for p in Path(tmp).iterdir() if not p.name.startswith("."))
        again, _ = _run_quick(tmp)
    print(
        f"reproduce --quick: {wall:6.1f} s wall for {len(files)} files; target {QUICK_TARGET_S:.0f} s; "
        f"time/target {wall / QUICK_TARGET_S:.2f}"
    )
    print(
        f"reproduce --quick again, inputs unchanged: {again:6.1f} s; second/first "
        f"{again / wall:.3f}; target under {RERUN_TARGET:.2f}"
    )
    for line in proc.stderr.strip().splitlines():
        print("   ", line)


def _export(n: int) -> None:
    import plotly.io as pio

    from smdlab.experiments import list_figures, make_figure, run_experiment
    from smdlab.experiments.reproduce import ImageExporter, find_chromium

    if find_chromium() is None:
        print("export: skipped (no Chromium found; install Debian's chromium)")
        return
    names = list_figures()[:n]
    figs = [make_figure(name, run_experiment(name, "tiny")) for name in names]
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        with ImageExporter() as ex:
            for k, fig in enumerate(figs):
                for fmt in ("png", "svg"):
                    Path(tmp, f"kept{k}.{fmt}").write_bytes(ex.render(fig, fmt))
        kept = time.perf_counter() - t0
        t0 = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for k, fig in enumerate(figs):
                for fmt in ("png", "svg"):
                    pio.write_image(fig, os.path.join(tmp, f"each{k}.{fmt}"), format=fmt)
        each = time.perf_counter() - t0
    images = 2 * len(figs)
    print(
        f"export of {images} images: one browser kept open {kept:6.1f} s ({kept / images:.2f} s/image); "
        f"a browser per image {each:6.1f} s ({each / images:.2f} s/image); ratio {each / kept:.1f}x"
    )


def main() -> None:
    """Run the measurements and print them."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--skip-quick", action="store_true", help="only the export comparison")
    ap.add_argument(
        "--figures",
        type=int,
        default=4,
        help="figures in the export comparison (default 4; 0 skips it)",
    )
    args = ap.parse_args()
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs")
    if not args.skip_quick:
        _quick()
    if args.figures > 0:
        _export(args.figures)


if __name__ == "__main__":
    main()
