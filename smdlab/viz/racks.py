"""The cluster drawn as racks of machines, each job's tasks coloured on the GPUs they occupy.

Input: a ``smdlab.sim.snapshot.Snapshot`` (``placements_at`` makes them from a run), or a cluster
and a mapping job -> tasks ``(machine index, workers, PSs)`` through ``Snapshot(...)`` directly.
Each rack is a column block headed by its name, GPU types and uplink; each machine is a row of
squares, one per GPU. A worker fills ``gpus_per_worker`` squares of its machine in its job's
colour; a machine holding parameter servers (no GPU) has a grey diamond right of its row (hover:
how many, whose). Free GPUs are light grey.
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Mapping

import plotly.graph_objects as go

from smdlab.sim.snapshot import Snapshot
from smdlab.viz.style import PALETTE, TEMPLATE, base_layout

FREE_COLOR = "#E6E6E6"
RACK_GAP = 1.5  # columns of space between two racks
MAX_TEXT_CELLS = 400  # label the squares with job names only while they stay readable


def job_color(name: str) -> str:
    """A colour for job ``name`` that is the same in every drawing (a hash of the name)."""
    return PALETTE[zlib.crc32(name.encode()) % len(PALETTE)]


def _blocks(snapshot: Snapshot) -> list[tuple[str, str, list[int]]]:
    """(rack name, header text, machine indices) per rack; one block for a flat cluster."""
    cluster = snapshot.cluster
    if not cluster.topology:
        types = "/".join(t.upper() for t in cluster.gpu_types) or "untyped"
        return [("cluster", f"cluster<br>{types}", list(range(len(cluster.machines))))]
    members: dict[str, list[int]] = {r.name: [] for r in cluster.topology}
    for i, m in enumerate(cluster.machines):
        members[m.rack].append(i)
    out = []
    for rack in cluster.topology:
        idx = members[rack.name]
        types = "/".join(dict.fromkeys(cluster.machines[i].gpu_type.upper() for i in idx)) or "-"
        link = f"{rack.uplink_gbps:g} Gbps"
        if rack.oversubscription > 1:
            link += f" /{rack.oversubscription:g}"
        out.append((rack.name, f"<b>{rack.name}</b><br>{types} · {link}", idx))
    return out


def rack_figure(
    snapshot: Snapshot,
    *,
    title: str | None = None,
    job_colors: Mapping[str, str] | None = None,
    template: str | None = TEMPLATE,
    width: int = 900,
) -> go.Figure:
    """The racks of ``snapshot.cluster`` with each running job's workers on their GPUs."""
    cluster = snapshot.cluster
    colors = {n: (job_colors or {}).get(n) or job_color(n) for n in snapshot.tasks}
    blocks = _blocks(snapshot)
    gpus = [max(0, math.ceil(m.capacity.get("gpu", 0.0))) for m in cluster.machines]
    widths = [max([gpus[i] for i in idx] + [1]) + 1 for _, _, idx in blocks]  # +1: PS diamonds
    offsets = [sum(widths[:k]) + RACK_GAP * k for k in range(len(blocks))]
    rows = max(len(idx) for _, _, idx in blocks)
    # Squares of each machine's GPUs, filled in task order by the job holding them.
    owner: dict[int, list[str]] = {i: [] for i in range(len(cluster.machines))}
    ps_on: dict[int, list[str]] = {i: [] for i in range(len(cluster.machines))}
    for name, tasks in snapshot.tasks.items():
        per = snapshot.gpus_per_worker.get(name, 1.0)
        for machine, workers, ps in tasks:
            owner[machine] += [name] * round(workers * per)
            ps_on[machine] += [name] * int(ps)
    cells: dict[str | None, dict[str, list]] = {}
    pos = {}
    for (_, _, idx), x0 in zip(blocks, offsets, strict=True):
        for r, i in enumerate(idx):
            pos[i] = (x0, -r)
    for i, m in enumerate(cluster.machines):
        x0, y = pos[i]
        label = f"{m.name} ({m.gpu_type.upper() or 'untyped'})"
        holders = owner[i][: gpus[i]]  # shared GPUs beyond capacity are not drawn twice
        for g in range(gpus[i]):
            job = holders[g] if g < len(holders) else None
            c = cells.setdefault(job, {"x": [], "y": [], "text": []})
            c["x"].append(x0 + g)
            c["y"].append(y)
            c["text"].append(f"{label}, GPU {g}: {job or 'free'}")
        if ps_on[i]:
            c = cells.setdefault("ps", {"x": [], "y": [], "text": []})
            c["x"].append(x0 + gpus[i] + 0.2)
            c["y"].append(y)
            names = ", ".join(dict.fromkeys(ps_on[i]))
            c["text"].append(f"{label}: {len(ps_on[i])} PS of {names}")
    span = offsets[-1] + widths[-1]
    legend_px = 190 if len(snapshot.tasks) <= 30 else 0
    unit = min(34.0, (width - 40 - legend_px) / (span + 0.6))  # pixels per GPU column
    size = max(3.0, 0.82 * unit)
    labelled = sum(gpus) <= MAX_TEXT_CELLS and size >= 14
    fig = go.Figure()
    free = cells.get(None)
    if free:
        fig.add_trace(
            go.Scatter(
                x=free["x"],
                y=free["y"],
                mode="markers",
                marker={"symbol": "square", "size": size, "color": FREE_COLOR},
                name="free GPU",
                hovertext=free["text"],
                hoverinfo="text",
            )
        )
    for name in snapshot.tasks:
        net = snapshot.networks.get(name, "")
        legend = f"{name} ({net})" if net else name
        mine = cells.get(name)
        if mine:
            fig.add_trace(
                go.Scatter(
                    x=mine["x"],
                    y=mine["y"],
                    mode="markers+text" if labelled else "markers",
                    marker={"symbol": "square", "size": size, "color": colors[name]},
                    text=[name] * len(mine["x"]) if labelled else None,
                    textfont={"size": max(6, int(size * 0.4)), "color": "white"},
                    name=legend,
                    legendgroup=name,
                    hovertext=mine["text"],
                    hoverinfo="text",
                )
            )
    ps_cells = cells.get("ps")
    if ps_cells:
        fig.add_trace(
            go.Scatter(
                x=ps_cells["x"],
                y=ps_cells["y"],
                mode="markers",
                marker={"symbol": "diamond", "size": size * 0.45, "color": "#555555"},
                name="parameter servers (hover: whose)",
                hovertext=ps_cells["text"],
                hoverinfo="text",
            )
        )
    for (_, header, _), x0, w in zip(blocks, offsets, widths, strict=True):
        fig.add_shape(
            type="rect",
            x0=x0 - 0.6,
            x1=x0 + w - 0.4,
            y0=0.6,
            y1=-(rows - 1) - 0.6,
            line={"color": "#999999", "width": 1},
            layer="below",
        )
        block_px = w * unit
        if block_px >= 16:  # a header only where it fits over its rack
            fig.add_annotation(
                x=x0 + (w - 1) / 2,
                y=0.7,
                text=header if block_px >= 90 else header.split("<br>")[0],
                showarrow=False,
                yanchor="bottom",
                font={"size": 10},
            )
    waiting = f"; waiting: {len(snapshot.queued)}" if snapshot.queued else ""
    n_shown = len(snapshot.tasks) + 2 if legend_px else 0
    plot_h = (rows + 1.9) * unit
    layout = base_layout(
        title
        or f"Cluster at t = {snapshot.time / 3600:.2f} h: {len(snapshot.tasks)} jobs running{waiting}",
        template=template,
        width=width,
        height=int(max(110 + plot_h, 100 + 28 * n_shown)),
        showlegend=bool(legend_px),
    )
    layout["legend"] = {"orientation": "v", "x": 1.0, "y": 1.0, "font": {"size": 10}}
    layout["margin"] = {"l": 20, "r": 20, "t": 80, "b": 10}
    fig.update_layout(layout)
    fig.update_xaxes(visible=False, range=[-0.8, span - 0.2], fixedrange=True)
    fig.update_yaxes(visible=False, range=[-(rows - 1) - 0.8, 1.9], fixedrange=True)
    return fig


def solution_snapshot(solution, jobs, cluster) -> Snapshot:
    """A ``Snapshot`` (time 0) of a placed solver ``Solution``: each started job's tasks."""
    by_name = {j.name: j for j in jobs}
    tasks: dict[str, tuple] = {}
    placed = solution.placement.placements if solution.placement is not None else ()
    for name, p, w in zip(solution.jobs, placed, solution.workers, strict=False):
        if w > 0 and p.tasks:
            tasks[str(name)] = tuple(p.tasks)
    queued = tuple(str(n) for n in solution.jobs if str(n) not in tasks)
    return Snapshot(
        0.0,
        cluster,
        tasks,
        {n: by_name[n].profile.network for n in tasks if n in by_name},
        {n: float(by_name[n].worker_demand.get("gpu", 0.0)) for n in tasks if n in by_name},
        queued,
    )
