"""The SMD decomposition taken apart for teaching: the ratios, one knapsack subproblem, its effect.

Everything here reads an ``Instance`` (``smdlab.solve.build_instance``) and an allocation; it is
the SMD section of docs/solver.md made visible, not a
second implementation of the solver (``smdlab.solve.solve(..., method="smd")`` is that).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from numpy.typing import ArrayLike

from smdlab.errors import InvalidInput, check_int
from smdlab.solve.instance import Instance
from smdlab.solve.knapsack import knapsack_exact
from smdlab.viz.style import TEMPLATE, base_layout, color


def _allocation(inst: Instance, workers: ArrayLike, ps: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    w = np.asarray(workers, dtype=int).reshape(-1)
    p = np.asarray(ps, dtype=int).reshape(-1)
    if w.shape != (inst.n,) or p.shape != (inst.n,):
        raise InvalidInput(
            f"workers and ps must give one value per job ({inst.n}), got {w.size} and {p.size}"
        )
    for i, job in enumerate(inst.jobs):
        job.check_config(int(w[i]), int(p[i]))
    return w, p


def ratio_table(inst: Instance, workers: ArrayLike, ps: ArrayLike) -> pd.DataFrame:
    """Per job: N_i = omega_i W_i, D_i = speed at its (w, p), the ratio N_i / D_i and Jong's beta_i, u_i there.

    The objective of (P) is the sum of the ``ratio`` column (every job started).
    """
    w, p = _allocation(inst, workers, ps)
    numer = inst.weight * np.array([j.samples for j in inst.jobs])
    denom = inst.speed[np.arange(inst.n), w - 1, p - 1]
    return pd.DataFrame(
        {
            "job": [j.name for j in inst.jobs],
            "workers": w,
            "ps": p,
            "N": numer,
            "D": denom,
            "ratio": numer / denom,
            "beta": numer / denom,
            "u": 1.0 / denom,
        }
    )


def subproblem_step(
    inst: Instance, workers: Sequence[int], ps: Sequence[int], *, backend: str = "auto"
) -> tuple[pd.DataFrame, np.ndarray, np.ndarray]:
    """One knapsack subproblem SUB(beta, u) at an allocation, solved exactly.

    With beta_i = N_i / D_i and u_i = 1 / D_i at the given allocation, SUB maximises
    sum_i lambda_i S_i(c_i) (lambda_i = u_i beta_i) under the capacity: a multiple-choice
    multi-dimensional knapsack. Returns a per-job table (lambda, the old and new configuration
    and speed, old and new ratio) and the new allocation (workers, ps).
    """
    before = ratio_table(inst, workers, ps)
    lam = before["u"].to_numpy() * before["beta"].to_numpy()
    profit = lam[:, None, None] * inst.speed  # lambda_i * S_i(w, p); 0 beyond a job's caps
    obj = np.where(inst.speed > 0, -profit, np.inf)  # the knapsack minimises
    res = knapsack_exact(obj, inst.alpha, inst.gamma, inst.capacity, backend=backend)
    new_w, new_p = res.workers, res.ps
    after = ratio_table(inst, new_w, new_p)
    table = pd.DataFrame(
        {
            "job": before["job"],
            "lambda": lam,
            "workers": before["workers"],
            "ps": before["ps"],
            "new_workers": new_w,
            "new_ps": new_p,
            "speed": before["D"],
            "new_speed": after["D"],
            "ratio": before["ratio"],
            "new_ratio": after["ratio"],
        }
    )
    return table, np.asarray(new_w), np.asarray(new_p)


def speed_heatmap_figure(
    inst: Instance,
    job: int,
    marks: Mapping[str, tuple[int, int]] | None = None,
    *,
    title: str | None = None,
    template: str | None = TEMPLATE,
) -> go.Figure:
    """One job's speed S_i(w, p) over its configurations, with chosen configurations marked."""
    i = check_int("job", job, 0, inst.n - 1)
    j = inst.jobs[i]
    speed = inst.speed[i, : j.max_workers, : j.max_ps]
    fig = go.Figure(
        go.Heatmap(
            z=speed,
            x=np.arange(1, j.max_ps + 1),
            y=np.arange(1, j.max_workers + 1),
            colorscale="Viridis",
            colorbar={"title": {"text": "samples/s"}},
            hovertemplate="%{y} workers, %{x} PSs: %{z:.1f} samples/s<extra></extra>",
        )
    )
    for k, (label, (w, p)) in enumerate((marks or {}).items()):
        fig.add_trace(
            go.Scatter(
                x=[p],
                y=[w],
                mode="markers",
                name=label,
                marker={
                    "symbol": ["x", "circle-open", "diamond-open", "square-open"][k % 4],
                    "size": 16,
                    "color": color(k + 1),
                    "line": {"width": 3},
                },
            )
        )
    fig.update_layout(
        base_layout(
            template=template,
            title=title or f"{j.name}: speed over (workers, PSs)",
            xaxis={"title": {"text": "parameter servers p"}},
            yaxis={"title": {"text": "workers w"}},
            height=420,
        )
    )
    return fig
