"""The ``philly_window`` figure: FIFO, SJF, SRTF and Tiresias on the default Philly window (tiny config)."""

from __future__ import annotations

import io

import numpy as np
import pandas as pd
import pytest

from smdlab.experiments import list_figures
from smdlab.experiments.philly import PHILLY_POLICIES, philly_scenario
from smdlab.experiments.reproduce import csv_bytes, make_figure, run_experiment


@pytest.fixture(scope="module")
def tiny() -> pd.DataFrame:
    return run_experiment("philly_window", "tiny")


def test_full_config_runs_the_documented_window():
    sc = philly_scenario("full")
    assert sc.workload["kind"] == "philly"
    assert (sc.workload["start"], sc.workload["jobs"], sc.workload["load"]) == (60000, 2000, 10)
    assert sc.workload["demands"] == "gpu_only"
    assert sc.cluster["machines"] == 64
    assert sc.simulation["restart_s"] == 0
    small = philly_scenario("tiny")
    assert (small.workload["start"], small.workload["load"]) == (60000, 10)
    assert (small.workload["jobs"], small.cluster["machines"]) == (24, 4)


def test_one_row_per_policy_with_consistent_jct_statistics(tiny):
    assert "philly_window" in list_figures()
    assert list(tiny["policy"]) == list(PHILLY_POLICIES)
    assert (tiny["jobs"] == 24).all() and (tiny["jobs_completed"] == 24).all()
    assert (tiny["machines"] == 4).all()
    qcols = [c for c in tiny.columns if c.startswith("jct_q")]
    assert len(qcols) == 21
    for _, row in tiny.iterrows():
        q = row[qcols].to_numpy(dtype=float)
        assert np.all(np.diff(q) >= 0)  # a CDF
        assert q[0] > 0
        assert row["jct_q0.5_s"] == pytest.approx(row["median_jct_s"])
        assert q[0] <= row["mean_jct_s"] <= q[-1]
        assert row["median_jct_s"] <= row["p95_jct_s"] <= q[-1]
        assert 0 < row["util_gpu"] <= 1
    # Each policy runs in the mode its paper gives it.
    modes = dict(zip(tiny["policy"], tiny["execution"], strict=True))
    assert modes["fifo"] == "non_elastic" and modes["tiresias"] == "preemptive"


def test_figure_draws_three_panels_the_same_from_its_csv(tiny):
    fig = make_figure("philly_window", tiny)
    back = pd.read_csv(io.BytesIO(csv_bytes(tiny)))
    again = make_figure("philly_window", back)
    assert fig.layout.title.text == again.layout.title.text
    assert "24 jobs on 4 machines" in fig.layout.title.text
    cdf = [t for t in fig.data if t.type == "scatter" and t.showlegend is not False]
    assert [t.name for t in cdf] == list(tiny["label"])
    bars = [t for t in fig.data if t.type == "bar"]
    assert len(bars) == 2
    assert np.allclose(bars[1].y, 100 * tiny["util_gpu"].to_numpy())
