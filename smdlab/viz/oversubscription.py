"""Figure of ``jct_vs_oversubscription`` (``smdlab.experiments.oversubscription``)."""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go

LABELS = {
    "smd": "SMD (reconstructed model)",
    "liquid": "Liquid",
    "fifo": "FIFO",
    "tiresias": "Tiresias",
}
COLORS = {"smd": "#d62728", "liquid": "#2ca02c", "fifo": "#7f7f7f", "tiresias": "#1f77b4"}


def oversubscription_figure(df: pd.DataFrame) -> go.Figure:
    """Mean JCT (left) and data sent across rack uplinks (right) vs rack oversubscription."""
    from plotly.subplots import make_subplots

    means = df.groupby(["policy", "oversubscription"])[["mean_jct_h", "cross_rack_tb"]].mean()
    fig = make_subplots(
        rows=1,
        cols=2,
        subplot_titles=("mean JCT (h)", "data across rack uplinks (TB)"),
        horizontal_spacing=0.1,
    )
    for p in [p for p in LABELS if p in set(df["policy"])]:
        m = means.loc[p].sort_index()
        for col, field in ((1, "mean_jct_h"), (2, "cross_rack_tb")):
            fig.add_trace(
                go.Scatter(
                    x=m.index.to_numpy(),
                    y=m[field].to_numpy(),
                    mode="lines+markers",
                    name=LABELS[p],
                    legendgroup=p,
                    showlegend=col == 1,
                    line={"color": COLORS[p]},
                    hovertemplate=f"{LABELS[p]}: %{{y:.3g}} at %{{x:g}}:1<extra></extra>",
                ),
                row=1,
                col=col,
            )

    ticks = sorted(float(x) for x in set(df["oversubscription"]))
    for col in (1, 2):
        fig.update_xaxes(
            type="log",
            tickvals=ticks,
            ticktext=[f"{x:g}:1" for x in ticks],
            title_text="rack oversubscription (NIC total / uplink)",
            row=1,
            col=col,
        )
    seeds = df["seed"].nunique()
    first = df.iloc[0]
    fig.update_layout(
        title=(
            f"Rack uplinks: {int(first['jobs'])} gang jobs on {int(first['racks'])} racks x "
            f"{int(first['machines']) // int(first['racks'])} machines (8 GPUs, 100 Gbps), "
            f"mean of {seeds} seed(s)"
        ),
        template="plotly_white",
        width=1000,
        height=480,
    )
    return fig
