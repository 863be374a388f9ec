"""Notebook 02's payoff rows and their takeaway: both problems priced alike, text from the table."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from smdlab.errors import InvalidInput
from smdlab.model.cluster import Cluster
from smdlab.solve.payoff import payoff_row
from smdlab.solve.placement_milp import placement_instance
from smdlab.testing import random_job
from smdlab.viz.takeaways import payoff_by_problem


def test_a_pooled_row_compares_smd_with_the_milp_bound():
    rng = np.random.default_rng(1)
    jobs = [random_job(rng, f"j{i}") for i in range(6)]
    cluster = Cluster.pooled(("gpu", "cpu", "bw_gbps"), gpu=12, cpu=40, bw_gbps=260)
    row = payoff_row("pooled", jobs, cluster, 30)
    assert row["exact status"] == "optimal" and row["jobs"] == 6
    assert row["SMD above bound"] >= -1e-9
    assert row["SMD objective"] == pytest.approx(row["exact bound"] * (1 + row["SMD above bound"]))


@pytest.mark.parametrize("kind", ["flat", "typed", "racked"])
def test_a_placement_row_is_never_below_the_exact_bound(kind):
    jobs, cluster = placement_instance(kind, 4, 2)
    row = payoff_row("placement", jobs, cluster, 30)
    assert row["exact status"] == "optimal"
    assert row["SMD above bound"] >= -1e-6
    assert row["proven gap"] == pytest.approx(0.0, abs=1e-5)


def test_a_bad_problem_is_refused():
    jobs, cluster = placement_instance("flat", 2, 1)
    with pytest.raises(InvalidInput, match="problem must be one of"):
        payoff_row("placed", jobs, cluster, 1)


def _rows(ratio_cpu, gaps, status=None) -> pd.DataFrame:
    n = len(gaps)
    return pd.DataFrame(
        {
            "problem": ["pooled"] * n,
            "jobs": [8, 32, 128][:n],
            "SMD CPU (s)": [1.0] * n,
            "exact CPU (s)": ratio_cpu,
            "exact status": status or ["optimal"] * n,
            "SMD above bound": gaps,
        }
    )


def test_the_takeaway_names_where_smd_pays_off_and_changes_with_the_table():
    text = payoff_by_problem(_rows([0.5, 3.0, 9.0], [0.0, 0.01, 0.05]))
    assert "it pays off at 32 jobs" in text
    assert "9.0x at 128 (5.00% above the bound)" in text
    never = payoff_by_problem(_rows([0.5, 1.5, 9.0], [0.0, 0.01, 0.05]))
    assert "does not pay off at any size here" in never
    stopped = payoff_by_problem(_rows([0.5, 3.0], [0.0, 0.01], ["optimal", "time_limit"]))
    assert "stopped at its time limit at 32 jobs" in stopped


def test_the_takeaway_rejects_bad_input():
    with pytest.raises(InvalidInput, match="missing columns"):
        payoff_by_problem(pd.DataFrame({"jobs": [1]}))
    with pytest.raises(InvalidInput, match="faster must be > 1"):
        payoff_by_problem(_rows([1.0], [0.0]), faster=1.0)
