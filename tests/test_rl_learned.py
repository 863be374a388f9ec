"""The learned_vs_heuristics and learning_curves figures (smdlab.experiments.learned, docs/rl.md)."""

from __future__ import annotations

import math

import pandas as pd
import pytest

pytest.importorskip("gymnasium")

from smdlab.errors import InvalidInput
from smdlab.experiments import list_figures
from smdlab.experiments.config import get_config
from smdlab.experiments.learned import (
    CONTROL,
    HEURISTICS,
    learned_policies,
    learned_vs_heuristics,
    learning_curves,
    philly_learning_scenario,
)
from smdlab.paths import data_dir
from smdlab.viz.learned import learned_vs_heuristics_figure, learning_curves_figure


def test_both_figures_are_registered_and_dl2_is_learned():
    assert {"learned_vs_heuristics", "learning_curves", "deeprm_slowdown_vs_load"} <= set(
        list_figures()
    )
    assert learned_policies()[0] == "dl2"


def test_learned_vs_heuristics_runs_every_policy_on_both_workloads():
    cfg = get_config("tiny").replace(learned_philly_jobs=6)
    df = learned_vs_heuristics(cfg)
    policies = [*learned_policies(), *HEURISTICS, "drf@slot"]
    workloads = list(df["workload"].unique())
    assert workloads[0] == "dl2_small: held-out seeds" and workloads[-1] == "Philly window"
    for _, part in df.groupby("workload"):
        # the control learner's rows follow where its actor is shipped (data/control/)
        assert [p for p in part["policy"] if p != CONTROL] == policies
    controls = df[df["policy"] == CONTROL]
    shipped = {
        w
        for w in ("dl2_small", "locality_small", "philly")
        if (data_dir() / "control" / w / "weights.npz").is_file()
    }
    assert {n.removeprefix("trained on ") for n in controls["note"]} == shipped
    assert controls["mean_jct_s"].gt(0).all()
    held = df[df["workload"] != "Philly window"]
    assert set(held["seed"]) == {1000}  # held-out: training draws seeds 0-99
    assert df.loc[df["policy"] == "drf", "mean_jct_s"].gt(0).all()
    # a row is a JCT or a one-line reason, never both empty
    assert all(math.isfinite(v) or note for v, note in zip(df["mean_jct_s"], df["note"].fillna("")))
    fig = learned_vs_heuristics_figure(df)
    assert len(fig.data) == len(workloads)
    assert fig.data[0].text[len(learned_policies())] == "DRF"


def test_philly_window_has_elastic_ps_jobs_on_the_training_cluster():
    sc = philly_learning_scenario(8)
    cluster = sc.build_cluster()
    jobs = sc.build_jobs(cluster)
    assert len(jobs) == 8 and not any(j.gang for j in jobs)
    assert len(cluster.machines) == 4 and all(j.max_ps >= 1 for j in jobs)


def test_learning_curves_read_the_shipped_logs():
    df = learning_curves()
    assert set(df["agent"]) <= set(learned_policies()) and "dl2" in set(df["agent"])
    # the library runs log PPO's episodes and their warm-up teacher's, no validation runs
    assert {"train", "warmup"} <= set(df["kind"])
    assert df["mean_jct"].gt(0).all()
    fig = learning_curves_figure(df)
    assert len(fig.data) >= 2
    assert any(t.name == "the warm-up's teacher, training episodes" for t in fig.data)


def test_figure_builders_refuse_frames_without_their_columns():
    with pytest.raises(InvalidInput, match="lacks column"):
        learned_vs_heuristics_figure(pd.DataFrame({"policy": ["drf"]}))
    with pytest.raises(InvalidInput, match="has no rows"):
        learning_curves_figure(pd.DataFrame(columns=["agent", "update", "kind", "mean_jct"]))
