"""The sweep table: SMD against the best baseline and the bound, from a figure's CSV."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from smdlab.errors import InvalidInput
from smdlab.experiments.sweep_table import sweep_table, sweep_table_frame


def _csv(tmp_path, rows) -> None:
    cols = ["n_jobs", "seed", "policy", "mean_jct_s", "mean_jct_lower_bound_s"]
    pd.DataFrame(rows, columns=cols).to_csv(tmp_path / "jct_vs_jobs.csv", index=False)


def test_ratios_average_seeds_and_skip_the_per_decision_milp(tmp_path) -> None:
    _csv(
        tmp_path,
        [
            (8, 0, "smd", 90.0, 50.0),
            (8, 1, "smd", 110.0, 50.0),
            (8, 0, "drf", 120.0, 50.0),
            (8, 1, "drf", 80.0, 50.0),
            (8, 0, "fifo", 300.0, 50.0),
            (8, 1, "fifo", 300.0, 50.0),
            (8, 0, "milp", 10.0, 50.0),
            (8, 1, "milp", 10.0, 50.0),
        ],
    )
    df = sweep_table_frame(tmp_path)
    assert len(df) == 1
    row = df.iloc[0]
    assert row.sweep == "jct_vs_jobs" and row.best_baseline == "drf"
    assert math.isclose(row.smd_over_best, 1.0) and math.isclose(row.smd_over_bound, 2.0)
    assert "| jct_vs_jobs | 8 | 100 | drf | 100 | 1.00 | 50 | 2.00 |" in sweep_table(tmp_path)


def test_no_csv_is_one_clear_error(tmp_path) -> None:
    with pytest.raises(InvalidInput, match="no jct_vs"):
        sweep_table_frame(tmp_path)
