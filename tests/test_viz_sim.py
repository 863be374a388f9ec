"""Figures of simulation runs: JCT CDFs, the per-policy summary, utilisation, the job Gantt chart."""

from __future__ import annotations

import numpy as np
import pytest

from smdlab import Cluster, InvalidInput
from smdlab.sim import simulate
from smdlab.testing import random_job
from smdlab.viz.sim import (
    jct_cdf_figure,
    job_gantt_figure,
    policy_summary_figure,
    utilisation_figure,
)
from smdlab.viz.style import SMD_LABEL

HOUR = 3600.0


@pytest.fixture(scope="module")
def runs():
    rng = np.random.default_rng(3)
    jobs = [random_job(rng, f"j{i}", arrival=float(30 * i), samples=2e5) for i in range(6)]
    cluster = Cluster.homogeneous(1, gpu=4, cpu=16, mem_gb=64, bw_gbps=60)
    return {p: simulate(jobs, cluster, p) for p in ("fifo", "smd")}


def test_cdf_steps_through_every_completed_job(runs):
    fig = jct_cdf_figure(runs)
    assert [tr.name for tr in fig.data] == ["fifo", SMD_LABEL]
    for tr, r in zip(fig.data, runs.values()):
        jct = np.sort(r.jobs.loc[r.jobs["status"] == "completed", "jct"].to_numpy()) / HOUR
        np.testing.assert_allclose(tr.x, jct)
        assert tr.y[-1] == pytest.approx(1.0) and np.all(np.diff(tr.y) > 0)


def test_summary_bars_are_the_summary_metrics(runs):
    fig = policy_summary_figure(list(runs.values()))
    assert [tr.name for tr in fig.data] == ["mean", "median", "95th percentile"]
    np.testing.assert_allclose(fig.data[0].y, [r.summary["mean_jct"] / HOUR for r in runs.values()])


def test_utilisation_figure_is_the_step_function(runs):
    r = runs["smd"]
    fig = utilisation_figure(r)
    resources = [c for c in r.utilization.columns if c not in ("time", "running", "queued")]
    assert len(fig.data) == len(resources) + 2
    np.testing.assert_allclose(fig.data[0].y, r.utilization[resources[0]] * 100)
    assert all(tr.line.shape == "hv" for tr in fig.data)


def test_gantt_has_a_bar_per_running_segment(runs):
    r = runs["fifo"]
    fig = job_gantt_figure(r)
    waiting, running = fig.data
    assert len(running.x) == len(r.history)
    np.testing.assert_allclose(
        np.asarray(running.x, dtype=float), (r.history["end"] - r.history["start"]) / HOUR
    )
    assert np.all(np.asarray(waiting.x, dtype=float) >= 0)
    assert len(job_gantt_figure(r, max_jobs=2).layout.yaxis.categoryarray) == 2


def test_bad_results_are_refused():
    with pytest.raises(InvalidInput, match="SimResult"):
        jct_cdf_figure([1, 2])
    with pytest.raises(InvalidInput, match="SimResult"):
        jct_cdf_figure({})
