"""The explorer's deadline section: off by default, cards and per-job deadline columns when on, one line for bad input."""

from __future__ import annotations

import pytest

from smdlab import InvalidInput
from smdlab.widgets import deadlines as dl, explorer
from smdlab.widgets.scenario import ExplorerSettings, build_jobs

# Two machines, four jobs: each toggle simulates the six policies in about a second.
SMALL = ExplorerSettings(machines=2, n_jobs=4, max_tasks=6)


@pytest.fixture(scope="module")
def app():
    """One explorer for the module, without the exact MILP (not what these tests look at)."""
    a = explorer(SMALL, run_exact=False)
    assert a.wait(60)
    yield a
    a.close()


def test_off_by_default_computes_and_shows_nothing(app):
    panel = app.deadlines
    assert panel.enabled.value is False
    assert panel.outputs.layout.display == "none"
    assert panel.results == {} and panel.gantt_fig is None and not panel.background.running
    # A change of the job mix with deadlines off still simulates nothing for them.
    app.seed.value = 3
    try:
        assert app.wait(60) and panel.results == {} and panel.cards.value == ""
    finally:
        app.seed.value = SMALL.seed
        assert app.wait(60)


def test_toggle_shows_miss_cards_deadline_columns_and_ticks(app):
    panel = app.deadlines
    app.controls["deadlines"].value = True
    try:
        assert app.wait(120) and app.error is None
        assert panel.outputs.layout.display == ""
        assert list(panel.results) == list(dl.DEADLINE_POLICIES)
        assert panel.cards.value.count("smdlab-miss-card") == len(dl.DEADLINE_POLICIES)
        assert "hard miss" in panel.cards.value and "weighted miss" in panel.cards.value
        for header in dl.TABLE_COLUMNS:
            assert f"<th>{header}</th>" in panel.table.value
        shown = panel.results[panel.detail.value]
        slo = shown.jobs[shown.jobs["job_class"] == "slo"]
        assert 0 < len(slo) <= SMALL.n_jobs
        assert panel.table.value.count("<td>SLO</td>") == len(slo)
        ticks = [t for t in panel.gantt_fig.data if t.name in ("deadline met", "deadline missed")]
        assert sum(len(t.x) for t in ticks) == len(slo)
        # Another policy's table and chart follow the detail control.
        panel.detail.value = "edf"
        assert "Jobs over time with their deadlines — EDF" in panel.gantt_fig.layout.title.text
        # The explorer's own controls still drive the section: a new job mix is simulated again.
        app.n_jobs.value = 5
        assert app.wait(120)
        assert panel.table.value.count("<tr>") == 5 + 1  # header and one row per job
    finally:
        app.n_jobs.value = SMALL.n_jobs
        app.controls["deadlines"].value = False
        assert app.wait(120)
    assert panel.outputs.layout.display == "none"


def test_bad_slack_shows_one_line_and_keeps_the_last_cards(app):
    panel = app.deadlines
    app.controls["deadlines"].value = True
    try:
        assert app.wait(120)
        cards = panel.cards.value
        panel.slack_min.value = 0.0
        assert app.error is not None and "\n" not in app.error
        assert "slack[0] must be > 0" in app.error
        assert "slack[0] must be &gt; 0" in app.status.value  # the status line shows it
        assert panel.cards.value == cards and "older" in panel.note.value
        # Another change of the problem keeps the section's line while the value stays bad.
        app.n_jobs.value = 5
        assert app.wait(120) and "slack[0]" in panel.note.value and panel.cards.value == cards
        panel.slack_min.value = 4.0  # min above max: the generator's range check
        assert app.error is not None and "slack must be [lo, hi]" in app.error
        panel.slack_min.value = 1.5
        assert app.wait(120) and app.error is None and panel.note.value == ""
    finally:
        app.n_jobs.value = SMALL.n_jobs
        panel.slack_min.value = dl.DeadlineOptions().slack_min
        app.controls["deadlines"].value = False
        assert app.wait(120)


def test_attach_deadlines_and_cards_helpers():
    jobs = build_jobs(SMALL)
    with_slo = dl.attach_deadlines(
        jobs, dl.DeadlineOptions(True, 2.0, 2.0, 1.0), seed=0, mode="wfbp"
    )
    assert all(j.slo is not None for j in with_slo)
    with pytest.raises(InvalidInput, match="fraction"):
        dl.attach_deadlines(jobs, dl.DeadlineOptions(True, 1.5, 3.0, 1.5), seed=0, mode="wfbp")
    html = dl.miss_cards_html({"chronus": "not run: no GPUs"}, pending=("edf",))
    assert "Chronus" in html and "not run: no GPUs" in html and "simulating" in html
