"""Figures of the timing model: the per-layer timeline and the worker/PS trade-off."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
import pytest

from smdlab import InvalidInput, Job, LayerProfile, iteration_time, layer_timeline, speed_table
from smdlab.viz.model import (
    overlap_figure,
    ps_needed_table,
    ratio_figure,
    timeline_figure,
    timeline_spec,
)


def _job(bw: float = 10.0, layers: int = 5) -> Job:
    f = np.linspace(1e-4, 3e-4, layers)
    profile = LayerProfile(
        [f"l{i}" for i in range(layers)], f, 2 * f, np.linspace(4e6, 1e6, layers), network="toy"
    )
    demand = {"gpu": 1, "cpu": 2, "bw_gbps": bw}
    return Job("toy", profile, 1e6, 64, demand, {"cpu": 2, "bw_gbps": bw}, max_workers=6, max_ps=6)


@pytest.mark.parametrize("mode", ["sequential", "wfbp"])
def test_timeline_bars_are_the_model_timeline(mode):
    job = _job()
    fig = timeline_figure(job, 3, 2, mode)
    ref = layer_timeline(job, 3, 2, mode)
    assert [tr.name for tr in fig.data] == ["forward", "backward", "push", "pull"]
    for tr in fig.data:
        part = ref[ref["phase"] == tr.name].sort_values("layer_index")
        order = np.argsort(np.asarray(tr.customdata)[:, 1].astype(int))
        np.testing.assert_allclose(np.asarray(tr.base, dtype=float)[order], part["start"] * 1e3)
        np.testing.assert_allclose(
            (np.asarray(tr.base, dtype=float) + np.asarray(tr.x))[order], part["end"] * 1e3
        )
    # The iteration ends at tau: the solid line and its label.
    tau_ms = iteration_time(job, 3, 2, mode) * 1e3
    assert fig.layout.shapes[1].x0 == pytest.approx(tau_ms)
    assert f"{tau_ms:.1f} ms" in fig.layout.annotations[0].text


def test_wfbp_timeline_overlaps_push_with_backward():
    fig = timeline_figure(_job(), 2, 1, "wfbp")
    backward, push = fig.data[1], fig.data[2]
    first_push = float(np.min(np.asarray(push.base, dtype=float)))
    backward_end = float(np.max(np.asarray(backward.base, dtype=float) + np.asarray(backward.x)))
    assert first_push < backward_end  # the overlap the chart is there to show


def test_prefetch_mode_is_drawn_as_wfbp_with_its_own_period():
    job = _job()
    fig = timeline_figure(job, 2, 2, "wfbp_prefetch")
    assert "prefetch" in fig.layout.title.text
    assert fig.layout.shapes[1].x0 == pytest.approx(
        iteration_time(job, 2, 2, "wfbp_prefetch") * 1e3
    )


def test_spec_is_a_valid_figure_without_a_template():
    spec = timeline_spec(_job(), 2, 1, template=None)
    assert "template" not in spec["layout"]
    go.Figure(spec)  # validates every property


def test_overlap_figure_has_one_panel_per_mode():
    fig = overlap_figure(_job(), 3, 1)
    assert len(fig.data) == 8
    assert {tr.yaxis for tr in fig.data} == {"y", "y2"}
    with pytest.raises(InvalidInput, match="mode"):
        overlap_figure(_job(), 3, 1, modes=("overlapped",))


def test_overlap_figure_draws_prefetch_with_its_own_period():
    from smdlab.model.timing import MODES, iteration_time

    job = _job()
    fig = overlap_figure(job, 3, 1, modes=MODES)
    assert {tr.yaxis for tr in fig.data} == {"y", "y2", "y3"}
    text = " ".join(a.text for a in fig.layout.annotations)
    tau = iteration_time(job, 3, 1, "wfbp_prefetch") * 1e3
    assert f"{tau:.1f}" in text or f"{tau:.0f}" in text


def test_ps_needed_table_reaches_the_threshold_with_the_fewest_ps():
    job = _job(bw=40.0)
    table = ps_needed_table(job, threshold=0.95)
    for row in table.itertuples():
        sp = speed_table(job, row.mode)[row.workers - 1]
        assert sp[row.ps - 1] >= 0.95 * sp.max() - 1e-9
        assert row.ps == 1 or sp[row.ps - 2] < 0.95 * sp.max()
    with pytest.raises(InvalidInput, match="threshold"):
        ps_needed_table(job, threshold=1.5)


def test_ratio_figure_plots_every_mode_twice():
    fig = ratio_figure(_job(), workers=4)
    assert len(fig.data) == 6
    np.testing.assert_allclose(fig.data[0].y, speed_table(_job(), "sequential")[3])
    with pytest.raises(InvalidInput, match="workers"):
        ratio_figure(_job(), workers=99)
