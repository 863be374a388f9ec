"""interruption_vs_load at the tiny size: every provisioner, the held-out split, the figures."""

from __future__ import annotations

import pytest

from smdlab.errors import InvalidInput
from smdlab.experiments import make_figure
from smdlab.experiments.batch import (
    BASELINES,
    batch_setting,
    fit_wait_predictor,
    interruption_vs_load,
    provisioners,
    run_chains,
    wait_prediction_error,
    wait_training_set,
)
from smdlab.experiments.config import get_config
from smdlab.viz.batch import chain_timeline_figure

pytest.importorskip("sklearn")


@pytest.fixture(scope="module")
def setting():
    cfg = get_config("tiny")
    return batch_setting(cfg, cfg.batch_loads[0])


def test_chains_arrive_in_the_held_out_half(setting):
    assert all(c.arrival >= setting.cut_s for c in setting.chains)
    train = wait_training_set(setting)
    assert len(train) > 50 and (train["submit"] < setting.cut_s).all()
    assert (train["wait_s"] >= 0).all()


def test_held_out_wait_prediction_is_scored_after_the_cut(setting):
    err = wait_prediction_error(setting, "gbr")
    assert err["train_jobs"] + err["test_jobs"] == len(setting.jobs)
    assert err["mae_log"] >= 0 and err["mae_log_mean_baseline"] >= 0


def test_predictor_rejects_an_unknown_kind(setting):
    with pytest.raises(InvalidInput, match="kind must be gbr or rf"):
        fit_wait_predictor(wait_training_set(setting), "svm")


def test_interruption_vs_load_rows_and_figure():
    df = interruption_vs_load("tiny")
    assert list(df["provisioner"]) == [*BASELINES, "learned_gbr", "learned_rf", "dqn"]
    assert (df["zero_interruption_share"].between(0, 1)).all()
    assert (df["overlap_gpu_h"] >= 0).all() and (df["interruption_h"] >= 0).all()
    reactive = df.set_index("provisioner").loc["reactive"]
    assert reactive["reduction"] == 0 and reactive["overlap_gpu_h"] == 0
    # a chain needs 48 h of service: no provisioner completes it sooner
    assert (df["completion_h"] >= 48 - 1e-9).all()
    fig = make_figure("interruption_vs_load", df)
    assert len(fig.data) == 3 * len(df)


def test_timeline_figure_draws_every_link(setting):
    results = {
        p.name: run_chains(setting, p) for p in provisioners(setting, ("reactive", "lead_1h"))
    }
    fig = chain_timeline_figure(results, "c0")
    assert len(fig.data) >= sum(len(r.jobs[r.jobs["chain"] == "c0"]) for r in results.values())
    with pytest.raises(InvalidInput, match="not in every result"):
        chain_timeline_figure(results, "nope")


def test_loads_in_worker_processes_give_the_same_rows():
    cfg = get_config("tiny").replace(batch_loads=(0.6, 0.8))
    names = ("reactive", "oracle", "learned_rf")
    said: list[str] = []
    df = interruption_vs_load(cfg, 2, names, progress=said.append)
    assert df.equals(interruption_vs_load(cfg, 1, names))
    assert [m.split(" (")[0] for m in said] == [
        f"load {x:g}: {n} done" for x in cfg.batch_loads for n in names
    ]
