"""The live explorer: change the cluster, the job mix, the layer profiles or the model and watch the
allocation, one job's per-layer timeline and the JCT bounds follow.

Fast path (runs in the control's callback): build the instance, solve it with the chosen fast method
(SMD of the reconstructed model, whose result carries the LP lower bound, or LP + rounding), draw
the closed-form bound on any schedule's mean JCT, redraw the FigureWidgets in place. Above
``INLINE_MAX_JOBS`` jobs the fast path itself runs on a background thread. Slow path (background
threads, each with a busy indicator): the exact MILP under a short time limit, and the schedule
panel (each policy's simulation drawn as it finishes, then the interval-LP bound), whose work runs
in worker processes (``smdlab.widgets.sim_pool``) once they are ready. A newer change cancels
the older work at its next check; a failure shows one line in the status line.
"""

from __future__ import annotations

import threading
import time
import traceback
from typing import Any

import ipywidgets as widgets
import plotly.graph_objects as go

from smdlab.errors import SmdlabError, check_int, check_positive
from smdlab.model.job import Job
from smdlab.solve import solve
from smdlab.solve.api import Method
from smdlab.solve.solution import Solution
from smdlab.viz.model import timeline_spec
from smdlab.viz.racks import rack_figure, solution_snapshot
from smdlab.viz.solution import allocation_spec, bounds_spec
from smdlab.viz.style import TEMPLATE, method_label
from smdlab.widgets.browser import APP_CLASS, RedrawTimer
from smdlab.widgets.deadlines import DeadlinePanel
from smdlab.widgets.explorer_controls import ExplorerControls
from smdlab.widgets.explorer_panels import (
    INLINE_MAX_JOBS,
    ScheduleMixin,
    SchedulePanel,
    StatusLineMixin,
)
from smdlab.widgets.live import (
    Background,
    BackgroundApp,
    failure_line,
    figure_widget,
    sync_figure,
)
from smdlab.widgets.scenario import (
    ExplorerSettings,
    build_cluster,
    build_jobs,
    default_settings,
)
from smdlab.widgets.sim_pool import SimulationPool, default_workers

_FAST_FOR: dict[str, Method] = {"smd": "smd", "lp_round": "lp_round", "milp": "lp_round"}
DEFAULT_MILP_TIME_LIMIT = 5.0
# How long a change waits for the background MILP before drawing the bounds figure without it:
# a MILP that answers sooner (the default scenario's, in tens of ms) costs one draw, not two.
EXACT_GRACE_S = 0.1


def _solve_exact(jobs, cluster, mode: str, limit: float) -> Solution | str:
    """The exact MILP under ``limit`` seconds, or the reason it failed (shown in the bounds figure)."""
    try:
        return solve(jobs, cluster, "milp", mode=mode, time_limit=limit)
    except SmdlabError as exc:
        return f"failed: {exc}"


class Explorer(ExplorerControls, ScheduleMixin, StatusLineMixin, BackgroundApp, widgets.HBox):
    """The explorer app: controls on the left, allocation, JCT bounds and one job's timeline on the right.

    Every control is an attribute (``machines``, ``shape``, ``bandwidth``, ``profiles``, ``n_jobs``,
    ``seed``, ``focus``, ``device``, ``compute_scale``, ``param_scale``, ``comm_ratio``, ``mode``,
    ``batch``, ``method``, ``exact``; the deadline section's in ``deadlines``); setting a
    control's ``value`` from Python updates the outputs exactly as a click does. ``wait()``
    blocks until background work is done. ``sim_processes``: worker processes for the schedule
    panel (None: one per core, at most two; 0: simulate on a background thread of the kernel).
    """

    def __init__(
        self,
        settings: ExplorerSettings | None = None,
        *,
        milp_time_limit: float = DEFAULT_MILP_TIME_LIMIT,
        run_exact: bool = True,
        exact_grace_s: float = EXACT_GRACE_S,
        sim_processes: int | None = None,
    ) -> None:
        self.settings = settings or default_settings()
        self.milp_time_limit = check_positive("milp_time_limit", milp_time_limit)
        self.exact_grace_s = check_positive("exact_grace_s", exact_grace_s, allow_zero=True)
        self._lock = threading.RLock()
        self.background = Background(
            f"solving the exact MILP (limit {self.milp_time_limit:g} s)",
            lock=self._lock,
            on_error=self._show_failure,
        )
        # The schedule panel's simulations get their own worker: the exact MILP never queues behind them.
        self.schedule_background = Background(
            "simulating every policy on this job mix", lock=self._lock
        )
        # A large instance's fast path (building the jobs, SMD) runs here, not in the callback.
        self.fast_background = Background(
            "solving the large instance", lock=self._lock, on_error=self._fast_failed
        )
        # The schedule panel's simulations run in worker processes shared by the kernel's
        # explorers, started at the first change (starting them costs CPU that the page's first
        # render needs) and ready seconds later; until then they run on a thread.
        workers = default_workers() if sim_processes is None else sim_processes
        self._sim_workers = check_int("sim_processes", workers, 0, 8)
        self.sim_pool: SimulationPool | None = None
        self._sim_slot = 0
        self._syncing = False  # True while the app itself sets control values (no refresh then)
        self._exact_cache: dict[str, Solution | str] = {}
        self._schedule_cache: dict[str, SchedulePanel] = {}
        self.schedule: tuple[dict[str, float], float] | None = None  # (policy -> mean JCT, bound)
        self.schedule_panel = SchedulePanel()  # what the schedule figure draws now
        self.solving_in_background = False  # a large instance's fast path is running
        self.errors: list[str] = []  # tracebacks of unexpected failures in the callbacks
        self.solution: Solution | None = None  # the allocation shown
        self.exact_solution: Solution | None = (
            None  # the exact MILP of the current problem, once known
        )
        self.error: str | None = None
        self.last_update_s: float = 0.0  # seconds the last control change took (solve + redraw)
        self.last_timings: dict[str, float] = {}
        self.updates = 0
        self._build_controls()
        # Deadlines (off by default: nothing computed, nothing shown): smdlab.widgets.deadlines.
        self.deadlines = DeadlinePanel(self, self._lock)
        self.control_panel.children += (self.deadlines.controls,)
        self.controls.update(self.deadlines.control_map)
        self._jobs, self._cluster = build_jobs(self.settings), build_cluster(self.settings)
        self._drawn_key = self._problem_key()
        self.solution = first = self._solve_fast(self._jobs, self._cluster)
        # The first exact solve runs here, not in the background: the figures are then displayed
        # with their final data (Voila shows a FigureWidget's data as of its first display).
        exact = None
        if run_exact or self.settings.method == "milp":
            exact = _solve_exact(
                self._jobs, self._cluster, self.settings.mode, self.milp_time_limit
            )
            self._exact_cache[self._problem_key()] = exact
        if isinstance(exact, Solution):
            self.exact_solution = exact
        shown = exact if isinstance(exact, Solution) and self.settings.method == "milp" else first
        # The three FigureWidgets are created here once; every later change updates them in place.
        self.allocation_fig = figure_widget(allocation_spec(shown, self._jobs, self._cluster))
        self.timeline_fig = figure_widget(self._timeline(shown))
        self.bounds_fig = figure_widget(
            bounds_spec(
                first,
                self.exact_solution,
                exact_note=exact if isinstance(exact, str) else "not run",
            )
        )
        self.schedule_fig = figure_widget(self.schedule_panel.spec())
        self.rack_fig = figure_widget(self._rack_spec(shown))
        self.rack_box = widgets.Box(
            [self.rack_fig],
            layout=widgets.Layout(display="" if self._cluster.topology else "none"),
        )
        # Hidden until the first change: before it there is no change-to-redraw time to report.
        self.status = widgets.HTML(layout=widgets.Layout(display="none"))
        # In the browser: figures as wide as their column, and the change-to-redraw time.
        self.timer = RedrawTimer()
        outputs = widgets.VBox(
            [
                widgets.HBox(
                    [
                        self.status,
                        self.fast_background.busy,
                        self.background.busy,
                        self.schedule_background.busy,
                    ]
                ),
                self.timer,
                self.allocation_fig,
                self.rack_box,
                self.bounds_fig,
                self.timeline_fig,
                self.schedule_fig,
                self.deadlines.outputs,
            ],
            layout=widgets.Layout(flex="1 1 480px", min_width="0"),
        )
        # A narrow column wraps the figures below the controls instead of clipping them.
        super().__init__(
            [self.control_panel, outputs],
            layout=widgets.Layout(width="100%", flex_flow="row wrap"),
        )
        self.add_class(APP_CLASS)
        self.exact.value = run_exact  # before observers: no refresh yet
        self._observe()
        self._queue_schedule(first=True)
        self._queue_deadlines()
        self._show_status()

    # ---- computation ----------------------------------------------------------------------------
    def _problem_key(self) -> str:
        # Everything that changes the allocation problem (not the focus job, not the method).
        return repr(self.settings.replace(focus=0, method="smd"))

    def _solve_fast(self, jobs, cluster) -> Solution:
        method = _FAST_FOR[self.settings.method]
        return solve(jobs, cluster, method, mode=self.settings.mode)

    def _timeline(self, sol: Solution, template: str | None = TEMPLATE):
        i = self.settings.focus
        job, cpu, mem = self._levels(self._jobs[i])
        return _focus_timeline(
            job, sol.workers[i], sol.ps[i], self.settings.mode, template, cpu, mem
        )

    def refresh(self, timeline_only: bool = False) -> None:
        """Recompute the fast path for the current settings and redraw each figure once; queue the slow work.

        Bad input or a failure shows one line in the status line and keeps the last valid figures.
        """
        t0 = time.perf_counter()
        with self._lock:
            try:
                if timeline_only and self.solution is not None:
                    if self.solving_in_background:  # drawn with the new allocation on arrival
                        return
                    t1 = time.perf_counter()
                    sync_figure(self.timeline_fig, self._timeline(self._shown, None))
                    self.updates += 1
                    self.last_update_s = time.perf_counter() - t0
                    self.last_timings = {"solve_s": t1 - t0, "draw_s": self.last_update_s - t1 + t0}
                    self._show_status()  # a bad-input line stays: the problem is still the bad one
                    return
                elif self.settings.n_jobs > INLINE_MAX_JOBS:
                    self._solve_in_background()
                    self.error = None
                    self._show_status()
                    return
                else:
                    self.fast_background.submit("fast", lambda: None, lambda r: None)  # drop older
                    self.solving_in_background = False
                    jobs, cluster = build_jobs(self.settings), build_cluster(self.settings)
                    solution = self._solve_fast(jobs, cluster)
                    t1 = time.perf_counter()
                    self._commit(jobs, cluster, solution)
                self.error = None
            except SmdlabError as exc:
                self._show_error(str(exc))
                return
            except Exception as exc:  # a bug must not leave a traceback in the output area
                self.errors.append(traceback.format_exc())
                self._show_error(failure_line("this change", exc))
                return
            t2 = time.perf_counter()
            self.last_update_s = t2 - t0
            self.last_timings = {"solve_s": t1 - t0, "draw_s": t2 - t1}
            self.updates += 1
            self._show_status()

    def _commit(self, jobs, cluster, solution: Solution) -> None:
        """Make ``solution`` of ``jobs`` on ``cluster`` the problem shown, and draw it."""
        self._jobs, self._cluster, self.solution = jobs, cluster, solution
        self._drawn_key = self._problem_key()
        self.exact_solution = None
        self._draw_change()

    def _solve_in_background(self) -> None:
        """Build and solve a large instance on ``fast_background``; the last figures stay until it arrives."""
        settings = self.settings
        method = _FAST_FOR[settings.method]
        t0 = time.perf_counter()

        def work() -> tuple:
            jobs, cluster = build_jobs(settings), build_cluster(settings)
            return jobs, cluster, solve(jobs, cluster, method, mode=settings.mode)

        def arrive(result: tuple) -> None:
            self.solving_in_background = False
            t1 = time.perf_counter()
            self._commit(*result)
            self.error = None
            self.last_update_s = time.perf_counter() - t0
            self.last_timings = {"solve_s": t1 - t0, "draw_s": self.last_update_s - (t1 - t0)}
            self.updates += 1
            self._show_status()

        self.solving_in_background = True
        label = f"solving {settings.n_jobs:,} jobs with {method_label(method)}; the figures follow"
        self.fast_background.submit("fast", work, arrive, label)

    def _fast_failed(self, line: str) -> None:
        self.solving_in_background = False
        self._show_failure(line)

    def _draw_change(self) -> None:
        """Draw a new problem: every figure exactly once, the bounds with whatever the exact MILP has.

        The schedule panel (with its closed-form bound), the allocation and the timeline go first (unless they show the MILP's own allocation), so the
        browser renders them while the MILP runs; the bounds figure waits up to
        ``exact_grace_s`` for the MILP, and only a slower MILP draws it a second time, on arrival.
        """
        milp_shown = self.settings.method == "milp"
        # The schedule panel's closed-form bound (about a millisecond) goes out with the first
        # figures, before the grace wait for the MILP: the change's valid bound is then drawn
        # in the same frame as its allocation.
        self._queue_schedule()
        if not milp_shown:
            self._draw_allocation(self._fast)
        exact = self._exact_now()
        if isinstance(exact, Solution):
            self.exact_solution = exact
        if milp_shown:
            self._draw_allocation(self._shown)
        note = exact if isinstance(exact, str) else None
        sync_figure(
            self.bounds_fig,
            bounds_spec(self._fast, self.exact_solution, exact_note=note, template=None),
        )
        self._queue_deadlines()

    def _queue_deadlines(self) -> None:
        """Hand the problem drawn to the deadline section (it simulates only when deadlines are on)."""
        s = self.settings
        self.deadlines.update(self._jobs, self._cluster, s.mode, s.seed, self._drawn_key)

    def wait(self, timeout: float | None = None) -> bool:
        """Block until the background work of the last change (large-instance solve, exact MILP, schedule panel) has finished and been drawn."""
        limit = self.WAIT_TIMEOUT_S if timeout is None else timeout
        return (
            self.fast_background.wait(limit)
            and self.background.wait(limit)
            and self.schedule_background.wait(limit)
            and self.deadlines.wait(limit)
        )

    def close(self) -> None:
        """Stop the background threads and this explorer's simulations, and close the widgets."""
        pool = getattr(self, "sim_pool", None)
        if pool is not None:  # shared with other explorers: only this one's tasks stop
            pool.start(self._sim_slot)
        for name in ("fast_background", "schedule_background", "deadlines"):
            worker = getattr(self, name, None)  # absent when __init__ failed early
            if worker is not None:
                worker.close()
        super().close()

    def _rack_spec(self, sol: Solution) -> go.Figure:
        """The rack drawing of ``sol``'s placement (an empty figure on a flat cluster)."""
        if not self._cluster.topology:
            return go.Figure()
        snap = solution_snapshot(sol, self._jobs, self._cluster)
        return rack_figure(snap, title="Placement on the racks", template=None, width=700)

    def _draw_allocation(self, sol: Solution) -> None:
        sync_figure(
            self.allocation_fig, allocation_spec(sol, self._jobs, self._cluster, template=None)
        )
        racked = bool(self._cluster.topology)
        self.rack_box.layout.display = "" if racked else "none"
        if racked:  # a flat cluster has no rack view: nothing to redraw
            sync_figure(self.rack_fig, self._rack_spec(sol))
        sync_figure(self.timeline_fig, self._timeline(sol, None))

    def _exact_now(self) -> Solution | str:
        """The exact MILP of the current problem if known within ``exact_grace_s``, else a note.

        A MILP that takes longer keeps running in the background and draws the bounds (and, for
        the MILP method, the allocation) when it arrives, unless a newer change came first.
        """
        key = self._drawn_key
        cached = self._exact_cache.get(key)
        wanted = self.exact.value or self.settings.method == "milp"
        if isinstance(cached, Solution) or not wanted:
            # Supersede a request still running for an older problem.
            self.background.submit("exact", lambda: None, lambda r: None)
            return cached if isinstance(cached, Solution) else (cached or "not run")
        jobs, cluster, mode, limit = (
            self._jobs,
            self._cluster,
            self.settings.mode,
            self.milp_time_limit,
        )
        done = threading.Event()
        box: dict[str, Any] = {}

        def work() -> Solution | str:
            box["result"] = result = _solve_exact(jobs, cluster, mode, limit)
            done.set()
            return result

        def arrive(result: Solution | str) -> None:
            if not box.get("taken"):  # not drawn already within the grace period
                self._apply_exact(result, key)

        self.background.submit("exact", work, arrive)
        if self.exact_grace_s > 0 and done.wait(self.exact_grace_s):
            box["taken"] = True
            self._remember_exact(key, box["result"])
            return box["result"]
        return "solving…"

    def _queue_exact(self) -> None:
        """Redraw for the exact-MILP switch: the bounds figure (and a MILP allocation) once."""
        self.exact_solution = None
        self._draw_change()

    def _remember_exact(self, key: str, result: Solution | str) -> None:
        self._exact_cache[key] = result
        if len(self._exact_cache) > 64:
            self._exact_cache.pop(next(iter(self._exact_cache)))

    def _apply_exact(self, result: Solution | str, key: str) -> None:
        """Draw a MILP that arrived after the change was drawn (once per figure it affects)."""
        self._remember_exact(key, result)
        if key != self._drawn_key:
            return  # an older problem's answer: cached, not drawn
        if isinstance(result, str):
            sync_figure(self.bounds_fig, bounds_spec(self._fast, exact_note=result, template=None))
            return
        self.exact_solution = result
        if self.settings.method == "milp":
            self._draw_allocation(result)
        sync_figure(self.bounds_fig, bounds_spec(self._fast, result, template=None))
        self._show_status()

    @property
    def _fast(self) -> Solution:
        """The fast method's allocation (set from the end of ``__init__`` on)."""
        if self.solution is None:
            raise RuntimeError("the explorer has no allocation before __init__ has finished")
        return self.solution

    @property
    def _shown(self) -> Solution:
        """``shown_solution``, which exists from the end of ``__init__`` on."""
        shown = self.shown_solution
        if shown is None:
            raise RuntimeError("the explorer has no allocation before __init__ has finished")
        return shown

    # ---- for tests and notebooks ------------------------------------------------------------------
    @property
    def browser_latency_s(self) -> float | None:
        """The last change's time from input to the last figure repainted, measured in the browser (None before one)."""
        ms = self.timer.latency_ms
        return None if ms < 0 else ms / 1e3

    def snapshot(self) -> dict[str, Any]:
        """The data currently drawn: y values of every trace of each figure (tests compare these)."""
        return {
            "allocation": [
                tuple(tr.y) if tr.y is not None else () for tr in self.allocation_fig.data
            ],
            "timeline": [tuple(tr.x) if tr.x is not None else () for tr in self.timeline_fig.data],
            "bounds": [tuple(tr.y) if tr.y is not None else () for tr in self.bounds_fig.data],
            "schedule": [tuple(tr.y) if tr.y is not None else () for tr in self.schedule_fig.data],
        }


def explorer(settings: ExplorerSettings | None = None, **options: Any) -> Explorer:
    """The live explorer (an ipywidgets container); options: milp_time_limit (s), run_exact, exact_grace_s (s), sim_processes (0: simulate on a thread)."""
    return Explorer(settings, **options)


def _focus_timeline(
    job: Job, w: int, p: int, mode: str, template: str | None, cpu: float | None, mem: float | None
) -> go.Figure:
    """The focus job's one-iteration timeline on (w, p) (on 1 worker when it is not started now)."""
    if job.arch == "allreduce":  # the solver's zero-demand PS slot: the ring runs with p = 0
        p = 0
    elif w == 0:
        p = 1
    if w == 0:
        title = f"{job.name} is not started now; its iteration on 1 worker" + (
            "" if p == 0 else ", 1 PS"
        )
        w = 1
    else:
        title = f"{job.name}: one iteration on its allocation ({w} workers, {p} PSs), {mode}"
    return timeline_spec(job, w, p, mode, template=template, cpu=cpu, mem_gb=mem, title=title)
