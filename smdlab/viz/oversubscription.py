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


def ratio_panels(
    df: pd.DataFrame,
    by: str,
    labels: dict[str, str],
    colors: dict[str, str],
    panels: tuple[tuple[str, str], tuple[str, str]],
    title: str,
) -> go.Figure:
    """Two panels, one line per ``by`` value (seed means) against the oversubscription ratio.

    panels: (column, subplot title) of the left and right panels. title: the figure's title.
    """
    from plotly.subplots import make_subplots

    fields = [f for f, _ in panels]
    means = df.groupby([by, "oversubscription"])[fields].mean()
    fig = make_subplots(
        rows=1, cols=2, subplot_titles=tuple(t for _, t in panels), horizontal_spacing=0.1
    )
    for p in [p for p in labels if p in set(df[by])]:
        m = means.loc[p].sort_index()
        for col, field in enumerate(fields, start=1):
            fig.add_trace(
                go.Scatter(
                    x=m.index.to_numpy(),
                    y=m[field].to_numpy(),
                    mode="lines+markers",
                    name=labels[p],
                    legendgroup=p,
                    showlegend=col == 1,
                    line={"color": colors[p]},
                    hovertemplate=f"{labels[p]}: %{{y:.3g}} at %{{x:g}}:1<extra></extra>",
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
    fig.update_layout(title=title, template="plotly_white", width=1000, height=480)
    return fig


def oversubscription_figure(df: pd.DataFrame) -> go.Figure:
    """Mean JCT (left) and data sent across rack uplinks (right) vs rack oversubscription."""
    seeds = df["seed"].nunique()
    first = df.iloc[0]
    return ratio_panels(
        df,
        "policy",
        LABELS,
        COLORS,
        (("mean_jct_h", "mean JCT (h)"), ("cross_rack_tb", "data across rack uplinks (TB)")),
        f"Rack uplinks: {int(first['jobs'])} gang jobs on {int(first['racks'])} racks x "
        f"{int(first['machines']) // int(first['racks'])} machines (8 GPUs, 100 Gbps), "
        f"mean of {seeds} seed(s)",
    )
