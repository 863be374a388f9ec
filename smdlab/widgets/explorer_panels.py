"""The explorer's schedule panel (every policy simulated beside a lower bound on any schedule) and its status line.

``ScheduleMixin`` and ``StatusLineMixin`` are parts of ``smdlab.widgets.explorer_app.Explorer``:
the panel draws the closed-form bound in the change's callback, then each policy's simulation as
it finishes and the interval-LP bound, on a background thread that a newer change cancels.
"""

from __future__ import annotations

import contextlib
import html
import math
import threading
from dataclasses import dataclass, field
from typing import Any

import ipywidgets as widgets
import plotly.graph_objects as go

from smdlab.solve.solution import Solution
from smdlab.viz.sim import schedule_spec
from smdlab.viz.solution import bound_label, exact_label
from smdlab.viz.style import method_label
from smdlab.widgets.live import Background, Superseded, sync_figure
from smdlab.widgets.sim_pool import (
    BOUND_TASK,
    SimulationPool,
    shared_pool,
    simulate_policy as _simulate_policy,
)

# Policies of the schedule panel (natural modes): simulated on the current job mix in the background.
SCHEDULE_POLICIES: tuple[str, ...] = ("smd", "srtf", "fifo", "drf", "optimus", "tiresias")
# Larger job mixes are not simulated: six simulations would take minutes, not seconds.
SCHEDULE_MAX_JOBS = 64
# Larger job mixes are built and solved off the kernel's main thread (building 2,000 jobs and
# solving them with SMD take seconds), so the controls keep answering meanwhile.
INLINE_MAX_JOBS = 200
# How the schedule panel names the bound it draws (docs/bound.md states each one's proof).
BOUND_LABELS: dict[str, str] = {
    "closed_form": "lower bound (closed form)",
    "interval_lp": "lower bound (interval LP)",
    "none": "no bound",
}


@dataclass(frozen=True)
class SchedulePanel:
    """What the schedule panel draws: the means simulated so far and the best bound known.

    bound_source: a key of ``BOUND_LABELS``; pending: policies not simulated yet; note: why
    nothing more is coming (too many jobs, a failure), if anything.
    """

    means: dict[str, float] = field(default_factory=dict)
    bound: float = math.nan
    bound_source: str = "none"
    pending: tuple[str, ...] = ()
    refining: bool = False
    note: str | None = None

    def spec(self) -> dict:
        """The schedule figure for this state."""
        label = BOUND_LABELS[self.bound_source]
        busy = ""
        if self.pending:
            done = len(SCHEDULE_POLICIES) - len(self.pending)
            busy = f"simulating policy {done + 1} of {len(SCHEDULE_POLICIES)}"
            busy += ", then refining the bound" if self.refining else ""
        elif self.refining:
            busy = "refining the bound with the interval LP"
        title = "Schedule: each policy's simulated mean JCT vs the " + label
        if busy:
            title += f" ({busy}…)"
        note = self.note or (None if self.means else "simulating…" if self.pending else None)
        return schedule_spec(
            self.means, self.bound, note=note, title=title, bound_label=label, template=None
        )


def _bound_now(jobs, cluster, mode: str) -> SchedulePanel:
    """The panel before any simulation: the closed-form bound (milliseconds)."""
    from smdlab.sim.bound import closed_form_bound

    bound = float(closed_form_bound(jobs, cluster, mode))
    return SchedulePanel(bound=bound, bound_source="none" if math.isnan(bound) else "closed_form")


def _schedule_work(
    jobs, cluster, mode: str, start: SchedulePanel, still_wanted, emit, pool=None, slot: int = 0
) -> None:
    """Fill the panel on a background thread: emit after each policy's simulation and after the refined bound.

    With a ready ``pool`` (``SimulationPool``) every task runs in its worker processes, at once, and
    each result is emitted as it arrives; otherwise one after another on this thread.
    """
    from smdlab.sim.bound import SIM_BOUND_MAX_JOBS, workload_bound

    panel = start
    if len(jobs) > INLINE_MAX_JOBS:  # a large mix: even the closed-form bound comes from here
        panel = _bound_now(jobs, cluster, mode)
        panel = SchedulePanel(
            bound=panel.bound,
            bound_source=panel.bound_source,
            pending=start.pending,
            refining=start.refining,
            note=start.note,
        )
        emit(panel)
    refine = len(jobs) <= SIM_BOUND_MAX_JOBS
    if pool is not None and pool.ready and start.pending:
        _schedule_in_pool(jobs, cluster, mode, panel, still_wanted, emit, pool, slot, refine)
        return
    means: dict[str, float] = {}
    for k, policy in enumerate(start.pending):
        if not still_wanted():
            raise Superseded
        means[policy] = _simulate_policy(jobs, cluster, policy, mode, still_wanted)
        panel = SchedulePanel(
            dict(means), panel.bound, panel.bound_source, start.pending[k + 1 :], panel.refining
        )
        emit(panel)
    if refine:
        if not still_wanted():
            raise Superseded
        emit(_refined(panel, float(workload_bound(jobs, cluster, mode))))


def _refined(panel: SchedulePanel, refined: float) -> SchedulePanel:
    """``panel`` with the interval-LP bound ``refined`` where it is larger (both bounds are valid, so the larger is too)."""
    bound, source = panel.bound, panel.bound_source
    if math.isfinite(refined) and not refined <= bound:
        bound, source = refined, "interval_lp"
    return SchedulePanel(panel.means, bound, source, panel.pending, False, panel.note)


def _schedule_in_pool(
    jobs,
    cluster,
    mode,
    panel: SchedulePanel,
    still_wanted,
    emit,
    pool: SimulationPool,
    slot,
    refine,
) -> None:
    """The pool path of ``_schedule_work``: all tasks queued at once (the slowest first), one emit per arrival."""
    generation = pool.start(slot)
    # SMD's simulation is the longest: queued first, it starts at once on its own worker.
    tasks = sorted(panel.pending, key=lambda p: p != "smd") + ([BOUND_TASK] if refine else [])
    futures = pool.submit(slot, generation, tasks, jobs, cluster, mode)
    means: dict[str, float] = {}
    # closing(): an emit that raises Superseded stops the rest of the tasks at once
    with contextlib.closing(pool.arrivals(slot, futures, still_wanted)) as arrivals:
        _emit_arrivals(arrivals, panel, means, len(futures), emit)


def _emit_arrivals(arrivals, panel: SchedulePanel, means: dict, total: int, emit) -> None:
    """Emit the panel once per arriving result (a policy's mean or the refined bound)."""
    for k, (task, value) in enumerate(arrivals, start=1):
        if task == BOUND_TASK:
            panel = _refined(panel, value)
        else:
            means[task] = value
            ordered = {p: means[p] for p in SCHEDULE_POLICIES if p in means}
            pending = tuple(p for p in panel.pending if p not in means)
            panel = SchedulePanel(
                ordered, panel.bound, panel.bound_source, pending, panel.refining, panel.note
            )
        if k == total:  # the last arrival: nothing pending, nothing refining
            panel = SchedulePanel(
                panel.means, panel.bound, panel.bound_source, (), False, panel.note
            )
        emit(panel)


class ScheduleMixin:
    """The schedule panel's part of ``Explorer`` (which provides the attributes below)."""

    _drawn_key: str
    _jobs: list
    _cluster: Any
    settings: Any
    schedule_background: Background
    schedule_fig: go.FigureWidget
    _schedule_cache: dict[str, SchedulePanel]
    schedule_panel: SchedulePanel
    schedule: tuple[dict[str, float], float] | None
    _show_failure: Any
    sim_pool: SimulationPool | None  # worker processes for the simulations (None: this process)
    _sim_slot: int
    _sim_workers: int
    _schedule_running: str | None = None  # the problem whose panel the background is filling

    # ---- schedule panel: every policy simulated on the job mix, beside the schedule bound -------
    def start_workers(self) -> SimulationPool | None:
        """Start (or join) the kernel's simulation workers now, not at the first change; None when simulating on a thread."""
        self._start_pool()
        return self.sim_pool

    def _start_pool(self) -> None:
        """Start (or join) the kernel's simulation workers, unless running on a thread was asked for."""
        if self.sim_pool is None and self._sim_workers > 0:
            self.sim_pool = shared_pool(self._sim_workers)
            self._sim_slot = self.sim_pool.slot() if self.sim_pool is not None else 0

    def _queue_schedule(self, first: bool = False) -> None:
        """Draw the schedule panel's closed-form bound now; simulate and refine on the background thread (cached per problem).

        first: the panel of the app's first render (the simulation workers start at the first
        change: starting them takes CPU that the page's first render needs).
        """
        if not first:
            self._start_pool()
        key = self._drawn_key
        if key == self._schedule_running and self.schedule_background.running:
            return  # this problem's panel is being filled already (the exact-MILP switch)
        cached = self._schedule_cache.get(key)
        if cached is not None:
            self.schedule_background.submit("schedule", lambda: None, lambda r: None)  # drop older
            self._draw_schedule(cached)
            return
        jobs, cluster, mode = self._jobs, self._cluster, self.settings.mode
        small = len(jobs) <= INLINE_MAX_JOBS
        start = _bound_now(jobs, cluster, mode) if small else SchedulePanel()
        if len(jobs) > SCHEDULE_MAX_JOBS:
            note = (
                f"not simulated: {len(jobs):,} jobs (this panel simulates up to "
                f"{SCHEDULE_MAX_JOBS}; notebook 4 and `smdlab simulate` run larger mixes)"
            )
            start = SchedulePanel(bound=start.bound, bound_source=start.bound_source, note=note)
        else:
            start = SchedulePanel(
                bound=start.bound,
                bound_source=start.bound_source,
                pending=SCHEDULE_POLICIES,
                refining=True,
            )
        self._draw_schedule(start)
        if small and not start.pending:
            self.schedule_background.submit("schedule", lambda: None, lambda r: None)  # drop older
            self._schedule_cache[key] = start
            return

        def arrive(panel: SchedulePanel) -> None:
            self._draw_schedule(panel)
            if not panel.pending and not panel.refining:
                self._schedule_cache[key] = panel
                if len(self._schedule_cache) > 64:
                    self._schedule_cache.pop(next(iter(self._schedule_cache)))

        def failed(line: str) -> None:
            # The panel says why it stopped (never "simulating" forever); the status line too.
            p = self.schedule_panel
            self._draw_schedule(SchedulePanel(p.means, p.bound, p.bound_source, note=line))
            self._show_failure(line)

        self._schedule_running = key
        self.schedule_background.submit(
            "schedule",
            lambda wanted, emit: _schedule_work(
                jobs, cluster, mode, start, wanted, emit, self.sim_pool, self._sim_slot
            ),
            arrive,
            progressive=True,
            on_error=failed,
        )

    def _draw_schedule(self, panel: SchedulePanel) -> None:
        self.schedule_panel = panel
        self.schedule = (dict(panel.means), panel.bound)
        sync_figure(self.schedule_fig, panel.spec())


class StatusLineMixin:
    """The status line's part of ``Explorer``: the headline, results, timings and one red line for a failure."""

    settings: Any
    solution: Solution | None
    exact_solution: Solution | None
    status: widgets.HTML
    error: str | None
    updates: int
    last_update_s: float
    _lock: threading.RLock

    @property
    def shown_solution(self) -> Solution | None:
        """The allocation drawn: the exact MILP's when it is the chosen method and has arrived, else the fast one."""
        if self.settings.method == "milp" and self.exact_solution is not None:
            return self.exact_solution
        return self.solution

    # ---- status ---------------------------------------------------------------------------------
    def headline(self) -> str:
        """One line naming the chosen method and its result (the exact MILP's once it has arrived)."""
        sol = self.shown_solution
        if sol is None:
            return ""
        chosen = self.settings.method
        if chosen == "milp" and sol is not self.exact_solution:
            return (
                f"<b>{html.escape(method_label('milp'))}</b>: solving in the background; "
                f"shown meanwhile: {html.escape(method_label(sol.method))}, Σ JCT {sol.objective:,.0f} s"
            )
        gap = "n/a" if math.isnan(sol.gap) else f"{sol.gap:.2%}"
        return (
            f"<b>{html.escape(method_label(chosen))}</b>: {len(sol.started)}/{len(sol.jobs)} jobs "
            f"started, Σ JCT {sol.objective:,.0f} s, gap to {bound_label(sol)} {gap}, solved in "
            f"{sol.wall_time_s * 1e3:.0f} ms"
        )

    def _show_status(self) -> None:
        sol = self.solution
        if sol is None:
            return
        parts = [self.headline()]
        ex = self.exact_solution
        if ex is not None:
            tag = exact_label(ex)
            parts.append(
                f"exact MILP: {ex.objective:,.0f} s ({tag}, {ex.wall_time_s:.2f} s, {html.escape(ex.backend)})"
            )
        if self.updates:
            # The browser's part (input to the last repaint) is shown by self.timer below.
            parts.append(f"kernel: change to redraw sent in {self.last_update_s * 1e3:.0f} ms")
            self.status.layout.display = None
        if self.error:  # one line; the figures above it are the last valid ones
            parts.append(f'<span style="color:#c00">{html.escape(self.error)}</span>')
            self.status.layout.display = None
        self.status.value = "<br>".join(parts)

    def _show_error(self, message: str) -> None:
        """Show one line for a change that could not be drawn (bad input); the figures stay as they were."""
        self.error = message.strip().splitlines()[0] if message.strip() else "failed"
        self._show_status()

    def _show_failure(self, line: str) -> None:
        """Show one line for a failure of background work."""
        self._show_error(line)
