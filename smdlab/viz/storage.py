"""Figures of the storage experiments (``smdlab.experiments.storage``) and of the IO bound."""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from smdlab.viz.style import PALETTE, add_policy_lines, base_layout

STORAGE_LABELS = {  # short: the legend fits one row above the panels
    "no_cache": "no cache",
    "lru": "LRU",
    "proportional": "by GPUs",
    "silod": "SiloD",
    "cba": "CBA",
    "autocba": "AutoCBA",
    "smd": "SMD",
    "smd_storage": "SMD+storage",
}


def io_cost_vs_cache_figure(df: pd.DataFrame) -> go.Figure:
    """IO cost, welfare and mean JCT vs cache size, one line per policy (seed means)."""
    panels = [
        ("io_cost", "IO cost (units)", 1.0),
        ("welfare", "welfare (sum of utilities)", 1.0),
        ("mean_jct_s", "mean JCT (h)", 1 / 3600),
    ]
    fig = make_subplots(
        rows=1, cols=3, subplot_titles=[p[1] for p in panels], horizontal_spacing=0.08
    )
    means = df.groupby(["policy", "cache_gb"], sort=False)[[p[0] for p in panels]].mean()
    caches = sorted(df["cache_gb"].unique())
    add_policy_lines(
        fig, means, STORAGE_LABELS, panels, caches, dashed=("no_cache", "lru", "proportional")
    )
    for col in (1, 2, 3):
        fig.update_xaxes(title_text="cluster cache (GB)", row=1, col=col)
    fig.update_layout(
        **base_layout(
            f"Storage vs cache size (baselines, SiloD, CBA: FIFO's GPUs; SMD elastic), mean of "
            f"{df['seed'].nunique()} seed(s)",
            height=520,
        )
    )
    fig.update_layout(margin={"t": 130}, legend={"y": 1.16})  # the legend above the panel titles
    return fig


def io_bound_figure(
    shares: np.ndarray, bandwidths: np.ndarray, speeds: np.ndarray, compute: float
) -> go.Figure:
    """One job's speed vs cache share, one line per remote bandwidth, with both bounds drawn."""
    fig = go.Figure()
    for k, b in enumerate(bandwidths):
        colour = PALETTE[k % len(PALETTE)]
        io = speeds[k]
        fig.add_trace(
            go.Scatter(
                x=shares, y=np.minimum(io, compute), mode="lines", name=f"speed, {b:g} GB/s",
                line={"color": colour},
            )
        )  # fmt: skip
        fig.add_trace(
            go.Scatter(
                x=shares, y=np.where(np.isfinite(io), io, np.nan), mode="lines",
                name=f"IO bound, {b:g} GB/s", line={"color": colour, "dash": "dot"},
            )
        )  # fmt: skip
    fig.add_hline(
        y=compute, line={"color": "black", "dash": "dash"}, annotation_text="compute bound"
    )
    fig.update_xaxes(title_text="cached share of the dataset c/d")
    fig.update_yaxes(title_text="samples/s", type="log")
    fig.update_layout(**base_layout("One job's speed: min(compute bound, IO bound)", height=460))
    return fig
