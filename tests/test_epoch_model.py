"""Fitted all-reduce epoch models against OMRU's measured V100 epoch times."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import smdlab
from smdlab import InvalidInput
from smdlab.model.epochs import (
    BUNDLED_MATCH,
    fit_layered_epoch_model,
    holdout_report,
    load_epoch_times,
)
from smdlab.model.timing import duration


def test_table_is_the_bundled_copy():
    t = load_epoch_times()
    assert len(t) == 88 and t["model"].nunique() == 11
    assert set(t["num_gpus"]) == set(range(1, 9))


def test_predict_keeps_order_and_unit():
    t = load_epoch_times()
    m = smdlab.fit_epoch_model(t, train_gpus=(1, 2, 4, 8))
    shuffled = t.sample(frac=1.0, random_state=0)
    pred = m.predict(shuffled)
    assert pred.shape == (len(t),)
    for (_, row), p in zip(shuffled.iterrows(), pred):
        assert p == pytest.approx(m.epoch_time(row["model"], row["num_gpus"])[0])
    train = t[t["num_gpus"].isin((1, 2, 4, 8))]
    # three parameters on four points: close, not exact, on the training rows
    err = np.abs(m.predict(train) - train["epoch_time"]) / train["epoch_time"]
    assert err.mean() < 0.05


def test_holdout_mape_target():
    report = holdout_report()
    assert list(report["model"])[-1] == "mean" and len(report) == 12
    assert report["mape"].iloc[-1] <= 8.0


def test_layered_on_bundled_profiles():
    report = holdout_report(form="layered")
    assert set(report["model"][:-1]) == set(BUNDLED_MATCH)
    assert report["mape"].iloc[-1] <= 8.0
    m = fit_layered_epoch_model(load_epoch_times())
    assert set(m.models) == set(BUNDLED_MATCH) and m.notes


def test_job_duration_is_epochs_times_epoch_time():
    m = smdlab.fit_epoch_model(load_epoch_times())
    job = m.job("slowfast", 256, max_workers=32)
    assert job.arch == "allreduce" and job.max_ps == 0
    for g in (1, 3, 4, 5, 8, 16, 32):
        expected = 256 * m.epoch_time("slowfast", g)[0] * 60
        assert duration(job, g, 0) == pytest.approx(expected, rel=1e-9)


@pytest.mark.parametrize(
    "mutate, field",
    [
        (lambda t: t[~((t["model"] == "vgg16") & (t["num_gpus"] == 4))], "missing GPU counts"),
        (lambda t: t.assign(epoch_time=t["epoch_time"].where(t.index != 3, 0.0)), "epoch_time"),
        (lambda t: t.assign(epoch_time=t["epoch_time"].where(t.index != 3, -1.0)), "epoch_time"),
        (lambda t: pd.concat([t, t.iloc[[5]]]), "duplicate"),
        (lambda t: t.drop(columns=["epoch_time"]), "epoch_time"),
        (
            lambda t: t.assign(num_gpus=t["num_gpus"].astype(float).where(t.index != 2, 2.5)),
            "num_gpus",
        ),
    ],
)
def test_bad_tables(mutate, field):
    with pytest.raises(InvalidInput, match=field):
        smdlab.fit_epoch_model(mutate(load_epoch_times()), train_gpus=(1, 2, 4, 8))


def test_bad_train_gpus():
    with pytest.raises(InvalidInput, match="train_gpus"):
        smdlab.fit_epoch_model(load_epoch_times(), train_gpus=(1, 2))
