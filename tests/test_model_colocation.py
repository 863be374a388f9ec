"""Co-location model: fit on Gavel pairs, predict unseen pairs, validation of bad tables."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import smdlab
from smdlab.errors import InvalidInput
from smdlab.model.colocation import (
    colocation_metrics,
    cross_validate_colocation,
    fit_colocation_model,
    load_gavel_pairs,
    load_gavel_solo,
    split_pairs,
)


@pytest.fixture(scope="module")
def data() -> tuple[pd.DataFrame, pd.DataFrame, np.ndarray]:
    pairs, solo = load_gavel_pairs(), load_gavel_solo()
    return pairs, solo, split_pairs(pairs, 0.2, seed=0)


@pytest.fixture(scope="module")
def models(data):
    pairs, solo, test = data
    return {
        k: fit_colocation_model(pairs[~test], solo, kind=k)
        for k in ("factorised", "factorised_no_overhead", "log_additive")
    }


def test_top_level_export_is_the_function():
    assert smdlab.fit_colocation_model is fit_colocation_model


def test_split_is_by_pair_and_seeded(data):
    pairs, _, test = data
    key = lambda df: set(zip(np.minimum(df.job_a, df.job_b), np.maximum(df.job_a, df.job_b)))  # noqa: E731
    assert not key(pairs[test]) & key(pairs[~test])
    assert np.array_equal(test, split_pairs(pairs, 0.2, seed=0))
    assert not np.array_equal(test, split_pairs(pairs, 0.2, seed=1))


def test_predict_shape_order_and_zero_for_no_fit(data, models):
    pairs, _, test = data
    held = pairs[test].iloc[::-1]
    pred = models["factorised"].predict(held)
    assert list(pred.columns) == ["steps_per_s_a", "steps_per_s_b"]
    assert pred.index.equals(held.index)
    assert (pred.to_numpy() >= 0).all()
    multi = (held.scale_factor_a > 1).to_numpy()
    assert (pred.to_numpy()[multi] == 0).all()  # never measured fitting: predicted not to fit
    single_fit = ((held.scale_factor_a == 1) & (held.steps_per_s_a > 0)).to_numpy()
    assert (pred.to_numpy()[single_fit] > 0).mean() > 0.9


def test_factorised_beats_baseline_on_holdout(data, models):
    pairs, _, test = data
    fac = colocation_metrics(models["factorised"], pairs[test])
    base = colocation_metrics(models["log_additive"], pairs[test])
    plain = colocation_metrics(models["factorised_no_overhead"], pairs[test])
    assert fac["mape_pct"] < plain["mape_pct"] < base["mape_pct"]
    assert fac["mape_pct"] <= 12.0  # the accuracy target (docs/model.md, seeds 0-4)
    assert fac["fit_accuracy"] >= 0.9 and fac["fit_accuracy_single_gpu"] >= 0.9


def test_colocated_rate_never_above_solo_much(data, models):
    pairs, solo, test = data
    held = pairs[test & (pairs.scale_factor_a == 1).to_numpy()]
    pred = models["factorised"].predict(held)
    s = solo.set_index(["gpu_type", "placement", "job_type", "scale_factor"]).steps_per_s
    solo_a = s.loc[list(zip(held.gpu_type, held.placement, held.job_a, held.scale_factor_a))]
    assert (pred.steps_per_s_a.to_numpy() <= solo_a.to_numpy() * (1 + 1e-9)).all()


def test_bad_tables_one_line(data):
    pairs, solo, _ = data
    bad = pairs.head(20).copy()
    bad.loc[bad.index[0], "steps_per_s_a"] = -1.0
    with pytest.raises(InvalidInput, match="steps_per_s_a must be numbers >= 0"):
        fit_colocation_model(bad, solo)
    dup = pd.concat([pairs.head(5), pairs.head(1)])
    with pytest.raises(InvalidInput, match="duplicate pair"):
        fit_colocation_model(dup, solo)
    swapped = pairs.head(3).copy()
    row = swapped.iloc[[1]].rename(columns={"job_a": "job_b", "job_b": "job_a"})
    with pytest.raises(InvalidInput, match="duplicate pair"):
        fit_colocation_model(pd.concat([swapped, row]), solo)
    orphan = pairs.head(5).copy()
    orphan.loc[orphan.index[0], "job_b"] = "NoSuchNet"
    with pytest.raises(InvalidInput, match="has no solo row"):
        fit_colocation_model(orphan, solo)
    with pytest.raises(InvalidInput, match="lacks columns"):
        fit_colocation_model(pairs.drop(columns="job_b"), solo)
    with pytest.raises(InvalidInput, match="kind must be one of"):
        fit_colocation_model(pairs, solo, kind="magic")


def test_overhead_is_a_cost(models):
    assert (models["factorised"].params["overhead"] >= 0).all()
    assert "overhead" not in models["factorised_no_overhead"].params


def test_cross_validation_uses_only_given_pairs_and_checks_folds(data):
    pairs, solo, test = data
    train = pairs[~test]
    cv = cross_validate_colocation(train, solo, folds=2, kinds=("log_additive",))
    assert list(cv["model"]) == ["log_additive"]
    assert 0 < cv["cv_mape_pct"].iloc[0] < 100
    with pytest.raises(InvalidInput, match="folds must be"):
        cross_validate_colocation(train, solo, folds=1)
    with pytest.raises(InvalidInput, match="kind must be one of"):
        cross_validate_colocation(train, solo, kinds=("magic",))
