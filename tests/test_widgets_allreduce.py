"""The explorer with all-reduce jobs: the architecture control and ring time per bucket."""

from __future__ import annotations

import pytest

from smdlab.model.allreduce import allreduce_timeline
from smdlab.widgets.explorer_app import Explorer
from smdlab.widgets.scenario import ExplorerSettings, build_jobs


def test_settings_build_allreduce_jobs():
    jobs = build_jobs(ExplorerSettings(arch="allreduce", n_jobs=3))
    assert all(j.arch == "allreduce" and j.max_ps == 0 for j in jobs)
    with pytest.raises(ValueError, match="arch"):
        ExplorerSettings(arch="ring")


def test_explorer_switches_to_allreduce_and_shows_buckets():
    app = Explorer(run_exact=False)
    try:
        app.arch.value = "allreduce"
        app.wait()
        assert app.error is None
        names = [t.name for t in app.timeline_fig.data]
        assert "allreduce" in names and "push" not in names and "pull" not in names
        bars = next(t for t in app.timeline_fig.data if t.name == "allreduce")
        job = app._jobs[app.settings.focus]
        w = max(1, app.solution.workers[app.settings.focus])  # unstarted: drawn on 1 worker
        ring = allreduce_timeline(job, w, app.settings.mode)
        ring = ring[ring["phase"] == "allreduce"]
        assert len(bars.x) == len(ring)
        assert list(bars.x) == pytest.approx(list((ring["end"] - ring["start"]) * 1e3))
        assert all(p == 0 for p in app.allocation_fig.data[1].y)
        app.arch.value = "ps"
        app.wait()
        assert "push" in [t.name for t in app.timeline_fig.data]
    finally:
        app.close()
