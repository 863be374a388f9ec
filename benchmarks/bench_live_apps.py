"""The other live apps against the explorer's budget: a control change to the last figure or output update, kernel side.

- ``compare()`` (every default policy simulated on the background thread, each drawn as it
  finishes): a load change to the callback's return, to the first figure update (the first
  policy drawn) and to the last (every policy drawn, ``app.wait()``); also the simulations' CPU.
- Notebook 08's cores slider (the data-stage timeline redrawn in place) and notebook 09's
  ``interact`` (the pair table printed): the notebook's own cells are run, from its jupytext
  source, up to and including the app's cell (``display`` captured, not shown), then each control
  is set to values not seen before and its callback timed. Notebooks 06, 07 and 10 have no live
  app (no control that redraws an output).

Browser rendering is not included (``bench_explorer_browser.py`` measures it for the explorer).
Prints a Markdown table and the load average before and after.

    python benchmarks/bench_live_apps.py [--changes N]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import statistics
import time
from pathlib import Path

import jupytext
from bench_explorer_browser import _pct

REPO = Path(__file__).resolve().parents[1]
TARGET_MS = 200.0


def _run_until(notebook: str, marker: str) -> tuple[dict, list]:
    """Run the code cells of ``notebook`` up to the first one containing ``marker``; (namespace, displayed objects)."""
    import IPython.display

    nb = jupytext.read(REPO / "notebooks" / notebook)
    shown: list = []
    real = IPython.display.display
    IPython.display.display = lambda *objs, **kw: shown.extend(objs)
    import ipywidgets.widgets.interaction as interaction

    real_interaction = interaction.display
    interaction.display = IPython.display.display
    ns: dict = {"__name__": "__bench__", "display": IPython.display.display}
    cwd = os.getcwd()
    os.chdir(REPO / "notebooks")
    try:
        for cell in nb.cells:
            if cell.cell_type != "code":
                continue
            with contextlib.redirect_stdout(io.StringIO()):  # the notebook's printed output
                exec(compile(cell.source, notebook, "exec"), ns)
            if marker in cell.source:
                return ns, shown
    finally:
        os.chdir(cwd)
        IPython.display.display = real
        interaction.display = real_interaction
    raise RuntimeError(f"{notebook}: no cell contains {marker!r}")


def _timed(set_value, values) -> list[float]:
    out = []
    for v in values:
        t0 = time.perf_counter()
        with contextlib.redirect_stdout(io.StringIO()):  # what the app prints goes to a buffer
            set_value(v)
        out.append((time.perf_counter() - t0) * 1e3)
    return out


def _compare(n: int) -> tuple[list[float], list[float], list[float], list[float]]:
    """Per load change: callback returned, first and last figure update (ms), process CPU (ms)."""
    from smdlab.widgets import compare

    app = compare()
    assert app.wait(600)
    draws: list[float] = []
    real_apply = app._apply

    def apply(results):
        real_apply(results)
        draws.append(time.perf_counter())

    app._apply = apply
    returns, first, last, cpu = [], [], [], []
    for load in [1.1, 1.3, 1.7, 1.9, 2.1, 2.3, 0.9, 0.7, 2.7, 2.9][:n]:
        draws.clear()
        c0, t0 = time.process_time(), time.perf_counter()
        app.load.value = load
        returns.append((time.perf_counter() - t0) * 1e3)
        assert app.wait(600)
        first.append((draws[0] - t0) * 1e3)
        last.append((draws[-1] - t0) * 1e3)
        cpu.append((time.process_time() - c0) * 1e3)
    app.close()
    return returns, first, last, cpu


def _compare_floor() -> list[tuple[str, float]]:
    """CPU ms of each default policy's simulation of the compare app's default workload, and of its LP bound."""
    from smdlab.caches import WORKLOAD_BOUNDS
    from smdlab.policies.registry import get_policy
    from smdlab.sim import simulate
    from smdlab.sim.bound import workload_bound
    from smdlab.sim.runner import simulation_options
    from smdlab.widgets import compare
    from smdlab.widgets.compare_app import DEFAULT_POLICIES

    app = compare(policies=("fifo",))
    sc = app._current_scenario()
    app.close()
    cluster = sc.build_cluster()
    jobs = sc.build_jobs(cluster)
    options = {**simulation_options(sc), "lower_bound": False}
    out = []
    for p in DEFAULT_POLICIES:
        c0 = time.process_time()
        simulate(jobs, cluster, get_policy(p, **sc.policy_options.get(p, {})), **options)
        out.append((p, (time.process_time() - c0) * 1e3))
    WORKLOAD_BOUNDS.clear()  # the app computed this workload's bound already
    c0 = time.process_time()
    workload_bound(jobs, cluster, options["mode"])
    out.append(("interval-LP bound", (time.process_time() - c0) * 1e3))
    return out


def main(argv: list[str] | None = None) -> int:
    """Measure and print the Markdown table."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--changes", type=int, default=6, help="changes per control")
    args = ap.parse_args(argv)
    load_before = os.getloadavg()
    rows: list[tuple[str, str, list[float]]] = []

    ns, _ = _run_until("08_data_stage.py", "cores.observe(")
    cores = ns["cores"]
    values = [1.5 + 0.5 * k for k in range(args.changes)]
    timed = _timed(lambda v: setattr(cores, "value", v), values)
    rows.append(("notebook 08", "cores / worker: timeline redrawn", timed))

    ns, shown = _run_until("09_gpu_sharing.py", "widgets.interact(")
    app = next(w for w in shown if hasattr(w, "kwargs_widgets"))
    batch_a = next(w for w in app.kwargs_widgets if w.description == "batch A")
    values = [40 + 8 * k for k in range(args.changes)]
    rows.append(
        ("notebook 09", "batch A: pair table printed", _timed(lambda v: setattr(batch_a, "value", v), values))
    )  # fmt: skip

    returns, first, last, cpu = _compare(args.changes)
    rows.append(("compare()", "load: callback returned", returns))
    rows.append(("compare()", "load: first figure update (first policy drawn)", first))
    rows.append(("compare()", "load: last figure update (every policy simulated)", last))
    rows.append(("compare()", "load: kernel CPU to the last update (ms, not wall)", cpu))

    floor = _compare_floor()
    load_after = os.getloadavg()
    print(
        f"Kernel side; {args.changes} changes per control, each to a new value. Load average "
        f"(1, 5, 15 min) before {', '.join(f'{x:.2f}' for x in load_before)}, after "
        f"{', '.join(f'{x:.2f}' for x in load_after)}; {os.cpu_count()} CPUs. Target: median "
        f"{TARGET_MS:.0f} ms.\n"
    )
    print(
        "| app | change to | changes | median ms | p95 ms | max ms |\n|---|---|---:|---:|---:|---:|"
    )
    for app_name, what, vals in rows:
        print(
            f"| {app_name} | {what} | {len(vals)} | {statistics.median(vals):.0f} | "
            f"{_pct(vals, 0.95):.0f} | {max(vals):.0f} |"
        )
    print(
        "\nThe compare app's default workload, one interpreter, CPU ms per run: "
        + ", ".join(f"{p} {ms:.0f}" for p, ms in floor)
        + f"; the simulations' sum {sum(ms for p, ms in floor[:-1]):.0f}."
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
