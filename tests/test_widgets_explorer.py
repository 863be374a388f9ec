"""The explorer app driven from Python: every control changes what the figures show."""

from __future__ import annotations

import numpy as np
import pytest

from smdlab import InvalidInput, iteration_time
from smdlab.widgets import explorer
from smdlab.widgets.scenario import (
    ExplorerSettings,
    ProfileEdit,
    build_cluster,
    build_jobs,
    default_settings,
)

SMALL = ExplorerSettings(machines=2, n_jobs=4, max_tasks=6)


@pytest.fixture(scope="module")
def app():
    a = explorer(SMALL, milp_time_limit=5)
    assert a.wait(30)
    yield a
    a.close()


def _changed(before, after, key):
    return before[key] != after[key]


@pytest.mark.parametrize(
    "control, value",
    [
        ("machines", 1),
        ("shape", "2 GPU · 16 CPU · 64 GB"),
        ("bandwidth", 40.0),
        ("n_jobs", 6),
        ("profiles", ("vgg16", "alexnet")),
        ("seed", 5),
        ("compute_scale", 4.0),
        ("param_scale", 0.25),
        ("comm_ratio", 8.0),
        ("device", "a100"),
        ("mode", "sequential"),
        ("batch", "per_worker"),
        ("method", "lp_round"),
        ("demands", "uniform"),
    ],
)
def test_every_control_changes_the_figures(app, control, value):
    widget = getattr(app, control)
    old = widget.value
    before = app.snapshot()
    updates = app.updates
    try:
        widget.value = value
        assert app.wait(30) and app.error is None and not app.background.errors
        after = app.snapshot()
        assert app.updates == updates + 1
        if control == "method":  # the same optimum, found by another method: labels change
            assert "LP + rounding" in app.allocation_fig.layout.title.text
            assert "LP + rounding" in app.bounds_fig.data[0].x
            return
        # Bounds always move with the problem; the chosen job's timeline moves with everything
        # except controls that only reshuffle capacity.
        assert _changed(before, after, "bounds") or _changed(before, after, "allocation")
        if control in (
            "compute_scale",
            "param_scale",
            "comm_ratio",
            "device",
            "mode",
            "batch",
            "bandwidth",
        ):
            assert _changed(before, after, "timeline")
    finally:
        widget.value = old
        app.wait(30)


def test_first_display_already_shows_the_exact_optimum():
    a = explorer(SMALL)
    assert (
        not a.background.running and a.exact_solution is not None
    )  # the schedule panel has its own thread
    assert a.bounds_fig.data[0].y[-1] == pytest.approx(a.exact_solution.objective)
    a.close()


def test_figures_are_updated_in_place(app):
    figs = (app.allocation_fig, app.timeline_fig, app.bounds_fig)
    traces = app.bounds_fig.data[0]
    app.machines.value = 1
    app.wait(30)
    assert (app.allocation_fig, app.timeline_fig, app.bounds_fig) == figs
    assert app.bounds_fig.data[0] is traces
    app.machines.value = SMALL.machines
    app.wait(30)


def test_focus_redraws_only_the_timeline(app):
    before = app.snapshot()
    solution = app.solution
    app.focus.value = 2
    after = app.snapshot()
    assert app.solution is solution
    assert before["allocation"] == after["allocation"] and before["bounds"] == after["bounds"]
    assert before["timeline"] != after["timeline"]
    job = build_jobs(app.settings)[2]
    w, p = solution.workers[2], solution.ps[2]
    tau = iteration_time(job, max(w, 1), max(p, 1), app.settings.mode) * 1e3
    assert app.timeline_fig.layout.shapes[1].x0 == pytest.approx(tau)
    app.focus.value = 0


def test_profile_edits_follow_the_focused_network(app):
    app.focus.value = 1
    net = app.settings.network_of(1)
    app.compute_scale.value = 2.0
    assert app.settings.edit_for(net) == ProfileEdit(compute=2.0)
    app.focus.value = 0  # another network: its own (identity) edit is shown
    assert app.compute_scale.value == 1.0 and app.settings.network_of(0) != net
    app.focus.value = 1
    assert app.compute_scale.value == 2.0
    app.compute_scale.value = 1.0
    app.focus.value = 0
    assert app.settings.edits == {}
    app.wait(30)


def test_exact_milp_arrives_in_the_background(app):
    app.seed.value = 11
    assert app.wait(30)
    ex = app.exact_solution
    assert ex is not None and ex.method == "milp"
    lower, achieved, exact = app.bounds_fig.data[0].y
    assert exact == pytest.approx(ex.objective) and lower <= exact + 1e-6 <= achieved + 2e-6
    assert app.background.busy.value == ""
    app.seed.value = SMALL.seed
    app.wait(30)


def test_stale_exact_results_are_discarded(app):
    for machines in (1, 2, 1, 2, 1):
        app.machines.value = machines
    assert app.wait(60)
    jobs, cluster = build_jobs(app.settings), build_cluster(app.settings)
    from smdlab.solve import solve

    assert app.exact_solution.objective == pytest.approx(
        solve(jobs, cluster, "milp").objective, rel=1e-6
    )
    assert app.bounds_fig.data[0].y[-1] == pytest.approx(app.exact_solution.objective)
    app.machines.value = SMALL.machines
    app.wait(30)


def test_milp_method_draws_the_exact_allocation_when_it_arrives(app):
    app.method.value = "milp"
    assert app.wait(30)
    np.testing.assert_array_equal(app.allocation_fig.data[0].y, app.exact_solution.workers)
    assert app.shown_solution is app.exact_solution
    app.focus.value = 1  # the timeline follows the allocation drawn
    w, p = app.exact_solution.workers[1], app.exact_solution.ps[1]
    assert f"({w} workers, {p} PSs)" in app.timeline_fig.layout.title.text
    app.focus.value = 0
    app.method.value = "smd"
    app.wait(30)


def test_turning_exact_off_marks_the_optimum_as_not_run(app):
    app.exact.value = False
    app.bandwidth.value = 17.0
    assert app.wait(30)
    assert app.bounds_fig.data[0].text[-1] == "not run" and app.exact_solution is None
    app.exact.value = True
    app.bandwidth.value = SMALL.bandwidth_gbps
    app.wait(30)


def test_default_scenario_updates_quickly_enough_to_report():
    a = explorer(run_exact=False)
    a.machines.value = 5
    assert a.error is None and a.last_update_s > 0 and set(a.last_timings) == {"solve_s", "draw_s"}
    assert "redraw" in a.status.value and a.status.layout.display is None
    a.close()


def test_settings_validate_and_name_the_field():
    with pytest.raises(InvalidInput, match="machines"):
        ExplorerSettings(machines=0)
    with pytest.raises(InvalidInput, match="profiles"):
        ExplorerSettings(profiles=("nope",))
    with pytest.raises(InvalidInput, match="focus"):
        ExplorerSettings(n_jobs=2, focus=2)
    with pytest.raises(InvalidInput, match="device"):
        ProfileEdit(device="tpu")
    with pytest.raises(InvalidInput, match="comm_ratio"):
        ProfileEdit(comm_ratio=0)


def test_comm_ratio_keeps_the_geometric_mean():
    s = default_settings()
    base = build_jobs(s)[0].profile
    edited = build_jobs(s.with_edit(s.network_of(0), comm_ratio=4.0))[0].profile
    np.testing.assert_allclose(edited.param_bytes, base.param_bytes * 2)
    np.testing.assert_allclose(edited.forward_s, base.forward_s / 2)


def test_job_sizes_do_not_depend_on_edits():
    s = default_settings()
    a = [j.samples for j in build_jobs(s)]
    b = [
        j.samples
        for j in build_jobs(s.with_edit("vgg16", compute=3.0).replace(bandwidth_gbps=40.0))
    ]
    assert a == b


def _count_draws(monkeypatch, a):
    """Count ``sync_figure`` calls per figure of ``a`` (allocation, bounds, timeline)."""
    import smdlab.widgets.explorer_app as mod

    counts = {"allocation": 0, "bounds": 0, "timeline": 0}
    names = {id(a.allocation_fig): "allocation", id(a.bounds_fig): "bounds"}
    names[id(a.timeline_fig)] = "timeline"
    real = mod.sync_figure

    def counting(target, fig):
        if id(target) in names:  # the schedule panel is counted by its own test
            counts[names[id(target)]] += 1
        real(target, fig)

    monkeypatch.setattr(mod, "sync_figure", counting)
    return counts


@pytest.mark.parametrize("method", ["smd", "milp"])
def test_each_figure_is_drawn_once_per_change(monkeypatch, method):
    # A grace period longer than the MILP: its answer is part of the one draw of the change.
    a = explorer(SMALL.replace(method=method), milp_time_limit=5, exact_grace_s=30)
    try:
        counts, updates = _count_draws(monkeypatch, a), a.updates
        for control, value in (("machines", 1), ("bandwidth", 20.0), ("machines", 3)):
            getattr(a, control).value = value
            assert a.wait(30) and a.error is None and not a.background.errors
        assert a.updates == updates + 3
        assert counts == {"allocation": 3, "bounds": 3, "timeline": 3}
        assert a.bounds_fig.data[0].y[-1] == pytest.approx(a.exact_solution.objective)
    finally:
        a.close()


def test_a_slow_exact_milp_draws_the_bounds_again_on_arrival(monkeypatch):
    a = explorer(SMALL, milp_time_limit=5, exact_grace_s=0)
    try:
        counts = _count_draws(monkeypatch, a)
        a.seed.value = 12
        assert a.wait(30) and not a.background.errors
        # The change draws each figure once ("solving…"); the MILP's arrival redraws the bounds.
        assert counts == {"allocation": 1, "bounds": 2, "timeline": 1}
        assert a.bounds_fig.data[0].y[-1] == pytest.approx(a.exact_solution.objective)
    finally:
        a.close()


def test_schedule_panel_shows_every_policy_beside_the_schedule_bound(app):
    from smdlab.widgets.explorer_panels import SCHEDULE_POLICIES

    assert app.wait(60) and not app.background.errors
    results, bound = app.schedule
    assert set(results) == set(SCHEDULE_POLICIES)
    assert 0 < bound <= min(results.values()) * (1 + 1e-7)  # docs/bound.md
    bars, line = app.schedule_fig.data[0], app.schedule_fig.data[1]
    assert np.allclose(bars.y, [results[p] / 3600 for p in results])
    assert np.allclose(line.y, bound / 3600)
    fig = app.schedule_fig
    app.seed.value = SMALL.seed + 5  # a new job mix: recomputed in the background, drawn in place
    assert app.wait(60) and not app.background.errors
    assert app.schedule_fig is fig and app.schedule[0] != results
    app.seed.value = SMALL.seed
    assert app.wait(60)
    assert app.schedule == (results, bound)  # cached per problem


def test_default_state_shows_the_methods_differ():
    """The default explorer state: the LP bound is not tight and some job gets fewer PSs than workers."""
    from smdlab.solve import solve

    s = default_settings()
    jobs, cluster = build_jobs(s), build_cluster(s)
    smd = solve(jobs, cluster, "smd", mode=s.mode)
    exact = solve(jobs, cluster, "milp", mode=s.mode, time_limit=30)
    assert exact.status == "optimal"
    bound = smd.lower_bound
    assert smd.gap > 1e-3 or exact.objective > bound * (1 + 1e-6)
    assert any(w > 0 and w != p for w, p in zip(smd.workers, smd.ps))
    # the NIC bandwidth moves the allocation
    slow = s.replace(bandwidth_gbps=10.0)
    other = solve(build_jobs(slow), build_cluster(slow), "smd", mode=s.mode)
    assert (list(other.workers), list(other.ps)) != (list(smd.workers), list(smd.ps))


def test_scripting_interface_and_status(app):
    assert set(app.controls) >= {"machines", "bandwidth", "method", "exact", "n_jobs"}
    assert app.controls["machines"] is app.machines
    assert app.solution is not None and app.wait(30)
    assert app.exact_solution is not None
    old = app.method.value
    try:
        app.controls["method"].value = "milp"
        assert app.wait(30)
        assert "exact MILP" in app.headline() or "MILP" in app.headline()
        assert app.status.layout.display is None and "redraw" in app.status.value
    finally:
        app.method.value = old
        app.wait(30)


def test_status_is_hidden_until_the_first_change():
    a = explorer(SMALL, run_exact=False)
    try:
        assert a.status.layout.display == "none"
        assert "SMD" in a.headline()
    finally:
        a.close()


def test_default_shares_differ_where_demands_differ():
    """Per-network demands: two jobs on the same number of workers and PSs hold different shares."""
    from smdlab.solve import solve
    from smdlab.viz.solution import resource_shares

    s = default_settings()
    jobs, cluster = build_jobs(s), build_cluster(s)
    sol = solve(jobs, cluster, "smd", mode=s.mode)
    shares = resource_shares(sol, jobs, cluster)
    k = {r: i for i, r in enumerate(cluster.resources)}
    by_shape: dict[tuple[int, int], set[tuple[float, float]]] = {}
    for i, (w, p) in enumerate(zip(sol.workers, sol.ps)):
        if w > 0:
            by_shape.setdefault((w, p), set()).add(
                (round(shares[i, k["cpu"]], 6), round(shares[i, k["mem_gb"]], 6))
            )
    assert any(len(v) > 1 for v in by_shape.values())
    # ... while the GPU share is the same for the same worker count
    uniform = s.replace(demands="uniform")
    ujobs = build_jobs(uniform)
    assert len({(j.worker_demand["cpu"], j.ps_demand["cpu"]) for j in ujobs}) == 1
    assert len({(j.worker_demand["cpu"], j.ps_demand["cpu"]) for j in jobs}) > 1


def test_large_instance_switch_runs_the_milp_into_its_time_limit(monkeypatch):
    """One control: a large instance on which the exact MILP runs in the background and stops at its limit."""
    import smdlab.widgets.explorer_controls as mod

    # The real switch: 2,000 jobs on 500 machines. This one is still past the Gurobi licence's
    # size limit (HiGHS solves it) and far from solved in 0.05 s.
    monkeypatch.setattr(mod, "LARGE_MACHINES", 100)
    monkeypatch.setattr(mod, "LARGE_JOBS", 400)
    a = explorer(SMALL, milp_time_limit=0.05, exact_grace_s=0)
    try:
        assert a.wait(60)
        a.large.value = True
        assert (a.settings.machines, a.settings.n_jobs) == (100, 400)
        assert (a.machines.value, a.n_jobs.value) == (100, 400)
        assert a.background.running or a.exact_solution is not None  # the hourglass shows
        assert a.wait(60) and not a.background.errors
        assert a.exact_solution is not None and a.exact_solution.status == "time_limit"
        assert a.bounds_fig.data[0].marker.symbol[-1] == "diamond-open"
        assert "time limit" in a.status.value
        assert a.schedule[0] == {} and "not simulated" in str(a.schedule_fig.layout)
        assert a.schedule_panel.bound_source == "closed_form" and a.schedule[1] > 0
        a.large.value = False
        assert (a.settings.machines, a.settings.n_jobs) == (SMALL.machines, SMALL.n_jobs)
        a.large.value = True
        a.machines.value = 90  # moving a slider away from the large instance unticks it
        assert not a.large.value and a.settings.machines == 90
    finally:
        a.close()


def test_browser_side_timer_is_part_of_the_app():
    from smdlab.widgets.browser import APP_CLASS, RedrawTimer

    a = explorer(SMALL, run_exact=False)
    try:
        assert APP_CLASS in a._dom_classes and isinstance(a.timer, RedrawTimer)
        assert a.browser_latency_s is None  # no browser has measured a change
        for fig in (a.allocation_fig, a.bounds_fig, a.timeline_fig, a.schedule_fig):
            assert fig._config.get("responsive") is True
    finally:
        a.close()


@pytest.fixture
def fresh():
    """An explorer of its own (a test that patches it), its first background work done.

    Its simulations run on its thread (``sim_processes=0``), where the patches reach them.
    """
    a = explorer(SMALL, run_exact=False, sim_processes=0)
    assert a.wait(60)
    yield a
    a.close()


def test_a_failing_background_computation_shows_one_status_line(monkeypatch, fresh):
    import smdlab.widgets.explorer_app as app_mod
    import smdlab.widgets.explorer_panels as mod

    def broken(*args):
        raise RuntimeError("injected\nsecond line")

    a = fresh
    allocation = a.snapshot()["allocation"]
    monkeypatch.setattr(mod, "_simulate_policy", broken)
    a.seed.value = 3
    assert a.wait(60)
    line = "simulating every policy on this job mix failed: RuntimeError: injected"
    assert a.error == line and a.status.value.count(line) == 1 and "second" not in a.status.value
    assert "Traceback" in a.schedule_background.errors[-1]
    # the panel says why it stopped instead of "simulating" forever; the change itself drew
    assert line in str(a.schedule_fig.layout) and "simulating…" not in str(a.schedule_fig.layout)
    assert a.schedule_panel.bound_source == "closed_form" and a.schedule[1] > 0
    assert a.snapshot()["allocation"] != allocation
    monkeypatch.undo()
    monkeypatch.setattr(app_mod, "_solve_exact", broken)  # the exact MILP fails the same way
    a.exact.value = True
    assert a.wait(60)
    assert a.error == "solving the exact MILP (limit 5 s) failed: RuntimeError: injected"


def test_schedule_panel_draws_the_bound_at_once_and_once_per_arriving_result(monkeypatch, fresh):
    import smdlab.widgets.explorer_panels as mod
    from smdlab.widgets.explorer_panels import SCHEDULE_POLICIES

    a = fresh
    drawn = []
    real = mod.sync_figure

    def counting(target, fig):
        if target is a.schedule_fig:
            drawn.append((a.schedule_panel.bound_source, dict(a.schedule_panel.means)))
        real(target, fig)

    monkeypatch.setattr(mod, "sync_figure", counting)
    a.bandwidth.value = 12.0
    # in the callback: the closed-form bound, before any simulation
    assert drawn[0] == ("closed_form", {}) and a.schedule[1] > 0
    assert a.wait(60) and a.error is None
    # then one draw per policy as it finishes, and one for the refined bound
    assert len(drawn) == 1 + len(SCHEDULE_POLICIES) + 1
    assert [len(m) for _, m in drawn[1:-1]] == list(range(1, len(SCHEDULE_POLICIES) + 1))
    assert a.schedule_panel.bound_source == "interval_lp"
    assert a.schedule_fig.data[1].name.startswith("lower bound (interval LP)")


def test_a_newer_change_cancels_the_older_simulations(monkeypatch, fresh):
    import threading

    import smdlab.widgets.explorer_panels as mod

    a = fresh
    real, started, gate, runs = mod._simulate_policy, threading.Event(), threading.Event(), []

    def slow(jobs, cluster, policy, mode, still_wanted):
        runs.append((jobs[0].samples, policy))
        started.set()
        gate.wait(10)
        return real(jobs, cluster, policy, mode, still_wanted)

    monkeypatch.setattr(mod, "_simulate_policy", slow)
    a.seed.value = 7
    assert started.wait(30)
    old = runs[0][0]
    a.seed.value = 8  # supersedes: the running simulation stops at its next decision
    gate.set()
    assert a.wait(60) and a.error is None
    assert [p for s, p in runs if s == old] == [runs[0][1]]  # no later policy ran for it
    assert len(a.schedule[0]) == len(mod.SCHEDULE_POLICIES)


def test_a_large_instance_is_solved_off_the_callback_and_a_newer_change_wins(monkeypatch, fresh):
    import smdlab.widgets.explorer_app as app_mod
    import smdlab.widgets.explorer_controls as mod

    monkeypatch.setattr(mod, "LARGE_MACHINES", 60)
    monkeypatch.setattr(mod, "LARGE_JOBS", 240)
    monkeypatch.setattr(app_mod, "INLINE_MAX_JOBS", 100)
    a = fresh
    before = a.snapshot()
    a.large.value = True
    # the callback returned before the solve: the figures are still the last ones
    assert a.solving_in_background and "240 jobs" in a.fast_background.busy.value
    assert a.snapshot()["allocation"] == before["allocation"]
    assert a.wait(120) and a.error is None and not a.solving_in_background
    assert len(a.solution.jobs) == 240 and a.schedule_panel.bound_source == "closed_form"
    a.large.value = False
    a.large.value = True
    a.large.value = False  # the last change wins, whatever the large solve still does
    assert a.wait(120) and len(a.solution.jobs) == SMALL.n_jobs


@pytest.mark.parametrize(
    "control, value",
    [("profiles", ("alexnet",)), ("shape", "2 GPU · 16 CPU · 64 GB")],
)
def test_bad_input_shows_one_line_and_keeps_the_last_valid_figures(control, value):
    # One machine of 16 cores, and alexnet's worker and PS need 20: no schedule runs it, whichever
    # of the two moves comes last.
    one = SMALL.replace(machines=1)
    small_machine = "2 GPU · 16 CPU · 64 GB"
    start = one.replace(profiles=("alexnet",) if control == "shape" else one.profiles)
    start = start.replace(shape=small_machine if control == "profiles" else one.shape)
    a = explorer(start, run_exact=False)
    try:
        assert a.wait(60) and a.error is None
        before = a.snapshot()
        getattr(a, control).value = value
        assert a.wait(60)
        assert a.error is not None and "\n" not in a.error and "alexnet" in a.error
        assert a.status.value.count("color:#c00") == 1 and "Traceback" not in a.status.value
        assert a.snapshot() == before
        a.cpu.value = 8.0  # a timeline-only change keeps the line: the problem is still bad
        assert a.error is not None
    finally:
        a.close()


def test_the_worker_processes_give_the_panel_of_the_thread_and_one_draw_per_arrival(monkeypatch):
    """The schedule panel's worker processes: the same means and bound as the thread, drawn as they arrive."""
    import smdlab.widgets.explorer_panels as mod

    settings = SMALL.replace(seed=SMALL.seed + 11)
    a = explorer(settings, run_exact=False, sim_processes=2)
    b = explorer(settings, run_exact=False, sim_processes=0)
    try:
        assert a.wait(60) and b.wait(60)
        # the first panel ran on the thread; the workers start at the first change (or now)
        assert a.sim_pool is None and b.start_workers() is None
        pool = a.start_workers()
        assert pool is not None and pool.wait_ready(120) and a.sim_pool is pool
        drawn, real = [], mod.sync_figure

        def counting(target, fig):
            if target is a.schedule_fig:
                drawn.append(dict(a.schedule_panel.means))
            real(target, fig)

        monkeypatch.setattr(mod, "sync_figure", counting)
        a.seed.value = b.seed.value = settings.seed + 1
        assert a.wait(60) and b.wait(60) and a.error is None and b.error is None
        assert a.schedule == b.schedule
        assert a.schedule_panel.bound_source == "interval_lp" and not a.schedule_panel.pending
        # the closed-form bound at once, then one draw per policy and one for the refined bound
        assert len(drawn) == 1 + len(mod.SCHEDULE_POLICIES) + 1 and drawn[0] == {}
        assert sorted(len(m) for m in drawn) == [len(m) for m in drawn]
    finally:
        a.close()
        b.close()


def test_a_newer_generation_stops_a_worker_task_at_its_next_decision():
    """``run_task`` returns None for a superseded generation, before a simulation and during one."""
    import smdlab.widgets.sim_pool as pool_mod

    class Tokens:
        """The shared generation array of one slot, which a newer change takes after ``keep`` reads."""

        def __init__(self, keep: int) -> None:
            self.keep, self.reads = keep, 0

        def __getitem__(self, slot: int) -> int:
            self.reads += 1
            return 5 if self.reads <= self.keep else 6

    jobs, cluster = build_jobs(SMALL), build_cluster(SMALL)
    try:
        pool_mod._init(Tokens(0))
        assert pool_mod.run_task(3, 5, "srtf", jobs, cluster, SMALL.mode) is None
        tokens = Tokens(2)  # the check before the run and the first decision see generation 5
        pool_mod._init(tokens)
        assert pool_mod.run_task(3, 5, "srtf", jobs, cluster, SMALL.mode) is None
        assert tokens.reads == 3  # stopped at the second decision, not after the run
        pool_mod._init(Tokens(10**9))
        value = pool_mod.run_task(3, 5, "srtf", jobs, cluster, SMALL.mode)
        assert value == pool_mod.simulate_policy(jobs, cluster, "srtf", SMALL.mode, lambda: True)
    finally:
        pool_mod._init(None)


def test_a_run_without_its_lower_bound_is_the_same_run():
    """``simulate(lower_bound=False)``: every summary entry as with the bound, the bound NaN."""
    from smdlab.sim import simulate

    jobs, cluster = build_jobs(SMALL), build_cluster(SMALL)
    full = simulate(jobs, cluster, "smd", mode=SMALL.mode, record_history=False)
    bare = simulate(jobs, cluster, "smd", mode=SMALL.mode, record_history=False, lower_bound=False)
    assert np.isnan(bare.summary["mean_jct_lower_bound"])
    assert full.summary["mean_jct_lower_bound"] > 0
    # wall-clock entries differ run to run
    skip = {"mean_jct_lower_bound", "sim_wall_s"} | {
        k for k in full.summary if k.startswith("scheduler_time")
    }
    assert {k: v for k, v in full.summary.items() if k not in skip} == {
        k: v for k, v in bare.summary.items() if k not in skip
    }
    assert full.jobs.equals(bare.jobs)
