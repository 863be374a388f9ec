"""Figure of the heterogeneity gain (``smdlab.experiments.heterogeneity``)."""

from __future__ import annotations

import numpy as np
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


FAMILY_COLORS = {"ResNet-50": "#1f77b4", "LM": "#d62728", "Transformer": "#2ca02c"}
TYPE_SYMBOLS = {"k80": "circle", "p100": "square", "v100": "diamond"}
NIC_GBPS = 10.0  # the assumed NIC the figure shows (smdlab.experiments.consolidation.NIC_GBPS)


def consolidation_validation_figure(df: pd.DataFrame, nic_gbps: float | None = None) -> go.Figure:
    """Predicted vs measured: spread / consolidated at 2-8 GPUs (left), GPU type / V100 (right)."""
    from plotly.subplots import make_subplots

    cons_all = df[df["quantity"] == "consolidation"]
    if nic_gbps is None:
        nic_gbps = NIC_GBPS
    cons = cons_all[cons_all["nic_gbps"] == nic_gbps]
    types = df[df["quantity"] == "gpu_type"]

    def mape(d: pd.DataFrame) -> float:
        return float(d["error_pct"].abs().mean())

    fig = make_subplots(
        rows=1,
        cols=2,
        subplot_titles=(
            f"spread / consolidated, 2-8 GPUs<br>(NIC {nic_gbps:g} Gbps): MAPE {mape(cons):.1f}%",
            f"K80 or P100 / V100, 1 GPU<br>(datasheets): MAPE {mape(types):.1f}%",
        ),
        horizontal_spacing=0.1,
    )
    for col, part in ((1, cons), (2, types)):
        for fam, color in FAMILY_COLORS.items():
            for t, symbol in TYPE_SYMBOLS.items():
                d = part[(part["family"] == fam) & (part["gpu_type"] == t)]
                if d.empty:
                    continue
                fig.add_trace(
                    go.Scatter(
                        x=d["measured"],
                        y=d["predicted"],
                        mode="markers",
                        marker={"color": color, "symbol": symbol, "size": 8, "opacity": 0.8},
                        name=f"{fam}, {t.upper()}",
                        legendgroup=f"{fam}{t}",
                        showlegend=col == 1,
                        customdata=np.stack([d["job_type"], d["gpus"]], axis=-1),
                        hovertemplate="%{customdata[0]} on %{customdata[1]} GPUs<br>"
                        "measured %{x:.2f}, predicted %{y:.2f}<extra></extra>",
                    ),
                    row=1,
                    col=col,
                )
        hi = float(max(part["measured"].max(), part["predicted"].max(), 1.0)) * 1.05
        fig.add_trace(
            go.Scatter(
                x=[0, hi],
                y=[0, hi],
                mode="lines",
                line={"color": "#888888", "dash": "dot"},
                name="predicted = measured",
                showlegend=col == 1,
                hoverinfo="skip",
            ),
            row=1,
            col=col,
        )
        fig.update_xaxes(title_text="measured (Gavel)", range=[0, hi], row=1, col=col)
        fig.update_yaxes(title_text="predicted (layered model)", range=[0, hi], row=1, col=col)
    fig.update_layout(
        title="Layered model vs Gavel's measured throughput ratios (no fitted parameter)",
        template="plotly_white",
        width=1000,
        height=500,
        margin={"t": 110},
        legend={"font": {"size": 10}},
    )
    return fig
