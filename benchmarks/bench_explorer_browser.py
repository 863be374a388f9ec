"""Explorer latency in a real browser: key press on a slider to the repaint of the figures.

Starts JupyterLab on loopback (temporary Jupyter folders, a copy of notebooks/03_explorer.ipynb),
opens it in headless Debian chromium driven by Python Playwright, runs every cell, then moves the
explorer's controls with the keyboard, each press to a value not seen before in the run: task NIC
bandwidth down, machines up, the focused network's "compute ×" (layer profile) up, the number of
jobs up, and the method selector down twice. In the page, a capture listener stamps each key
press (``performance.now()``) and a MutationObserver on each of the explorer's plots stamps every
change of its SVG; the repaint time of a change is the next animation frame after it. A press
ends once no hourglass (background work) shows in the app and no figure has repainted for
``--quiet`` s. Per key press it reports:

- first and last repaint: key press to the repaint of the first and of the last figure that
  changed, background work included (exact MILP, every policy's simulation, refined bound);
- valid bound: key press to the first repaint of the schedule figure that draws a bound line
  (a lower bound on the mean JCT of any schedule of the new job mix);
- draws: Plotly calls per figure (``plotly_update``, ``plotly_restyle``, ``plotly_relayout``,
  ``plotly_redraw`` events), so a figure drawn twice for one change shows up.

Prints a Markdown section (median, p95, max, per control and overall, draws per figure) and the
load average before and after. Needs Debian's chromium (``tools/system-deps.sh``); never runs
``playwright install``.

    python benchmarks/bench_explorer_browser.py [--presses N] [--quiet S]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import re
import secrets
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import jupytext

REPO = Path(__file__).resolve().parents[1]
NOTEBOOK = REPO / "notebooks" / "03_explorer.ipynb"  # built from its .py source
TARGET_MS = 200.0
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
]
# The explorer's output area is the one holding its first slider; its plots are PLOTS, in order.
INSTRUMENT_JS = """() => {
    const handle = document.querySelector('.widget-slider .noUi-handle');
    const scope = handle.closest('.jp-OutputArea-output') || document;
    const plots = Array.from(scope.querySelectorAll('.js-plotly-plot'));
    const st = {key: null, paints: plots.map(() => []), calls: plots.map(() => 0), bound: []};
    window.__smdlab = st;
    const schedule = plots.length - 1;  // the last plot: the schedule panel
    plots.forEach((g, i) => {
        new MutationObserver(() => {
            requestAnimationFrame(() => {
                const t = performance.now();
                st.paints[i].push(t);
                // the schedule panel's bound is its one scatter trace (a dashed line)
                if (i === schedule && g.querySelector('.scatterlayer .trace')) st.bound.push(t);
            });
        }).observe(g, {subtree: true, childList: true, attributes: true, characterData: true});
        for (const ev of ['plotly_update', 'plotly_restyle', 'plotly_relayout', 'plotly_redraw']) {
            g.on(ev, () => { st.calls[i] += 1; });
        }
    });
    document.addEventListener('keydown', () => { st.key = performance.now(); }, true);
    return plots.length;
}"""
RESET_JS = """() => { const st = window.__smdlab; st.key = null; st.bound = [];
    st.paints = st.paints.map(() => []); st.calls = st.calls.map(() => 0); }"""
# Whether the app shows an hourglass (background work queued or running).
BUSY_JS = """() => { const h = document.querySelector('.widget-slider .noUi-handle');
    const s = h && h.closest('.jp-OutputArea-output');
    return !!s && s.innerText.includes('\u23f3'); }"""
STATE_JS = "() => JSON.stringify(window.__smdlab)"
# What the explorer's status line reports for the last change (ms), or null.
STATUS_JS = """() => { const t = document.querySelector('.smdlab-redraw-timer');
    return t ? (t.dataset.latencyMs || null) : null; }"""
# The explorer's figures in page order (the rack view is hidden on a flat cluster).
PLOTS = ("allocation", "racks", "bounds", "timeline", "schedule")
ANYWIDGET_FAILED = "[anywidget] Failed to initialize model"
# (control label, key, presses: None for --presses), in the order they are moved.
CONTROLS: tuple[tuple[str, str, int | None], ...] = (
    ("task NIC (Gbps)", "ArrowLeft", None),
    ("machines", "ArrowRight", None),
    ("compute ×", "ArrowRight", None),
    ("jobs", "ArrowRight", None),
    ("method", "ArrowDown", 2),
)
ATTEMPTS = 3


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _jupyter_env(tmp: Path) -> dict[str, str]:
    env = dict(os.environ)
    for var, sub in (
        ("JUPYTER_CONFIG_DIR", "config"),
        ("JUPYTER_DATA_DIR", "data"),
        ("JUPYTER_RUNTIME_DIR", "runtime"),
        ("JUPYTERLAB_SETTINGS_DIR", "settings"),
        ("JUPYTERLAB_WORKSPACES_DIR", "workspaces"),
    ):
        (tmp / sub).mkdir(parents=True, exist_ok=True)
        env[var] = str(tmp / sub)
    notif = tmp / "settings" / "@jupyterlab" / "apputils-extension"
    notif.mkdir(parents=True, exist_ok=True)
    (notif / "notification.jupyterlab-settings").write_text(
        json.dumps({"fetchNews": "false", "checkForUpdates": False})
    )
    # Every cell stays in the page: with JupyterLab's windowing a scrolled-away output area is
    # detached, and the plots instrumented at the start would no longer be the ones drawn.
    tracker = tmp / "settings" / "@jupyterlab" / "notebook-extension"
    tracker.mkdir(parents=True, exist_ok=True)
    (tracker / "tracker.jupyterlab-settings").write_text('{"windowingMode": "none"}')
    env.pop("JUPYTER_TOKEN", None)
    return env


def _wait_http(url: str, proc: subprocess.Popen, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"JupyterLab exited with status {proc.returncode}")
        with contextlib.suppress(OSError), urllib.request.urlopen(url, timeout=2) as resp:
            if resp.status == 200:
                return
        time.sleep(0.25)
    raise RuntimeError(f"JupyterLab not ready at {url} after {timeout} s")


@contextlib.contextmanager
def _lab(root: Path, tmp: Path):
    """A JupyterLab server on loopback serving ``root``: yields (base URL, token)."""
    port, token = _free_port(), secrets.token_hex(16)
    cmd = [sys.executable, "-m", "jupyter", "lab", "--no-browser", "--allow-root"]
    cmd += ["--ip=127.0.0.1", f"--port={port}", f"--IdentityProvider.token={token}"]
    cmd += [f"--ServerApp.root_dir={root}", "--ServerApp.port_retries=0"]
    base = f"http://127.0.0.1:{port}"
    with _server(cmd, root, tmp, f"{base}/api/status?token={token}"):
        yield base, token


@contextlib.contextmanager
def _server(cmd: list[str], cwd: Path, tmp: Path, ready_url: str):
    """Run ``cmd`` (a Jupyter server; log in ``tmp``) in its own session until ``ready_url`` answers; stop it after."""
    log = open(tmp / "server.log", "wb")  # noqa: SIM115  # closed in the finally below
    proc = subprocess.Popen(
        cmd, cwd=cwd, env=_jupyter_env(tmp / "jupyter"), stdout=log, stderr=log,
        start_new_session=True,
    )  # fmt: skip
    try:
        _wait_http(ready_url, proc, 90)
        yield proc
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=15)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        log.close()


def _restart_kernel(base: str, token: str) -> None:
    """Delete every session, so the notebook reopens on a fresh kernel."""
    url = f"{base}/api/sessions?token={token}"
    with urllib.request.urlopen(url, timeout=10) as resp:
        sessions = json.load(resp)
    for sess in sessions:
        req = urllib.request.Request(
            f"{base}/api/sessions/{sess['id']}?token={token}", method="DELETE"
        )
        urllib.request.urlopen(req, timeout=30).close()


def _run_all(page, base: str, token: str) -> None:
    page.goto(f"{base}/lab/tree/{NOTEBOOK.name}?token={token}", timeout=90_000)
    page.wait_for_selector("text=Python 3 (ipykernel) | Idle", timeout=90_000)
    page.locator(".lm-MenuBar-itemLabel", has_text=re.compile(r"^Run$")).click()
    page.locator(".lm-Menu-itemLabel", has_text=re.compile(r"^Run All Cells$")).click()
    page.wait_for_function(
        """() => {
            const p = Array.from(document.querySelectorAll('.jp-CodeCell .jp-InputArea-prompt'));
            return p.length > 0 && p.every(x => /\\[\\d+\\]/.test(x.textContent));
        }""",
        timeout=150_000,
    )
    page.wait_for_selector("text=Python 3 (ipykernel) | Idle", timeout=150_000)
    page.wait_for_function(
        """() => { const h = document.querySelector('.widget-slider .noUi-handle');
            const s = h && h.closest('.jp-OutputArea-output');
            return s && s.querySelectorAll('.js-plotly-plot').length >= 3; }""",
        timeout=150_000,
    )


def _quiet(page, quiet_s: float, limit_s: float = 60.0) -> dict:
    """Wait until no hourglass shows and no figure has repainted for ``quiet_s`` seconds; return the recorded state."""
    deadline = time.monotonic() + limit_s
    last, since = page.evaluate(STATE_JS), time.monotonic()
    while time.monotonic() < deadline:
        time.sleep(0.05)
        now = page.evaluate(STATE_JS)
        if now != last or page.evaluate(BUSY_JS):
            last, since = now, time.monotonic()
        elif time.monotonic() - since >= quiet_s:
            break
    return json.loads(last)


def _control(page, label: str):
    """(element to focus, element whose text is the value) of the slider or dropdown ``label``."""
    name = page.locator(".widget-label", has_text=re.compile(f"^{re.escape(label)}$"))
    slider = page.locator(".widget-slider", has=name)
    if slider.count():
        return slider.locator(".noUi-handle").first, slider.locator(".widget-readout").first
    select = page.locator(".widget-dropdown", has=name).locator("select").first
    return select, select


def _value(element) -> str:
    return element.evaluate("e => e.tagName === 'SELECT' ? e.value : e.innerText")


def _press(page, label: str, key: str, quiet_s: float) -> dict | None:
    handle, readout = _control(page, label)
    handle.scroll_into_view_if_needed()
    handle.focus()
    page.evaluate(RESET_JS)
    before = _value(readout)
    shown_before = page.evaluate(STATUS_JS)
    if handle.evaluate("e => e.tagName") == "SELECT":
        # Headless chromium ignores arrow keys on a closed <select>: stamp the input, then pick
        # the next option as the key would (the same change event reaches the widget).
        page.evaluate("() => { window.__smdlab.key = performance.now(); }")
        handle.select_option(index=handle.evaluate("e => e.selectedIndex + 1"))
    else:
        page.keyboard.press(key)
    # The first repaint, however slow the machine, then quiet: the rest of the change.
    with contextlib.suppress(Exception):
        page.wait_for_function(
            "() => window.__smdlab.paints.some(p => p.length > 0)", timeout=30_000
        )
    state = _quiet(page, quiet_s)
    after = _value(readout)
    if state["key"] is None or before == after:
        raise RuntimeError(f"{key} on {label!r} did not move the slider ({before} -> {after})")
    # The explorer's own measurement (its status line, smdlab.widgets.browser), shown once its
    # figures were quiet for 1 s.
    with contextlib.suppress(Exception):
        page.wait_for_function(f"(b) => ({STATUS_JS})() !== b", arg=shown_before, timeout=5_000)
    shown = page.evaluate(STATUS_JS)
    paints = [p for fig in state["paints"] for p in fig]
    if not paints:
        print(f"{key} on {label!r} ({before} -> {after}): no repaint in 30 s", file=sys.stderr)
        return None
    return {
        "control": label,
        "latency_ms": max(paints) - state["key"],
        "first_ms": min(paints) - state["key"],
        "bound_ms": min(state["bound"]) - state["key"] if state["bound"] else None,
        "calls": state["calls"],
        "status_ms": float(shown) if shown and shown != shown_before else None,
    }


def _chromium() -> str | None:
    """Debian's chromium, or None after printing that the benchmark is skipped."""
    path = shutil.which("chromium")
    if path is None:
        print("skipped: Debian's chromium is not on PATH")
    return path


def _pct(values: list[float], q: float) -> float:
    s = sorted(values)
    k = (len(s) - 1) * q
    lo = int(k)
    return s[lo] + (s[min(lo + 1, len(s) - 1)] - s[lo]) * (k - lo)


def main(argv: list[str] | None = None) -> int:
    """Measure, print the Markdown section; exit 1 when the browser cannot run."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--presses", type=int, default=6, help="key presses per slider (four sliders)")
    ap.add_argument("--quiet", type=float, default=1.0, help="seconds without repaint that end one")
    args = ap.parse_args(argv)
    chromium = _chromium()
    if chromium is None:
        return 0
    from playwright.sync_api import sync_playwright

    rows, missed, dead = [], 0, 0
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory() as tmpdir:
        tmp = Path(tmpdir)
        root = tmp / "root"
        root.mkdir()
        jupytext.write(jupytext.read(NOTEBOOK.with_suffix(".py")), root / NOTEBOOK.name)
        with _lab(root, tmp) as (base, token), sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
            try:
                for attempt in range(1, ATTEMPTS + 1):
                    page = browser.new_page(viewport={"width": 1400, "height": 1000})
                    errors: list[str] = []
                    page.on("console", lambda m, e=errors: e.append(m.text))
                    page.on("pageerror", lambda x, e=errors: e.append(str(x)))
                    t0 = time.perf_counter()
                    _run_all(page, base, token)
                    print(f"notebook ran in {time.perf_counter() - t0:.1f} s", file=sys.stderr)
                    n_plots = page.evaluate(INSTRUMENT_JS)
                    _quiet(page, 2.0)  # the first background work (exact MILP) lands first
                    # On a loaded machine a figure's view can fail to start (anywidget gives it
                    # 2 s) and then never follows the kernel. Probe: a bandwidth change redraws
                    # the timeline and a machines change the allocation; measure only a page
                    # where both follow (the probes are not counted).
                    nic = _press(page, "task NIC (Gbps)", "ArrowLeft", args.quiet)
                    mac = _press(page, "machines", "ArrowRight", args.quiet)
                    timeline = PLOTS.index("timeline")
                    alive = nic and mac and nic["calls"][timeline] > 0 and mac["calls"][0] > 0
                    if alive and not any(ANYWIDGET_FAILED in e for e in errors):
                        break
                    shot = Path(tempfile.gettempdir()) / f"bench-explorer-attempt{attempt}.png"
                    with contextlib.suppress(Exception):
                        page.screenshot(path=str(shot), full_page=True)
                    print(
                        f"attempt {attempt}: a figure does not follow the kernel ({n_plots} "
                        f"plots; Plotly calls per plot, bandwidth probe "
                        f"{nic and nic['calls']}, machines probe {mac and mac['calls']}; "
                        f"console: {[e[:200] for e in errors if 'rror' in e or 'Failed' in e][:3]}; {shot})",
                        file=sys.stderr,
                    )
                    dead += 1
                    page.close()
                    _restart_kernel(base, token)
                else:
                    print(f"no page of {ATTEMPTS} had every figure following the kernel")
                    return 1
                for label, key, presses in CONTROLS:
                    for _ in range(args.presses if presses is None else presses):
                        row = _press(page, label, key, args.quiet)
                        missed += row is None
                        if row is not None:
                            rows.append(row)
                            print(row, file=sys.stderr)
            finally:
                browser.close()

    if not rows:
        print(f"no key press repainted a figure ({missed} presses)")
        return 1
    load_after = os.getloadavg()
    lat = [r["latency_ms"] for r in rows]
    calls = [r["calls"] for r in rows]
    names = list(PLOTS[:n_plots])
    print(
        f"JupyterLab, headless Debian chromium ({platform.machine()}, {os.cpu_count()} CPUs), "
        f"notebooks/03_explorer.ipynb with its default scenario; {len(rows)} key presses, each "
        f"to a new value ({', '.join(c[0] for c in CONTROLS)}). Last repaint: key press to the "
        f"repaint of the last figure that changed, background work included. Load average "
        f"(1, 5, 15 min) before {', '.join(f'{x:.2f}' for x in load_before)}, after "
        f"{', '.join(f'{x:.2f}' for x in load_after)}. Target: median under {TARGET_MS:.0f} ms.\n"
    )
    print("| measure | control | presses | median | p95 | max |")
    print("|---|---|---:|---:|---:|---:|")
    measures = (
        ("key press to first repaint (ms)", "first_ms"),
        ("key press to last repaint (ms)", "latency_ms"),
        ("key press to a valid bound drawn (ms)", "bound_ms"),
        ("the explorer's status line (ms)", "status_ms"),
    )
    for title, key in measures:
        for control in ("all", *(c[0] for c in CONTROLS)):
            vals = [r[key] for r in rows if r[key] is not None and control in ("all", r["control"])]
            if vals:
                print(
                    f"| {title} | {control} | {len(vals)} | {statistics.median(vals):.0f} | "
                    f"{_pct(vals, 0.95):.0f} | {max(vals):.0f} |"
                )
    for i, name in enumerate(names):
        per = [c[i] for c in calls]
        print(
            f"| Plotly calls on the {name} figure per press | all | {len(per)} | "
            f"{statistics.median(per):.0f} | {_pct(per, 0.95):.0f} | {max(per)} |"
        )
    if dead:
        print(f"\n{dead} page load(s) discarded: a figure did not follow the kernel")
    if missed:
        print(f"\n{missed} key presses showed no repaint within 30 s and are not counted")
    med = statistics.median(lat)
    print(
        f"\nmedian / target = {med / TARGET_MS:.2f} "
        f"({'met' if med < TARGET_MS else 'MISSED'}: median {med:.0f} ms, target {TARGET_MS:.0f} ms)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
