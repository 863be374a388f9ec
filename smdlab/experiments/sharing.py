"""GPU-sharing experiments: the co-location model's validation across seeds.

- ``colocation_seeds``: for several hold-out seeds, each model kind's 5-fold cross-validated MAPE
  on the training pairs (the model-selection criterion) and its hold-out metrics (docs/model.md).
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from smdlab.errors import check_int

HOLDOUT = 0.2  # share of the unordered job-type pairs held out (docs/model.md)


def colocation_seeds(
    seeds: Sequence[int] = (0, 1, 2, 3, 4), *, holdout: float = HOLDOUT, folds: int = 5
) -> pd.DataFrame:
    """Return, per seed and model kind, the CV MAPE on the training pairs and hold-out metrics."""
    from smdlab.model.colocation import (
        COLOCATION_MODELS,
        colocation_metrics,
        cross_validate_colocation,
        fit_colocation_model,
        load_gavel_pairs,
        load_gavel_solo,
        split_pairs,
    )

    pairs, solo = load_gavel_pairs(), load_gavel_solo()
    rows = []
    for seed in seeds:
        seed = check_int("seed", seed, 0)
        test = split_pairs(pairs, holdout, seed)
        cv = cross_validate_colocation(pairs[~test], solo, folds=folds, seed=seed)
        cv_mape = dict(zip(cv["model"], cv["cv_mape_pct"], strict=True))
        for kind in COLOCATION_MODELS:
            model = fit_colocation_model(pairs[~test], solo, kind=kind)
            met = colocation_metrics(model, pairs[test])
            rows.append(
                {
                    "seed": seed,
                    "model": kind,
                    "cv_mape_pct": cv_mape[kind],
                    "holdout_mape_pct": met["mape_pct"],
                    "holdout_fit_accuracy": met["fit_accuracy"],
                    "holdout_fit_accuracy_single_gpu": met["fit_accuracy_single_gpu"],
                }
            )
    return pd.DataFrame(rows)
