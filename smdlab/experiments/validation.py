"""Model validation: the layered model and Optimus' form, fitted to measured PS speeds, on held-out points.

Exactly the procedure of ``smdlab.model.speed_fit.holdout_report`` (failed runs dropped, seeded split per
network, both forms fitted to the same training rows), kept point by point: one row per held-out
measurement with both predictions, so the figure can show measured against predicted.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from smdlab.errors import InvalidInput
from smdlab.experiments.config import ExperimentConfig, get_config

VALIDATION_COLUMNS = (
    "model",
    "batch_size",
    "num_ps",
    "num_workers",
    "measured_speed",
    "predicted_layered",
    "predicted_optimus",
    "error_layered_pct",
    "error_optimus_pct",
)


def validation_data(config: ExperimentConfig) -> pd.DataFrame:
    """The measured speeds the configuration validates on (failed runs, speed <= 0, removed)."""
    from smdlab.model.speed_fit import load_measurements

    df = load_measurements()
    if config.validation_models is not None:
        unknown = sorted(set(config.validation_models) - set(df["model"]))
        if unknown:
            known = ", ".join(sorted(set(df["model"])))
            raise InvalidInput(f"validation_models must be among {known}; got {unknown[0]!r}")
        df = df[df["model"].isin(config.validation_models)]
    return df[df["total_speed"] > 0]


def model_validation(config: str | ExperimentConfig = "quick") -> pd.DataFrame:
    """Measured versus predicted speed of every held-out measurement, for the layered and the Optimus form."""
    from smdlab.model.speed_fit import fit_speed_form, holdout_split

    cfg = get_config(config)
    data = validation_data(cfg)
    train, test = holdout_split(data, cfg.validation_seed, cfg.validation_test_fraction)
    out = test[["model", "batch_size", "num_ps", "num_workers"]].copy()
    out["measured_speed"] = test["total_speed"].to_numpy(dtype=float)
    for form in ("layered", "optimus"):
        fit = fit_speed_form(
            train, form, convention="global", mode=cfg.mode, seed=cfg.validation_seed
        )
        pred = fit.predict(test)
        out[f"predicted_{form}"] = pred
        out[f"error_{form}_pct"] = (pred / out["measured_speed"].to_numpy() - 1.0) * 100.0
    out = out.sort_values(
        ["model", "num_workers", "num_ps", "batch_size"], kind="stable"
    ).reset_index(drop=True)
    out = out[list(VALIDATION_COLUMNS)]
    out.attrs.update(experiment="model_validation", config=cfg.name)
    return out


def mape_by_network(df: pd.DataFrame) -> pd.DataFrame:
    """Held-out MAPE (%) of both forms per network (as ``holdout_report`` gives it), from a validation frame."""
    g = df.groupby("model", sort=True)
    return pd.DataFrame(
        {
            "n_test": g.size(),
            "mape_layered": g["error_layered_pct"].apply(lambda e: float(np.mean(np.abs(e)))),
            "mape_optimus": g["error_optimus_pct"].apply(lambda e: float(np.mean(np.abs(e)))),
        }
    ).reset_index()
