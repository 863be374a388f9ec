"""Figures of the layered timing model: one iteration's per-layer timeline, and worker/PS trade-offs."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from smdlab.errors import InvalidInput, check_choice
from smdlab.model.job import Job
from smdlab.model.timing import MODES, iteration_time, layer_timeline, speed_table
from smdlab.viz.style import MODE_COLORS, PHASE_COLORS, TEMPLATE, base_layout

LANES: dict[str, str] = {
    "forward": "GPU compute",
    "backward": "GPU compute",
    "push": "push (worker → PS)",
    "pull": "pull (PS → worker)",
    "read": "storage read (next batch)",
    "preprocess": "CPU preprocessing (next batch)",
    "allreduce": "ring all-reduce (per bucket)",
}
_LANE_ORDER = ["pull (PS → worker)", "push (worker → PS)", "GPU compute"]  # bottom to top
_RING_LANES = ["ring all-reduce (per bucket)", "GPU compute"]  # an all-reduce job (no PS)
PHASE_COLORS_CORE = ("forward", "backward", "push", "pull")  # drawn even when empty
_DATA_LANES = ["CPU preprocessing (next batch)", "storage read (next batch)"]
_TIMELINE_MODES = (
    "sequential",
    "wfbp",
)  # modes layer_timeline draws; prefetch is shown as wfbp + its period


def _timeline_arrays(
    job: Job,
    workers: int,
    ps: int,
    mode: str,
    cpu: float | None = None,
    mem_gb: float | None = None,
) -> dict[str, dict[str, np.ndarray]]:
    # Plain arrays per phase (the figure needs no DataFrame; this path runs on every explorer update).
    df = layer_timeline(
        job, workers, ps, mode if mode in _TIMELINE_MODES else "wfbp", cpu=cpu, mem_gb=mem_gb
    )
    phase = df["phase"].to_numpy()
    start = df["start"].to_numpy(dtype=float) * 1e3
    end = df["end"].to_numpy(dtype=float) * 1e3
    index = df["layer_index"].to_numpy()
    names = np.asarray([*job.profile.names, "input"], dtype=object)  # index -1: the data stage
    out = {}
    for ph in PHASE_COLORS:
        m = phase == ph
        label = names[index[m]]
        if ph == "allreduce" and m.any():  # one bar per bucket: its size and the layer closing it
            label = np.asarray(
                [
                    f"bucket {b} ({mb:.1f} MB, ready after {n})"
                    for b, mb, n in zip(
                        df["bucket"].to_numpy()[m], df["bytes"].to_numpy()[m] / 1e6, label
                    )
                ],
                dtype=object,
            )
        out[ph] = {
            "start": start[m],
            "dur": end[m] - start[m],
            "index": index[m],
            "name": label,
        }
    return out


def _timeline_traces(
    arrays: dict, *, showlegend: bool = True, xaxis: str = "x", yaxis: str = "y"
) -> list[dict]:
    traces = []
    for phase, colour in PHASE_COLORS.items():
        part = arrays[phase]
        n = len(part["start"])
        traces.append(
            {
                "type": "bar",
                "name": phase,
                "orientation": "h",
                "y": [LANES[phase]] * n,
                "x": part["dur"],
                "base": part["start"],
                "customdata": np.stack([part["name"], part["index"]], axis=-1)
                if n
                else np.empty((0, 2)),
                # thin white borders separate layers, unless there are so many they would hide the bars
                "marker": {
                    "color": colour,
                    "line": {"width": 0.5 if n <= 30 else 0, "color": "white"},
                },
                "hovertemplate": f"{phase} of %{{customdata[0]}} (layer %{{customdata[1]}})<br>"
                "starts %{base:.2f} ms, lasts %{x:.2f} ms<extra></extra>",
                "legendgroup": phase,
                "showlegend": showlegend,
                "xaxis": xaxis,
                "yaxis": yaxis,
            }
        )
    return traces


def _timeline_marks(
    arrays: dict, tau_ms: float, *, xref: str = "x", yref: str = "y"
) -> tuple[list, list]:
    compute_ms = float(arrays["forward"]["dur"].sum() + arrays["backward"]["dur"].sum())
    shapes = [
        {
            "type": "line",
            "xref": xref,
            "yref": f"{yref} domain",
            "x0": compute_ms,
            "x1": compute_ms,
            "y0": 0,
            "y1": 1,
            "line": {"dash": "dot", "color": "#555", "width": 1},
        },
        {
            "type": "line",
            "xref": xref,
            "yref": f"{yref} domain",
            "x0": tau_ms,
            "x1": tau_ms,
            "y0": 0,
            "y1": 1,
            "line": {"color": "black", "width": 2},
        },
    ]
    # tau to the right of its line, F+B to the left of its own: they never overlap.
    annotations = [
        {
            "x": tau_ms,
            "y": 1,
            "xref": xref,
            "yref": f"{yref} domain",
            "text": f"τ = {tau_ms:.1f} ms",
            "showarrow": False,
            "xanchor": "left",
            "yanchor": "bottom",
            "font": {"size": 11},
        },
        {
            "x": compute_ms,
            "y": 1,
            "xref": xref,
            "yref": f"{yref} domain",
            "text": f"F+B = {compute_ms:.1f} ms ",
            "showarrow": False,
            "xanchor": "right",
            "yanchor": "bottom",
            "font": {"size": 10, "color": "#555"},
        },
    ]
    return shapes, annotations


def timeline_spec(
    job: Job,
    workers: int,
    ps: int,
    mode: str = "wfbp",
    *,
    title: str | None = None,
    template: str | None = TEMPLATE,
    cpu: float | None = None,
    mem_gb: float | None = None,
) -> dict:
    """The timeline figure as a plain dict (data, layout): what ``timeline_figure`` wraps, cheap to redraw.

    cpu, mem_gb: CPU cores and GB per worker (None: the job's demand); a job with an input
    pipeline shows its data stage (read and preprocessing of the next batch) on two more lanes.
    """
    check_choice("mode", mode, MODES)
    arrays = _timeline_arrays(job, workers, ps, mode, cpu, mem_gb)
    tau_ms = iteration_time(job, workers, ps, mode, cpu, mem_gb) * 1e3
    ring = job.arch == "allreduce"
    lanes = (_RING_LANES if ring else _LANE_ORDER) + (
        _DATA_LANES if job.pipeline is not None else []
    )
    shapes, annotations = _timeline_marks(arrays, tau_ms)
    note = (
        "" if mode in _TIMELINE_MODES else " (drawn as wfbp; τ is the prefetch steady-state period)"
    )
    layout = base_layout(
        template=template,
        title=title
        or (
            f"{job.profile.network}: one iteration of a ring on {workers} GPUs — {mode}{note}"
            if ring
            else f"{job.profile.network}: one iteration on {workers} workers, {ps} PSs — {mode}{note}"
        ),
        barmode="overlay",
        bargap=0.35,
        xaxis={"title": {"text": "time within the iteration (ms)"}, "rangemode": "tozero"},
        yaxis={"categoryorder": "array", "categoryarray": lanes},
        shapes=shapes,
        annotations=annotations,
        height=320,
    )
    core = ("forward", "backward") if ring else PHASE_COLORS_CORE
    traces = [t for t in _timeline_traces(arrays) if len(t["x"]) or t["name"] in core]
    return {"data": traces, "layout": layout}


def timeline_figure(
    job: Job,
    workers: int,
    ps: int,
    mode: str = "wfbp",
    *,
    title: str | None = None,
    template: str | None = TEMPLATE,
    cpu: float | None = None,
    mem_gb: float | None = None,
) -> go.Figure:
    """Gantt chart of one iteration: forward, backward, push and pull of every layer, showing their overlap."""
    return go.Figure(
        timeline_spec(
            job, workers, ps, mode, title=title, template=template, cpu=cpu, mem_gb=mem_gb
        )
    )


def overlap_figure(
    job: Job,
    workers: int,
    ps: int,
    modes: Sequence[str] = ("sequential", "wfbp"),
    *,
    template: str | None = TEMPLATE,
) -> go.Figure:
    """One iteration's timeline under each overlap mode, stacked on a shared time axis.

    ``wfbp_prefetch`` is drawn as wfbp's bars with its own steady-state period tau marked: the
    next iteration's forward pass starts inside this one, so its period is shorter than the bars.
    """
    modes = [check_choice("mode", m, MODES) for m in modes]
    if not modes:
        raise InvalidInput(f"modes must list at least one of {', '.join(MODES)}; got none")
    fig = make_subplots(rows=len(modes), cols=1, shared_xaxes=True, vertical_spacing=0.14)
    shapes, annotations = [], []
    for r, mode in enumerate(modes, start=1):
        arrays = _timeline_arrays(job, workers, ps, mode)
        for tr in _timeline_traces(arrays, showlegend=r == 1):
            if not len(tr["x"]) and tr["name"] not in PHASE_COLORS_CORE:
                continue  # no data stage: no lanes for it
            tr.pop("xaxis"), tr.pop("yaxis")
            fig.add_trace(tr, row=r, col=1)
        suffix = "" if r == 1 else str(r)
        s, a = _timeline_marks(
            arrays,
            iteration_time(job, workers, ps, mode) * 1e3,
            xref=f"x{suffix}",
            yref=f"y{suffix}",
        )
        shapes += s
        annotations += a
        fig.update_yaxes(
            categoryorder="array",
            categoryarray=_LANE_ORDER,
            title_text=mode if mode in _TIMELINE_MODES else f"{mode}<br>(wfbp bars, own τ)",
            row=r,
            col=1,
        )
    fig.update_layout(
        base_layout(
            template=template,
            title=f"{job.profile.network} on {workers} workers, {ps} PSs: overlap shortens the iteration",
            barmode="overlay",
            height=220 * len(modes) + 100,
        )
    )
    fig.update_layout(margin={"t": 100}, legend={"y": 1.06})
    fig.layout.annotations = annotations
    fig.layout.shapes = shapes
    fig.update_xaxes(title_text="time within the iteration (ms)", row=len(modes), col=1)
    return fig


def ps_needed_table(
    job: Job, modes: Sequence[str] = MODES, threshold: float = 0.97
) -> pd.DataFrame:
    """Per mode and worker count w: the fewest PSs reaching ``threshold`` of the best speed over p at that w."""
    if not 0 < float(threshold) <= 1:
        raise InvalidInput(f"threshold must be in (0, 1], got {threshold!r}")
    rows = []
    for mode in modes:
        check_choice("mode", mode, MODES)
        sp = speed_table(job, mode)
        for w in range(1, job.max_workers + 1):
            row = sp[w - 1]
            p = int(np.argmax(row >= threshold * row.max())) + 1
            rows.append((mode, w, p, w / p, float(row[p - 1]), float(row.max())))
    return pd.DataFrame(rows, columns=["mode", "workers", "ps", "ratio", "speed", "best_speed"])


def ratio_figure(
    job: Job,
    modes: Sequence[str] = MODES,
    workers: int | None = None,
    threshold: float = 0.97,
    *,
    template: str | None = TEMPLATE,
) -> go.Figure:
    """How the overlap mode changes the best worker/PS ratio: speed vs PSs, and the PSs each worker count needs."""
    w_fixed = job.max_workers if workers is None else job.check_config(workers, 1)[0]
    fig = make_subplots(
        rows=1,
        cols=2,
        subplot_titles=[
            f"speed with {w_fixed} workers",
            f"PSs needed for {threshold:.0%} of the best speed",
        ],
        horizontal_spacing=0.12,
    )
    table = ps_needed_table(job, modes, threshold)
    ps_axis = np.arange(1, job.max_ps + 1)
    for mode in modes:
        colour = MODE_COLORS.get(mode, "#333")
        dash = (
            "dash" if mode == "wfbp_prefetch" else "solid"
        )  # often equal to wfbp: keep both visible
        sp = speed_table(job, mode)[w_fixed - 1]
        fig.add_trace(
            go.Scatter(
                x=ps_axis,
                y=sp,
                mode="lines+markers",
                name=mode,
                legendgroup=mode,
                line={"color": colour, "dash": dash},
                marker={"size": 5},
                hovertemplate=f"{mode}: %{{x}} PSs → %{{y:.1f}} samples/s<extra></extra>",
            ),
            row=1,
            col=1,
        )
        part = table[table["mode"] == mode]
        fig.add_trace(
            go.Scatter(
                x=part["workers"],
                y=part["ps"],
                mode="lines+markers",
                name=mode,
                legendgroup=mode,
                showlegend=False,
                line={"color": colour, "shape": "hv", "dash": dash},
                customdata=part[["ratio"]].to_numpy(),
                hovertemplate=f"{mode}: %{{x}} workers need %{{y}} PSs "
                "(ratio %{customdata[0]:.2f})<extra></extra>",
            ),
            row=1,
            col=2,
        )
    fig.update_layout(
        base_layout(
            template=template,
            title=f"{job.profile.network}: overlap changes how many PSs a worker needs",
            height=400,
        )
    )
    fig.update_layout(margin={"t": 100}, legend={"y": 1.12})
    fig.update_xaxes(title_text="parameter servers p", row=1, col=1)
    fig.update_yaxes(title_text="samples / s", row=1, col=1)
    fig.update_xaxes(title_text="workers w", row=1, col=2)
    fig.update_yaxes(title_text="parameter servers p", row=1, col=2)
    return fig
