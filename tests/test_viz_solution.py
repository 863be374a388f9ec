"""Figures of allocation results: allocation per job, JCT bounds, the SMD trace, the decomposition."""

from __future__ import annotations

import dataclasses

import numpy as np
import plotly.graph_objects as go
import pytest

from smdlab import Cluster, InvalidInput
from smdlab.solve import build_instance, solve
from smdlab.testing import random_job
from smdlab.viz.decomposition import ratio_table, speed_heatmap_figure, subproblem_step
from smdlab.viz.solution import (
    allocation_figure,
    allocation_spec,
    bounds_figure,
    bounds_spec,
    resource_shares,
    smd_trace_figure,
)
from smdlab.viz.style import SMD_LABEL


@pytest.fixture(scope="module")
def case():
    rng = np.random.default_rng(7)
    jobs = [random_job(rng, f"j{i}") for i in range(4)]
    cluster = Cluster.pooled(("gpu", "cpu", "bw_gbps"), gpu=8, cpu=24, bw_gbps=120)
    smd = solve(jobs, cluster, "smd")
    exact = solve(jobs, cluster, "milp")
    return jobs, cluster, smd, exact


def test_allocation_figure_shows_the_solution(case):
    jobs, cluster, smd, _ = case
    fig = allocation_figure(smd, jobs, cluster)
    workers, ps = fig.data[0], fig.data[1]
    assert list(workers.x) == list(smd.jobs)
    np.testing.assert_array_equal(workers.y, smd.workers)
    np.testing.assert_array_equal(ps.y, smd.ps)
    np.testing.assert_array_equal(ps.base, smd.workers)  # PSs stacked on the workers
    assert SMD_LABEL in fig.layout.title.text
    # One bar trace per resource, and no resource is used beyond the cluster's capacity.
    shares = resource_shares(smd, jobs, cluster)
    assert [tr.name for tr in fig.data[2:]] == ["GPU", "CPU", "NIC bandwidth"]
    assert np.all(shares.sum(axis=0) <= 1 + 1e-9)
    np.testing.assert_allclose(fig.data[2].y, shares[:, 0] * 100)


def test_allocation_figure_without_cluster_has_one_panel(case):
    jobs, cluster, smd, _ = case
    assert len(allocation_figure(smd).data) == 2
    with pytest.raises(InvalidInput, match="missing"):
        allocation_figure(smd, jobs[:2], cluster)
    with pytest.raises(InvalidInput, match="Solution"):
        allocation_figure({"workers": [1]})


def test_bounds_figure_orders_bound_achieved_and_optimum(case):
    _, _, smd, exact = case
    fig = bounds_figure(smd, exact)
    tr = fig.data[0]
    assert list(tr.x) == ["LP lower bound", SMD_LABEL, "exact MILP"]
    lower, achieved, optimum = tr.y
    assert lower == pytest.approx(smd.lower_bound)
    assert achieved == pytest.approx(smd.objective)
    assert optimum == pytest.approx(exact.objective)
    assert lower <= optimum + 1e-6 <= achieved + 2e-6
    assert "optimal" in tr.text[2]


def test_figures_and_explorer_name_the_bound_the_solution_carries(case):
    # A Lagrangian bound was drawn and named "LP lower bound": the label follows bound_kind now.
    from smdlab.widgets.explorer_panels import StatusLineMixin
    from smdlab.widgets.scenario import default_settings

    jobs, cluster, smd, exact = case
    lag = solve(jobs, cluster, "smd", bound_method="lagrangian")
    assert (smd.bound_kind, lag.bound_kind, exact.bound_kind) == ("lp", "lagrangian", "milp")
    assert bounds_figure(lag, exact).data[0].x[0] == "Lagrangian bound"
    assert [tr.name for tr in smd_trace_figure(lag, exact).data][2] == "Lagrangian bound"
    # the larger of several bounds is drawn, under its own name
    assert bounds_figure([lag, exact]).data[0].x[0] == (
        "MILP bound" if exact.lower_bound > lag.lower_bound else "Lagrangian bound"
    )
    unbounded = solve(jobs, cluster, "smd", bound=False)
    assert unbounded.bound_kind == "" and bounds_figure(unbounded).data[0].x[0] == "lower bound"
    line = StatusLineMixin()  # the explorer's headline reads only these attributes
    line.settings, line.solution, line.exact_solution = default_settings(), lag, None
    assert "gap to Lagrangian bound" in line.headline()


def test_bounds_figure_marks_a_missing_or_unproven_optimum(case):
    _, _, smd, exact = case
    pending = bounds_figure(smd, exact_note="solving…").data[0]
    assert pending.text[-1] == "solving…"
    assert pending.marker.symbol[-1] == "circle-open"
    unproven = dataclasses.replace(exact, status="time_limit")
    marked = bounds_figure(smd, unproven).data[0]
    assert "not proven optimal" in marked.text[-1] and marked.marker.symbol[-1] == "diamond-open"


def test_specs_are_valid_figures(case):
    jobs, cluster, smd, exact = case
    go.Figure(allocation_spec(smd, jobs, cluster, template=None))
    go.Figure(bounds_spec([smd], exact, template=None))


def test_smd_trace_figure_plots_every_iteration(case):
    _, _, smd, exact = case
    fig = smd_trace_figure(smd, exact)
    trace = smd.trace_frame()
    np.testing.assert_allclose(fig.data[0].y, trace["psi_norm"])
    np.testing.assert_allclose(fig.data[1].y, trace["objective"])
    assert fig.layout.yaxis.type == "log"
    assert fig.data[2].name == "LP lower bound" and fig.data[3].name == "exact MILP"
    with pytest.raises(InvalidInput, match="smd"):
        smd_trace_figure(exact)


def test_one_subproblem_never_worsens_the_sum_of_ratios_here(case):
    jobs, cluster, _, exact = case
    inst = build_instance(jobs, cluster, cluster.capacity_vector)
    ones = np.ones(inst.n, dtype=int)
    table = ratio_table(inst, ones, ones)
    np.testing.assert_allclose(table["ratio"], inst.duration[:, 0, 0] * inst.weight)
    step, w, p = subproblem_step(inst, ones, ones)
    use = w @ inst.alpha + p @ inst.gamma
    assert np.all(use <= inst.capacity + 1e-9)
    # SUB maximises the lambda-weighted speeds, so the start allocation scores no higher.
    assert (step["lambda"] * step["new_speed"]).sum() >= (
        step["lambda"] * step["speed"]
    ).sum() - 1e-9
    assert step["new_ratio"].sum() >= exact.objective - 1e-6  # the optimum bounds every allocation
    fig = speed_heatmap_figure(inst, 0, {"start": (1, 1), "SUB": (int(w[0]), int(p[0]))})
    assert fig.data[0].z.shape == (jobs[0].max_workers, jobs[0].max_ps) and len(fig.data) == 3
    with pytest.raises(InvalidInput, match="one value per job"):
        ratio_table(inst, [1], [1])
