"""Figures of the deadline-aware policies: misses and best-effort JCT vs load (``smdlab.experiments.deadlines``), and one run's jobs beside their deadlines."""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from smdlab.errors import InvalidInput
from smdlab.sim.result import SimResult
from smdlab.viz.style import PALETTE, SMD_LABEL, TEMPLATE, add_panel_lines, base_layout

SLO_LABELS: dict[str, str] = {
    "fifo": "FIFO",
    "edf": "EDF",
    "lsf": "LSF",
    "chronus": "Chronus",
    "unisched": "UniSched-inspired",
    "smd": SMD_LABEL,
    "smd_slo": "SMD with deadlines (ours)",
}
# (column, panel title, scale): the three metrics of Chronus' evaluation.
SLO_PANELS: tuple[tuple[str, str, float], ...] = (
    ("hard_miss_rate", "hard miss rate (first deadline)", 1.0),
    ("weighted_miss_rate", "value-weighted miss rate", 1.0),
    ("best_effort_mean_jct_s", "best-effort mean JCT (h)", 1 / 3600),
)


def slo_means(df: pd.DataFrame) -> pd.DataFrame:
    """Per (policy, load), the means over windows of the three metrics (policies in frame order)."""
    if not isinstance(df, pd.DataFrame):
        raise InvalidInput(f"df must be a pandas DataFrame, got {type(df).__name__}")
    cols = [p[0] for p in SLO_PANELS]
    missing = [c for c in ("load", "policy", *cols) if c not in df.columns]
    if missing:
        raise InvalidInput(f"df lacks column(s) {', '.join(missing)}")
    if df.empty:
        raise InvalidInput("df has no rows")
    return df.groupby(["policy", "load"], sort=False)[cols].mean().reset_index()


def slo_vs_load_figure(df: pd.DataFrame) -> go.Figure:
    """Hard and weighted miss rates and best-effort mean JCT vs offered load, one line per policy (window means)."""
    means = slo_means(df)
    fig = make_subplots(
        rows=1, cols=len(SLO_PANELS), subplot_titles=[p[1] for p in SLO_PANELS],
        horizontal_spacing=0.08,
    )  # fmt: skip
    loads = sorted(means["load"].unique())
    for k, policy in enumerate(dict.fromkeys(means["policy"])):
        part = means[means["policy"] == policy].set_index("load").reindex(loads)
        colour = PALETTE[k % len(PALETTE)]
        dash = "dot" if policy == "fifo" else "solid"
        add_panel_lines(
            fig, np.asarray(loads), [part[c].to_numpy() * scale for c, _, scale in SLO_PANELS],
            name=SLO_LABELS.get(str(policy), str(policy)), group=str(policy), colour=colour,
            dash=dash, width=2.5 if policy == "chronus" else 1.5,
        )  # fmt: skip
    for col in range(1, len(SLO_PANELS) + 1):
        fig.update_xaxes(title_text="offered load", row=1, col=col)
        fig.update_yaxes(rangemode="tozero", row=1, col=col)
    windows = df["window"].nunique() if "window" in df else 1
    jobs = int(df["jobs"].iloc[0]) if "jobs" in df else 0
    fig.update_layout(
        **base_layout(
            f"Deadlines vs load: Chronus' Philly MIX2 trace, {jobs} jobs per window, "
            f"mean of {windows} window(s)",
            height=500,
            width=1100,
        )
    )
    # the legend above the panel titles, not on them
    fig.update_layout(margin={"t": 110}, legend={"y": 1.1})
    return fig


def deadline_gantt_figure(
    result: SimResult, *, title: str | None = None, template: str | None = TEMPLATE
) -> go.Figure:
    """``job_gantt_figure`` of one run with a tick at each SLO job's first deadline (green: met, red: missed)."""
    from smdlab.viz.sim import HOUR, job_gantt_figure

    if not isinstance(result, SimResult):
        raise InvalidInput(f"result must be a SimResult, got {type(result).__name__}")
    label = SLO_LABELS.get(result.policy, result.policy)
    fig = job_gantt_figure(
        result, template=template, title=title or f"Jobs over time with their deadlines — {label}"
    )
    jobs = result.jobs
    if "deadline" not in jobs:
        return fig  # a best-effort workload: no deadlines to mark
    slo = jobs[jobs["deadline"].notna()]
    for met, name, colour in (
        (1.0, "deadline met", "#2CA02C"),
        (0.0, "deadline missed", "#D62728"),
    ):
        part = slo[slo["deadline_met"] == met]
        fig.add_trace(
            go.Scatter(
                x=part["deadline"].to_numpy(dtype=float) / HOUR,
                y=part["job"],
                mode="markers",
                name=name,
                marker={"symbol": "line-ns", "size": 16, "line": {"width": 3, "color": colour}},
                customdata=part[["value", "max_value"]].to_numpy(dtype=float),
                hovertemplate="%{y}: first deadline %{x:.2f} h, earned %{customdata[0]:g} of "
                "%{customdata[1]:g}<extra></extra>",
            )
        )
    return fig
