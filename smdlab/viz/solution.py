"""Figures of allocation results: the allocation per job, JCT bounds, and the SMD iteration trace."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from smdlab.errors import InvalidInput
from smdlab.model.cluster import Cluster
from smdlab.model.job import Job
from smdlab.solve.instance import task_vectors
from smdlab.solve.solution import Solution
from smdlab.viz.style import (
    BOUND_COLORS,
    RESOURCE_COLORS,
    ROLE_COLORS,
    SMD_LABEL,
    TEMPLATE,
    base_layout,
    color,
    method_label,
)

RESOURCE_NAMES = {"gpu": "GPU", "cpu": "CPU", "mem_gb": "memory", "bw_gbps": "NIC bandwidth"}


def _check_solution(solution: Solution) -> Solution:
    if not isinstance(solution, Solution):
        raise InvalidInput(
            f"solution must be a smdlab.solve.Solution, got {type(solution).__name__}"
        )
    return solution


def resource_shares(solution: Solution, jobs: Sequence[Job], cluster: Cluster) -> np.ndarray:
    """(jobs x resources) fraction of the cluster's pooled capacity each job's allocation holds."""
    _check_solution(solution)
    by_name = {j.name: j for j in jobs}
    missing = [n for n in solution.jobs if n not in by_name]
    if missing:
        raise InvalidInput(f"jobs must include every job of the solution; missing {missing[0]!r}")
    cap = cluster.capacity_vector
    out = np.zeros((len(solution.jobs), len(cluster.resources)))
    for i, (name, w, p) in enumerate(zip(solution.jobs, solution.workers, solution.ps)):
        job = by_name[name]
        alpha, gamma = task_vectors(job, cluster.resources)
        use = w * alpha + p * gamma
        out[i] = np.divide(use, cap, out=np.zeros_like(use), where=cap > 0)
    return out


def allocation_spec(
    solution: Solution,
    jobs: Sequence[Job] | None = None,
    cluster: Cluster | None = None,
    *,
    title: str | None = None,
    template: str | None = TEMPLATE,
) -> dict:
    """The allocation figure as a plain dict (data, layout): what ``allocation_figure`` wraps."""
    _check_solution(solution)
    names = list(solution.jobs)
    workers = np.array(solution.workers, dtype=float)
    ps = np.array(solution.ps, dtype=float)
    if jobs is not None:  # an all-reduce job's PS slot has no demand: it runs with p = 0
        ring = {j.name for j in jobs if j.arch == "allreduce"}
        ps = np.where([str(n) in ring for n in names], 0.0, ps)
    started = workers > 0
    shares = (
        resource_shares(solution, jobs, cluster)
        if jobs is not None and cluster is not None
        else None
    )
    two = shares is not None
    # Bars are placed by hand (overlay mode): PSs stacked on workers in the upper panel, the
    # resources side by side in the lower one.
    data: list[dict[str, Any]] = [
        {
            "type": "bar",
            "x": names,
            "y": workers,
            "name": "workers",
            "marker": {"color": ROLE_COLORS["workers"]},
            "text": ["" if st else "not started" for st in started],
            "textposition": "outside",
            "hovertemplate": "%{x}: %{y} workers<extra></extra>",
            "xaxis": "x",
            "yaxis": "y",
        },
        {
            "type": "bar",
            "x": names,
            "y": ps,
            "base": workers,
            "name": "parameter servers",
            "marker": {"color": ROLE_COLORS["ps"]},
            "hovertemplate": "%{x}: %{y} parameter servers<extra></extra>",
            "xaxis": "x",
            "yaxis": "y",
        },
    ]
    if shares is not None and cluster is not None:
        K = len(cluster.resources)
        width = 0.8 / K
        for k, r in enumerate(cluster.resources):
            label = RESOURCE_NAMES.get(r, r)
            data.append(
                {
                    "type": "bar",
                    "x": names,
                    "y": shares[:, k] * 100,
                    "name": label,
                    "width": width,
                    "offset": -0.4 + k * width,
                    "marker": {"color": RESOURCE_COLORS.get(r, color(k))},
                    "hovertemplate": f"%{{x}}: %{{y:.1f}}% of the cluster's {label}<extra></extra>",
                    "xaxis": "x2",
                    "yaxis": "y2",
                }
            )
    top = float((workers + ps).max()) if names else 1.0
    axes = {
        "xaxis": {
            "anchor": "y",
            "domain": [0, 1],
            **({"matches": "x2", "showticklabels": False} if two else {}),
        },
        "yaxis": {
            "anchor": "x",
            "domain": [0.54, 1] if two else [0, 1],
            "title": {"text": "tasks"},
            "range": [0, max(top, 1.0) * 1.15],
        },
    }
    if two:
        axes["xaxis2"] = {"anchor": "y2", "domain": [0, 1]}
        axes["yaxis2"] = {
            "anchor": "x2",
            "domain": [0, 0.46],
            "title": {"text": "% of cluster"},
            "rangemode": "tozero",
        }
    layout = base_layout(
        template=template,
        title=title
        or f"Allocation by {method_label(solution.method)}: {int(started.sum())}/{len(names)} jobs "
        f"started, {int(workers.sum())} workers, {int(ps.sum())} PSs",
        barmode="overlay",
        height=260 * (2 if two else 1) + 60,
        **axes,
    )
    return {"data": data, "layout": layout}


def allocation_figure(
    solution: Solution,
    jobs: Sequence[Job] | None = None,
    cluster: Cluster | None = None,
    *,
    title: str | None = None,
    template: str | None = TEMPLATE,
) -> go.Figure:
    """Workers and PSs per job (stacked), and, given jobs and cluster, each job's share of every resource."""
    return go.Figure(allocation_spec(solution, jobs, cluster, title=title, template=template))


# What each kind of ``Solution.bound_kind`` is called in the figures and the explorer.
BOUND_LABELS = {
    "lp": "LP lower bound",
    "lagrangian": "Lagrangian bound",
    "milp": "MILP bound",
    "exact": "optimum (brute force)",
}


def bound_label(solution: Solution) -> str:
    """The name of ``solution``'s lower bound: LP, Lagrangian, MILP, or brute force's optimum."""
    return BOUND_LABELS.get(solution.bound_kind, "lower bound")


def exact_label(exact: Solution) -> str:
    """What an exact result proved: optimal, or the gap to its bound and why it is not zero."""
    if exact.proven_optimal:
        return "optimal"
    gap = "gap n/a" if math.isnan(exact.gap) else f"{exact.gap:.3%} above its bound"
    if exact.status == "time_limit":
        return f"time limit, not proven optimal: {gap}"
    if (
        exact.status == "optimal"
    ):  # the pooled optimum, shrunk by placement or solved to a looser gap
        why = "after placement" if exact.shrink_steps else "solver's gap tolerance"
        return f"pooled optimum, {gap} ({why})"
    return f"{exact.status}: {gap}"


def _objective_label() -> str:
    return "Σ weighted JCT (s)"


def bounds_spec(
    solutions: Solution | Sequence[Solution],
    exact: Solution | None = None,
    *,
    exact_note: str | None = None,
    title: str | None = None,
    template: str | None = TEMPLATE,
) -> dict:
    """The bounds figure as a plain dict (data, layout): what ``bounds_figure`` wraps."""
    sols = [solutions] if isinstance(solutions, Solution) else list(solutions)
    if not sols:
        raise InvalidInput("solutions must contain at least one Solution, got none")
    for s in sols:
        _check_solution(s)
    if exact is not None:
        _check_solution(exact)
    bounded = [s for s in sols if math.isfinite(s.lower_bound)]
    best = max(bounded, key=lambda s: s.lower_bound) if bounded else None
    lower = best.lower_bound if best is not None else math.nan
    x = [bound_label(best) if best is not None else "lower bound"]
    y = [lower]
    colours = [BOUND_COLORS["lower"]]
    symbols = ["line-ew-open"]
    texts = ["n/a" if math.isnan(lower) else f"{lower:,.0f}"]
    for s in sols:
        x.append(method_label(s.method))
        y.append(s.objective)
        colours.append(BOUND_COLORS["achieved"])
        symbols.append("circle")
        rel = (
            (s.objective - lower) / s.objective
            if s.objective > 0 and math.isfinite(lower)
            else math.nan
        )
        texts.append(f"{s.objective:,.0f}" + ("" if math.isnan(rel) else f" (+{rel:.2%})"))
    x.append("exact MILP")
    if exact is not None:
        proven = exact.proven_optimal
        y.append(exact.objective)
        colours.append(BOUND_COLORS["exact"])
        symbols.append("diamond" if proven else "diamond-open")
        texts.append(f"{exact.objective:,.0f} {exact_label(exact)}")
    else:
        # No value yet: a hollow placeholder at the bound's height carries the note.
        y.append(lower if math.isfinite(lower) else 0.0)
        colours.append(BOUND_COLORS["missing"])
        symbols.append("circle-open")
        texts.append(exact_note or "not run")
    trace = {
        "type": "scatter",
        "x": x,
        "y": y,
        "text": texts,
        "mode": "markers+text",
        "textposition": "top center",
        "cliponaxis": False,
        "showlegend": False,
        "hovertemplate": "%{x}: %{y:,.1f} s<extra></extra>",
        "marker": {
            "color": colours,
            "symbol": symbols,
            "size": 18,
            "line": {"width": 3, "color": colours},
        },
    }
    # Bounds and results are usually within a few percent: the axis is zoomed onto them (not from 0).
    finite = [v for v in y if math.isfinite(v)]
    lo, hi = (min(finite), max(finite)) if finite else (0.0, 1.0)
    pad = max(hi - lo, 0.02 * max(abs(hi), 1.0)) * 0.3
    layout = base_layout(
        template=template,
        title=title or "JCT: lower bound vs achieved vs exact optimum",
        yaxis={"title": {"text": _objective_label()}, "range": [lo - pad, hi + pad]},
        xaxis={"range": [-0.5, len(x) - 0.2]},
        shapes=[
            {
                "type": "line",
                "xref": "paper",
                "x0": 0,
                "x1": 1,
                "y0": lower,
                "y1": lower,
                "line": {"color": BOUND_COLORS["lower"], "dash": "dash", "width": 1},
            }
        ]
        if math.isfinite(lower)
        else [],
        height=340,
    )
    return {"data": [trace], "layout": layout}


def bounds_figure(
    solutions: Solution | Sequence[Solution],
    exact: Solution | None = None,
    *,
    exact_note: str | None = None,
    title: str | None = None,
    template: str | None = TEMPLATE,
) -> go.Figure:
    """JCT lower bound (LP) versus achieved (each solution) versus the exact MILP optimum.

    exact: the MILP solution; if it stopped at its time limit its incumbent is drawn hollow and
        marked "not proven optimal". exact_note: text shown instead when there is no exact value
        (e.g. "solving…" or "not solved within 5 s").
    """
    return go.Figure(
        bounds_spec(solutions, exact, exact_note=exact_note, title=title, template=template)
    )


def smd_trace_figure(
    solution: Solution,
    exact: Solution | None = None,
    *,
    title: str | None = None,
    template: str | None = TEMPLATE,
) -> go.Figure:
    """SMD's iterations: ||psi|| (log scale) and the true objective, with its lower bound and exact optimum."""
    _check_solution(solution)
    if solution.method != "smd" or not solution.trace:
        raise InvalidInput(
            f"solution must come from method 'smd' with a trace, got method {solution.method!r}"
        )
    tr = solution.trace_frame()
    fig = make_subplots(
        rows=1,
        cols=2,
        subplot_titles=["‖ψ‖ per iteration", "objective per iteration"],
        horizontal_spacing=0.12,
    )
    fig.add_trace(
        go.Scatter(
            x=tr["iteration"],
            y=tr["psi_norm"],
            mode="lines+markers",
            name="‖ψ‖",
            customdata=tr[["step", "knapsack_time_s", "knapsack_solves"]].to_numpy(),
            hovertemplate="iteration %{x}: ‖ψ‖ = %{y:.3g}<br>step %{customdata[0]:.3g}, "
            "knapsack %{customdata[1]:.3f} s in %{customdata[2]} solves<extra></extra>",
            line={"color": "#555"},
        ),
        row=1,
        col=1,
    )
    fig.add_trace(
        go.Scatter(
            x=tr["iteration"],
            y=tr["objective"],
            mode="lines+markers",
            name=SMD_LABEL,
            hovertemplate="iteration %{x}: %{y:,.1f} s<extra></extra>",
            line={"color": color(0)},
        ),
        row=1,
        col=2,
    )
    xs = [int(tr["iteration"].min()), int(tr["iteration"].max())]
    if math.isfinite(solution.lower_bound):
        fig.add_trace(
            go.Scatter(
                x=xs,
                y=[solution.lower_bound] * 2,
                mode="lines",
                name=bound_label(solution),
                line={"color": BOUND_COLORS["lower"], "dash": "dash"},
            ),
            row=1,
            col=2,
        )
    if exact is not None:
        _check_solution(exact)
        name = "exact MILP" + ("" if exact.proven_optimal else f" ({exact_label(exact)})")
        fig.add_trace(
            go.Scatter(
                x=xs,
                y=[exact.objective] * 2,
                mode="lines",
                name=name,
                line={"color": BOUND_COLORS["exact"], "dash": "dot"},
            ),
            row=1,
            col=2,
        )
    fig.update_layout(
        base_layout(
            template=template,
            title=title or f"{SMD_LABEL}: iterations of the parametric method",
            height=360,
        )
    )
    fig.update_layout(margin={"t": 100}, legend={"y": 1.12})
    fig.update_yaxes(type="log", title_text="‖ψ‖", row=1, col=1)
    fig.update_yaxes(title_text=_objective_label(), row=1, col=2)
    fig.update_xaxes(title_text="iteration", dtick=1, row=1, col=1)
    fig.update_xaxes(title_text="iteration", dtick=1, row=1, col=2)
    return fig
