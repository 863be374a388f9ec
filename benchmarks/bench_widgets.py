"""Explorer responsiveness: median time from a control change to redrawn figures (target: 200 ms).

Drives the explorer on its default scenario (4 machines of 8 GPUs, 8 jobs, SMD of the reconstructed
model) through a scripted sequence of control changes, each to a value not seen before in the run
(so the timing model's caches do not hide the work), and reports the median time the change's
callback takes: build the jobs, solve (SMD with its LP bound), redraw the three FigureWidgets in
place. Two conditions: the exact MILP left running in the background while the next change comes
(``busy``), and the next change after the background work finished (``idle``). Side by side, the
same sequence redrawn by re-creating the three FigureWidgets instead of updating them in place.
Browser rendering is not included (the kernel-side work is what the target bounds). Last, the
``compare()`` app: how fast a load change returns while its simulations run in the background.

    python benchmarks/bench_widgets.py [--changes N]
"""

from __future__ import annotations

import argparse
import itertools
import statistics
import time

TARGET_S = 0.200


def _sequence(n: int) -> list[tuple[str, object]]:
    values = {
        "machines": [3, 5, 6, 2, 7, 8, 9, 10, 11, 12],
        "bandwidth": [12.0, 15.0, 20.0, 25.0, 30.0, 40.0, 50.0, 8.0, 6.0, 5.0],
        "compute_scale": [1.19, 1.41, 1.68, 2.0, 0.84, 0.71, 0.59, 0.5, 2.38, 2.83],
        "comm_ratio": [1.19, 1.41, 1.68, 2.0, 0.84, 0.71, 0.59, 0.5, 2.38, 2.83],
        "param_scale": [1.19, 1.41, 1.68, 2.0, 0.84, 0.71, 0.59, 0.5, 2.38, 2.83],
        "n_jobs": [9, 10, 7, 6, 11, 12, 5, 13, 14, 4],
        "seed": [1, 2, 3, 4, 5, 6, 7, 8, 9, 10],
        "focus": [1, 2, 3, 1, 2, 3, 1, 2, 3, 1],
    }
    order = list(values)
    seq = []
    for k in itertools.count():
        name = order[k % len(order)]
        seq.append((name, values[name][(k // len(order)) % len(values[name])]))
        if len(seq) == n:
            return seq
    raise AssertionError("unreachable")


def _run(
    n: int, wait: bool, recreate: bool = False
) -> tuple[list[float], list[float], list[float]]:
    import plotly.graph_objects as go

    from smdlab.widgets import explorer

    app = explorer(run_exact=True)
    app.wait()
    totals, solves, draws = [], [], []
    for name, value in _sequence(n):
        control = getattr(app, name)
        if name == "focus":
            value = min(value, len(control.options) - 1)
        t0 = time.perf_counter()
        control.value = value
        if recreate:  # the alternative: new widgets from the same figures on every change
            for fig in (app.allocation_fig, app.timeline_fig, app.bounds_fig):
                go.FigureWidget(fig)
        totals.append(time.perf_counter() - t0)
        if name != "focus":
            solves.append(app.last_timings["solve_s"])
            draws.append(app.last_timings["draw_s"])
        if wait:
            app.wait()
    app.wait()
    errors = list(app.background.errors)
    app.close()
    if errors:
        raise SystemExit(f"background errors: {errors[0]}")
    return totals, solves, draws


def _run_compare(n: int) -> tuple[list[float], list[float]]:
    """Compare app: time for a control's callback to return, and for the background simulations."""
    from smdlab.widgets import compare

    app = compare(n_jobs=30, machines=4)
    returns, sims = [], []
    loads = [1.0, 1.25, 1.75, 2.0, 2.25, 2.5, 0.75, 0.5, 2.75, 3.0]
    for k in range(n):
        t0 = time.perf_counter()
        app.load.value = loads[k % len(loads)]
        returns.append(time.perf_counter() - t0)
        app.wait()
        sims.append(app.last_run_s)
    app.close()
    return returns, sims


def main() -> None:
    """Run both conditions and print medians, the ratio to the target and the in-place speed-up."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--changes", type=int, default=48, help="control changes per condition (default 48)"
    )
    args = ap.parse_args()
    t0 = time.perf_counter()
    from smdlab.widgets import explorer

    explorer(run_exact=False).close()  # imports and first FigureWidget out of the way
    print(f"first explorer built in {time.perf_counter() - t0:.1f} s (imports included)")
    rows = []
    for label, wait in (("idle", True), ("busy", False)):
        totals, solves, draws = _run(args.changes, wait)
        rows.append(
            (
                label,
                statistics.median(totals),
                statistics.median(solves),
                statistics.median(draws),
                max(totals),
            )
        )
    totals_re, _, _ = _run(args.changes, True, recreate=True)
    median_re = statistics.median(totals_re)
    print(
        f"{'condition':>10} {'median':>9} {'solve':>8} {'redraw':>8} {'max':>8} {'median/target':>14}"
    )
    for label, med, sol, drw, mx in rows:
        print(
            f"{label:>10} {med * 1e3:7.1f}ms {sol * 1e3:6.1f}ms {drw * 1e3:6.1f}ms {mx * 1e3:6.0f}ms "
            f"{med / TARGET_S:14.2f}"
        )
    idle = rows[0][1]
    print(
        f"{'recreate':>10} {median_re * 1e3:7.1f}ms  (new FigureWidgets per change; in-place is "
        f"{median_re / idle:.1f}x faster)"
    )
    print(
        f"{args.changes} changes per condition; target {TARGET_S * 1e3:.0f} ms median: "
        f"{'met' if max(r[1] for r in rows) <= TARGET_S else 'NOT met'}"
    )
    returns, sims = _run_compare(10)
    print(
        f"compare(): load changes return in {statistics.median(returns) * 1e3:.1f} ms (median, max "
        f"{max(returns) * 1e3:.1f} ms); the 7 policies' simulations then take {statistics.median(sims):.2f} s "
        f"(median) on the background thread"
    )


if __name__ == "__main__":
    main()
