"""Figures of simulation runs: JCT distributions per policy, utilisation over time, and a job Gantt chart."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from smdlab.errors import InvalidInput
from smdlab.sim.result import SimResult
from smdlab.viz.solution import RESOURCE_NAMES
from smdlab.viz.style import RESOURCE_COLORS, TEMPLATE, base_layout, color, policy_label

HOUR = 3600.0


def _results(
    results: SimResult | Sequence[SimResult] | Mapping[str, SimResult],
) -> list[tuple[str, SimResult]]:
    items: list[tuple[str, SimResult]] | None
    if isinstance(results, SimResult):
        items = [(results.policy, results)]
    elif isinstance(results, Mapping):
        items = list(results.items())
    else:
        items = (
            [(r.policy, r) for r in results]
            if all(isinstance(r, SimResult) for r in results)
            else None
        )
    if not items or not all(isinstance(r, SimResult) for _, r in items):
        raise InvalidInput(
            "results must be a SimResult, a sequence of them, or a mapping name -> SimResult"
        )
    return [(str(name), r) for name, r in items]


def jct_cdf_figure(
    results: SimResult | Sequence[SimResult] | Mapping[str, SimResult],
    *,
    log_x: bool = True,
    title: str | None = None,
    template: str | None = TEMPLATE,
) -> go.Figure:
    """Empirical CDF of the job completion times of each policy (completed jobs only)."""
    items = _results(results)
    fig = go.Figure()
    for i, (name, r) in enumerate(items):
        done = r.jobs[r.jobs["status"] == "completed"]
        jct = np.sort(done["jct"].to_numpy(dtype=float)) / HOUR
        frac = np.arange(1, jct.size + 1) / max(jct.size, 1)
        label = policy_label(name)
        fig.add_trace(
            go.Scatter(
                x=jct,
                y=frac,
                mode="lines",
                name=label,
                line={"color": color(i), "shape": "hv"},
                hovertemplate=f"{label}: %{{y:.0%}} of jobs done within %{{x:.2f}} h<extra></extra>",
            )
        )
    fig.update_layout(
        base_layout(
            template=template,
            title=title or "JCT distribution per policy",
            xaxis={
                "title": {"text": "job completion time (h)"},
                "type": "log" if log_x else "linear",
            },
            yaxis={"title": {"text": "fraction of jobs"}, "range": [0, 1.02], "tickformat": ".0%"},
            height=380,
        )
    )
    return fig


def policy_summary_figure(
    results: SimResult | Sequence[SimResult] | Mapping[str, SimResult],
    *,
    title: str | None = None,
    template: str | None = TEMPLATE,
) -> go.Figure:
    """Mean, median and 95th-percentile JCT per policy, side by side."""
    items = _results(results)
    names = [policy_label(n) for n, _ in items]
    fig = go.Figure()
    for k, (key, label) in enumerate(
        (("mean_jct", "mean"), ("median_jct", "median"), ("p95_jct", "95th percentile"))
    ):
        values = [float(r.summary[key]) / HOUR for _, r in items]
        fig.add_trace(
            go.Bar(
                x=names,
                y=values,
                name=label,
                marker={"color": color(k)},
                hovertemplate=f"%{{x}}: {label} JCT %{{y:.2f}} h<extra></extra>",
            )
        )
    fig.update_layout(
        base_layout(
            template=template,
            title=title or "JCT per policy",
            barmode="group",
            yaxis={"title": {"text": "JCT (h)"}},
            height=360,
        )
    )
    return fig


def utilisation_figure(
    result: SimResult, *, title: str | None = None, template: str | None = TEMPLATE
) -> go.Figure:
    """Fraction of each resource in use over time, and the numbers of running and queued jobs."""
    ((name, r),) = _results(result)
    util = r.utilization
    t = util["time"].to_numpy(dtype=float) / HOUR
    resources = [c for c in util.columns if c not in ("time", "running", "queued")]
    fig = make_subplots(
        rows=2, cols=1, shared_xaxes=True, row_heights=[0.65, 0.35], vertical_spacing=0.08
    )
    for k, res in enumerate(resources):
        label = RESOURCE_NAMES.get(res, res)
        fig.add_trace(
            go.Scatter(
                x=t,
                y=util[res].to_numpy(dtype=float) * 100,
                mode="lines",
                name=label,
                line={"shape": "hv", "color": RESOURCE_COLORS.get(res, color(k))},
                hovertemplate=f"{label}: %{{y:.0f}}% at %{{x:.2f}} h<extra></extra>",
            ),
            row=1,
            col=1,
        )
    for k, (col, label) in enumerate((("running", "running jobs"), ("queued", "queued jobs"))):
        fig.add_trace(
            go.Scatter(
                x=t,
                y=util[col].to_numpy(dtype=float),
                mode="lines",
                name=label,
                line={
                    "shape": "hv",
                    "color": ["#333333", "#E45756"][k],
                    "dash": ["solid", "dot"][k],
                },
                hovertemplate=f"{label}: %{{y}} at %{{x:.2f}} h<extra></extra>",
            ),
            row=2,
            col=1,
        )
    fig.update_layout(
        base_layout(
            template=template,
            title=title or f"Cluster utilisation over time — {policy_label(name)}",
            height=460,
        )
    )
    fig.update_yaxes(title_text="% in use", range=[0, 105], row=1, col=1)
    fig.update_yaxes(title_text="jobs", rangemode="tozero", row=2, col=1)
    fig.update_xaxes(title_text="time (h)", row=2, col=1)
    return fig


def job_gantt_figure(
    result: SimResult,
    *,
    max_jobs: int | None = 200,
    title: str | None = None,
    template: str | None = TEMPLATE,
) -> go.Figure:
    """Each job's wait (arrival to first start) and running segments, coloured by its number of workers."""
    ((name, r),) = _results(result)
    jobs = r.jobs.sort_values("arrival")
    if max_jobs is not None and len(jobs) > max_jobs:
        jobs = jobs.iloc[:max_jobs]  # a readable chart: the first jobs by arrival
    order = jobs["job"].tolist()
    keep = set(order)
    hist = r.history[r.history["job"].isin(keep)]
    started = jobs[jobs["start"].notna()]
    wait = (started["start"] - started["arrival"]).to_numpy(dtype=float) / HOUR
    fig = go.Figure()
    fig.add_trace(
        go.Bar(
            y=started["job"],
            x=wait,
            base=started["arrival"].to_numpy(dtype=float) / HOUR,
            orientation="h",
            name="waiting",
            marker={"color": "#D9D9D9"},
            hovertemplate="%{y}: waited %{x:.2f} h<extra></extra>",
        )
    )
    seg = (hist["end"] - hist["start"]).to_numpy(dtype=float) / HOUR
    fig.add_trace(
        go.Bar(
            y=hist["job"],
            x=seg,
            base=hist["start"].to_numpy(dtype=float) / HOUR,
            orientation="h",
            name="running",
            customdata=hist[["workers", "ps"]].to_numpy(),
            marker={
                "color": hist["workers"].to_numpy(dtype=float),
                "colorscale": "Viridis",
                "cmin": 0,
                "colorbar": {"title": {"text": "workers"}, "thickness": 12},
            },
            hovertemplate="%{y}: %{customdata[0]} workers, %{customdata[1]} PSs for %{x:.2f} h<extra></extra>",
        )
    )
    fig.update_layout(
        base_layout(
            template=template,
            title=title or f"Jobs over time — {policy_label(name)}",
            barmode="overlay",
            xaxis={"title": {"text": "time (h)"}},
            yaxis={
                "categoryorder": "array",
                "categoryarray": order[::-1],
                "title": {"text": "job"},
            },
            height=max(320, 14 * len(order) + 120),
        )
    )
    return fig


def schedule_spec(
    results: Mapping[str, float],
    bound: float,
    *,
    note: str | None = None,
    title: str | None = None,
    template: str | None = TEMPLATE,
    bound_label: str = "lower bound, any schedule",
) -> dict:
    """Each policy's simulated mean JCT (bars, h) beside the lower bound on any schedule's mean JCT (dashed line), as a plain dict.

    results: policy name -> mean JCT (s); bound: the bound (s; NaN when not available);
    note: shown instead of bars while nothing is computed (e.g. "simulating…");
    bound_label: the bound's name in its legend entry (which bound it is).
    """
    names = list(results)
    ys = [float(results[p]) / 3600.0 for p in names]
    labels = [policy_label(p) for p in names]
    has_bound = bound is not None and np.isfinite(bound) and bound > 0
    texts = [
        f"{y:.2f} h" + (f" ({y * 3600.0 / bound:.2f}x bound)" if has_bound else "") for y in ys
    ]
    data: list[dict] = [
        {
            "type": "bar",
            "x": labels,
            "y": ys,
            "text": texts,
            "textposition": "outside",
            "cliponaxis": False,
            "marker": {"color": [color(i) for i in range(len(names))]},
            "showlegend": False,
            "hovertemplate": "%{x}: mean JCT %{y:.3f} h<extra></extra>",
        }
    ]
    shapes = []
    if has_bound:
        b = float(bound) / 3600.0
        data.append(
            {
                "type": "scatter",
                "x": [labels[0] if labels else "", labels[-1] if labels else ""],
                "y": [b, b],
                "mode": "lines",
                "name": f"{bound_label}: {b:.2f} h",
                "line": {"color": "#222222", "dash": "dash", "width": 2},
                "hovertemplate": bound_label
                + " on the mean JCT of any schedule: %{y:.3f} h<extra></extra>",
            }
        )
        shapes.append(
            {
                "type": "line",
                "xref": "paper",
                "x0": 0,
                "x1": 1,
                "y0": b,
                "y1": b,
                "line": {"color": "#222222", "dash": "dash", "width": 2},
            }
        )
    top = max([*ys, float(bound) / 3600.0 if has_bound else 0.0, 1e-9])
    layout = base_layout(
        template=template,
        title=title
        or "Schedule: each policy's simulated mean JCT vs the lower bound on any schedule",
        yaxis={"title": {"text": "mean JCT (h)"}, "range": [0, top * 1.25]},
        shapes=shapes,
        annotations=[
            {"text": note, "xref": "paper", "yref": "paper", "x": 0.5, "y": 0.5,
             "showarrow": False, "font": {"size": 14}}
        ]
        if note
        else [],
        height=360,
    )  # fmt: skip
    return {"data": data, "layout": layout}
