"""The fabric's rate allocation against a public coflow simulator (docs/network.md, Validation).

Sincronia's offline simulator (sincronia-coflow/simulator, ``offlinesim``) serves coflows on a
big switch of P ports, each port 1 MB per time unit in and out, all coflows present at time 0, in
a fixed coflow order; its GREEDY rates give each flow, in order (coflow by coflow, flow by flow
inside one), the smaller of what is left at its sender and its receiver, and recompute at every
flow completion. That is the fabric's strict-priority water-filling (``water_fill``) with one
level per flow, each flow a job on two links (its sender's port and its receiver's port) whose
demand never caps it. ``replay`` runs the same event loop on ``water_fill`` and returns each
coflow's completion time, to compare with the simulator's output log.

Trace format (Sincronia's): line 1 ``<ports> <coflows>``; then one line per coflow
``<id> <arrival ms> <flows> <senders> <receivers>`` followed by ``<src> <dst> <MB>`` per flow.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from smdlab.errors import InvalidInput
from smdlab.model.fabric import water_fill

__all__ = [
    "Coflow",
    "read_output",
    "read_trace",
    "replay",
    "scf_order",
    "synthetic_trace",
    "write_trace",
]


@dataclass(frozen=True)
class Coflow:
    """One coflow: its id and its flows as (sender port, receiver port, MB)."""

    id: int
    flows: tuple[tuple[int, int, int], ...]

    @property
    def length(self) -> int:
        """Its largest flow (MB): what Sincronia's SCF orders by."""
        return max(s for _, _, s in self.flows)


def read_trace(path: str | os.PathLike[str]) -> tuple[int, list[Coflow]]:
    """(ports, coflows) of a trace in Sincronia's format."""
    words = Path(path).read_text().split()
    try:
        nums = [int(w) for w in words]
    except ValueError:
        raise InvalidInput(f"coflow trace {os.fspath(path)!r} must hold integers only") from None
    ports, n = nums[0], nums[1]
    k = 2
    out = []
    for _ in range(n):
        cid, _arrival, nf = nums[k], nums[k + 1], nums[k + 2]
        k += 5
        flows = tuple(
            (nums[k + 3 * i], nums[k + 3 * i + 1], nums[k + 3 * i + 2]) for i in range(nf)
        )
        k += 3 * nf
        out.append(Coflow(cid, flows))
    return ports, out


def write_trace(path: str | os.PathLike[str], ports: int, coflows: list[Coflow]) -> None:
    """Write ``coflows`` in Sincronia's trace format (arrival 0)."""
    lines = [f"{ports} {len(coflows)}"]
    for c in coflows:
        senders = len({s for s, _, _ in c.flows})
        receivers = len({r for _, r, _ in c.flows})
        flows = " ".join(f"{s} {r} {mb}" for s, r, mb in c.flows)
        lines.append(f"{c.id} 0 {len(c.flows)} {senders} {receivers} {flows}")
    with open(path, "w") as fh:
        fh.write("\n".join(lines) + "\n")


def synthetic_trace(coflows: int, ports: int, seed: int) -> list[Coflow]:
    """Seeded coflows: 1-4 senders to 1-4 receivers each, flows of 1-100 MB (distinct lengths)."""
    rng = np.random.default_rng(seed)
    out = []
    for cid in range(1, coflows + 1):
        src = rng.choice(ports, size=int(rng.integers(1, 5)), replace=False)
        dst = rng.choice(ports, size=int(rng.integers(1, 5)), replace=False)
        flows = tuple((int(s), int(d), int(rng.integers(1, 101))) for s in src for d in dst)
        out.append(Coflow(cid, flows))
    return out


def scf_order(coflows: list[Coflow]) -> list[int]:
    """Sincronia's SCF order: by length (largest flow), ties by coflow id; returns coflow ids."""
    return [c.id for c in sorted(coflows, key=lambda c: (c.length, c.id))]


def read_output(path: str | os.PathLike[str]) -> pd.DataFrame:
    """Sincronia's output log: coflow id, oracle time, position in the order, start, completion."""
    rows = [line.split() for line in Path(path).read_text().splitlines()]
    rows = [r for r in rows if len(r) == 5]  # the last line is the average
    df = pd.DataFrame(rows, columns=["coflow", "oracle", "order", "start", "completion"])
    return df.astype(
        {"coflow": int, "oracle": float, "order": int, "start": float, "completion": float}
    )


def replay(ports: int, coflows: list[Coflow], order: list[int]) -> dict[int, float]:
    """Each coflow's completion time served in ``order`` (coflow ids) by the fabric's water-filling."""
    rank = {cid: i for i, cid in enumerate(order)}
    flows = [
        (rank[c.id], j, c.id, s, r, float(mb))
        for c in coflows
        for j, (s, r, mb) in enumerate(c.flows)
    ]
    flows.sort()
    n = len(flows)
    demand = np.zeros((n, 2 * ports))
    big = 10.0 * sum(f[5] for f in flows)  # larger than any rate: no flow is capped by demand
    for i, (_, _, _, s, r, _) in enumerate(flows):
        demand[i, s] = big
        demand[i, ports + r] = big
    levels = np.arange(n)  # one level per flow, in order
    left = np.array([f[5] for f in flows])
    finish = np.zeros(n)
    cap = np.ones(2 * ports)
    t = 0.0
    tol = 1e-9
    while (active := np.flatnonzero(left > tol)).size:
        rate = water_fill(demand[active], cap, levels[active]) * big
        moving = rate > tol
        dt = float((left[active][moving] / rate[moving]).min())
        left[active] -= rate * dt
        t += dt
        done = active[left[active] <= tol * max(1.0, t)]
        left[done] = 0.0
        finish[done] = t
    out: dict[int, float] = {}
    for (_, _, cid, _, _, _), f in zip(flows, finish, strict=True):
        out[cid] = max(out.get(cid, 0.0), f)
    return out
