"""Figure of DeepRM in its own environment (``smdlab.experiments.deeprm``): slowdown vs load."""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from smdlab.errors import InvalidInput
from smdlab.viz.style import base_layout

_STYLE = {
    "deeprm": ("#7F3C8D", "solid", "circle"),
    "sjf": ("#1F77B4", "dash", "square"),
    "packer": ("#FF7F0E", "dash", "diamond"),
    "tetris": ("#2CA02C", "dash", "triangle-up"),
    "random": ("#7F7F7F", "dot", "x"),
}


def deeprm_slowdown_figure(df: pd.DataFrame, *, title: str | None = None) -> go.Figure:
    """Average job slowdown against offered load, one line per policy (error bars: standard
    error over jobsets).

    df: a frame from ``smdlab.experiments.deeprm.deeprm_slowdown_vs_load``.
    """
    if not isinstance(df, pd.DataFrame):
        raise InvalidInput(f"df must be a pandas DataFrame, got {type(df).__name__}")
    missing = [c for c in ("load", "policy", "label", "mean_slowdown") if c not in df.columns]
    if missing:
        raise InvalidInput(f"df lacks column(s) {', '.join(missing)}")
    if df.empty:
        raise InvalidInput("df has no rows")
    fig = go.Figure()
    for policy, part in df.groupby("policy", sort=False):
        part = part.sort_values("load")
        color, dash, symbol = _STYLE.get(str(policy), ("#333333", "solid", "circle"))
        sem = part["sem"].to_numpy() if "sem" in part else np.full(len(part), np.nan)
        fig.add_trace(
            go.Scatter(
                x=part["load"] * 100,
                y=part["mean_slowdown"],
                error_y={"type": "data", "array": np.nan_to_num(sem), "visible": True},
                mode="lines+markers",
                name=str(part["label"].iloc[0]),
                line={"color": color, "dash": dash, "width": 2.5 if policy == "deeprm" else 1.5},
                marker={"symbol": symbol, "size": 8},
            )
        )
    jobsets = int(df["jobsets"].iloc[0]) if "jobsets" in df else 0
    fig.update_xaxes(title_text="offered load (%)")
    fig.update_yaxes(title_text="average job slowdown", rangemode="tozero")
    fig.update_layout(
        base_layout(
            title
            or f"DeepRM's environment: average slowdown vs load ({jobsets} held-out jobsets per load)",
            height=460,
            width=820,
        )
    )
    return fig
