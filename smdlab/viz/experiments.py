"""Figures of the numerical experiments (``smdlab.experiments``): JCT sweeps, optimality gap, model validation.

Each builder takes the tidy DataFrame an experiment returns (one row per seed) and aggregates it
for display; the CSV written beside a figure is that DataFrame, unaggregated.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from smdlab.errors import InvalidInput
from smdlab.viz.style import PALETTE, SMD_LABEL, base_layout, policy_label

HOUR = 3600.0
# Fixed colours per policy, so a policy looks the same in every figure whatever subset is shown;
# SMD gets the strongest colour (red), the exact per-decision MILP green.
_POLICY_COLORS = {
    "fifo": "#9D755D",
    "srtf": "#BAB0AC",
    "drf": "#4C78A8",
    "tetris": "#72B7B2",
    "tiresias": "#B279A2",
    "optimus": "#F58518",
    "milp": "#54A24B",
    "smd": "#E45756",
    "sjf": "#EECA3B",
}
_DASHES = {
    "fifo": "dot",
    "srtf": "dot",
    "drf": "dash",
    "tetris": "dash",
    "tiresias": "dot",
    "optimus": "dashdot",
}
# Distinct markers: policies with equal results draw on top of each other, and the markers still tell them apart.
_SYMBOLS_BY_POLICY = {
    "fifo": "circle",
    "srtf": "square",
    "drf": "triangle-up",
    "tetris": "triangle-down",
    "tiresias": "x",
    "optimus": "star",
    "milp": "cross",
    "smd": "diamond",
}


def policy_color(policy: str) -> str:
    """The colour of ``policy`` in experiment figures (fixed for the built-in policies)."""
    if policy in _POLICY_COLORS:
        return _POLICY_COLORS[policy]
    return PALETTE[sum(map(ord, policy)) % len(PALETTE)]


def _require(df: pd.DataFrame, columns: Sequence[str], what: str) -> None:
    if not isinstance(df, pd.DataFrame):
        raise InvalidInput(f"{what} must be a pandas DataFrame, got {type(df).__name__}")
    missing = [c for c in columns if c not in df.columns]
    if missing:
        raise InvalidInput(
            f"{what} lacks column(s) {', '.join(missing)}; it has {', '.join(map(str, df.columns))}"
        )
    if df.empty:
        raise InvalidInput(f"{what} has no rows")


def summarise(df: pd.DataFrame, x: str, y: str, by: str = "policy") -> pd.DataFrame:
    """Mean, standard error, min, max and count of ``y`` per (``x``, ``by``), in first-seen ``by`` order."""
    _require(df, [x, y, by], "df")
    order = list(dict.fromkeys(df[by]))
    g = df.groupby([x, by], sort=True)[y]
    out = g.agg(["mean", "std", "min", "max", "count"]).reset_index()
    out["sem"] = (out["std"] / np.sqrt(out["count"])).fillna(0.0)
    out["_order"] = out[by].map({k: i for i, k in enumerate(order)})
    return out.sort_values(["_order", x]).drop(columns=["_order", "std"]).reset_index(drop=True)


def jct_sweep_figure(
    df: pd.DataFrame,
    *,
    x: str | None = None,
    y: str = "mean_jct_s",
    x_title: str | None = None,
    log_x: bool | None = None,
    log_y: bool | None = None,
    title: str | None = None,
    util: str | None = "util_gpu",
) -> go.Figure:
    """Mean JCT (h) of each policy versus the swept quantity, above its GPU utilisation; error bars: standard error over seeds.

    df: a frame from ``smdlab.experiments.jct_sweep`` (its ``attrs`` give x, the axis title and log x).
    util: column of the lower panel (time-average utilisation over the makespan, in percent);
    None, or a frame without it, draws the JCT panel alone. With a ``mean_jct_lower_bound_s``
    column and ``y = "mean_jct_s"``, a dotted line draws the lower bound on the mean JCT of any
    schedule (docs/bound.md), averaged over the seeds like the policies' means.
    """
    x = x or df.attrs.get("x")
    if x is None:
        raise InvalidInput("x must name the swept column (the frame carries no attrs['x'])")
    _require(df, [x, y, "policy"], "df")
    stats = summarise(df, x, y)
    with_util = util is not None and util in df.columns
    ustats = summarise(df, x, util) if with_util and util is not None else None
    policies = list(dict.fromkeys(stats["policy"]))
    # SMD first and wide, the baselines thin on top of it: a baseline equal to SMD stays visible.
    policies.sort(key=lambda p: p != "smd")
    fig = (
        make_subplots(
            rows=2, cols=1, shared_xaxes=True, row_heights=[0.68, 0.32], vertical_spacing=0.06
        )
        if with_util
        else go.Figure()
    )
    where = {"row": 1, "col": 1} if with_util else {}
    # Legend entries name each policy's execution mode (non-elastic, preemptive, elastic).
    modes = (
        df.groupby("policy")["execution"].agg(lambda v: "/".join(sorted(set(map(str, v)))))
        if "execution" in df.columns
        else pd.Series(dtype=str)
    )
    for pol in policies:
        s = stats[stats["policy"] == pol]
        is_smd = pol == "smd"
        label = policy_label(pol)
        if pol in modes.index:
            label = f"{label} · {modes[pol].replace('_', '-')}"
        line = {
            "color": policy_color(pol),
            "width": 5 if is_smd else 1.6,
            "dash": _DASHES.get(pol, "solid"),
        }
        marker = {
            "size": 11 if is_smd else 7,
            "symbol": _SYMBOLS_BY_POLICY.get(pol, "circle"),
        }
        fig.add_trace(
            go.Scatter(
                x=s[x].to_numpy(),
                y=s["mean"].to_numpy() / HOUR,
                name=label,
                legendgroup=pol,
                mode="lines+markers",
                error_y={
                    "type": "data",
                    "array": s["sem"].to_numpy() / HOUR,
                    "visible": True,
                    "thickness": 1,
                    "width": 3,
                },
                line=line,
                marker=marker,
                opacity=0.85 if is_smd else 1.0,
                customdata=s["count"].to_numpy(),
                hovertemplate=f"{label}<br>{x} = %{{x}}<br>mean JCT %{{y:.2f}} h (%{{customdata}} seeds)<extra></extra>",
            ),
            **where,
        )
        if ustats is not None:
            u = ustats[ustats["policy"] == pol]
            fig.add_trace(
                go.Scatter(
                    x=u[x].to_numpy(),
                    y=100 * u["mean"].to_numpy(),
                    name=label,
                    legendgroup=pol,
                    showlegend=False,
                    mode="lines+markers",
                    line={**line, "width": 3 if is_smd else 1.2},
                    marker={**marker, "size": 8 if is_smd else 5},
                    opacity=0.85 if is_smd else 1.0,
                    hovertemplate=f"{label}<br>{x} = %{{x}}<br>GPU utilisation %{{y:.1f}}%<extra></extra>",
                ),
                row=2,
                col=1,
            )
    bound_col = "mean_jct_lower_bound_s"
    if y == "mean_jct_s" and bound_col in df.columns and df[bound_col].notna().any():
        # one bound per (point, seed), the same for every policy; its mean over the seeds bounds
        # the mean over the seeds of every policy's mean JCT
        per = df.groupby([x, "seed"])[bound_col].max().groupby(level=0).mean().dropna()
        fig.add_trace(
            go.Scatter(
                x=per.index.to_numpy(),
                y=per.to_numpy() / HOUR,
                name="lower bound: mean JCT of any schedule",
                mode="lines",
                line={"color": "#222222", "width": 2, "dash": "dot"},
                hovertemplate=f"lower bound on the mean JCT of any schedule<br>{x} = %{{x}}<br>%{{y:.2f}} h<extra></extra>",
            ),
            **where,
        )
    metric = {
        "mean_jct_s": "mean JCT (h)",
        "median_jct_s": "median JCT (h)",
        "p95_jct_s": "95th-percentile JCT (h)",
        "makespan_s": "makespan (h)",
    }.get(y, f"{y} / 3600")
    log = bool(df.attrs.get("log_x", False)) if log_x is None else log_x
    logy = bool(df.attrs.get("log_y", False)) if log_y is None else log_y
    xt = x_title or df.attrs.get("x_title") or x
    xaxis = {
        "type": "log" if log else "linear",
        "tickvals": sorted(set(stats[x].tolist())) if log else None,
    }
    yaxis = {"title": {"text": metric}, **({"type": "log"} if logy else {"rangemode": "tozero"})}
    if not with_util:
        fig.update_layout(
            base_layout(
                title or f"{metric.split(' (')[0]} vs {xt}",
                xaxis={"title": {"text": xt}, **xaxis},
                yaxis=yaxis,
                height=460,
                width=780,
            )
        )
        return fig
    what = "GPU" if util == "util_gpu" else str(util).removeprefix("util_")
    fig.update_layout(
        base_layout(
            title or f"{metric.split(' (')[0]} and {what} utilisation vs {xt}",
            xaxis=xaxis,
            yaxis=yaxis,
            xaxis2={"title": {"text": xt}, **xaxis},
            yaxis2={"title": {"text": f"{what} util. (%)"}, "range": [0, 105]},
            height=640,
            width=780,
        )
    )
    fig.update_layout(margin={"t": 140})  # room for a legend of up to three rows below the title
    return fig


GAP_PANELS = (
    ("gap_to_milp", "gap to the exact MILP optimum"),
    ("gap_to_lp", "gap to the LP lower bound"),
)
GAP_FLOOR_PCT = 1e-4  # a zero gap on the log axis is drawn at this many percent


def gap_figure(df: pd.DataFrame, *, title: str | None = None) -> go.Figure:
    """Optimality gap (%) versus instance size, log axis: mean over instances; for SMD bars from min to max."""
    _require(df, ["n_jobs", "variant", "label", "gap_to_milp", "gap_to_lp"], "df")
    fig = make_subplots(
        rows=1, cols=2, subplot_titles=[t for _, t in GAP_PANELS], horizontal_spacing=0.1
    )
    labels = dict(zip(df["variant"], df["label"]))
    for col, (metric, _) in enumerate(GAP_PANELS, start=1):
        stats = summarise(df, "n_jobs", metric, by="variant")
        for k, variant in enumerate(dict.fromkeys(stats["variant"])):
            s = stats[stats["variant"] == variant]
            # Gaps are >= 0 up to round-off; clip so that a zero gap sits on the floor of the log axis.
            mean, lo, hi = (
                np.maximum(s[c].to_numpy() * 100, GAP_FLOOR_PCT) for c in ("mean", "min", "max")
            )
            is_smd = variant == "smd"
            fig.add_trace(
                go.Scatter(
                    x=s["n_jobs"].to_numpy(),
                    y=mean,
                    name=labels[variant],
                    legendgroup=variant,
                    showlegend=col == 1,
                    mode="lines+markers",
                    # Min-max bars for SMD only: the other variants' bars would hide it.
                    error_y={
                        "type": "data",
                        "symmetric": False,
                        "array": hi - mean,
                        "arrayminus": mean - lo,
                        "thickness": 1,
                        "width": 3,
                    }
                    if is_smd
                    else None,
                    line={
                        "color": PALETTE[k % len(PALETTE)],
                        "width": 3 if is_smd else 1.6,
                        "dash": "solid" if variant.startswith("smd") else "dash",
                    },
                    marker={
                        "symbol": "diamond" if is_smd else "circle",
                        "size": 8 if is_smd else 6,
                    },
                    customdata=s["mean"].to_numpy() * 100,
                    hovertemplate=f"{labels[variant]}<br>%{{x}} jobs: mean gap %{{customdata:.4f}}%<extra></extra>",
                ),
                row=1,
                col=col,
            )
        fig.update_xaxes(title_text="jobs in the instance", row=1, col=col)
        ticks = [GAP_FLOOR_PCT * 10**k for k in range(7)]
        fig.update_yaxes(
            title_text="gap (%, log scale)",
            type="log",
            tickvals=ticks,
            ticktext=["≈0"] + [f"{t:g}" for t in ticks[1:]],
            row=1,
            col=col,
        )
    fig.update_layout(
        base_layout(
            title or f"Optimality gap vs instance size — {SMD_LABEL}", height=460, width=980
        )
    )
    fig.update_layout(
        legend={"y": -0.22, "yanchor": "top", "x": 0.0, "xanchor": "left"}, margin={"b": 110}
    )
    return fig


VALIDATION_FORMS = (
    ("layered", "layered model (reconstructed SMD model)"),
    ("optimus", "Optimus' speed form"),
)
_SYMBOLS = (
    "circle",
    "square",
    "diamond",
    "triangle-up",
    "x",
    "cross",
    "star",
    "triangle-down",
    "pentagon",
    "hexagon",
)


def validation_figure(df: pd.DataFrame, *, title: str | None = None) -> go.Figure:
    """Measured versus predicted training speed of held-out points, one panel per speed form, log-log.

    Subplot titles give each form's MAPE: per network, then the mean over networks (as
    ``smdlab.model.speed_fit.holdout_report``).
    """
    _require(
        df,
        [
            "model",
            "measured_speed",
            "predicted_layered",
            "predicted_optimus",
            "error_layered_pct",
            "error_optimus_pct",
        ],
        "df",
    )
    per_net = df.groupby("model", sort=True)
    mape = {
        f: float(per_net[f"error_{f}_pct"].apply(lambda e: np.mean(np.abs(e))).mean())
        for f, _ in VALIDATION_FORMS
    }
    fig = make_subplots(
        rows=1,
        cols=2,
        horizontal_spacing=0.1,
        subplot_titles=[f"{name}: MAPE {mape[form]:.1f}%" for form, name in VALIDATION_FORMS],
    )
    lo = float(
        min(
            df["measured_speed"].min(), df["predicted_layered"].min(), df["predicted_optimus"].min()
        )
    )
    hi = float(
        max(
            df["measured_speed"].max(), df["predicted_layered"].max(), df["predicted_optimus"].max()
        )
    )
    lo, hi = lo / 1.25, hi * 1.25
    for col, (form, _) in enumerate(VALIDATION_FORMS, start=1):
        for k, (model, g) in enumerate(per_net):
            fig.add_trace(
                go.Scatter(
                    x=g["measured_speed"].to_numpy(),
                    y=g[f"predicted_{form}"].to_numpy(),
                    mode="markers",
                    name=model,
                    legendgroup=model,
                    showlegend=col == 1,
                    marker={
                        "color": PALETTE[k % len(PALETTE)],
                        "symbol": _SYMBOLS[k % len(_SYMBOLS)],
                        "size": 7,
                        "line": {"width": 0.5, "color": "white"},
                    },
                    customdata=np.stack(
                        [g["num_workers"], g["num_ps"], g[f"error_{form}_pct"]], axis=-1
                    ),
                    hovertemplate=f"{model}: %{{customdata[0]}} workers, %{{customdata[1]}} PSs<br>measured %{{x:.1f}}, "
                    "predicted %{y:.1f} (%{customdata[2]:+.1f}%)<extra></extra>",
                ),
                row=1,
                col=col,
            )
        diagonal = go.Scatter(
            x=[lo, hi],
            y=[lo, hi],
            mode="lines",
            showlegend=False,
            hoverinfo="skip",
            line={"color": "#888", "dash": "dash", "width": 1},
        )
        fig.add_trace(diagonal, row=1, col=col)
        fig.update_xaxes(
            title_text="measured speed (samples/s)",
            type="log",
            range=[np.log10(lo), np.log10(hi)],
            row=1,
            col=col,
        )
        fig.update_yaxes(
            title_text="predicted speed (samples/s)",
            type="log",
            range=[np.log10(lo), np.log10(hi)],
            row=1,
            col=col,
        )
    fig.update_layout(
        base_layout(
            title or "Speed model validation: held-out measured PS training speeds",
            height=500,
            width=980,
        )
    )
    fig.update_layout(
        legend={"y": -0.18, "yanchor": "top", "x": 0.0, "xanchor": "left"}, margin={"b": 110}
    )
    return fig


def philly_window_figure(df: pd.DataFrame, *, title: str | None = None) -> go.Figure:
    """Per policy on the Philly window: mean JCT (bars) with p95, the JCT CDF, and GPU utilisation.

    df: a frame from ``smdlab.experiments.philly.philly_window`` (one row per policy, quantile
    columns ``jct_q<q>_s``).
    """
    _require(df, ["policy", "mean_jct_s", "p95_jct_s", "util_gpu"], "df")
    qcols = [c for c in df.columns if c.startswith("jct_q") and c.endswith("_s")]
    fig = make_subplots(
        rows=1,
        cols=3,
        column_widths=[0.34, 0.42, 0.24],
        horizontal_spacing=0.08,
        subplot_titles=["mean JCT (bar) and p95 (◆)", "JCT CDF", "GPU utilisation"],
    )
    labels = [policy_label(p) for p in df["policy"]]
    colors = [policy_color(p) for p in df["policy"]]
    fig.add_trace(
        go.Bar(
            x=labels,
            y=df["mean_jct_s"].to_numpy() / 3600,
            marker_color=colors,
            showlegend=False,
            hovertemplate="%{x}: mean JCT %{y:.2f} h<extra></extra>",
        ),
        row=1,
        col=1,
    )
    fig.add_trace(
        go.Scatter(
            x=labels,
            y=df["p95_jct_s"].to_numpy() / 3600,
            mode="markers",
            marker={"symbol": "diamond", "size": 10, "color": "#333"},
            showlegend=False,
            hovertemplate="%{x}: p95 JCT %{y:.2f} h<extra></extra>",
        ),
        row=1,
        col=1,
    )
    qs = [float(c[len("jct_q") : -len("_s")]) for c in qcols]
    for (_, row), label, color in zip(df.iterrows(), labels, colors, strict=True):
        fig.add_trace(
            go.Scatter(
                x=[row[c] / 3600 for c in qcols],
                y=qs,
                mode="lines+markers",
                name=label,
                line={"color": color, "shape": "hv"},
                hovertemplate=f"{label}: %{{y:.0%}} of jobs within %{{x:.2f}} h<extra></extra>",
            ),
            row=1,
            col=2,
        )
    fig.add_trace(
        go.Bar(
            x=labels,
            y=100 * df["util_gpu"].to_numpy(),
            marker_color=colors,
            showlegend=False,
            hovertemplate="%{x}: GPU utilisation %{y:.1f}%<extra></extra>",
        ),
        row=1,
        col=3,
    )
    fig.update_yaxes(title_text="JCT (h)", rangemode="tozero", row=1, col=1)
    fig.update_xaxes(title_text="JCT (h)", type="log", row=1, col=2)
    fig.update_yaxes(title_text="fraction of jobs", range=[0, 1.02], row=1, col=2)
    fig.update_yaxes(title_text="GPU utilisation (%)", range=[0, 100], row=1, col=3)
    # From the columns, not attrs: a frame read back from its CSV draws the same.
    where = ""
    if {"jobs", "machines"} <= set(df.columns):
        where = f": {int(df['jobs'].iloc[0]):,} jobs on {int(df['machines'].iloc[0])} machines"
    fig.update_layout(
        base_layout(
            title or f"Default Philly window{where} (GPU-only gangs)",
            height=480,
            width=1100,
        )
    )
    fig.update_layout(
        legend={"orientation": "h", "y": -0.2, "yanchor": "top", "x": 0.4, "xanchor": "left"},
        margin={"b": 110},
    )
    return fig
