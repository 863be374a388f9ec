"""The notebooks' takeaways follow their tables: change a number, the sentence changes."""

from __future__ import annotations

import pandas as pd
import pytest

from smdlab.errors import InvalidInput
from smdlab.viz.takeaways import (
    benchmark_note,
    consolidation_errors,
    learned_against_committed,
    reuse_effect,
    smd_payoff,
    training_curve,
)


def _scale(ratios, gaps=None, status=None) -> pd.DataFrame:
    n = len(ratios)
    return pd.DataFrame(
        {
            "jobs": [8, 32, 128, 512, 1000][:n],
            "MILP / SMD time": ratios,
            "SMD above optimum": gaps or [0.0] * n,
            "MILP status": status or ["optimal"] * n,
        }
    )


def test_smd_payoff_names_the_sizes_where_the_ratio_is_large():
    text = smd_payoff(_scale([0.4, 0.3, 8.1, 0.7, 2.8], gaps=[0, 0, 0, 0.0115, 0.0105]))
    assert "0.4x at 8, 0.3x at 32, 8.1x at 128, 0.7x at 512, 2.8x at 1,000" in text
    assert "at least 2x faster at 128 and 1,000 jobs" in text
    assert "0.00% and 1.05% above the optimum" in text
    assert "The MILP is faster at 8, 32 and 512 jobs" in text


def test_smd_payoff_changes_with_its_input():
    small = smd_payoff(_scale([0.4, 0.3, 1.5]))
    assert "SMD is not 2x faster than the exact MILP at any size here" in small
    large = smd_payoff(_scale([0.4, 0.3, 3.0]))
    assert "at least 2x faster at 128 jobs" in large and small != large
    assert "at least 1.2x faster at 128 jobs" in smd_payoff(_scale([0.4, 0.3, 1.5]), large=1.2)
    stopped = smd_payoff(_scale([0.4, 0.3, 3.0], status=["optimal", "optimal", "time_limit"]))
    assert "stopped without proving optimality at 128 jobs" in stopped


def test_smd_payoff_rejects_bad_input():
    with pytest.raises(InvalidInput, match="rows: missing columns"):
        smd_payoff(pd.DataFrame({"jobs": [1]}))
    with pytest.raises(InvalidInput, match="large: must be above 1"):
        smd_payoff(_scale([1.0]), large=1.0)


def test_benchmark_note_reads_its_range_and_mode():
    bench = pd.DataFrame({"MILP / SMD": [75.9, 8.7, 5.9]}, index=[10, 20, 40])
    text = benchmark_note(bench, "quick")
    assert "**quick** mode over 10-40 jobs" in text and "from 5.9x to 75.9x" in text
    assert "from 5.9x to 80.0x" in benchmark_note(
        bench.assign(**{"MILP / SMD": [80, 8.7, 5.9]}), "quick"
    )


def test_reuse_effect_says_what_reuse_did_and_why_not():
    chromosomes = {"one batch": [0, 0, 0], "own batches": [0, 1, 2], "two then one": [0, 0, 1]}
    text = reuse_effect(chromosomes, [379.2, 332.6, 359.5], [379.2, 332.6, 304.2])
    assert "leaves *one batch* at 379.2 h: a single batch has no next batch" in text
    assert "leaves *own batches* at 332.6 h: a job alone in its batch gets every GPU" in text
    assert "shortens *two then one* from 359.5 h to 304.2 h (-15.4%)" in text
    changed = reuse_effect(chromosomes, [379.2, 332.6, 359.5], [379.2, 300.0, 304.2])
    assert "shortens *own batches* from 332.6 h to 300.0 h" in changed
    with pytest.raises(InvalidInput, match="chromosomes"):
        reuse_effect(chromosomes, [1.0], [1.0])


def _runs(dl2_a: float, dl2_b: float, seeds: int, smd_a: float = 95.0) -> pd.DataFrame:
    rows = []
    for seed in range(seeds):
        for workload, dl2, smd in (("A", dl2_a, smd_a), ("B", dl2_b, 95.0)):
            for policy, jct in (("drf", 100.0), ("dl2", dl2), ("smd", smd)):
                rows.append(
                    {"workload": workload, "seed": seed, "policy": policy, "mean_jct_s": jct}
                )
    return pd.DataFrame(rows)


def test_learned_against_committed_compares_directions():
    text = learned_against_committed(_runs(110, 90, 1), _runs(105, 95, 10))
    assert (
        "- A: +10.0% here (1 seed(s)), +5.0% in the committed figure (10 seed(s)): the same" in text
    )
    assert "Over every policy, 0 of 4 comparisons with drf point the other way in this run." in text
    flipped = learned_against_committed(_runs(90, 90, 1, smd_a=120), _runs(105, 95, 10))
    assert (
        "- A: -10.0% here (1 seed(s)), +5.0% in the committed figure (10 seed(s)): **the opposite"
        in flipped
    )
    assert "2 of 4 comparisons with drf point the other way in this run: dl2 on A" in flipped
    assert "smd on A (+20.0% here, -5.0% committed)" in flipped
    with pytest.raises(InvalidInput, match="policy: 'x'"):
        learned_against_committed(_runs(1, 1, 1), _runs(1, 1, 1), policy="x")


def _validation(measured_k80: float, spread_measured: list[float]) -> pd.DataFrame:
    rows = [
        {
            "quantity": "consolidation",
            "family": fam,
            "gpu_type": "v100",
            "nic_gbps": 10.0,
            "measured": m,
            "predicted": 0.5,
            "error_pct": 100 * (0.5 - m) / m,
        }
        for fam, m in zip(["LM", "ResNet-50", "Transformer"], spread_measured, strict=True)
    ]
    rows.append(
        {
            "quantity": "gpu_type",
            "family": "ResNet-50",
            "gpu_type": "k80",
            "nic_gbps": float("nan"),
            "measured": measured_k80,
            "predicted": 0.28,
            "error_pct": 100 * (0.28 - measured_k80) / measured_k80,
        }
    )
    return pd.DataFrame(rows)


def test_consolidation_errors_follow_the_points():
    text = consolidation_errors(_validation(0.14, [0.8, 1.05, 0.4]))
    assert "Over the 3 consolidation points at 10 Gbps the MAPE is 38.3%" in text
    assert "1 of the 3 measured spread/consolidated ratios are above 1" in text
    assert "(LM and Transformer) the model predicts a larger loss than measured at 50%" in text
    assert "predict 0.28 for ResNet-50; measured: 0.14" in text
    other = consolidation_errors(_validation(0.2, [0.8, 0.9, 0.6]))
    assert (
        "above 1" not in other and "measured: 0.20" in other and "at 100% of their points" in other
    )
    with pytest.raises(InvalidInput, match="needs consolidation points at 25 Gbps"):
        consolidation_errors(_validation(0.14, [0.8, 1.05, 0.4]), nic_gbps=25)


def test_training_curve_reads_the_phases_and_the_spread():
    curve = pd.DataFrame({"update": range(8), "mean_jct": [10, 12, 20, 20, 30, 30, 40, 40]})
    text = training_curve(curve, {"warmup": 4, "train_seeds": 100}, window=2)
    assert "runs from 10 s to 40 s" in text and "drawn from 100 seeds" in text
    assert (
        "last 2 warm-up updates 20 s, over the first 2 reinforcement-learning updates 30 s" in text
    )
    assert "over the last 2 40 s (+100% against the end of the warm-up)" in text
    lower = curve.assign(mean_jct=[10, 12, 20, 20, 30, 30, 15, 15])
    assert "(-25% against" in training_curve(lower, {"warmup": 4, "train_seeds": 100}, window=2)
    with pytest.raises(InvalidInput, match="config: missing 'warmup'"):
        training_curve(curve, {"train_seeds": 1})
