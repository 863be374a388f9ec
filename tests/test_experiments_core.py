"""The numerical experiments: scenarios, JCT sweeps, optimality gap and their figures (tiny sizes)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from smdlab.errors import InvalidInput
from smdlab.experiments import CONFIGS, get_config, jct_sweep, optimality_gap
from smdlab.experiments.config import ExperimentConfig
from smdlab.experiments.jct import SWEEPS, policies_of, scenario
from smdlab.experiments.scenario import (
    base_cluster,
    batch_jobs,
    comm_comp_ratio,
    with_bandwidth,
    with_comm_scale,
)
from smdlab.model.timing import duration_grid
from smdlab.viz.experiments import gap_figure, jct_sweep_figure, summarise
from smdlab.viz.style import SMD_LABEL

TINY = get_config("tiny")


def test_configs_are_named_and_bad_names_raise():
    assert set(CONFIGS) == {"full", "quick", "tiny"}
    assert get_config(TINY) is TINY
    with pytest.raises(InvalidInput, match="config must be one of"):
        get_config("huge")
    with pytest.raises(InvalidInput, match="seeds"):
        ExperimentConfig(name="x", seeds=())


def test_quick_keeps_every_sweep_but_is_smaller_than_full():
    full, quick = get_config("full"), get_config("quick")
    for spec in SWEEPS.values():
        assert len(getattr(quick, spec.values_field)) >= 2
        assert len(getattr(quick, spec.values_field)) <= len(getattr(full, spec.values_field))
    assert len(quick.seeds) < len(full.seeds)


def test_batch_jobs_are_seeded_and_arrive_together():
    a, b = batch_jobs(TINY, seed=3), batch_jobs(TINY, seed=3)
    assert [j.samples for j in a] == [j.samples for j in b]
    assert [j.profile.network for j in a] == [j.profile.network for j in b]
    assert all(j.arrival == 0.0 for j in a)
    assert [j.samples for j in batch_jobs(TINY, seed=4)] != [j.samples for j in a]


def test_jobs_sweep_batches_are_nested():
    small, _ = scenario(TINY, "jobs", 4, 0)
    large, _ = scenario(TINY, "jobs", 8, 0)
    assert [j.samples for j in large[:4]] == [j.samples for j in small]


def test_bandwidth_variant_changes_speed_not_packing():
    jobs = batch_jobs(TINY, seed=0)
    slow, fast = with_bandwidth(jobs, 1.0), with_bandwidth(jobs, 40.0)
    assert [j.samples for j in slow] == [j.samples for j in jobs]
    d_slow = duration_grid(slow)[:, 0, 0]
    d_fast = duration_grid(fast)[:, 0, 0]
    assert np.all(d_fast <= d_slow + 1e-9) and np.any(d_fast < d_slow)
    # The servers' NICs scale with the tasks' reservations: the same number of tasks fits.
    c1, c40 = base_cluster(TINY, task_bw_gbps=1.0), base_cluster(TINY, task_bw_gbps=40.0)
    assert c40.capacity["bw_gbps"] / 40.0 == pytest.approx(c1.capacity["bw_gbps"] / 1.0)


def test_comm_scale_scales_the_ratio_linearly():
    job = batch_jobs(TINY, seed=0)[0]
    r1 = comm_comp_ratio(job)
    assert comm_comp_ratio(with_comm_scale([job], 4.0)[0]) == pytest.approx(4.0 * r1)


def test_jct_sweep_rows_and_lower_bound():
    df = jct_sweep("machines", TINY)
    spec = SWEEPS["machines"]
    assert list(df.columns[:4]) == [spec.column, "seed", "policy", "label"]
    assert len(df) == len(TINY.machines_values) * len(TINY.seeds) * len(policies_of(TINY))
    assert (df["jobs_completed"] == df["jobs"]).all()
    assert set(df.loc[df["policy"] == "smd", "label"]) == {SMD_LABEL}
    # No policy can beat every job running alone at its fastest configuration.
    for (machines, seed), part in df.groupby([spec.column, "seed"]):
        jobs, _cluster = scenario(TINY, "machines", machines, seed)
        fastest = np.nanmin(duration_grid(jobs).reshape(len(jobs), -1), axis=1)
        assert (part["mean_jct_s"] >= fastest.mean() * (1 - 1e-9)).all()
        # the schedule bound (docs/bound.md): one value per point, below every policy's mean JCT
        lb = part["mean_jct_lower_bound_s"].dropna()
        assert len(lb) and lb.nunique() == 1
        assert (part["mean_jct_s"] >= lb.iloc[0] * (1 - 1e-7)).all()
        assert lb.iloc[0] >= fastest.mean() * (1 - 1e-7)
    assert df.attrs["x"] == spec.column


def test_jct_sweep_is_deterministic_and_bad_sweep_raises():
    a = jct_sweep("bandwidth", TINY)
    b = jct_sweep("bandwidth", TINY)
    pd.testing.assert_frame_equal(a, b)
    with pytest.raises(InvalidInput, match="sweep must be one of"):
        jct_sweep("latency", TINY)


def test_gap_is_nonnegative_against_milp_and_lp():
    df = optimality_gap(TINY)
    assert len(df) == len(TINY.gap_sizes) * len(TINY.gap_seeds) * 5
    optimal = df["milp_status"] == "optimal"
    assert optimal.any()
    assert (df.loc[optimal, "gap_to_milp"] >= -1e-9).all()
    assert (df["gap_to_lp"] >= -1e-9).all()
    assert (df["milp_objective"] >= df["lp_bound"] * (1 - 1e-9)).all()
    assert (df["jobs_started"] <= df["n_jobs"]).all()
    assert set(df["variant"]) == {"smd", "smd_iteration", "smd_exact", "smd_greedy", "lp_round"}


def test_summarise_aggregates_over_seeds():
    df = pd.DataFrame(
        {"x": [1, 1, 2, 2], "policy": ["a", "a", "a", "a"], "y": [1.0, 3.0, 5.0, 5.0]}
    )
    s = summarise(df, "x", "y")
    assert s["mean"].tolist() == [2.0, 5.0]
    assert s["sem"].tolist() == pytest.approx([1.0, 0.0])
    assert s["count"].tolist() == [2, 2]


def test_jct_figure_has_a_jct_and_a_gpu_utilisation_panel_per_policy():
    df = jct_sweep("jobs", TINY)
    fig = jct_sweep_figure(df)
    bound = [t for t in fig.data if t.name == "lower bound: mean JCT of any schedule"]
    top = [t for t in fig.data if t.yaxis == "y" and t not in bound]
    bottom = [t for t in fig.data if t.yaxis == "y2"]
    assert len(top) == len(bottom) == len(policies_of(TINY))
    assert len(bound) == 1 and bound[0].yaxis == "y"
    lb = df.groupby(["n_jobs", "seed"])["mean_jct_lower_bound_s"].max().groupby(level=0).mean()
    assert np.allclose(bound[0].y, lb.to_numpy() / 3600)
    assert all(np.all(bound[0].y <= t.y * (1 + 1e-7)) for t in top)
    assert top[0].name == f"{SMD_LABEL} · elastic"  # drawn first, wide, under the baselines
    by_policy = df[df["policy"] == "smd"].groupby("n_jobs")
    assert np.allclose(top[0].y, by_policy["mean_jct_s"].mean().to_numpy() / 3600)
    assert np.allclose(bottom[0].y, 100 * by_policy["util_gpu"].mean().to_numpy())
    assert (df["execution"] == df["policy"].map({"fifo": "non_elastic"}).fillna("elastic")).all()
    single = jct_sweep_figure(df, util=None)
    assert len(single.data) == len(top) + 1  # the JCT panel alone, with the bound
    with pytest.raises(InvalidInput, match="lacks column"):
        jct_sweep_figure(df.drop(columns=["mean_jct_s"]))


def test_gap_figure_has_two_panels():
    df = optimality_gap(TINY)
    fig = gap_figure(df)
    assert {t.xaxis for t in fig.data} == {"x", "x2"}
    assert any(SMD_LABEL in (t.name or "") for t in fig.data)
    assert not math.isnan(max(max(t.y) for t in fig.data))


def test_validation_points_reproduce_holdout_report():
    from smdlab.experiments import model_validation
    from smdlab.experiments.validation import mape_by_network, validation_data
    from smdlab.model.speed_fit import holdout_report
    from smdlab.viz.experiments import validation_figure

    df = model_validation(TINY)
    assert set(df["model"]) == set(TINY.validation_models)
    assert (df["measured_speed"] > 0).all() and np.isfinite(
        df[["predicted_layered", "predicted_optimus"]]
    ).all().all()
    ours = mape_by_network(df).set_index("model")
    ref = holdout_report(
        validation_data(TINY), seed=TINY.validation_seed, mode=TINY.mode
    ).set_index("model")
    for col in ("n_test", "mape_layered", "mape_optimus"):
        assert np.allclose(ours[col], ref.loc[ours.index, col]), col
    fig = validation_figure(df)
    assert "MAPE" in fig.layout.annotations[0].text
    with pytest.raises(InvalidInput, match="validation_models"):
        model_validation(TINY.replace(validation_models=("nope",)))


def test_comm_scale_k_equals_bandwidth_over_k():
    """In the model a push takes bytes / bandwidth (no latency): k times the bytes is 1/k the bandwidth."""
    from smdlab.experiments.jct import _point

    policies = ("fifo", "smd")
    for k in (4.0, 0.5):
        comm = _point((TINY, "comm_scale", k, 0, policies))
        bw = _point((TINY, "bandwidth", TINY.task_bw_gbps / k, 0, policies))
        for a, b in zip(comm, bw):
            assert a["policy"] == b["policy"]
            assert a["mean_jct_s"] == pytest.approx(b["mean_jct_s"], rel=1e-9)
            assert a["comm_comp_ratio"] == pytest.approx(b["comm_comp_ratio"], rel=1e-12)
