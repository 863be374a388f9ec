"""Figure of the heterogeneity gain (``smdlab.experiments.heterogeneity``)."""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go

LABELS = {"gavel_max_min": "Gavel max-min (LAS)", "gavel_max_sum": "Gavel max-sum throughput"}
COLORS = {"aware": "#1f77b4", "agnostic": "#aaaaaa"}


def heterogeneity_figure(df: pd.DataFrame) -> go.Figure:
    """Mean JCT of each Gavel policy, heterogeneity-aware vs agnostic, with the ratio on top."""
    means = df.groupby(["policy", "allocation"])["mean_jct_h"].mean()
    m = {
        (str(k[0]), str(k[1])): float(v) for k, v in zip(means.index, means.to_numpy(), strict=True)
    }
    policies = [p for p in LABELS if (p, "aware") in m and (p, "agnostic") in m]
    fig = go.Figure()
    for alloc in ("agnostic", "aware"):
        fig.add_trace(
            go.Bar(
                x=[LABELS[p] for p in policies],
                y=[m[p, alloc] for p in policies],
                name=f"{alloc} allocation",
                marker_color=COLORS[alloc],
                hovertemplate="%{x}: %{y:.2f} h<extra></extra>",
            )
        )
    for p in policies:
        ratio = m[p, "agnostic"] / m[p, "aware"]
        fig.add_annotation(
            x=LABELS[p],
            y=max(m[p, "agnostic"], m[p, "aware"]),
            text=f"agnostic / aware = {ratio:.2f}",
            showarrow=False,
            yshift=14,
        )
    jobs, gpus = int(df["jobs"].iloc[0]), int(df["gpus"].iloc[0])
    fig.update_layout(
        title=f"Heterogeneity gain: {jobs} jobs on {gpus} GPUs (K80/P100/V100, Gavel's measured ratios)",
        yaxis_title="mean JCT (h)",
        barmode="group",
        template="plotly_white",
    )
    return fig
