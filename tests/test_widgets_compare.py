"""The policy comparison app driven from Python: simulations run in the background and redraw the figures."""

from __future__ import annotations

import numpy as np
import pytest

from smdlab import InvalidInput
from smdlab.viz.style import SMD_LABEL
from smdlab.widgets import compare


@pytest.fixture(scope="module")
def app():
    a = compare(policies=("fifo", "srtf", "smd"), n_jobs=12, machines=2)
    yield a
    a.close()


def _cdf(a):
    return [np.asarray(tr.x, dtype=float) for tr in a.cdf_fig.data]


def test_starts_with_every_policy_drawn(app):
    assert [tr.name for tr in app.cdf_fig.data] == ["fifo", "srtf", SMD_LABEL]
    assert set(app.results) == {"fifo", "srtf", "smd"}
    for tr, r in zip(app.cdf_fig.data, app.results.values()):
        assert len(tr.x) == r.summary["jobs_completed"]
    assert "mean JCT" in app.table.value


@pytest.mark.parametrize(
    "control, value", [("load", 2.5), ("machines", 1), ("n_jobs", 20), ("seed", 4)]
)
def test_workload_controls_rerun_the_simulations(app, control, value):
    widget = getattr(app, control)
    old, before, summary = widget.value, _cdf(app), app.summary_fig.data[0].y
    widget.value = value
    assert app.wait(120) and not app.background.errors
    after = _cdf(app)
    assert any(len(a) != len(b) or not np.allclose(a, b) for a, b in zip(before, after))
    assert tuple(app.summary_fig.data[0].y) != tuple(summary)
    widget.value = old
    app.wait(120)


def test_policy_selection_adds_and_removes_curves(app):
    cdf = app.cdf_fig
    app.policies.value = ("fifo",)
    assert app.wait(120)
    assert app.cdf_fig is cdf and [tr.name for tr in cdf.data] == ["fifo"]
    assert app.detail.value == "fifo"
    app.policies.value = ("fifo", "srtf", "smd")
    assert app.wait(120)
    assert len(cdf.data) == 3


def test_detail_picks_the_utilisation_shown(app):
    app.detail.value = "srtf"
    assert "srtf" in app.util_fig.layout.title.text
    app.detail.value = "smd"
    assert SMD_LABEL in app.util_fig.layout.title.text


def test_unknown_policy_is_refused():
    with pytest.raises(InvalidInput, match="policies"):
        compare(policies=("nope",), n_jobs=10)


def test_a_failing_simulation_shows_one_status_line(monkeypatch):
    from smdlab.widgets.compare_app import Compare

    a = compare(policies=("fifo",), n_jobs=6, machines=1, sim_processes=0)
    try:
        assert a.wait(120)
        drawn = [tr.name for tr in a.cdf_fig.data]

        def broken(self, *args):
            raise RuntimeError("injected")

        monkeypatch.setattr(Compare, "_simulate", broken)
        a.seed.value = a.seed.value + 1
        assert a.wait(120)
        assert a.status.value.count("simulating failed: RuntimeError: injected") == 1
        assert [tr.name for tr in a.cdf_fig.data] == drawn  # the last results stay drawn
    finally:
        a.close()


def test_the_worker_processes_give_the_results_of_the_thread():
    """A change simulated in the worker processes: the same runs as on the thread, drawn once."""
    a = compare(policies=("fifo", "srtf", "smd"), n_jobs=10, machines=2, sim_processes=2)
    b = compare(policies=("fifo", "srtf", "smd"), n_jobs=10, machines=2, sim_processes=0)
    try:
        assert a.sim_pool is not None and a.sim_pool.wait_ready(120) and b.sim_pool is None
        a.load.value = b.load.value = 1.35
        assert a.wait(120) and b.wait(120)
        assert "failed" not in a.status.value and set(a.results) == set(b.results)
        wall = {"sim_wall_s", "scheduler_time_s", "scheduler_time_max_s"}
        wall |= {"scheduler_time_per_decision_s"}
        for p, r in a.results.items():
            assert r.jobs.equals(b.results[p].jobs)
            got = {k: v for k, v in r.summary.items() if k not in wall}
            want = {k: v for k, v in b.results[p].summary.items() if k not in wall}
            assert repr(got) == repr(want)  # repr: NaN entries (slot_s) compare equal
    finally:
        a.close()
        b.close()


def test_a_change_draws_each_policy_as_it_finishes_and_solves_the_bound_once(monkeypatch):
    import smdlab.solve.schedule_bound as schedule_bound

    solves = []
    real = schedule_bound.mean_jct_lower_bound
    monkeypatch.setattr(
        schedule_bound, "mean_jct_lower_bound", lambda *a, **k: solves.append(1) or real(*a, **k)
    )
    a = compare(policies=("fifo", "srtf", "drf"), n_jobs=10, machines=2)
    try:
        drawn = []
        real_apply = a._apply
        a._apply = lambda results: drawn.append(list(results)) or real_apply(results)
        solves.clear()
        a.seed.value = 11
        assert a.wait(120) and not a.background.errors
        # one draw per finished policy, in the chosen order, the last with all of them
        assert drawn == [["fifo"], ["fifo", "srtf"], ["fifo", "srtf", "drf"]]
        assert [tr.name for tr in a.cdf_fig.data] == ["fifo", "srtf", "drf"]
        bounds = {r.summary["mean_jct_lower_bound"] for r in a.results.values()}
        assert solves == [1] and len(bounds) == 1  # one LP for the change, shared by the runs
        drawn.clear()
        a.seed.value = 11 + 1
        a.seed.value = 11  # cached: drawn at once, in one draw
        assert a.wait(120)
        assert drawn[-1] == ["fifo", "srtf", "drf"]
    finally:
        a.close()
