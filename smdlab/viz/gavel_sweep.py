"""Figure of Gavel's heterogeneity gain against the arrival rate (``smdlab.experiments.gavel_sweep``)."""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go

# The two sources of the CSV's ``source`` column (``smdlab.experiments.gavel_sweep``).
SMDLAB = "smdlab (Gavel mode)"
GAVEL = "Gavel's simulator (reference data)"
# Gavel's paper (Narayanan et al., OSDI 2020), abstract: average JCT up to 3.5x lower than
# heterogeneity-agnostic policies.
PAPER_GAIN = 3.5
# Gavel's points drawn large and open, smdlab's small and filled on top: equal ratios stay visible.
STYLES = {
    GAVEL: {"color": "#d62728", "symbol": "circle-open", "size": 14, "dash": "dot"},
    SMDLAB: {"color": "#1f77b4", "symbol": "x", "size": 8, "dash": "solid"},
}


def gavel_rate_sweep_figure(df: pd.DataFrame) -> go.Figure:
    """Agnostic/aware window-average JCT ratio vs arrival rate, smdlab and Gavel, with the paper's 3.5x."""
    fig = go.Figure()
    seeds = sorted(int(s) for s in df["seed"].unique())
    for source in (GAVEL, SMDLAB):
        style = STYLES[source]
        for seed in seeds:
            d = df[(df["source"] == source) & (df["seed"] == seed)].sort_values("rate_jobs_per_h")
            if d.empty:
                continue
            solver = ", ".join(sorted({str(s) for s in d["solver"]}))
            name = f"{source}, LP solver {solver}"
            fig.add_trace(
                go.Scatter(
                    x=d["rate_jobs_per_h"],
                    y=d["ratio"],
                    mode="lines+markers",
                    name=name + (f", seed {seed}" if len(seeds) > 1 else ""),
                    line={"color": style["color"], "dash": style["dash"], "width": 1.5},
                    marker={"symbol": style["symbol"], "size": style["size"]},
                    customdata=d[["agnostic_avg_jct_h", "aware_avg_jct_h"]].to_numpy(),
                    hovertemplate=(
                        "%{x} jobs/h: %{y:.3f} (agnostic %{customdata[0]:.2f} h / aware "
                        "%{customdata[1]:.2f} h)<extra>" + source + "</extra>"
                    ),
                )
            )
    fig.add_hline(
        y=PAPER_GAIN,
        line={"color": "#555555", "dash": "dash"},
        annotation_text=f"Gavel's paper: up to {PAPER_GAIN:g}x (its own setting)",
        annotation_position="bottom right",
    )
    fig.add_hline(y=1.0, line={"color": "#bbbbbb", "width": 1})
    first = df.iloc[0]
    fig.update_layout(
        title=(
            "Gavel: heterogeneity-aware vs agnostic max-min fairness, "
            f"{int(first['jobs'])}-job Gavel traces<br><sup>{first['gpus_per_type']} V100/P100/K80 "
            f"GPUs, window jobs {int(first['window_first_job'])}-{int(first['window_last_job'])}; "
            "ratio = agnostic / aware window-average JCT</sup>"
        ),
        xaxis_title="arrival rate (jobs/h)",
        yaxis_title="agnostic / aware average JCT",
        yaxis_range=[0.9, PAPER_GAIN + 0.3],
        legend={"x": 0.01, "y": 0.8, "bgcolor": "rgba(255,255,255,0.8)"},
        template="plotly_white",
    )
    return fig
