"""Explorer latency in the kernel: control change to the first, the last and the bound-carrying figure update sent.

The kernel-side twin of ``bench_explorer_browser.py`` (same controls, same default scenario of
notebook 03, each change to a value not seen before in the run), for a machine where the browser
run is too noisy or cannot keep a page alive. Every ``sync_figure`` call of the explorer is
stamped; per change it reports, from setting the control's value:

- first update: the first figure update sent (the allocation, or the status of a large solve);
- callback: the control's callback returned (the controls answer again);
- valid bound: the first schedule-figure update that draws a bound line for the new job mix;
- last update: the last figure update sent, background work included (``app.wait()``);
- updates: figure updates sent per figure;
- kernel CPU: CPU seconds of the kernel's process per change (the worker processes excluded).

Then the floor of the last update: the CPU time of each schedule-panel task (every policy's
simulation and the interval-LP bound) for one new job mix, alone, and the smallest time in which
``--processes`` workers can finish them (the longest-first schedule of those CPU times).

Browser rendering is not included. Prints a Markdown table and the load average before and after.

With ``--large``, last: the large-instance switch is ticked, and while its SMD solve and then
its exact MILP run in the background the focused job is changed every 0.3 s; each change's
callback time is reported by what was running (the controls answer while they run).

With ``--first-runs``, then: each task's CPU on its first run on the new job mixes of the
changes (bandwidth, machines, job count), in one process that ran the earlier ones, as a worker
meets them (new jobs' speed tables and Optimus' fits included).

    python benchmarks/bench_explorer_kernel.py [--presses N] [--processes N] [--repeat N] [--first-runs] [--large]
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

from bench_explorer_browser import _pct  # the same percentile as the browser run

TARGET_MS = 200.0
# (control, values): each value not seen before in the run.
SEQUENCE: tuple[tuple[str, tuple[object, ...]], ...] = (
    ("bandwidth", (22.4, 20.0, 17.8, 15.8, 14.1, 12.6)),
    ("machines", (5, 6, 7, 8, 9, 10)),
    ("compute_scale", (1.19, 1.41, 1.68, 2.0, 2.38, 2.83)),
    ("n_jobs", (17, 18, 19, 20, 21, 22)),
    ("method", ("lp_round", "milp")),
)


def main(argv: list[str] | None = None) -> int:
    """Measure and print the Markdown table."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--presses", type=int, default=4, help="changes per slider (four sliders)")
    ap.add_argument(
        "--processes", type=int, default=None, help="simulation workers (0: on a thread)"
    )
    ap.add_argument("--large", action="store_true", help="also time controls during a large solve")
    ap.add_argument(
        "--repeat", type=int, default=1, help="runs of each floor task (the least CPU is kept)"
    )
    ap.add_argument(
        "--first-runs",
        action="store_true",
        help="also each task's first run on the job mixes of the changes (as a worker meets them)",
    )
    args = ap.parse_args(argv)
    import smdlab.widgets.explorer_app as mod
    from smdlab.widgets import explorer
    from smdlab.widgets.sim_pool import default_workers

    workers = default_workers() if args.processes is None else args.processes
    load_before = os.getloadavg()
    app = explorer(sim_processes=workers)
    assert app.wait(300)
    pool = app.start_workers()  # as after a first change
    assert pool is None or pool.wait_ready(300), "worker processes did not start"
    names = {
        id(app.allocation_fig): "allocation",
        id(app.bounds_fig): "bounds",
        id(app.timeline_fig): "timeline",
        id(app.schedule_fig): "schedule",
        id(app.rack_fig): "racks",
    }
    for fig in (app.allocation_fig, app.bounds_fig, app.timeline_fig, app.schedule_fig):
        fig._smdlab_drawn = True  # as once a browser view has drawn them: deltas only
    stamps: list[tuple[float, str, bool]] = []
    real = mod.sync_figure

    def stamped(target, fig) -> None:
        real(target, fig)
        data = fig["data"] if isinstance(fig, dict) else [t.to_plotly_json() for t in fig.data]
        bound = any(t.get("type") == "scatter" for t in data)
        stamps.append((time.perf_counter(), names.get(id(target), "other"), bound))

    # The schedule panel draws from its own module where it has one.
    modules = [mod]
    try:
        import smdlab.widgets.explorer_panels as panels

        modules.append(panels)
    except ImportError:
        pass
    for m in modules:
        m.sync_figure = stamped
    rows = []
    try:
        for control, values in SEQUENCE:
            for value in values[: args.presses] if control != "method" else values:
                stamps.clear()
                t0, c0 = time.perf_counter(), time.process_time()
                getattr(app, control).value = value
                t_cb = time.perf_counter()
                assert app.wait(300), f"{control} = {value}: background work did not finish"
                cpu = (time.process_time() - c0) * 1e3
                if not stamps:
                    continue
                bounds = [t for t, name, b in stamps if name == "schedule" and b]
                counts: dict[str, int] = {}
                for _, name, _ in stamps:
                    counts[name] = counts.get(name, 0) + 1
                rows.append(
                    {
                        "control": control,
                        "first": (stamps[0][0] - t0) * 1e3,
                        "callback": (t_cb - t0) * 1e3,
                        "bound": (bounds[0] - t0) * 1e3 if bounds else None,
                        "last": (max(t for t, _, _ in stamps) - t0) * 1e3,
                        "counts": counts,
                        "cpu": cpu,
                    }
                )
    finally:
        for m in modules:
            m.sync_figure = real
        app.close()
    load_after = os.getloadavg()
    print(
        f"Kernel side, notebook 03's default scenario, simulations on "
        f"{f'{workers} worker processes' if workers else 'a thread of the kernel'}; {len(rows)} changes "
        f"({', '.join(c for c, _ in SEQUENCE)}). Load average (1, 5, 15 min) before "
        f"{', '.join(f'{x:.2f}' for x in load_before)}, after "
        f"{', '.join(f'{x:.2f}' for x in load_after)}; {os.cpu_count()} CPUs.\n"
    )
    print("| measure (ms from the change) | control | changes | median | p95 | max |")
    print("|---|---|---:|---:|---:|---:|")
    for title, key in (
        ("first figure update sent", "first"),
        ("callback returned", "callback"),
        ("valid bound sent", "bound"),
        ("last figure update sent", "last"),
        ("kernel CPU per change", "cpu"),
    ):
        for control in ("all", *(c for c, _ in SEQUENCE)):
            vals = [r[key] for r in rows if r[key] is not None and control in ("all", r["control"])]
            if vals:
                print(
                    f"| {title} | {control} | {len(vals)} | {statistics.median(vals):.0f} | "
                    f"{_pct(vals, 0.95):.0f} | {max(vals):.0f} |"
                )
    for name in ("allocation", "bounds", "timeline", "schedule"):
        per = [r["counts"].get(name, 0) for r in rows]
        print(
            f"| updates of the {name} figure per change | all | {len(per)} | "
            f"{statistics.median(per):.0f} | {_pct(per, 0.95):.0f} | {max(per)} |"
        )
    _floor(max(workers, 1), max(1, args.repeat))
    if args.first_runs:
        _first_runs(args.presses)
    if args.large:
        _large(workers)
    return 0


# The changes that make a new job mix, as scenario settings (compute_scale edits profiles).
_SETTING = {"bandwidth": "bandwidth_gbps", "machines": "machines", "n_jobs": "n_jobs"}


def _first_runs(presses: int) -> None:
    """Each panel task's CPU on its first run for every new job mix of the changes (bandwidth,
    machines, job count), in one process that ran the earlier ones, as a worker does; and the
    two-worker schedule of the pool's submission order (SMD first, each task to the first free
    worker)."""
    from smdlab.sim.bound import workload_bound
    from smdlab.widgets.explorer_panels import SCHEDULE_POLICIES
    from smdlab.widgets.scenario import build_cluster, build_jobs, default_settings
    from smdlab.widgets.sim_pool import BOUND_TASK, simulate_policy

    order = ("smd", *(p for p in SCHEDULE_POLICIES if p != "smd"), BOUND_TASK)
    settings = default_settings()

    def run(task: str, jobs, cluster) -> float:
        c0 = time.process_time()
        if task == BOUND_TASK:
            workload_bound(jobs, cluster, settings.mode)
        else:
            simulate_policy(jobs, cluster, task, settings.mode, lambda: True, lower_bound=False)
        return (time.process_time() - c0) * 1e3

    jobs, cluster = build_jobs(settings), build_cluster(settings)
    for task in order:  # the default job mix first, as the explorer opens with it
        run(task, jobs, cluster)
    print(
        "\n| change (each task's first run on its job mix) | SMD, CPU ms | the other six, CPU ms "
        "| two workers, submission order, CPU ms |\n|---|---:|---:|---:|"
    )
    rows = []
    for control, values in SEQUENCE:
        if control not in _SETTING:
            continue
        for value in values[:presses]:
            settings = settings.replace(**{_SETTING[control]: value})
            jobs, cluster = build_jobs(settings), build_cluster(settings)
            cpu = {task: run(task, jobs, cluster) for task in order}
            free = [0.0, 0.0]
            for task in order:
                free[free.index(min(free))] += cpu[task]
            rows.append((cpu["smd"], sum(cpu.values()) - cpu["smd"], max(free)))
            print(
                f"| {control} = {value} | {rows[-1][0]:.0f} | {rows[-1][1]:.0f} | {max(free):.0f} |"
            )
    med = [statistics.median(r[k] for r in rows) for k in range(3)]
    print(f"| median | {med[0]:.0f} | {med[1]:.0f} | {med[2]:.0f} |")
    print(f"Load average after: {', '.join(f'{x:.2f}' for x in os.getloadavg())}")


def _large(workers: int) -> None:
    """Tick the large-instance switch; time focus changes while SMD and then the MILP run."""
    from smdlab.widgets import explorer

    app = explorer(sim_processes=workers)
    assert app.wait(300)
    pool = app.start_workers()
    assert pool is None or pool.wait_ready(300), "worker processes did not start"
    times: dict[str, list[float]] = {"SMD (large instance)": [], "exact MILP": [], "idle": []}
    t0 = time.perf_counter()
    app.large.value = True
    tick = (time.perf_counter() - t0) * 1e3
    focus = 0
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline:
        time.sleep(0.3)
        phase = (
            "SMD (large instance)"
            if app.solving_in_background
            else "exact MILP"
            if app.background.running
            else "idle"
        )
        focus = (focus + 1) % 5
        t0 = time.perf_counter()
        app.focus.value = focus
        times[phase].append((time.perf_counter() - t0) * 1e3)
        if phase == "idle" and len(times["idle"]) >= 3:
            break
    app.close()
    print(f"\nLarge instance: ticking the switch returned in {tick:.0f} ms.\n")
    print("| running in the background | focus changes | median ms | p95 ms | max ms |")
    print("|---|---:|---:|---:|---:|")
    for phase, vals in times.items():
        if vals:
            print(
                f"| {phase} | {len(vals)} | {statistics.median(vals):.0f} | "
                f"{_pct(vals, 0.95):.0f} | {max(vals):.0f} |"
            )


def _floor(workers: int, repeat: int = 1) -> None:
    """Print each schedule-panel task's CPU time for a new job mix (least of ``repeat`` runs) and the ``workers``-process floor.

    Repeated runs keep what a worker keeps between changes (caches keyed by job names, such as
    Optimus' loss fits), except the interval-LP bound's and SMD's hull caches, which would answer
    at once (the hull vertices kept as hints would be right at once).
    """
    from smdlab import caches
    from smdlab.sim.bound import workload_bound
    from smdlab.widgets.explorer_panels import SCHEDULE_POLICIES
    from smdlab.widgets.scenario import build_cluster, build_jobs, default_settings
    from smdlab.widgets.sim_pool import BOUND_TASK, simulate_policy

    settings = default_settings().replace(bandwidth_gbps=21.1)  # a job mix not run above
    jobs, cluster = build_jobs(settings), build_cluster(settings)
    cpu: dict[str, float] = {}
    for _ in range(repeat):
        for task in (*SCHEDULE_POLICIES, BOUND_TASK):
            # (older checkouts lack the hull caches)
            for kept in ("WORKLOAD_BOUNDS", "HULL_SEGMENTS", "HULL_CHAINS"):
                if hasattr(caches, kept):
                    getattr(caches, kept).clear()
            c0 = time.process_time()
            if task == BOUND_TASK:
                workload_bound(jobs, cluster, settings.mode)
            else:
                simulate_policy(jobs, cluster, task, settings.mode, lambda: True, lower_bound=False)
            ms = (time.process_time() - c0) * 1e3
            cpu[task] = min(cpu.get(task, ms), ms)
    loads = [0.0] * workers
    for ms in sorted(cpu.values(), reverse=True):  # longest first, each to the least-loaded worker
        loads[loads.index(min(loads))] += ms
    print(
        f"\n| schedule-panel task (one new job mix, alone; least of {repeat}) | CPU ms |\n|---|---:|"
    )
    for task, ms in cpu.items():
        print(f"| {task} | {ms:.0f} |")
    print(f"| all, one after another | {sum(cpu.values()):.0f} |")
    print(f"| floor on {workers} worker(s): longest-first makespan | {max(loads):.0f} |")


if __name__ == "__main__":
    raise SystemExit(main())
