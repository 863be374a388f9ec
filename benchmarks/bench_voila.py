"""Voila dashboard: time from the page request to the explorer's first full render, schedule panel included.

Serves notebooks/03_explorer (built from its .py source into a temporary folder) with Voila on
loopback, opens it ``--loads`` times in headless Debian chromium (each load starts a fresh kernel)
and reports, per load, from ``page.goto``:

- cells run: Voila's "Running ..." spinner is gone (every cell has run, the widgets are shown);
- first figure drawn: the first plotly figure is in the page;
- first full render: the schedule panel (the last plot) shows every policy's bar beside a bound
  line and no longer says "simulating", so every figure of the first render has been drawn;
- kernel CPU: CPU seconds (user + system) the page's kernel and its child processes (the
  simulation workers) had used at the first full render, a measure the machine's load does not
  inflate the way it does wall time;
- browser CPU: CPU seconds chromium used from the request to the first full render.

Prints a Markdown table and the load average before and after. Target: under 10 s.

    python benchmarks/bench_voila.py [--loads N]
"""

from __future__ import annotations

import argparse
import contextlib
import math
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import jupytext
from bench_explorer_browser import CHROMIUM_ARGS, NOTEBOOK, _chromium, _free_port, _server

TARGET_S = 10.0
# The explorer's schedule panel (its last plot) once every policy's bar and the bound are drawn.
SCHEDULE_DONE_JS = """(n) => {
    const plots = Array.from(document.querySelectorAll('.js-plotly-plot'));
    const g = plots[plots.length - 1];
    if (!g || !g.data || g.data.length < 2 || g.data[0].type !== 'bar') return false;
    const title = (g.layout.title && g.layout.title.text) || '';
    return (g.data[0].y || []).length === n && !title.includes('simulating');
}"""
FIRST_PLOT_JS = "() => document.querySelector('.js-plotly-plot .main-svg') !== null"


def _kernel_cpu_s(server: Any, before: set[int]) -> float:
    """CPU seconds used so far by the server's kernel not in ``before`` (pids), with its children; NaN if none."""
    import psutil

    total = math.nan
    for proc in psutil.Process(server.pid).children(recursive=True):
        with contextlib.suppress(psutil.Error):
            if proc.pid in before or "ipykernel" not in " ".join(proc.cmdline()):
                continue
            total = 0.0 if math.isnan(total) else total
            for p in [proc, *proc.children(recursive=True)]:
                with contextlib.suppress(psutil.Error):
                    t = p.cpu_times()
                    total += t.user + t.system
    return total


def _browser_cpu_s() -> float:
    """CPU seconds used so far by this process's chromium processes (the page's rendering)."""
    import psutil

    total = 0.0
    for proc in psutil.Process().children(recursive=True):
        with contextlib.suppress(psutil.Error):
            if "chrom" in proc.name():
                t = proc.cpu_times()
                total += t.user + t.system
    return total


def _kernels(server: Any) -> set[int]:
    """Pids of the server's kernel processes now."""
    import psutil

    pids = set()
    for proc in psutil.Process(server.pid).children(recursive=True):
        with contextlib.suppress(psutil.Error):
            if "ipykernel" in " ".join(proc.cmdline()):
                pids.add(proc.pid)
    return pids


@contextlib.contextmanager
def _voila(notebook: Path, tmp: Path):
    """Voila serving ``notebook`` on loopback: yields its base URL."""
    port = _free_port()
    cmd = [sys.executable, "-m", "voila", str(notebook), "--no-browser", f"--port={port}"]
    cmd += ["--Voila.ip=127.0.0.1", "--ServerApp.port_retries=0"]
    base = f"http://127.0.0.1:{port}"
    with _server(cmd, notebook.parent, tmp, f"{base}/voila/static/voila.js") as proc:
        yield base, proc


def main(argv: list[str] | None = None) -> int:
    """Measure, print the Markdown table; exit 1 when a load does not finish."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--loads", type=int, default=3, help="page loads, each on a fresh kernel")
    args = ap.parse_args(argv)
    chromium = _chromium()
    if chromium is None:
        return 0
    from playwright.sync_api import sync_playwright

    from smdlab.widgets.explorer_panels import SCHEDULE_POLICIES

    load_before = os.getloadavg()
    rows: list[tuple[float, float, float, float, float]] = []
    with tempfile.TemporaryDirectory() as tmpdir:
        tmp = Path(tmpdir)
        root = tmp / "root"
        root.mkdir()
        nb = root / NOTEBOOK.name
        jupytext.write(jupytext.read(NOTEBOOK.with_suffix(".py")), nb)
        with _voila(nb, tmp) as (base, server), sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
            try:
                for _ in range(args.loads):
                    page = browser.new_page(viewport={"width": 1400, "height": 1000})
                    old = _kernels(server)
                    browser0 = _browser_cpu_s()
                    t0 = time.perf_counter()
                    page.goto(base + "/", timeout=180_000)
                    page.wait_for_selector("#loading", state="detached", timeout=180_000)
                    ran = time.perf_counter() - t0
                    page.wait_for_function(FIRST_PLOT_JS, timeout=180_000, polling=50)
                    first = time.perf_counter() - t0
                    page.wait_for_function(
                        SCHEDULE_DONE_JS, arg=len(SCHEDULE_POLICIES), timeout=180_000, polling=50
                    )
                    full = time.perf_counter() - t0
                    cpu = _kernel_cpu_s(server, old)
                    browser_cpu = _browser_cpu_s() - browser0
                    rows.append((ran, first, full, cpu, browser_cpu))
                    print(
                        f"cells run {ran:.2f} s, first figure {first:.2f} s, first full render "
                        f"{full:.2f} s, kernel CPU {cpu:.2f} s, browser CPU {browser_cpu:.2f} s",
                        file=sys.stderr,
                    )
                    page.close()
                    time.sleep(2)  # Voila shuts the page's kernel down
            finally:
                browser.close()
    load_after = os.getloadavg()
    print(
        f"Voila {__import__('voila').__version__}, headless Debian chromium, notebooks/"
        f"03_explorer.ipynb; {len(rows)} page loads, each on a fresh kernel. Load average "
        f"(1, 5, 15 min) before {', '.join(f'{x:.2f}' for x in load_before)}, after "
        f"{', '.join(f'{x:.2f}' for x in load_after)}; {os.cpu_count()} CPUs.\n"
    )
    print("| measure (s from the request) | loads | median | max |\n|---|---:|---:|---:|")
    for title, k in (
        ("every cell run (spinner gone)", 0),
        ("first figure drawn", 1),
        ("first full render", 2),
        ("kernel CPU (s) at the first full render", 3),
        ("browser CPU (s), request to first full render", 4),
    ):
        vals = [r[k] for r in rows]
        print(f"| {title} | {len(vals)} | {statistics.median(vals):.2f} | {max(vals):.2f} |")
    med = statistics.median(r[2] for r in rows)
    print(f"\nfirst full render {'met' if med < TARGET_S else 'MISSED'}: median {med:.2f} s, "
          f"target {TARGET_S:.0f} s")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
