"""Policies side by side: simulate each chosen policy on one workload and compare JCTs and utilisation.

Every simulation runs on the background thread (a busy indicator shows which policy is running);
the controls stay responsive, and results of a request overtaken by a newer one are dropped.
Results are cached per (workload, policy), so re-selecting a policy costs nothing.
"""

from __future__ import annotations

import contextlib
import html
import threading
import time
from collections.abc import Iterator
from typing import Any

import ipywidgets as widgets

from smdlab.errors import InvalidInput, SmdlabError, check_int, check_positive
from smdlab.policies.registry import available_policies, get_policy
from smdlab.sim import SimResult, simulate
from smdlab.sim.runner import simulation_options
from smdlab.viz.sim import jct_cdf_figure, policy_summary_figure, utilisation_figure
from smdlab.viz.style import policy_label
from smdlab.widgets.browser import APP_CLASS, RedrawTimer
from smdlab.widgets.live import (
    Background,
    BackgroundApp,
    Superseded,
    figure_widget,
    stoppable_policy,
    sync_figure,
)
from smdlab.widgets.sim_pool import SimulationPool, shared_pool
from smdlab.workloads.scenario import Scenario, load_scenario

# Policies shown at first: the field's baselines and SMD (the exact MILP policy is slow; opt in).
DEFAULT_POLICIES: tuple[str, ...] = ("fifo", "srtf", "drf", "tetris", "optimus", "tiresias", "smd")
_STYLE = {"description_width": "90px"}
_WIDTH = "300px"


class Compare(BackgroundApp, widgets.HBox):
    """The policy comparison app: controls on the left; JCT CDFs, JCT summary and utilisation on the right.

    Controls (attributes): ``policies``, ``load``, ``machines``, ``n_jobs``, ``seed``, ``detail``
    (the policy whose utilisation is drawn). ``results`` maps policy name -> SimResult of the
    current workload; ``wait()`` blocks until the simulations are done and drawn. A change's
    simulations run one by one on the background thread, or with ``sim_processes`` >= 1 at once
    in the kernel's worker processes (``smdlab.widgets.sim_pool``) once they are ready.
    """

    WAIT_TIMEOUT_S = 120.0  # simulations of every policy take longer than the explorer's MILP

    def __init__(
        self,
        scenario: Scenario | None = None,
        *,
        policies: tuple[str, ...] | None = None,
        n_jobs: int = 40,
        machines: int = 4,
        load: float | None = None,
        sim_processes: int = 0,
    ) -> None:
        self.scenario = scenario or load_scenario()
        known = available_policies()
        chosen = (
            tuple(policies)
            if policies is not None
            else tuple(p for p in DEFAULT_POLICIES if p in known)
        )
        for p in chosen:
            if p not in known:
                raise InvalidInput(f"policies must be among {', '.join(known)}; got {p!r}")
        if not chosen:
            raise InvalidInput("policies must name at least one policy, got none")
        load = (
            float(self.scenario.workload.get("load", 1.0))
            if load is None
            else check_positive("load", load)
        )
        machines, n_jobs = (
            check_int("machines", machines, 1, 256),
            check_int("n_jobs", n_jobs, 1, 2000),
        )
        self._lock = threading.RLock()
        self.background = Background("simulating", lock=self._lock, on_error=self._show_failure)
        self._cache: dict[tuple[str, str], SimResult] = {}
        # Opt-in (sim_processes >= 1): a change's simulations in the kernel's shared worker
        # processes (smdlab.widgets.sim_pool). Off by default: each worker computes the run's LP
        # lower bound again, and on the loaded 2-core machine it was slower than the
        # thread (docs/performance.md, "The other live apps").
        self._sim_workers = check_int("sim_processes", sim_processes, 0, 8)
        self.sim_pool: SimulationPool | None = None
        self._sim_slot = 0
        self._syncing = False
        self.results: dict[str, SimResult] = {}
        self.last_run_s = 0.0

        self.policies = widgets.SelectMultiple(
            options=known,
            value=chosen,
            rows=min(8, len(known)),
            description="policies",
            style=_STYLE,
            layout=widgets.Layout(width=_WIDTH),
        )
        self.load = widgets.FloatSlider(
            load,
            min=min(0.25, load),
            max=max(3.0, load),
            step=0.05,
            description="offered load",
            continuous_update=False,
            style=_STYLE,
            layout=widgets.Layout(width=_WIDTH),
        )
        self.machines = widgets.IntSlider(
            machines,
            min=1,
            max=max(32, machines),
            description="machines",
            continuous_update=False,
            style=_STYLE,
            layout=widgets.Layout(width=_WIDTH),
        )
        self.n_jobs = widgets.IntSlider(
            n_jobs,
            min=min(10, n_jobs),
            max=max(200, n_jobs),
            step=5,
            description="jobs",
            continuous_update=False,
            style=_STYLE,
            layout=widgets.Layout(width=_WIDTH),
        )
        self.seed = widgets.BoundedIntText(
            self.scenario.seed,
            min=0,
            max=10**6,
            description="seed",
            style=_STYLE,
            layout=widgets.Layout(width=_WIDTH),
        )
        self.detail = widgets.Dropdown(
            options=self._detail_options(chosen),
            value=chosen[-1],
            description="utilisation of",
            style=_STYLE,
            layout=widgets.Layout(width=_WIDTH),
        )
        self.table = widgets.HTML()
        self.status = widgets.HTML()

        # First results are computed before anything is displayed, so the figures start with
        # their final data (Voila shows a FigureWidget's data as of its first display).
        sc = self._current_scenario()
        cluster = sc.build_cluster()
        workload = (sc.build_jobs(cluster), cluster)
        first = {p: self._simulate(p, sc, workload) for p in chosen}
        self.results = first
        self.cdf_fig = figure_widget(jct_cdf_figure(first))
        self.summary_fig = figure_widget(policy_summary_figure(first))
        self.util_fig = figure_widget(utilisation_figure(first[self.detail.value]))
        self._show_table()

        controls = widgets.VBox(
            [
                widgets.HTML("<b>Workload</b>"),
                self.load,
                self.machines,
                self.n_jobs,
                self.seed,
                widgets.HTML("<b>Policies</b>"),
                self.policies,
                self.detail,
            ],
            layout=widgets.Layout(width="320px", flex="0 0 320px"),
        )
        # In the browser: figures as wide as their column, and the change-to-redraw time.
        self.timer = RedrawTimer()
        outputs = widgets.VBox(
            [
                widgets.HBox([self.status, self.background.busy]),
                self.timer,
                self.cdf_fig,
                self.summary_fig,
                self.table,
                self.util_fig,
            ],
            layout=widgets.Layout(flex="1 1 480px", min_width="0"),
        )
        # A narrow column wraps the figures below the controls instead of clipping them.
        super().__init__(
            [controls, outputs], layout=widgets.Layout(width="100%", flex_flow="row wrap")
        )
        self.add_class(APP_CLASS)
        for c in (self.load, self.machines, self.n_jobs, self.seed, self.policies):
            c.observe(lambda change: self._on_change(), names="value")
        self.detail.observe(lambda change: self._on_detail(), names="value")
        if self._sim_workers > 0:
            self.sim_pool = shared_pool(self._sim_workers)
            self._sim_slot = self.sim_pool.slot() if self.sim_pool is not None else 0

    # ---- workload -------------------------------------------------------------------------------
    def _current_scenario(self) -> Scenario:
        return self.scenario.with_changes(
            cluster={"machines": int(self.machines.value)},
            workload={"jobs": int(self.n_jobs.value), "load": float(self.load.value)},
            seed=int(self.seed.value),
        )

    def _key(self, sc: Scenario) -> str:
        return repr(
            (
                sc.cluster["machines"],
                sc.workload["jobs"],
                round(float(sc.workload["load"]), 6),
                sc.seed,
            )
        )

    def _simulate(self, policy: str, sc: Scenario, workload: tuple, still_wanted=None) -> SimResult:
        key = (self._key(sc), policy)
        if key not in self._cache:
            jobs, cluster = workload
            opts = dict(sc.policy_options.get(policy, {}))
            run = get_policy(policy, **opts)
            if still_wanted is not None:  # a newer change stops it at its next decision
                run = stoppable_policy(run, still_wanted)
            self._cache[key] = simulate(jobs, cluster, run, **simulation_options(sc))
        return self._cache[key]

    def _simulate_in_pool(
        self, chosen: tuple[str, ...], sc: Scenario, workload: tuple, key: str, still_wanted
    ) -> Iterator[tuple[str, SimResult]]:
        """Simulate the uncached policies of ``chosen`` at once in the worker processes, into the cache; yield each as it arrives.

        Skipped (the thread then simulates them one by one) while the workers are not ready.
        """
        pool = self.sim_pool
        todo = {
            p: dict(sc.policy_options.get(p, {})) for p in chosen if (key, p) not in self._cache
        }
        if pool is None or not pool.ready or not todo:
            return
        generation = pool.start(self._sim_slot)
        jobs, cluster = workload
        futures = pool.submit_runs(
            self._sim_slot, generation, todo, jobs, cluster, simulation_options(sc)
        )
        self.background.show(f"simulating {len(todo)} policies in worker processes")
        with contextlib.closing(pool.arrivals(self._sim_slot, futures, still_wanted)) as arrivals:
            for policy, result in arrivals:
                self._cache[(key, policy)] = result
                yield policy, result

    def close(self) -> None:
        """Stop this app's simulations (the workers are shared), the background thread and the widgets."""
        pool = getattr(self, "sim_pool", None)
        if pool is not None:
            pool.start(self._sim_slot)
        super().close()

    def _show_failure(self, line: str) -> None:
        """One line in the status line for a failed simulation; the figures keep the last results."""
        self.status.value = f'<span style="color:#c00">{html.escape(line)}</span>'

    @staticmethod
    def _detail_options(policies) -> list[tuple[str, str]]:
        return [(policy_label(p), p) for p in policies]

    # ---- events ---------------------------------------------------------------------------------
    def _on_change(self) -> None:
        if self._syncing:
            return
        chosen = tuple(self.policies.value)
        if not chosen:
            self.status.value = '<span style="color:#c00">choose at least one policy</span>'
            return
        self._syncing = True
        try:
            keep = self.detail.value if self.detail.value in chosen else chosen[-1]
            self.detail.options = self._detail_options(chosen)
            self.detail.value = keep
        finally:
            self._syncing = False
        try:
            sc = self._current_scenario()
        except SmdlabError as exc:
            self.status.value = f'<span style="color:#c00">{html.escape(str(exc))}</span>'
            return
        key = self._key(sc)
        with self._lock:
            self.status.value = ""
            self.background.submit(
                "simulate",
                lambda wanted, emit: self._work(chosen, sc, key, wanted, emit),
                self._apply,
                "simulating",
                progressive=True,
            )

    def _work(self, chosen: tuple[str, ...], sc: Scenario, key: str, still_wanted, emit) -> None:
        """A change's results, emitted as they come: the cached ones at once, then each simulation as it finishes.

        The figures are drawn once per emit (so each policy appears as soon as it is known); the
        last emit holds every chosen policy. The run's lower bound is an LP cached per workload
        (``smdlab.sim.bound``): the first simulation of a change computes it, the others reuse it.
        """
        t0 = time.perf_counter()
        out: dict[str, SimResult] = {}

        def arrive(found: dict[str, SimResult]) -> None:
            out.update(found)
            if len(out) == len(chosen):
                self.last_run_s = time.perf_counter() - t0
            emit(self._ordered(out, chosen))

        cached = {p: self._cache[(key, p)] for p in chosen if (key, p) in self._cache}
        if cached:
            arrive(cached)
        if len(out) == len(chosen):
            return
        cluster = sc.build_cluster()
        workload = (sc.build_jobs(cluster), cluster)
        for policy, result in self._simulate_in_pool(chosen, sc, workload, key, still_wanted):
            arrive({policy: result})
        todo = [p for p in chosen if p not in out]
        for k, p in enumerate(todo, start=1):
            if not still_wanted():
                raise Superseded
            self.background.show(f"simulating {policy_label(p)} ({k}/{len(todo)})")
            arrive({p: self._simulate(p, sc, workload, still_wanted)})

    @staticmethod
    def _ordered(results: dict[str, SimResult], chosen: tuple[str, ...]) -> dict[str, SimResult]:
        """``results`` in the order the policies were chosen (the figures' trace order)."""
        return {p: results[p] for p in chosen if p in results}

    def _apply(self, results: dict[str, SimResult]) -> None:
        self.results = results
        sync_figure(self.cdf_fig, jct_cdf_figure(results, template=None))
        sync_figure(self.summary_fig, policy_summary_figure(results, template=None))
        if self.detail.value in results:
            sync_figure(
                self.util_fig, utilisation_figure(results[self.detail.value], template=None)
            )
        self._show_table()

    def _on_detail(self) -> None:
        if self._syncing:
            return
        with self._lock:
            if self.detail.value in self.results:
                sync_figure(
                    self.util_fig,
                    utilisation_figure(self.results[self.detail.value], template=None),
                )

    def _show_table(self) -> None:
        rows = []
        for p, r in self.results.items():
            s = r.summary
            util = s["utilization"].get("gpu", float("nan"))
            rows.append(
                f"<tr><td>{html.escape(policy_label(p))}</td><td>{s['jobs_completed']}</td>"
                f"<td>{s['mean_jct'] / 3600:.2f}</td><td>{s['p95_jct'] / 3600:.2f}</td>"
                f"<td>{s['makespan'] / 3600:.2f}</td><td>{util:.0%}</td>"
                f"<td>{s['scheduler_time_s']:.2f}</td></tr>"
            )
        self.table.value = (
            '<table style="border-collapse:collapse" cellpadding="4"><tr><th>policy</th><th>done</th>'
            "<th>mean JCT (h)</th><th>p95 JCT (h)</th><th>makespan (h)</th><th>GPU util.</th>"
            "<th>scheduler (s)</th></tr>" + "".join(rows) + "</table>"
        )


def compare(scenario: Scenario | None = None, **options: Any) -> Compare:
    """Policies side by side on a workload (an ipywidgets container); options: policies, n_jobs, machines, load, sim_processes (worker processes; 0, the default: a thread)."""
    return Compare(scenario, **options)
