"""SMD's mean JCT at every point of the four ``jct_vs_*`` sweeps, beside the best baseline and the
schedule lower bound, as a Markdown table generated from the figures' CSVs."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from smdlab.errors import InvalidInput
from smdlab.experiments.jct import SWEEPS

__all__ = ["sweep_table", "sweep_table_frame"]

PER_DECISION_EXACT = ("milp",)  # optimal per decision, not a baseline of the field
FIGURES = {  # sweep -> figure name (smdlab reproduce --list)
    "jobs": "jct_vs_jobs",
    "machines": "jct_vs_cluster",
    "bandwidth": "jct_vs_bandwidth",
    "comm_scale": "jct_vs_comm_ratio",
}


def sweep_table_frame(figures: str | Path, smd: str = "smd") -> pd.DataFrame:
    """One row per sweep point: SMD's mean JCT (mean over seeds), the best baseline's, the bound."""
    rows = []
    for sweep in SWEEPS.values():
        path = Path(figures) / f"{FIGURES[sweep.name]}.csv"
        if not path.exists():
            continue
        df = pd.read_csv(path)
        x = sweep.column
        if x not in df.columns or smd not in set(df["policy"]):
            raise InvalidInput(f"{path} lacks column {x!r} or policy {smd!r}")
        means = df.groupby([x, "policy"])["mean_jct_s"].mean().unstack("policy")
        bound = df.groupby(x)["mean_jct_lower_bound_s"].mean()
        baselines = [p for p in means.columns if p != smd and p not in PER_DECISION_EXACT]
        for value, row in means.iterrows():
            best = row[baselines].astype(float)
            best_policy = str(best.idxmin()) if best.notna().any() else ""
            b = float(bound.get(value, np.nan))
            rows.append(
                {
                    "sweep": FIGURES[sweep.name],
                    "x": value,
                    "smd_s": float(row[smd]),
                    "best_baseline": best_policy,
                    "best_baseline_s": float(best.min()),
                    "smd_over_best": float(row[smd]) / float(best.min()),
                    "bound_s": b,
                    "smd_over_bound": float(row[smd]) / b if b > 0 else np.nan,
                }
            )
    if not rows:
        raise InvalidInput(f"no jct_vs_*.csv in {figures}")
    return pd.DataFrame(rows)


def sweep_table(figures: str | Path, smd: str = "smd") -> str:
    """``sweep_table_frame`` as Markdown (ratios below 1 mean SMD beats the best baseline)."""
    df = sweep_table_frame(figures, smd)
    lines = [
        "| sweep | point | SMD mean JCT (s) | best baseline | its mean JCT (s) | SMD / best | lower bound (s) | SMD / bound |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in df.itertuples():
        lines.append(
            f"| {r.sweep} | {r.x:g} | {r.smd_s:,.0f} | {r.best_baseline} | {r.best_baseline_s:,.0f}"
            f" | {r.smd_over_best:.2f} | {r.bound_s:,.0f} | {r.smd_over_bound:.2f} |"
        )
    return "\n".join(lines) + "\n"
