"""Figures of GPU sharing: the co-location model's validation and JCT against the sharing degree."""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from smdlab.viz.style import PALETTE, add_policy_lines, base_layout, identity_line

MODEL_LABELS = {"factorised": "factorised model", "log_additive": "log-additive baseline"}
GPU_COLORS = {"k80": PALETTE[0], "p100": PALETTE[1], "v100": PALETTE[2]}
SHARING_LABELS = {
    "no_sharing": "no sharing (SJF, 1 job per GPU)",
    "gandiva": "Gandiva",
    "horus": "Horus",
    "sjf_bsbf": "SJF-BSBF",
    "sjf_ffs": "SJF-FFS",
    "tiresias": "Tiresias (no sharing)",
}


def sharing_validation_figure(df: pd.DataFrame) -> go.Figure:
    """Predicted vs measured co-located steps/s on held-out pairs, one panel per model, MAPE in titles."""
    models = [m for m in MODEL_LABELS if m in set(df["model"])]
    titles = [
        f"{MODEL_LABELS[m]}: MAPE {df.loc[df['model'] == m, 'error_pct'].abs().mean():.1f}%"
        for m in models
    ]
    fig = make_subplots(rows=1, cols=len(models), subplot_titles=titles, horizontal_spacing=0.1)
    lo = float(df["measured_steps_per_s"].min()) / 1.3
    hi = float(df["measured_steps_per_s"].max()) * 1.3
    for col, m in enumerate(models, start=1):
        for gpu, colour in GPU_COLORS.items():
            g = df[(df["model"] == m) & (df["gpu_type"] == gpu)]
            if g.empty:
                continue
            fig.add_trace(
                go.Scatter(
                    x=g["measured_steps_per_s"],
                    y=g["predicted_steps_per_s"],
                    mode="markers",
                    name=gpu.upper(),
                    legendgroup=gpu,
                    showlegend=col == 1,
                    marker={"color": colour, "size": 6, "opacity": 0.75},
                    text=[f"{j} beside {p}" for j, p in zip(g["job"], g["partner"], strict=True)],
                    hovertemplate="%{text}<br>measured %{x:.3g}, predicted %{y:.3g} steps/s"
                    "<extra></extra>",
                ),
                row=1,
                col=col,
            )
        fig.add_trace(identity_line(lo, hi), row=1, col=col)
        fig.update_xaxes(type="log", title_text="measured co-located steps/s", row=1, col=col)
        fig.update_yaxes(type="log", title_text="predicted steps/s", row=1, col=col)
    seed = df.attrs.get("seed")
    fig.update_layout(
        **base_layout(
            "Co-location model on held-out job-type pairs (Gavel's measurements"
            + (f", hold-out seed {seed})" if seed is not None else ")"),
            height=500,
        )
    )
    fig.update_layout(margin={"t": 110})  # the legend above the panel titles
    return fig


def sharing_degree_figure(df: pd.DataFrame) -> go.Figure:
    """Mean JCT, makespan and GPU utilisation vs the sharing degree, one line per policy (seed means)."""
    panels = [
        ("mean_jct_s", "mean JCT (h)", 1 / 3600),
        ("makespan_s", "makespan (h)", 1 / 3600),
        ("util_gpu", "time-weighted GPU utilisation", 1.0),
    ]
    fig = make_subplots(
        rows=1, cols=3, subplot_titles=[p[1] for p in panels], horizontal_spacing=0.08
    )
    means = df.groupby(["policy", "sharing_degree"], sort=False)[[p[0] for p in panels]].mean()
    degrees = sorted(df["sharing_degree"].unique())
    add_policy_lines(fig, means, SHARING_LABELS, panels, degrees, dashed=("no_sharing", "tiresias"))
    for col in (1, 2, 3):
        fig.update_xaxes(title_text="most jobs per GPU", tickvals=degrees, row=1, col=col)
    fig.update_yaxes(range=[0, 1.05], row=1, col=3)
    seeds = df["seed"].nunique()
    fig.update_layout(
        **base_layout(
            f"GPU sharing: online workload at load 2.0, mean of {seeds} seed(s)",
            height=520,
        )
    )
    fig.update_layout(margin={"t": 130})  # two legend rows above the panel titles
    return fig
