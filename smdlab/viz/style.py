"""Shared colours and labels of smdlab figures (one place, so every figure reads the same)."""

from __future__ import annotations

from typing import Any

# Every figure that reports a result of SMD says it comes from the reconstructed model.
SMD_LABEL = "SMD (reconstructed model)"

METHOD_LABELS: dict[str, str] = {
    "smd": SMD_LABEL,
    "milp": "exact MILP",
    "lp": "LP relaxation",
    "lp_round": "LP + rounding",
    "brute": "brute force",
}

PHASE_COLORS: dict[str, str] = {
    "forward": "#4C78A8",
    "backward": "#72B7B2",
    "push": "#F58518",
    "pull": "#E45756",
    "read": "#B279A2",
    "preprocess": "#9D755D",
    "allreduce": "#54A24B",
}

ROLE_COLORS: dict[str, str] = {"workers": "#4C78A8", "ps": "#F58518"}

RESOURCE_COLORS: dict[str, str] = {
    "gpu": "#54A24B",
    "cpu": "#9D755D",
    "mem_gb": "#B279A2",
    "bw_gbps": "#72B7B2",
}

MODE_COLORS: dict[str, str] = {
    "sequential": "#E45756",
    "wfbp": "#4C78A8",
    "wfbp_prefetch": "#54A24B",
}

BOUND_COLORS: dict[str, str] = {
    "lower": "#9D9D9D",
    "achieved": "#4C78A8",
    "exact": "#54A24B",
    "missing": "#E6E6E6",
}

# Qualitative palette for policies and jobs (cycled).
PALETTE: tuple[str, ...] = (
    "#4C78A8",
    "#F58518",
    "#54A24B",
    "#E45756",
    "#72B7B2",
    "#EECA3B",
    "#B279A2",
    "#FF9DA6",
    "#9D755D",
    "#BAB0AC",
)

TEMPLATE = "plotly_white"


def method_label(method: str) -> str:
    """Display name of a solver method (SMD is labelled as the reconstructed model)."""
    return METHOD_LABELS.get(method, method)


def policy_label(name: str) -> str:
    """Display name of a policy (SMD-based policies are labelled as the reconstructed model)."""
    return SMD_LABEL if name.lower() == "smd" else name


def color(i: int) -> str:
    """The i-th colour of the qualitative palette."""
    return PALETTE[i % len(PALETTE)]


def base_layout(title: str, template: str | None = TEMPLATE, **extra) -> dict:
    """The common layout (a plain dict, cheap to apply): template, title, compact margins.

    template: a plotly template name; None leaves the figure's template alone (the widgets pass
    None: applying a template costs tens of milliseconds and theirs never changes).
    """
    out = dict(
        title={
            "text": title,
            "x": 0.01,
            "xanchor": "left",
            "y": 0.98,
            "yanchor": "top",
            "yref": "container",
            "font": {"size": 14},
        },
        margin={"l": 60, "r": 20, "t": 80, "b": 50},
        legend={"orientation": "h", "yanchor": "bottom", "y": 1.02, "xanchor": "left", "x": 0.0},
        **extra,
    )
    if template is not None:
        out["template"] = template
    return out


def add_panel_lines(
    fig: Any, x: Any, ys: list[Any], *, name: str, group: str, colour: str,
    dash: str = "solid", width: float | None = None,
) -> None:  # fmt: skip
    """One series as a line in each panel of a one-row figure (``ys[k]`` in column k + 1), in the legend once."""
    import plotly.graph_objects as go

    line = {"color": colour, "dash": dash} | ({"width": width} if width is not None else {})
    for col, y in enumerate(ys, start=1):
        fig.add_trace(
            go.Scatter(
                x=x, y=y, mode="lines+markers", name=name, legendgroup=group,
                showlegend=col == 1, line=line, marker={"color": colour},
            ),
            row=1,
            col=col,
        )  # fmt: skip


def identity_line(lo: float, hi: float) -> Any:
    """The dotted y = x reference line of a predicted-against-measured panel, from lo to hi."""
    import plotly.graph_objects as go

    return go.Scatter(
        x=[lo, hi],
        y=[lo, hi],
        mode="lines",
        showlegend=False,
        line={"color": "#9D9D9D", "dash": "dot"},
        hoverinfo="skip",
    )


def add_policy_lines(
    fig: Any,
    means: Any,
    labels: dict[str, str],
    panels: list[tuple[str, str, float]],
    xs: list,
    dashed: tuple[str, ...] = (),
) -> None:
    """One line per policy of ``labels`` (in that order) in each panel (column, title, scale) of a
    one-row subplot figure; ``means`` is indexed by (policy, x); ``dashed`` policies dotted."""
    import numpy as np

    present = set(means.index.get_level_values(0))
    for k, policy in enumerate(p for p in labels if p in present):
        g = means.loc[policy].reindex(xs)
        add_panel_lines(
            fig, np.asarray(xs), [g[column].to_numpy() * scale for column, _, scale in panels],
            name=labels[policy], group=policy, colour=PALETTE[k % len(PALETTE)],
            dash="dot" if policy in dashed else "solid",
        )  # fmt: skip
