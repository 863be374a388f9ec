"""The notebooks' figure and table helper (smdlab.viz.notebook): width, axes, number style."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import plotly.graph_objects as go
import pytest
from plotly.subplots import make_subplots

from smdlab.errors import InvalidInput
from smdlab.experiments import FIGURES, make_figure
from smdlab.viz.notebook import axis_problems, fit_width, number, percent, show, table

FIGURES_DIR = Path(__file__).resolve().parents[1] / "figures"


def _committed(name: str) -> tuple[go.Figure, pd.DataFrame]:
    df = pd.read_csv(FIGURES_DIR / f"{name}.csv")
    return make_figure(name, df), df


def _count_axes(fig: go.Figure, df: pd.DataFrame) -> None:
    """What notebook 05's former helper did: tick every x axis at the values of a count column."""
    for col in ("n_jobs", "machines"):
        if col in df.columns:
            fig.update_xaxes(tickmode="array", tickvals=sorted(df[col].unique()))


@pytest.mark.parametrize("name", sorted(FIGURES))
def test_every_committed_figure_draws_right_and_fits(name):
    fig, _ = _committed(name)
    assert axis_problems(fig) == []
    fitted = fit_width(fig)
    assert fitted.layout.width is None and fitted.layout.autosize is True
    assert fitted.layout.height == fig.layout.height
    assert len(fitted.data) == len(fig.data)


@pytest.mark.parametrize(
    ("name", "axes"),
    [
        ("optimality_gap", ["xaxis", "xaxis2"]),
        ("jct_vs_oversubscription", ["xaxis", "xaxis2"]),
        ("philly_window", ["xaxis", "xaxis2", "xaxis3"]),
    ],
)
def test_ticks_overwritten_with_another_columns_values_are_found(name, axes):
    fig, df = _committed(name)
    _count_axes(fig, df)
    problems = axis_problems(fig)
    assert [p.split()[0] for p in problems] == axes
    with pytest.raises(InvalidInput, match="fig: xaxis"):
        show(fig)


def test_ticks_at_the_data_or_spanning_it_pass():
    fig = make_subplots(rows=1, cols=2)
    fig.add_bar(x=["a", "b"], y=[1, 2], row=1, col=1)
    fig.add_scatter(x=[1, 10, 100], y=[3, 4, 5], row=1, col=2)
    fig.update_xaxes(tickvals=["a", "b"], row=1, col=1)
    fig.update_xaxes(type="log", tickvals=[1, 10, 100], row=1, col=2)
    assert axis_problems(fig) == []
    fig.update_xaxes(tickvals=[1, 2], row=1, col=2)  # 100 is far more than one interval past 2
    assert axis_problems(fig) == [
        "xaxis2 ticks (1, 2) do not reach both ends of its data (1 to 100)"
    ]


def test_number_style():
    assert number(-0.001, 2) == "0.00"
    assert number(-0.0, 1) == "0.0"
    assert number(961.536, 1) == "961.5"
    assert number(12345.6, 0) == "12,346"
    assert number(float("nan"), 2) == "-"
    assert percent(0.1234) == "12.3%"
    assert percent(-0.0001) == "0.0%"


def test_table_chooses_precision_per_column_and_needs_a_summary_when_long():
    df = pd.DataFrame(
        {"policy": ["a", "b"], "JCT (h)": [961.536, 12.3], "delay (h)": [-0.0001, 0.5], "n": [1, 2]}
    )
    html = table(df).to_html()
    assert "962" in html and "961.536000" not in html
    assert "-0.00" not in html and "0.000" in html
    assert ">1<" in html and ">2<" in html
    long = pd.DataFrame({"x": range(11)})
    with pytest.raises(InvalidInput, match="summary: a table of 11 rows"):
        table(long)
    assert "eleven numbers" in table(long, summary="eleven numbers").to_html()
    with pytest.raises(InvalidInput, match="not columns"):
        table(df, percent_cols=["share"])
