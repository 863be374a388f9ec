"""The closed-form schedule bound: below the interval-LP bound the explorer refines it with, and below every simulated schedule."""

from __future__ import annotations

import math

import pytest
from test_schedule_bound import _batch

from smdlab.sim import simulate
from smdlab.sim.bound import closed_form_bound
from smdlab.solve.schedule_bound import mean_jct_lower_bound, optimal_batch_mean_jct
from smdlab.widgets.scenario import ExplorerSettings, build_cluster, build_jobs

REL = 1e-7
POLICIES = ("smd", "srtf", "fifo", "drf", "optimus", "tiresias", "tetris")


@pytest.mark.parametrize("seed", range(8))
def test_closed_form_bound_is_below_the_refined_bound_and_every_simulated_schedule(seed):
    # property over random batches and workloads with arrival dates
    jobs, cluster = _batch(seed, 3 + seed % 3, arrivals=seed % 2 == 1)
    cheap = closed_form_bound(jobs, cluster)
    lp = mean_jct_lower_bound(jobs, cluster, ratio=1.25, weights=[1.0] * len(jobs)).value
    refined = max(cheap, lp)  # what the explorer draws once the LP is back
    assert 0 < cheap <= refined
    for policy in POLICIES:
        res = simulate(jobs, cluster, policy, record_history=False)
        assert res.summary["jobs_completed"] == len(jobs), policy
        assert refined <= res.summary["mean_jct"] * (1 + REL), policy


@pytest.mark.parametrize("seed", range(4))
def test_closed_form_bound_is_below_the_exact_optimum_of_tiny_batches(seed):
    jobs, cluster = _batch(seed, 3 + seed % 2, arrivals=False)
    optimum, _ = optimal_batch_mean_jct(jobs, cluster)
    assert closed_form_bound(jobs, cluster) <= optimum * (1 + REL)


def test_explorer_scenarios_bound_their_simulations():
    s = ExplorerSettings(machines=2, n_jobs=6, max_tasks=6, seed=3)
    for settings in (s, s.replace(bandwidth_gbps=2.0), s.replace(arch="allreduce")):
        jobs, cluster = build_jobs(settings), build_cluster(settings)
        cheap = closed_form_bound(jobs, cluster, settings.mode)
        for policy in ("smd", "fifo"):
            res = simulate(jobs, cluster, policy, mode=settings.mode, record_history=False)
            assert 0 < cheap <= res.summary["mean_jct"] * (1 + REL)


def test_no_bound_when_a_job_fits_nowhere_or_there_are_no_jobs():
    s = ExplorerSettings(
        machines=1, n_jobs=2, shape="2 GPU · 16 CPU · 64 GB", profiles=("alexnet",)
    )
    assert math.isnan(closed_form_bound(build_jobs(s), build_cluster(s)))
    assert math.isnan(closed_form_bound([], build_cluster(s)))
