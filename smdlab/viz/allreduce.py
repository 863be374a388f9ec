"""Figures of the all-reduce half: epoch-model validation and OMRU-style makespans."""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from smdlab.viz.style import PALETTE, base_layout, identity_line

_SYMBOLS = ("circle", "square", "diamond", "triangle-up", "x", "cross", "star", "triangle-down")
POLICY_LABELS = {
    "seqex": "SeqEx",
    "parallel": "Parallel",
    "optimus_like": "Optimus-like",
    "omru_noreuse": "OMRU without reuse",
    "omru": "OMRU",
    "sjf_bco": "SJF-BCO",
}


def epoch_validation_figure(df: pd.DataFrame) -> go.Figure:
    """Measured vs predicted held-out epoch times, one panel per model form, MAPE in the titles."""
    forms = [("generic", "all-reduce model"), ("layered", "layered, bundled profiles")]
    titles = []
    for form, label in forms:
        per = df.dropna(subset=[f"predicted_{form}"]).groupby("model")[f"error_{form}_pct"]
        titles.append(f"{label}: MAPE {per.apply(lambda e: np.abs(e).mean()).mean():.1f}%")
    fig = make_subplots(rows=1, cols=2, subplot_titles=titles, horizontal_spacing=0.1)
    models = sorted(df["model"].unique())
    lo, hi = float(df["measured"].min()) / 1.2, float(df["measured"].max()) * 1.2
    for col, (form, _) in enumerate(forms, start=1):
        for k, model in enumerate(models):
            g = df[(df["model"] == model) & df[f"predicted_{form}"].notna()]
            if g.empty:
                continue
            fig.add_trace(
                go.Scatter(
                    x=g["measured"],
                    y=g[f"predicted_{form}"],
                    mode="markers",
                    name=model,
                    legendgroup=model,
                    showlegend=col == 1,
                    marker={
                        "color": PALETTE[k % len(PALETTE)],
                        "symbol": _SYMBOLS[k % len(_SYMBOLS)],
                        "size": 8,
                    },
                    text=[f"{model}, {n} GPUs" for n in g["num_gpus"]],
                    hovertemplate="%{text}<br>measured %{x:.2f}, predicted %{y:.2f}<extra></extra>",
                ),
                row=1,
                col=col,
            )
        fig.add_trace(identity_line(lo, hi), row=1, col=col)
        fig.update_xaxes(type="log", title_text="measured epoch time (source unit)", row=1, col=col)
        fig.update_yaxes(type="log", title_text="predicted", row=1, col=col)
    fig.update_layout(
        **base_layout(
            "OMRU's V100 epoch times: fitted on 1, 2, 4, 8 GPUs, predicting 3, 5, 6, 7",
            height=460,
        )
    )
    fig.update_layout(legend={"orientation": "v", "x": 1.02, "y": 1, "yanchor": "top"})
    return fig


def makespan_figure(df: pd.DataFrame) -> go.Figure:
    """Makespan vs machines for the image and action workloads, and GPU utilisation (all runs)."""
    fig = make_subplots(
        rows=1,
        cols=3,
        subplot_titles=["omru-image: makespan", "omru-action: makespan", "GPU utilisation"],
        horizontal_spacing=0.08,
    )
    policies = [p for p in POLICY_LABELS if p in set(df["policy"])]
    for k, policy in enumerate(policies):
        color = PALETTE[k % len(PALETTE)]
        for col, workload in enumerate(("omru-image", "omru-action"), start=1):
            g = df[(df["policy"] == policy) & (df["workload"] == workload)].sort_values("machines")
            fig.add_trace(
                go.Scatter(
                    x=g["machines"],
                    y=g["makespan_h"],
                    mode="lines+markers",
                    name=POLICY_LABELS[policy],
                    legendgroup=policy,
                    showlegend=col == 1,
                    line={"color": color},
                    marker={
                        "color": color,
                        "size": 9,
                        "symbol": ["circle-open" if e else "circle" for e in g["extrapolated"]],
                    },
                    text=["extrapolated" if e else "measured range" for e in g["extrapolated"]],
                    hovertemplate="%{x} machines: %{y:.1f} h (%{text})<extra></extra>",
                ),
                row=1,
                col=col,
            )
        util = df[df["policy"] == policy].groupby("machines")["gpu_utilization"].mean()
        fig.add_trace(
            go.Scatter(
                x=util.index.to_numpy(),
                y=util.to_numpy(),
                mode="lines+markers",
                name=POLICY_LABELS[policy],
                legendgroup=policy,
                showlegend=False,
                line={"color": color, "dash": "dot"},
                marker={"color": color},
            ),
            row=1,
            col=3,
        )
    for col in (1, 2, 3):
        fig.update_xaxes(
            title_text="machines of 4 GPUs",
            tickvals=sorted(df["machines"].unique()),
            row=1,
            col=col,
        )
    fig.update_yaxes(title_text="makespan (h)", row=1, col=1)
    fig.update_yaxes(title_text="time-weighted GPU utilisation", range=[0, 1.05], row=1, col=3)
    fig.update_layout(
        **base_layout(
            "OMRU reproduction, assumed epoch counts (open markers: 16, 32 GPUs, extrapolated)",
            height=470,
        )
    )
    fig.update_layout(
        legend={"orientation": "h", "x": 0, "y": -0.2, "yanchor": "top"}, margin={"b": 110}
    )
    return fig


def plan_schedule(plan, table) -> pd.DataFrame:
    """The timed bars of a batch plan: one row per run (``main``) and per reused slice (``reuse``).

    Columns: job, batch, kind, start_h, end_h, gpus, epochs. Batch k starts when batch k-1's
    longest job ends; a reusing job pre-trains in the slice its owner leaves idle.
    """
    idx = {n: i for i, n in enumerate(table.names)}
    left = dict(zip(table.names, table.epochs.astype(float)))
    for r in plan.reuses:
        left[r.job] -= r.epochs
    rows, start = [], 0.0
    ends: dict[str, float] = {}
    for k, batch in enumerate(plan.batches):
        length = 0.0
        for e in batch:
            c = left[e.job] * float(table.epoch_time[idx[e.job], e.gpus])
            length = max(length, c)
            ends[e.job] = start + c
            rows.append((e.job, k, "main", start, start + c, e.gpus, left[e.job]))
        for r in plan.reuses:
            if r.owner in {e.job for e in batch}:
                t0 = ends[r.owner]
                dur = r.epochs * float(table.epoch_time[idx[r.job], r.gpus])
                rows.append((r.job, k + 1, "reuse", t0, t0 + dur, r.gpus, r.epochs))
        start += length
    df = pd.DataFrame(rows, columns=["job", "batch", "kind", "start_h", "end_h", "gpus", "epochs"])
    df[["start_h", "end_h"]] /= 3600
    return df


def plan_gantt_figure(plan, table, title: str | None = None) -> go.Figure:
    """Gantt chart of a batch plan: each job's run in its batch, and the idle slices it reuses."""
    df = plan_schedule(plan, table)
    fig = go.Figure()
    for kind, color, pattern, label in (
        ("main", None, "", "run in its batch"),
        ("reuse", "#BAB0AC", "/", "pre-training on a reused idle slice"),
    ):
        part = df[df["kind"] == kind]
        if part.empty:
            continue
        colors = [PALETTE[b % len(PALETTE)] for b in part["batch"]] if color is None else color
        fig.add_trace(
            go.Bar(
                y=part["job"],
                x=part["end_h"] - part["start_h"],
                base=part["start_h"],
                orientation="h",
                name=label,
                marker={"color": colors, "pattern": {"shape": pattern}},
                text=[f"{g} GPUs" for g in part["gpus"]],
                textposition="inside",
                customdata=np.stack([part["batch"], part["epochs"]], axis=-1),
                hovertemplate="%{y}: batch %{customdata[0]}, %{text}, %{customdata[1]:.0f} epochs"
                "<br>%{base:.1f} h to %{x:.1f} h later<extra></extra>",
            )
        )
    barriers = df[df["kind"] == "main"].groupby("batch")["end_h"].max().cumsum()
    for t in barriers.iloc[:-1]:
        fig.add_vline(x=float(t), line={"dash": "dot", "color": "#555"})
    fig.update_layout(
        **base_layout(
            title or f"Batch plan: makespan {plan.makespan / 3600:.1f} h (dotted: batch barriers)",
            barmode="overlay",
            height=60 + 34 * df["job"].nunique(),
            xaxis={"title": {"text": "hours"}},
        )
    )
    return fig


__all__ = ["epoch_validation_figure", "makespan_figure", "plan_gantt_figure", "plan_schedule"]
