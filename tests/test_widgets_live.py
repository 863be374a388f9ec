"""In-place figure updates and the background runner behind the apps."""

from __future__ import annotations

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
