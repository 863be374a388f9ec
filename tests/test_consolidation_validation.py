"""The layered model against Gavel's measured consolidation and GPU-type ratios."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from smdlab.experiments.consolidation import (
    GPUS,
    INTRA_GBPS,
    calibrated_type_ratios,
    consolidation_validation,
    error_table,
    fp32_device,
    predicted_consolidation_ratio,
)


def test_fp32_devices_follow_datasheets():
    from smdlab.model.gpu_types import GPU_TYPES

    k80, v100 = fp32_device("k80"), fp32_device("v100")
    assert k80.peak_flops == GPU_TYPES["k80"].fp32_tflops * 1e12
    # A compute-bound kind: the time ratio is the FP32 peak ratio; a memory-bound one: bandwidth.
    assert k80.forward_time("conv", 1e9) / v100.forward_time("conv", 1e9) == pytest.approx(
        15.7 / 4.37
    )
    assert k80.forward_time("norm", 1e9) / v100.forward_time("norm", 1e9) == pytest.approx(
        900 / 240
    )


def test_consolidation_ratio_follows_the_links():
    jt = "ResNet-50 (batch size 64)"
    same = predicted_consolidation_ratio(jt, "v100", 4, 4.0, nic_gbps=INTRA_GBPS)
    assert same == pytest.approx(1.0)
    r = [predicted_consolidation_ratio(jt, "v100", 4, 4.0, nic_gbps=b) for b in (1, 10, 25, 100)]
    assert all(0 < x <= 1 for x in r) and r == sorted(r)
    # A faster GPU (higher measured 1-GPU rate) has less compute to hide the transfers behind.
    assert predicted_consolidation_ratio(jt, "v100", 8, 8.0) < predicted_consolidation_ratio(
        jt, "v100", 8, 1.0
    )


def test_predictions_never_read_the_targets(monkeypatch):
    # Spread and consolidated multi-GPU rows are the targets: doubling them changes only
    # "measured"; GPU-type predictions come from datasheets and ignore every rate.
    from smdlab.model import gavel_data

    base = consolidation_validation("tiny")
    real = gavel_data.load_gavel_solo

    def doctored() -> pd.DataFrame:
        df = real()
        spread_multi = (df["scale_factor"] > 1) & (df["placement"] == "unconsolidated")
        df.loc[spread_multi, "steps_per_s"] *= 2
        df.loc[df["scale_factor"] == 1, "steps_per_s"] *= np.where(
            df.loc[df["scale_factor"] == 1, "gpu_type"] == "k80", 3, 1
        )
        return df

    monkeypatch.setattr(gavel_data, "load_gavel_solo", doctored)
    other = consolidation_validation("tiny")
    cons = base["quantity"] == "consolidation"
    assert np.allclose(other.loc[cons, "measured"], 2 * base.loc[cons, "measured"])
    types = base["quantity"] == "gpu_type"
    assert np.allclose(other.loc[types, "predicted"], base.loc[types, "predicted"])


def test_validation_table_covers_the_matched_job_types():
    df = consolidation_validation("tiny")
    cons = df[(df["quantity"] == "consolidation") & (df["nic_gbps"] == 10)]
    assert set(cons["family"]) == {"ResNet-50", "LM", "Transformer"}
    assert set(cons["gpus"]) == set(GPUS) and set(cons["gpu_type"]) == {"k80", "p100", "v100"}
    assert ((cons["predicted"] > 0) & (cons["predicted"] <= 1)).all()
    err = (df["predicted"] - df["measured"]) / df["measured"] * 100
    assert np.allclose(df["error_pct"], err)
    table = error_table(df)
    row = table[(table["family"] == "LM") & (table["case"] == "8 GPUs")].iloc[0]
    lm8 = cons[(cons["family"] == "LM") & (cons["gpus"] == 8)]
    assert row["mape_pct"] == pytest.approx(lm8["error_pct"].abs().mean())
    assert set(table["quantity"]) == {"spread / consolidated", "type / V100"}


def test_calibration_is_judged_on_held_out_job_types():
    cal = calibrated_type_ratios(("ResNet-50",))
    assert set(cal.factors) == {"k80", "p100"}
    assert cal.holdout_mape >= 0 and cal.uncalibrated_holdout_mape >= 0


def test_figure_draws_both_panels():
    from smdlab.viz.heterogeneity import consolidation_validation_figure

    fig = consolidation_validation_figure(consolidation_validation("tiny"))
    axes = {t.xaxis for t in fig.data}
    assert axes == {"x", "x2"} and "MAPE" in fig.layout.annotations[0].text


def test_figure_default_nic_is_the_assumption():
    from smdlab.experiments import consolidation
    from smdlab.viz import heterogeneity

    assert heterogeneity.NIC_GBPS == consolidation.NIC_GBPS


def test_docs_table_is_the_computed_one():
    from pathlib import Path

    text = (Path(__file__).resolve().parents[1] / "docs" / "model.md").read_text()
    section = text.split("## Validation against Gavel")[1]
    rows = [
        [c.strip() for c in line.strip("|").split("|")]
        for line in section.splitlines()
        if line.startswith("| spread") or line.startswith("| type")
    ]
    table = error_table(consolidation_validation("tiny"))
    assert len(rows) == len(table)
    for doc, (_, r) in zip(rows, table.iterrows(), strict=True):
        assert doc[:4] == [r["quantity"], r["family"], r["case"], str(r["points"])]
        assert float(doc[4]) == round(r["mape_pct"], 1)
        assert float(doc[5]) == round(r["measured_median"], 2)
        assert float(doc[6]) == round(r["predicted_median"], 2)
