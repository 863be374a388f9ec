"""Figure of ``jct_vs_contention`` (``smdlab.experiments.contention``)."""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go

from smdlab.viz.oversubscription import ratio_panels

LABELS = {
    "fair": "fair (max-min)",
    "scf": "SCF",
    "lcof": "LCoF",
    "crux": "Crux (GPU intensity)",
    "jcs": "inspired by JCS",
}
COLORS = {
    "fair": "#7f7f7f",
    "scf": "#1f77b4",
    "lcof": "#2ca02c",
    "crux": "#d62728",
    "jcs": "#9467bd",
}


def contention_figure(df: pd.DataFrame) -> go.Figure:
    """Mean JCT (left) and GPU compute utilisation (right) vs rack oversubscription, per policy."""
    first = df.iloc[0]
    return ratio_panels(
        df,
        "communication",
        LABELS,
        COLORS,
        (
            ("mean_jct_h", "mean JCT (h)"),
            ("gpu_util", "GPU compute utilisation (of held GPU time)"),
        ),
        f"Shared fabric: {int(first['jobs'])} gang jobs under FIFO, communication policies "
        f"compared, mean of {df['seed'].nunique()} seed(s)",
    )
