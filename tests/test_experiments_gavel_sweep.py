"""gavel_rate_sweep: smdlab's Gavel mode beside Gavel's simulator's shipped window averages."""

from __future__ import annotations

import io

import pandas as pd
import pytest

from smdlab.errors import InvalidInput
from smdlab.experiments import CONFIGS, csv_bytes, get_config, make_figure
from smdlab.experiments.gavel_sweep import (
    AGNOSTIC,
    AWARE,
    COLUMNS,
    gavel_dir,
    gavel_rate_sweep,
    gavel_reference,
)
from smdlab.solve.gavel_lp import ecos_available
from smdlab.viz.gavel_sweep import GAVEL, PAPER_GAIN, SMDLAB


@pytest.fixture(scope="module")
def tiny() -> pd.DataFrame:
    return gavel_rate_sweep("tiny")


def test_tiny_has_one_row_per_trace_and_source(tiny: pd.DataFrame) -> None:
    traces = get_config("tiny").gavel_traces
    assert list(tiny.columns) == list(COLUMNS)
    assert len(tiny) == 2 * len(traces)
    assert sorted(tiny["source"].unique()) == sorted([GAVEL, SMDLAB])
    assert set(tiny["trace"]) == {f"{t}.trace" for t in traces}
    assert (tiny["ratio"] == tiny["agnostic_avg_jct_h"] / tiny["aware_avg_jct_h"]).all()
    assert set(tiny["solver"]) <= {"ecos", "highs"}


def test_gavel_rows_are_the_shipped_reference_and_smdlab_matches_them(tiny: pd.DataFrame) -> None:
    ref = gavel_reference().set_index(["trace", "policy"])["avg_jct_window_s"]
    gavel = tiny[tiny["source"] == GAVEL].set_index("trace")
    ours = tiny[tiny["source"] == SMDLAB].set_index("trace")
    for trace, row in gavel.iterrows():
        assert row["agnostic_avg_jct_h"] == ref[trace, AGNOSTIC] / 3600
        assert row["aware_avg_jct_h"] == ref[trace, AWARE] / 3600
        # ECOS reproduces Gavel's every job; HiGHS (another point of a non-unique LP optimum) within 10%
        tol = 1e-9 if ours.loc[trace, "solver"] == "ecos" else 0.1
        assert ours.loc[trace, "ratio"] == pytest.approx(row["ratio"], rel=tol)
    assert set(ours["solver"]) == {"ecos" if ecos_available() else "highs"}


def test_figure_draws_both_sources_and_the_paper_line_from_the_csv(tiny: pd.DataFrame) -> None:
    back = pd.read_csv(io.BytesIO(csv_bytes(tiny)))
    fig = make_figure("gavel_rate_sweep", back)
    names = [t.name for t in fig.data]
    assert len(names) == 2 and any(GAVEL in n for n in names) and any(SMDLAB in n for n in names)
    assert PAPER_GAIN in [s.y0 for s in fig.layout.shapes]


def test_every_configured_trace_is_shipped_with_its_reference() -> None:
    ref = gavel_reference()
    for cfg in CONFIGS.values():
        for stem in cfg.gavel_traces:
            rows = ref[ref["trace"] == f"{stem}.trace"]
            assert set(rows["policy"]) == {AGNOSTIC, AWARE}, stem
            lines = (gavel_dir() / f"{stem}.trace").read_text().splitlines()
            assert len(lines) == int(rows["jobs"].iloc[0]), stem


def test_unknown_trace_is_one_line_naming_the_field() -> None:
    cfg = get_config("tiny").replace(gavel_traces=("seed9_rate1.0_300jobs",))
    with pytest.raises(InvalidInput, match=r"gavel_traces entry 'seed9_rate1\.0_300jobs'") as e:
        gavel_rate_sweep(cfg)
    assert "\n" not in str(e.value)
