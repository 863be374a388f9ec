"""Every notebook top to bottom on a fresh python3 kernel: wall and kernel CPU seconds.

Usage: python benchmarks/bench_notebooks.py [--only 03,07]

Each notebook's jupytext source runs in nbclient, as ``tests/test_notebooks.py`` runs it. Printed
per notebook: wall seconds of its cells, the kernel process's CPU seconds (start-up included; on a
shared machine the CPU time is the steadier of the two) and the load average at the end. Target:
the slowest notebook under 30 s on 2 cores. A second table times notebook 03's first output: the
import of ipywidgets before its progress bar is displayed (target under 1 s).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"
TARGET_S = 30.0
PROGRESS = (
    "import time; t = time.perf_counter(); import ipywidgets as w; "
    "w.HBox([w.IntProgress(value=0, max=2), w.Label('')]); print(time.perf_counter() - t)"
)


def run(path: Path) -> tuple[float, float]:
    """Wall seconds of the cells and kernel CPU seconds of one notebook run."""
    import jupytext
    import psutil
    from nbclient import NotebookClient

    nb = jupytext.read(path)
    client = NotebookClient(
        nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}}
    )
    client.widget_registry = {}  # no output is kept (as in tests/test_notebooks.py)
    with client.setup_kernel():
        kernel = psutil.Process(client.km.provisioner.process.pid)  # type: ignore[union-attr]
        t0 = time.perf_counter()
        for i, cell in enumerate(nb.cells):
            if cell.cell_type == "code":
                client.execute_cell(cell, i)
        wall = time.perf_counter() - t0
        cpu = kernel.cpu_times()
    return wall, cpu.user + cpu.system


def main() -> None:
    """Print the table of notebook run times."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--only", default="", help="comma-separated notebook number prefixes")
    args = p.parse_args()
    wanted = [s for s in args.only.split(",") if s]
    paths = [
        q
        for q in sorted(NOTEBOOKS.glob("[0-9]*.py"))
        if not wanted or any(q.name.startswith(w) for w in wanted)
    ]
    print("| notebook | wall (s) | kernel CPU (s) | load average |")
    print("|---|---:|---:|---:|")
    slowest = 0.0
    for path in paths:
        wall, cpu = run(path)
        slowest = max(slowest, wall)
        print(f"| {path.stem} | {wall:.1f} | {cpu:.1f} | {os.getloadavg()[0]:.2f} |")
    verdict = "met" if slowest < TARGET_S else "MISSED"
    print(f"\nslowest notebook {slowest:.1f} s wall, target {TARGET_S:.0f} s: {verdict}")
    out = subprocess.run([sys.executable, "-c", PROGRESS], capture_output=True, text=True)
    print(f"notebook 03's progress bar after {float(out.stdout):.2f} s of imports (target 1 s)")


if __name__ == "__main__":
    main()
