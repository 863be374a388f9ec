"""In-place figure updates and the background runner behind the apps."""

from __future__ import annotations

import subprocess
import sys
import threading
import time

import plotly.graph_objects as go
import pytest

from smdlab.widgets.live import Background, Superseded, figure_widget, sync_figure


def test_sync_updates_traces_in_place_and_resets_dropped_properties():
    fw = figure_widget(
        {
            "data": [{"type": "bar", "x": ["a", "b"], "y": [1, 2], "base": [0, 1], "name": "w"}],
            "layout": {"title": {"text": "one"}, "shapes": [{"type": "line", "x0": 0, "x1": 1}]},
        }
    )
    trace = fw.data[0]
    sync_figure(
        fw,
        {
            "data": [{"type": "bar", "x": ["a", "b", "c"], "y": [3, 4, 5], "name": "w"}],
            "layout": {"title": {"text": "two"}},
        },
    )
    assert fw.data[0] is trace  # the same trace object, changed in place
    assert list(fw.data[0].y) == [3, 4, 5] and fw.data[0].base is None
    assert fw.layout.title.text == "two" and fw.layout.shapes == ()


def test_sync_adds_and_drops_traces():
    fw = figure_widget(go.Figure([go.Scatter(y=[1]), go.Scatter(y=[2])]))
    sync_figure(fw, go.Figure([go.Scatter(y=[5]), go.Scatter(y=[6]), go.Bar(y=[7])]))
    assert [tr.type for tr in fw.data] == ["scatter", "scatter", "bar"]
    sync_figure(fw, {"data": [{"type": "bar", "y": [8]}], "layout": {}})
    assert [tr.type for tr in fw.data] == ["bar"] and list(fw.data[0].y) == [8]


def test_background_drops_results_of_superseded_requests():
    bg = Background()
    gate = threading.Event()
    applied = []
    bg.submit("c", lambda: gate.wait(5) and "old", applied.append)
    bg.submit("c", lambda: "newer", applied.append)  # queued behind the first
    bg.submit("c", lambda: "newest", applied.append)
    assert bg.running and "&#9203;" in bg.busy.value
    gate.set()
    assert bg.wait(10)
    assert applied == ["newest"] and bg.busy.value == "" and not bg.running
    bg.close()


def test_background_cancellable_work_stops_when_superseded():
    bg = Background()
    steps = []
    started = threading.Event()

    def long(still_wanted):
        started.set()
        for k in range(200):
            if not still_wanted():
                raise Superseded
            steps.append(k)
            time.sleep(0.005)
        return "done"

    got = []
    bg.submit("c", long, got.append, cancellable=True)
    assert started.wait(5)
    bg.submit("c", lambda: "quick", got.append)
    assert bg.wait(10)
    assert got == ["quick"] and len(steps) < 200 and not bg.errors
    bg.close()


def test_background_records_errors_and_keeps_working():
    bg = Background()
    bg.submit("a", lambda: 1 / 0, lambda r: None)
    out = []
    bg.submit("b", lambda: 2, out.append)
    assert bg.wait(10)
    assert out == [2] and "ZeroDivisionError" in bg.errors[0]
    bg.close()


def test_wait_times_out():
    bg = Background()
    gate = threading.Event()
    bg.submit("c", lambda: gate.wait(5), lambda r: None)
    assert bg.wait(0.05) is False
    gate.set()
    assert bg.wait(10)
    bg.close()


@pytest.mark.parametrize("bad", [0, -1.0])
def test_explorer_refuses_a_bad_time_limit(bad):
    from smdlab import InvalidInput
    from smdlab.widgets import Explorer

    with pytest.raises(InvalidInput, match="milp_time_limit"):
        Explorer(milp_time_limit=bad)


def test_progressive_work_applies_each_partial_result_and_stops_when_superseded():
    bg = Background()
    gate, shown = threading.Event(), []

    def work(still_wanted, emit):
        emit("first")
        gate.wait(5)
        emit("second")  # raises Superseded: a newer request came meanwhile
        shown.append("not reached")

    bg.submit("c", work, shown.append, progressive=True)
    time.sleep(0.05)
    bg.submit("c", lambda: "newer", shown.append)
    gate.set()
    assert bg.wait(10)
    assert shown == ["first", "newer"] and not bg.errors
    bg.close()


def test_a_failure_reaches_the_status_line_as_one_line():
    lines = []
    bg = Background("simulating", on_error=lines.append)
    bg.submit("c", lambda: {}["missing"], lambda r: None)
    assert bg.wait(10)
    assert lines == ["simulating failed: KeyError: 'missing'"] and bg.last_error == lines[0]
    assert "Traceback" in bg.errors[0]  # the traceback is kept, not shown
    # a request's own handler takes precedence; a stale request's failure is not shown
    own = []
    gate = threading.Event()

    def stale():
        gate.wait(5)
        raise RuntimeError("old")

    bg.submit("c", stale, lambda r: None, on_error=own.append)
    bg.submit("c", lambda: 1 / 0, lambda r: None, "solving", on_error=own.append)
    gate.set()
    assert bg.wait(10)
    assert own == ["solving failed: ZeroDivisionError: division by zero"]
    bg.close()


def test_without_a_handler_the_busy_indicator_shows_the_failure_until_the_next_request():
    bg = Background("refining")
    bg.submit("c", lambda: (_ for _ in ()).throw(ValueError("bad\nsecond line")), lambda r: None)
    assert bg.wait(10)
    assert "refining failed: ValueError: bad" in bg.busy.value and "second" not in bg.busy.value
    bg.submit("c", lambda: 1, lambda r: None)
    assert bg.wait(10) and bg.busy.value == ""
    bg.close()


def test_a_stoppable_policy_stops_a_simulation_at_its_next_decision():
    from smdlab.policies.registry import get_policy
    from smdlab.sim import simulate
    from smdlab.widgets.live import stoppable_policy
    from smdlab.widgets.scenario import ExplorerSettings, build_cluster, build_jobs

    s = ExplorerSettings(machines=2, n_jobs=4, max_tasks=6)
    jobs, cluster = build_jobs(s), build_cluster(s)
    asked = []

    def wanted():
        asked.append(1)
        return len(asked) < 2

    with pytest.raises(Superseded):
        simulate(jobs, cluster, stoppable_policy(get_policy("srtf"), wanted))
    assert len(asked) == 2
    full = simulate(jobs, cluster, stoppable_policy(get_policy("srtf"), lambda: True))
    plain = simulate(jobs, cluster, "srtf")
    assert full.summary["mean_jct"] == plain.summary["mean_jct"]


def test_figure_state_follows_changes_for_views_created_later():
    fw = figure_widget({"data": [{"type": "bar", "y": [1, 2]}], "layout": {"title": {"text": "a"}}})
    sent = []
    real = fw.send_state

    def record(key=None):  # a full-figure send is recorded; plotly's own deltas go through
        if key is not None and "_widget_data" in key:
            sent.append(key)
        else:
            real(key)

    fw.send_state = record
    assert fw.comm is not None  # a (dummy) model exists, but no view has drawn the figure yet
    new = {"data": [{"type": "bar", "y": [3, 4]}, {"type": "scatter", "y": [5]}], "layout": {}}
    sync_figure(fw, {**new, "layout": {"title": {"text": "b"}}})
    state = fw.get_state()
    assert [list(t["y"]) for t in state["_widget_data"]] == [[3, 4], [5]]
    assert state["_widget_layout"]["title"] == {"text": "b"}
    assert sent == [["_widget_data", "_widget_layout"]]
    fw._js2py_layoutDelta = {"layout_delta": {}, "layout_edit_id": 0}  # a view drew it
    sync_figure(fw, {**new, "layout": {"title": {"text": "c"}}})
    assert len(sent) == 1 and fw.get_state()["_widget_layout"]["title"] == {"text": "c"}


def test_the_first_figure_widget_leaves_the_iri_grammar_unbuilt_and_iri_checks_unchanged():
    # A fresh interpreter: this one may have imported jsonschema already.
    code = (
        "import sys, smdlab.widgets.live, plotly.graph_objects as go\n"
        "go.FigureWidget(go.Bar(y=[1]))\n"
        "print('lark' in sys.modules)\n"
        "import jsonschema\n"
        "fc = jsonschema.FormatChecker()\n"
        "print(fc.conforms('http://example.org/a?b#c', 'iri'), fc.conforms('http://a b/', 'iri'))\n"
        "import rfc3987_syntax\n"
        "print(rfc3987_syntax.is_valid_syntax('iri_reference', '/x'), 'lark' in sys.modules)\n"
    )
    pytest.importorskip("rfc3987_syntax")
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    ).stdout.split()
    assert out == ["False", "True", "False", "True", "True"]


def test_figures_share_one_copy_of_plotlys_browser_bundle():
    from smdlab.widgets import plotly_bundle

    a, b = figure_widget(go.Figure(go.Bar(y=[1]))), figure_widget({"data": [], "layout": {}})
    source, key = plotly_bundle._bundle()  # the classes were built from this copy
    assert source == str(go.FigureWidget._esm) and len(source) > 1_000_000
    for fw in (a, b):  # each figure's module is the small one naming the page's shared copy
        assert isinstance(fw, go.FigureWidget) and len(fw._esm) < 1_000 and key in fw._esm
    carrier = plotly_bundle._CARRIER
    assert carrier.bundle == source and key in carrier._esm and carrier.comm is not None
    carrier.close()  # closed by hand: the next figure brings a new carrier for later pages
    figure_widget({"data": [], "layout": {}})
    assert plotly_bundle._CARRIER is not carrier and plotly_bundle._CARRIER.comm is not None
