"""Figures of the learned schedulers (``smdlab.experiments.learned``): JCT against heuristics, and
the learning curves."""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from smdlab.errors import InvalidInput
from smdlab.viz.experiments import policy_color
from smdlab.viz.style import base_layout, policy_label

HOUR = 3600.0
_LABELS = {
    "dl2": "DL2",
    "deeprm": "DeepRM-MM",
    "sched2": "SCHED²",
    "ppo": "MaskablePPO (control)",
    "drf": "DRF",
    "optimus": "Optimus",
    "tiresias": "Tiresias",
    "drf@slot": "DRF@slot",
}
_COLORS = {"dl2": "#17BECF", "deeprm": "#7F3C8D", "sched2": "#2CA02C", "ppo": "#D62728"}


def _label(policy: str) -> str:
    return _LABELS.get(policy, policy_label(policy))


def _color(policy: str) -> str:
    base = policy.partition("@")[0]
    return _COLORS.get(base, policy_color(base))


def _require(df: pd.DataFrame, columns: list[str], what: str) -> None:
    if not isinstance(df, pd.DataFrame):
        raise InvalidInput(f"{what} must be a pandas DataFrame, got {type(df).__name__}")
    missing = [c for c in columns if c not in df.columns]
    if missing:
        raise InvalidInput(f"{what} lacks column(s) {', '.join(missing)}")
    if df.empty:
        raise InvalidInput(f"{what} has no rows")


def learned_vs_heuristics_figure(df: pd.DataFrame, *, title: str | None = None) -> go.Figure:
    """Mean JCT per policy (bars, mean over seeds) per workload, labelled with the ratio to DRF.

    df: a frame from ``smdlab.experiments.learned.learned_vs_heuristics``.
    """
    _require(df, ["workload", "seed", "policy", "mean_jct_s"], "df")
    workloads = list(dict.fromkeys(df["workload"]))
    fig = make_subplots(
        rows=1,
        cols=len(workloads),
        horizontal_spacing=0.08,
        subplot_titles=[
            f"{w} ({df.loc[df.workload == w, 'seed'].nunique()} seed"
            f"{'s' if df.loc[df.workload == w, 'seed'].nunique() != 1 else ''})"
            for w in workloads
        ],
    )
    for col, w in enumerate(workloads, start=1):
        part = df[df["workload"] == w]
        order = list(dict.fromkeys(part["policy"]))
        mean = part.groupby("policy", sort=False)["mean_jct_s"].mean().reindex(order)
        drf = mean.get("drf", np.nan)
        text = [
            "n/a" if not np.isfinite(v) else ("DRF" if p == "drf" else f"{v / drf - 1:+.0%}")
            for p, v in mean.items()
        ]
        fig.add_trace(
            go.Bar(
                x=[_label(p) for p in order],
                y=mean.to_numpy() / HOUR,
                text=text,
                textposition="outside",
                marker_color=[_color(p) for p in order],
                marker_pattern_shape=["/" if "@" in p else "" for p in order],
                showlegend=False,
                hovertemplate="%{x}: mean JCT %{y:.2f} h (%{text} vs DRF)<extra></extra>",
            ),
            row=1,
            col=col,
        )
        fig.update_yaxes(title_text="mean JCT (h)" if col == 1 else None, row=1, col=col)
        fig.update_yaxes(range=[0, 1.18 * np.nanmax(mean.to_numpy() / HOUR)], row=1, col=col)
    fig.update_layout(
        base_layout(
            title
            or "Learned schedulers vs heuristics: mean JCT (label: change vs DRF; hatched: slot boundaries only)",
            height=460,
            width=max(1100, 480 * len(workloads)),
        )
    )
    return fig


def learning_curves_figure(df: pd.DataFrame, *, title: str | None = None) -> go.Figure:
    """Mean JCT of training episodes (a rolling mean, faint) and of greedy validation runs
    (markers) against training updates, one panel per agent.

    df: a frame from ``smdlab.experiments.learned.learning_curves``.
    """
    _require(df, ["agent", "update", "kind", "mean_jct"], "df")
    agents = list(dict.fromkeys(df["agent"]))
    fig = make_subplots(
        rows=1,
        cols=len(agents),
        subplot_titles=[_label(a) for a in agents],
        horizontal_spacing=0.08,
    )
    for col, agent in enumerate(agents, start=1):
        part = df[df["agent"] == agent]
        color = _color(agent)
        # one point per update: the mean of its episodes (a PPO rollout finishes several)
        train = part[part["kind"] == "train"].groupby("update", sort=True)["mean_jct"].mean()
        if len(train):
            window = max(1, len(train) // 40)
            fig.add_trace(
                go.Scatter(
                    x=train.index,
                    y=train.rolling(window, min_periods=1).mean() / HOUR,
                    mode="lines",
                    line={"color": color, "width": 1},
                    opacity=0.45,
                    name=f"{_label(agent)}: training episodes per update (rolling mean of {window})",
                ),
                row=1,
                col=col,
            )
        val = part[part["kind"] == "validation"].sort_values("update", kind="stable")
        if len(val):
            fig.add_trace(
                go.Scatter(
                    x=val["update"],
                    y=val["mean_jct"] / HOUR,
                    mode="lines+markers",
                    line={"color": color, "width": 2},
                    name=f"{_label(agent)}: greedy, validation seeds",
                ),
                row=1,
                col=col,
            )
        span = [0, max(1, int(part["update"].max()))]
        for kind in [k for k in dict.fromkeys(part["kind"]) if k not in ("train", "validation")]:
            level = float(part.loc[part["kind"] == kind, "mean_jct"].mean()) / HOUR
            fig.add_trace(
                go.Scatter(
                    x=span,
                    y=[level, level],
                    mode="lines",
                    line={"color": _color(kind), "dash": "dash" if "@" in kind else "dot"},
                    name=(
                        "the warm-up's teacher, training episodes"
                        if kind == "warmup"
                        else f"{_label(kind)} on the validation seeds"
                    ),
                    showlegend=col == 1,
                ),
                row=1,
                col=col,
            )
        fig.update_xaxes(title_text="training updates (PPO: rollouts)", row=1, col=col)
        fig.update_yaxes(title_text="mean JCT (h)" if col == 1 else None, row=1, col=col)
    fig.update_layout(
        base_layout(
            title or "Learning curves of the shipped learned schedulers", height=440, width=1100
        )
    )
    fig.update_layout(legend={"orientation": "h", "y": -0.22, "yanchor": "top"}, margin={"b": 110})
    return fig
