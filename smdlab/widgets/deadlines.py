"""The explorer's deadline section: attach deadlines to the job mix and compare the deadline-aware policies.

Off by default: then it computes nothing and its outputs stay hidden, so the explorer behaves and
takes the time it did without it. Ticked, it gives a share of the explorer's jobs an SLO with the
deadline generator (``smdlab.workloads.deadlines.with_deadlines``: deadline = slack factor x the
job's isolated duration, the factor uniform on [min, max]; the explorer's seed), and simulates
each policy of ``DEADLINE_POLICIES`` on that job mix on a background thread of its own. It draws
one card per policy (hard and value-weighted miss rates, best-effort mean JCT, value earned),
the per-job table of the chosen policy (deadline, finish, met, value earned, lateness) and its
Gantt chart with a tick at each SLO job's first deadline. Bad input (a slack factor <= 0, min >
max) shows one line in the explorer's status line and keeps the last valid outputs.
"""

from __future__ import annotations

import html
import math
import threading
import traceback
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import ipywidgets as widgets

from smdlab.errors import SmdlabError
from smdlab.model.cluster import Cluster
from smdlab.model.job import Job
from smdlab.sim.result import SimResult
from smdlab.viz.deadlines import SLO_LABELS, deadline_gantt_figure
from smdlab.widgets.live import (
    Background,
    Superseded,
    failure_line,
    figure_widget,
    stoppable_policy,
    sync_figure,
)

__all__ = [
    "DEADLINE_MAX_JOBS",
    "DEADLINE_POLICIES",
    "DeadlineOptions",
    "DeadlinePanel",
    "attach_deadlines",
    "deadline_table_html",
    "miss_cards_html",
]

# The deadline-aware policies (docs/deadlines.md) and FIFO as the deadline-blind reference.
DEADLINE_POLICIES: tuple[str, ...] = ("fifo", "edf", "lsf", "chronus", "unisched", "smd_slo")
# Larger job mixes are not simulated (as the explorer's schedule panel, which stops at 64 too).
DEADLINE_MAX_JOBS = 64
# The headers of the per-job table (from ``SimResult.jobs``' SLO columns; times in hours).
TABLE_COLUMNS: tuple[str, ...] = (
    "job",
    "class",
    "deadline (h)",
    "finish (h)",
    "met",
    "value",
    "lateness (h)",
)
_HOUR = 3600.0
_WIDTH = "380px"


@dataclass(frozen=True)
class DeadlineOptions:
    """The section's control values: whether deadlines are on, the slack range and the share of SLO jobs."""

    enabled: bool = False
    slack_min: float = 1.5
    slack_max: float = 3.0
    fraction: float = 0.5


def attach_deadlines(
    jobs: Sequence[Job], options: DeadlineOptions, seed: int, mode: str
) -> list[Job]:
    """``jobs`` with SLOs drawn by the deadline generator for ``options`` (InvalidInput on a bad range)."""
    from smdlab.workloads.deadlines import with_deadlines

    return with_deadlines(
        jobs,
        slack=(options.slack_min, options.slack_max),
        fraction=options.fraction,
        seed=seed,
        mode=mode,
    )


def _pct(x: float) -> str:
    return "n/a" if not math.isfinite(x) else f"{x:.0%}"


def _hours(x: float) -> str:
    return "–" if not math.isfinite(x) else f"{x / _HOUR:.2f}"


def miss_cards_html(results: dict[str, SimResult | str], pending: Sequence[str] = ()) -> str:
    """One card per policy: hard and value-weighted miss rates, best-effort mean JCT, value earned (or why it has none)."""
    cards = []
    for policy in (*results, *pending):
        label = html.escape(SLO_LABELS.get(policy, policy))
        res = results.get(policy)
        if res is None:
            body = "simulating…"
        elif isinstance(res, str):
            body = html.escape(res)
        else:
            s = res.summary
            body = (
                f"hard miss <b>{_pct(float(s['hard_miss_rate']))}</b><br>"
                f"weighted miss <b>{_pct(float(s['weighted_miss_rate']))}</b><br>"
                f"best-effort JCT {_hours(float(s['best_effort_mean_jct']))} h<br>"
                f"value {float(s['value_earned']):g} of {float(res.jobs['max_value'].sum()):g}"
            )
        cards.append(
            '<div class="smdlab-miss-card" style="border:1px solid #ccc;border-radius:6px;'
            'padding:4px 8px;margin:2px;min-width:130px;font-size:90%">'
            f"<b>{label}</b><br>{body}</div>"
        )
    return '<div style="display:flex;flex-wrap:wrap">' + "".join(cards) + "</div>"


def deadline_table_html(result: SimResult) -> str:
    """The per-job table of one run: each job's class, first deadline, finish, whether it met it, value and lateness."""
    df = result.jobs.sort_values("arrival")
    num = {c: df[c].to_numpy(dtype=float) for c in ("deadline", "finish", "deadline_met", "value", "max_value", "lateness")}  # fmt: skip
    rows = []
    for k, (name, cls) in enumerate(zip(df["job"].astype(str), df["job_class"], strict=True)):
        slo = cls == "slo"
        met = "–" if not slo else ("✓" if num["deadline_met"][k] == 1.0 else "✗")
        cells = (
            html.escape(name),
            "SLO" if slo else "best-effort",
            _hours(num["deadline"][k]),
            _hours(num["finish"][k]),
            met,
            f"{num['value'][k]:g} / {num['max_value'][k]:g}" if slo else "–",
            _hours(num["lateness"][k]),
        )
        rows.append("<tr>" + "".join(f"<td>{c}</td>" for c in cells) + "</tr>")
    head = "".join(f"<th>{html.escape(c)}</th>" for c in TABLE_COLUMNS)
    return (
        '<table class="smdlab-deadline-table" style="font-size:85%;border-collapse:collapse">'
        f"<thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"
    )


def _simulate(
    jobs: list[Job], cluster: Cluster, policy: str, mode: str, still_wanted
) -> SimResult | str:
    """One policy's run (with its history, for the Gantt chart), or the one line why it could not run."""
    from smdlab.policies.registry import get_policy
    from smdlab.sim import simulate

    try:
        run = stoppable_policy(get_policy(policy), still_wanted)
        return simulate(jobs, cluster, run, mode=mode, record_history=True)
    except SmdlabError as exc:
        return f"not run: {str(exc).strip().splitlines()[0]}"


class _App(Protocol):
    """What the section needs of the explorer: its status line."""

    error: str | None

    def _show_error(self, message: str) -> None: ...

    def _show_status(self) -> None: ...


class DeadlinePanel:
    """The deadline section of the explorer: ``controls`` (left column) and ``outputs`` (right column).

    Controls (attributes): ``enabled``, ``slack_min``, ``slack_max``, ``fraction``, ``detail``
    (the policy whose table and Gantt chart are shown). ``results`` maps policy -> SimResult (or
    a line saying why it did not run) for the current job mix with deadlines.
    """

    def __init__(self, app: _App, lock: threading.RLock) -> None:
        self._app = app
        self._lock = lock
        o = DeadlineOptions()
        style = {"description_width": "110px"}
        layout = widgets.Layout(width=_WIDTH)
        self.enabled = widgets.Checkbox(
            o.enabled, description="attach deadlines to the job mix", indent=False
        )
        # Plain text boxes, not bounded ones: a bad value is reported, not silently clamped.
        self.slack_min = widgets.FloatText(
            o.slack_min, description="slack × (min)", style=style, layout=layout
        )
        self.slack_max = widgets.FloatText(
            o.slack_max, description="slack × (max)", style=style, layout=layout
        )
        self.fraction = widgets.FloatSlider(
            o.fraction, min=0.0, max=1.0, step=0.05, description="share with SLO",
            continuous_update=False, style=style, layout=layout,
        )  # fmt: skip
        self.detail = widgets.Dropdown(
            options=[(SLO_LABELS.get(p, p), p) for p in DEADLINE_POLICIES],
            value="chronus",
            description="table, Gantt",
            style=style,
            layout=layout,
        )
        note = widgets.HTML(
            '<span style="font-size:90%">deadline = slack × the job\'s time alone at its request '
            "(uniform on [min, max], min ≥ 1); the others stay best-effort</span>"
        )
        self._options_box = widgets.VBox(
            [self.slack_min, self.slack_max, self.fraction, self.detail, note],
            layout=widgets.Layout(display="none"),
        )
        self.controls = widgets.VBox(
            [widgets.HTML("<b>Deadlines</b>"), self.enabled, self._options_box]
        )
        self.control_map: dict[str, widgets.Widget] = {
            "deadlines": self.enabled,
            "slack_min": self.slack_min,
            "slack_max": self.slack_max,
            "slo_fraction": self.fraction,
            "deadline_detail": self.detail,
        }
        # The section's own copy of its failure line: a later change elsewhere may clear the
        # status line while the bad value stays, and the stale cards below must say so.
        self.note = widgets.HTML()
        self.cards = widgets.HTML()
        self.table = widgets.HTML()
        self.gantt_fig: Any = None  # created on first use: no cost while deadlines are off
        self._gantt_box = widgets.Box([])
        self.outputs = widgets.VBox(
            [self.note, self.cards, self._gantt_box, self.table],
            layout=widgets.Layout(display="none"),
        )
        self.background = Background("simulating the deadline-aware policies", lock=lock)
        self.results: dict[str, SimResult | str] = {}
        self._problem: tuple[list[Job], Cluster, str, int, str] | None = None
        self._cache: dict[tuple, dict[str, SimResult | str]] = {}
        self._error: str | None = None  # the status line's red line, when this section set it
        for c in (self.enabled, self.slack_min, self.slack_max, self.fraction):
            c.observe(lambda change: self._on_control(), names="value")
        self.detail.observe(lambda change: self._draw_detail(), names="value")

    @property
    def options(self) -> DeadlineOptions:
        """The control values now."""
        return DeadlineOptions(
            bool(self.enabled.value),
            float(self.slack_min.value),
            float(self.slack_max.value),
            float(self.fraction.value),
        )

    def update(self, jobs: list[Job], cluster: Cluster, mode: str, seed: int, key: str) -> None:
        """The explorer's problem changed (``key`` names it): recompute if deadlines are on, else only remember it."""
        self._problem = (jobs, cluster, mode, seed, key)
        if self.enabled.value:
            self._refresh()

    def _on_control(self) -> None:
        try:
            self._refresh()
        except Exception as exc:  # a bug must not leave a traceback in the output area
            self.background.errors.append(traceback.format_exc())
            self._report(failure_line("the deadline section", exc))

    def _refresh(self) -> None:
        with self._lock:
            on = bool(self.enabled.value)
            self._options_box.layout.display = "" if on else "none"
            self.outputs.layout.display = "" if on else "none"
            if not on or self._problem is None:
                self.background.submit("deadlines", lambda: None, lambda r: None)  # drop older
                self._clear_error()
                return
            jobs, cluster, mode, seed, key = self._problem
            options = self.options
            if len(jobs) > DEADLINE_MAX_JOBS:
                self._clear_error()
                self.results = {}
                self.cards.value = (
                    f"not simulated: {len(jobs):,} jobs (this section simulates up to "
                    f"{DEADLINE_MAX_JOBS}; `smdlab simulate` runs larger mixes)"
                )
                self.table.value = ""
                return
            try:
                slo_jobs = attach_deadlines(jobs, options, seed, mode)
            except SmdlabError as exc:
                self._report(f"deadlines: {exc}")
                return
            self._clear_error()
            cache_key = (key, options)
            cached = self._cache.get(cache_key)
            if cached is not None:
                self.background.submit("deadlines", lambda: None, lambda r: None)
                self._show(cached, ())
                return
            self._show({}, DEADLINE_POLICIES)

            def work(still_wanted, emit) -> None:
                done: dict[str, SimResult | str] = {}
                for k, policy in enumerate(DEADLINE_POLICIES):
                    if not still_wanted():
                        raise Superseded
                    done[policy] = _simulate(slo_jobs, cluster, policy, mode, still_wanted)
                    emit((dict(done), DEADLINE_POLICIES[k + 1 :]))

            def arrive(partial: tuple[dict[str, SimResult | str], tuple[str, ...]]) -> None:
                results, pending = partial
                if not pending:
                    self._cache[cache_key] = results
                    if len(self._cache) > 16:
                        self._cache.pop(next(iter(self._cache)))
                self._show(results, pending)

            self.background.submit(
                "deadlines", work, arrive, progressive=True, on_error=self._report
            )

    def _show(self, results: dict[str, SimResult | str], pending: Sequence[str]) -> None:
        self.results = results
        self.cards.value = miss_cards_html(results, pending)
        self._draw_detail()

    def _draw_detail(self) -> None:
        """The chosen policy's per-job table and Gantt chart (empty until its run has arrived)."""
        res = self.results.get(self.detail.value)
        if not isinstance(res, SimResult):
            self.table.value = "" if res is None else html.escape(res)
            return
        self.table.value = deadline_table_html(res)
        if self.gantt_fig is None:  # the first one with the template, later ones in place
            self.gantt_fig = figure_widget(deadline_gantt_figure(res))
            self._gantt_box.children = (self.gantt_fig,)
        else:
            sync_figure(self.gantt_fig, deadline_gantt_figure(res, template=None))

    def _report(self, line: str) -> None:
        self._error = line
        self.note.value = (
            f'<span style="color:#c00">{html.escape(line)} (the results below are older)</span>'
        )
        self._app._show_error(line)

    def _clear_error(self) -> None:
        """Remove this section's line from the status line (another control's line stays)."""
        if self._error is not None and self._app.error == self._error:
            self._app.error = None
            self._app._show_status()
        self._error = None
        self.note.value = ""

    def wait(self, timeout: float | None) -> bool:
        """Block until the simulations of the last change have finished and been drawn."""
        return self.background.wait(timeout)

    def close(self) -> None:
        """Stop the background thread."""
        self.background.close()
