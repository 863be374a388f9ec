"""Figure of ``multiresource_ablation`` (``smdlab.experiments.ablation``)."""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go

SYSTEM_TITLES = {"synergy": "Synergy", "muri": "Muri"}
PAIR_LABELS = {
    ("fifo_proportional", "fifo_tune"): "FIFO: GPU-proportional / TUNE",
    ("srtf", "muri_s"): "SRTF / Muri-S",
    ("tiresias", "muri_l"): "Tiresias / Muri-L",
}
COLORS = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd")


def ablation_figure(df: pd.DataFrame) -> go.Figure:
    """Gain ratio (mean JCT baseline / policy) after each cumulative step, one panel per system."""
    from plotly.subplots import make_subplots

    systems = [s for s in SYSTEM_TITLES if s in set(df["system"])]
    inputs = {s: df.loc[df["system"] == s, "input"].iloc[0] for s in systems}
    fig = make_subplots(
        rows=1,
        cols=len(systems),
        subplot_titles=[f"{SYSTEM_TITLES[s]}: {inputs[s]}" for s in systems],
        horizontal_spacing=0.08,
    )
    k = 0
    for col, system in enumerate(systems, start=1):
        part = df[df["system"] == system].sort_values("step_index")
        for key, rows in part.groupby(["baseline", "policy"], sort=False):
            base, policy = str(key[0]), str(key[1])
            name = PAIR_LABELS.get((base, policy), f"{base} / {policy}")
            fig.add_trace(
                go.Scatter(
                    x=rows["label"].to_list(),
                    y=rows["ratio"].to_numpy(),
                    mode="lines+markers+text",
                    text=[f"{r:.2f}" for r in rows["ratio"]],
                    textposition="top center",
                    name=name,
                    line={"color": COLORS[k % len(COLORS)]},
                    customdata=rows["change"].to_numpy(),
                    hovertemplate=f"{name}: %{{y:.3f}}x<br>%{{customdata}}<extra></extra>",
                ),
                row=1,
                col=col,
            )
            k += 1
        fig.add_hline(y=1.0, line={"color": "#7f7f7f", "dash": "dot"}, row=1, col=col)
        fig.update_xaxes(tickangle=-35, row=1, col=col)
        fig.update_yaxes(title_text="mean JCT ratio (gain)" if col == 1 else None, row=1, col=col)
    fig.update_layout(
        title=(
            "From the authors' settings to smdlab's, one change at a time "
            "(cumulative; ratio of mean JCTs of the measured jobs)"
        ),
        template="plotly_white",
        legend={"orientation": "h", "y": -0.35},
        height=520,
        width=1150,
        margin={"b": 160},
    )
    return fig
