"""Figures of the batch-queue mode (``smdlab.experiments.batch``): chain interruption against load,
and one chain's links on a timeline."""

from __future__ import annotations

from collections.abc import Mapping

import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from smdlab.errors import InvalidInput
from smdlab.sim.batch import BatchResult
from smdlab.viz.style import base_layout, color

_PANELS = (
    ("interruption_h", "interruption per chain (h)"),
    ("zero_interruption_share", "chains never interrupted"),
    ("overlap_gpu_h", "overlap per chain (GPU-h)"),
)


def interruption_figure(df: pd.DataFrame, *, title: str | None = None) -> go.Figure:
    """Interruption, zero-interruption share and overlap waste of every provisioner against
    offered load. df: a frame from ``interruption_vs_load``."""
    if not isinstance(df, pd.DataFrame):
        raise InvalidInput(f"df must be a pandas DataFrame, got {type(df).__name__}")
    missing = [c for c in ("load", "provisioner", *(p for p, _ in _PANELS)) if c not in df.columns]
    if missing:
        raise InvalidInput(f"df lacks column(s) {', '.join(missing)}")
    if df.empty:
        raise InvalidInput("df has no rows")
    fig = make_subplots(rows=1, cols=3, subplot_titles=[t for _, t in _PANELS])
    for i, (name, part) in enumerate(df.groupby("provisioner", sort=False)):
        part = part.sort_values("load")
        for col, (field, _) in enumerate(_PANELS, start=1):
            fig.add_trace(
                go.Scatter(
                    x=part["load"] * 100,
                    y=part[field],
                    mode="lines+markers",
                    name=str(name),
                    legendgroup=str(name),
                    showlegend=col == 1,
                    line={"color": color(i)},
                ),
                row=1,
                col=col,
            )
    fig.update_xaxes(title_text="offered load (%)")
    fig.update_yaxes(rangemode="tozero")
    fig.update_layout(
        base_layout(
            title or "Chains on a batch queue (EASY backfilling): provisioners vs load",
            height=420,
            width=1100,
        )
    )
    return fig


def chain_timeline_figure(
    results: Mapping[str, BatchResult], chain: str, *, title: str | None = None
) -> go.Figure:
    """One chain's links (queue wait light, run dark) under each provisioner, one row each."""
    if not results:
        raise InvalidInput("results must map at least one provisioner name to its BatchResult")
    fig = go.Figure()
    t0 = None
    for res in results.values():
        links = res.jobs[res.jobs["chain"] == chain]
        if links.empty:
            raise InvalidInput(f"chain {chain!r} is not in every result")
        first = float(links["submit"].min())
        t0 = first if t0 is None else min(t0, first)
    assert t0 is not None
    for row, (name, res) in enumerate(results.items()):
        links = res.jobs[res.jobs["chain"] == chain]
        submit, start, end = (links[c].to_numpy(dtype=float) for c in ("submit", "start", "end"))
        for k in range(len(links)):
            for a, b, alpha, what in (
                (submit[k], start[k], 0.3, "waits"),
                (start[k], end[k], 1.0, "runs"),
            ):
                if b > a:
                    fig.add_trace(
                        go.Bar(
                            x=[(b - a) / 3600],
                            base=[(a - t0) / 3600],
                            y=[f"{name} #{k + 1}"],
                            orientation="h",
                            marker={"color": color(row), "opacity": alpha},
                            showlegend=False,
                            hovertemplate=f"{name} link {k + 1} {what}: %{{base:.1f}} h + %{{x:.1f}} h<extra></extra>",
                        )
                    )
    fig.update_xaxes(title_text=f"hours since chain {chain!r} was submitted")
    fig.update_yaxes(autorange="reversed")
    fig.update_layout(
        base_layout(
            title or f"Chain {chain!r}: links waiting (light) and running (dark)",
            height=120 + 28 * sum(len(r.jobs[r.jobs["chain"] == chain]) for r in results.values()),
            width=900,
        ),
        barmode="overlay",
    )
    return fig
