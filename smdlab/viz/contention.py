"""Figure of ``jct_vs_contention`` (``smdlab.experiments.contention``)."""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go

LABELS = {
    "fair": "fair (max-min)",
    "scf": "SCF",
    "lcof": "LCoF",
    "crux": "Crux (GPU intensity)",
    "jcs": "inspired by JCS",
}
COLORS = {
    "fair": "#7f7f7f",
    "scf": "#1f77b4",
    "lcof": "#2ca02c",
    "crux": "#d62728",
    "jcs": "#9467bd",
}


def contention_figure(df: pd.DataFrame) -> go.Figure:
    """Mean JCT (left) and GPU compute utilisation (right) vs rack oversubscription, per policy."""
    from plotly.subplots import make_subplots

    means = df.groupby(["communication", "oversubscription"])[["mean_jct_h", "gpu_util"]].mean()
    fig = make_subplots(
        rows=1,
        cols=2,
        subplot_titles=("mean JCT (h)", "GPU compute utilisation (of held GPU time)"),
        horizontal_spacing=0.1,
    )
    for p in [p for p in LABELS if p in set(df["communication"])]:
        m = means.loc[p].sort_index()
        for col, field in ((1, "mean_jct_h"), (2, "gpu_util")):
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
    first = df.iloc[0]
    fig.update_layout(
        title=(
            f"Shared fabric: {int(first['jobs'])} gang jobs under FIFO, communication policies "
            f"compared, mean of {df['seed'].nunique()} seed(s)"
        ),
        template="plotly_white",
        width=1000,
        height=480,
    )
    return fig
