"""The flow-level fabric: shared links, each job's bytes on them, and the rates they get.

Specification: docs/network.md. In short: a racked cluster with a ``FabricSpec`` has shared links,
each rack's uplink in both directions, each declared domain's uplink in both directions and,
when ``core_gbps`` is set, the core. NICs are not shared: a task reserves its ``bw_gbps`` share
(the capacity check), and the timing model already runs each job on its NIC shares.

A job at a placement sends ``M[j, e]`` bytes per iteration over shared link e (``job_volumes``):
a (worker, PS) pair exchanges P / ps each way (push and pull), a ring all-reduce over k > 1 racks
sends ``2 (n - 1) / n * P`` across each of its k rack boundaries (``smdlab.model.traffic``). Run
uncontended, at iteration time ``tau0``, the job needs the average rate ``d[j, e] = M[j, e] /
tau0`` on each link. The fabric grants a fraction ``x[j]`` in [0, 1] of it on every link at once
(the job's flows progress together), so the job iterates in ``tau0 / x[j]`` (a fluid,
time-average model). ``water_fill`` sets x: strict priority levels, served from level 0 up; inside
a level max-min fair on ``x[j] * max_e d[j, e]`` (each job's rate on its busiest link), capped
at x = 1.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from smdlab.errors import InvalidInput, check_int
from smdlab.model.cluster import MAX_LEVELS, Cluster
from smdlab.model.job import Job

__all__ = [
    "FabricState",
    "Links",
    "compute_seconds",
    "job_volumes",
    "levels_from_scores",
    "water_fill",
]

_TOL = 1e-12


@dataclass(frozen=True, eq=False)
class Links:
    """The shared links of a racked cluster with a fabric: names, capacities (bytes/s), indices.

    rack_up/rack_down: link index per rack. domain_up/domain_down: per declared domain.
    core: link index of the core (-1: no core link). rack_of: rack per machine; domain_of:
    declared-domain index per machine (-1: none).
    """

    names: tuple[str, ...]
    capacity: np.ndarray
    rack_up: tuple[int, ...]
    rack_down: tuple[int, ...]
    domain_up: tuple[int, ...]
    domain_down: tuple[int, ...]
    core: int
    rack_of: tuple[int, ...]
    domain_of: tuple[int, ...]

    @classmethod
    def of(cls, cluster: Cluster) -> Links:
        """The shared links of ``cluster``; InvalidInput when it has no fabric."""
        if cluster.fabric is None or not cluster.topology:
            raise InvalidInput("cluster has no fabric; set Cluster.fabric (a [fabric] table)")
        names: list[str] = []
        cap: list[float] = []

        def add(name: str, gbps: float) -> int:
            names.append(name)
            cap.append(gbps * 1e9 / 8)
            return len(names) - 1

        up = [add(f"{r.name}:up", r.effective_uplink_gbps) for r in cluster.topology]
        down = [add(f"{r.name}:down", r.effective_uplink_gbps) for r in cluster.topology]
        d_up = [add(f"{d.name}:up", d.effective_uplink_gbps) for d in cluster.domains]
        d_down = [add(f"{d.name}:down", d.effective_uplink_gbps) for d in cluster.domains]
        core = -1 if cluster.fabric.core_gbps is None else add("core", cluster.fabric.core_gbps)
        index = {d.name: i for i, d in enumerate(cluster.domains)}
        rack_domain = [index.get(r.domain, -1) for r in cluster.topology]
        rack_of = cluster.rack_of
        return cls(
            tuple(names),
            np.array(cap, dtype=float),
            tuple(up),
            tuple(down),
            tuple(d_up),
            tuple(d_down),
            core,
            rack_of,
            tuple(rack_domain[r] for r in rack_of),
        )

    def _cross(self, out: dict[int, float], m1: int, m2: int, nbytes: float) -> None:
        """Add ``nbytes`` sent from machine m1 to machine m2 to the links on its path."""
        r1, r2 = self.rack_of[m1], self.rack_of[m2]
        if r1 == r2:
            return
        for e in (self.rack_up[r1], self.rack_down[r2]):
            out[e] = out.get(e, 0.0) + nbytes
        d1, d2 = self.domain_of[m1], self.domain_of[m2]
        if d1 != d2:
            if d1 >= 0:
                out[self.domain_up[d1]] = out.get(self.domain_up[d1], 0.0) + nbytes
            if d2 >= 0:
                out[self.domain_down[d2]] = out.get(self.domain_down[d2], 0.0) + nbytes
        if self.core >= 0:
            out[self.core] = out.get(self.core, 0.0) + nbytes


def job_volumes(job: Job, tasks: Sequence[tuple[int, int, int]], links: Links) -> dict[int, float]:
    """Bytes per iteration ``job`` at placement ``tasks`` sends over each shared link (index -> bytes)."""
    out: dict[int, float] = {}
    if job.throughput is not None:  # a measured job has no communication term
        return out
    size = float(job.profile.param_bytes.sum())
    if job.arch == "allreduce":
        n = sum(w for _, w, _ in tasks)
        used = sorted({m for m, w, _ in tasks if w > 0}, key=lambda m: (links.rack_of[m], m))
        # the ring is ordered rack by rack: one machine per rack stands for its boundary hops
        firsts: dict[int, int] = {}
        for m in used:
            firsts.setdefault(links.rack_of[m], m)
        ring = list(firsts.values())
        if n < 2 or len(ring) < 2:
            return out
        hop = 2.0 * (n - 1) / n * size
        for a, b in zip(ring, ring[1:] + ring[:1]):
            links._cross(out, a, b, hop)
        return out
    ps = sum(p for _, _, p in tasks)
    if ps == 0:
        return out
    per_pair = size / ps
    for m1, w, _ in tasks:
        if not w:
            continue
        for m2, _, p in tasks:
            if p and links.rack_of[m1] != links.rack_of[m2]:
                links._cross(out, m1, m2, w * p * per_pair)  # push
                links._cross(out, m2, m1, w * p * per_pair)  # pull
    return out


def compute_seconds(job: Job, workers: int) -> float:
    """Seconds of GPU compute (forward and backward) in one iteration on ``workers`` workers."""
    if job.batch_mode == "global":
        scale = job.global_batch / workers
    else:
        scale = float(job.per_worker_batch or 0)
    return float((job.profile.forward_s.sum() + job.profile.backward_s.sum()) * scale)


@dataclass(frozen=True, eq=False)
class FabricState:
    """What a communication policy sees: the running jobs on the fabric, row by row.

    volume: bytes per iteration on each shared link (jobs x links). capacity: bytes/s per link.
    tau0: uncontended iteration time (s). compute_s: GPU compute seconds per iteration.
    gpus: GPUs each job holds. remaining_iterations: iterations each job has left.
    """

    jobs: tuple[Job, ...]
    volume: np.ndarray
    capacity: np.ndarray
    tau0: np.ndarray
    compute_s: np.ndarray
    gpus: np.ndarray
    remaining_iterations: np.ndarray

    @property
    def demand(self) -> np.ndarray:
        """Average rate (bytes/s) each job needs on each link when it runs uncontended."""
        return self.volume / self.tau0[:, None]

    @property
    def transfer_s(self) -> np.ndarray:
        """Each job's transfer time per iteration alone on its bottleneck link (Crux's t_j)."""
        with np.errstate(divide="ignore", invalid="ignore"):
            return (self.volume / self.capacity[None, :]).max(axis=1, initial=0.0)


def levels_from_scores(scores: np.ndarray, levels: int = MAX_LEVELS) -> np.ndarray:
    """Priority level per job (0: served first) from scores (lower first), compressed to ``levels``.

    Distinct scores are ranked and the ranks split evenly over the levels (equal scores share one).
    """
    n_levels = check_int("levels", levels, 1, MAX_LEVELS)
    s = np.asarray(scores, dtype=float)
    if s.size == 0:
        return np.zeros(0, dtype=np.int64)
    distinct, rank = np.unique(s, return_inverse=True)
    k = len(distinct)
    return (rank * min(n_levels, k) // k).astype(np.int64)


def water_fill(
    demand: np.ndarray, capacity: np.ndarray, levels: np.ndarray | None = None
) -> np.ndarray:
    """Fraction x in [0, 1] of its demand each job gets (module docstring).

    demand: bytes/s per job and link (jobs x links). capacity: bytes/s per link. levels: priority
    level per job (0 first; None: one level, max-min fair). No link carries more than its capacity.
    """
    d = np.asarray(demand, dtype=float)
    n = d.shape[0]
    x = np.ones(n)
    if n == 0:
        return x
    peak = d.max(axis=1, initial=0.0)
    talks = peak > 0
    if not talks.any():
        return x
    lv = np.zeros(n, dtype=np.int64) if levels is None else np.asarray(levels, dtype=np.int64)
    a = np.zeros_like(d)
    a[talks] = d[talks] / peak[talks, None]
    residual = np.asarray(capacity, dtype=float).copy()
    idx = np.flatnonzero(talks)
    idx = idx[np.argsort(lv[idx], kind="stable")]
    bounds = np.flatnonzero(np.diff(lv[idx])) + 1
    for active in np.split(idx, bounds):  # the levels in order, each its jobs
        if active.size == 1:  # one job: it takes what its links have left, up to its demand
            j = int(active[0])
            on = a[j] > _TOL
            rate = min(peak[j], float((np.maximum(residual[on], 0.0) / a[j, on]).min()))
            x[j] = rate / peak[j]
            residual -= a[j] * rate
            continue
        while active.size:
            w = a[active].sum(axis=0)
            on = w > _TOL
            head = np.full(w.shape, np.inf)
            head[on] = np.maximum(residual[on], 0.0) / w[on]
            lam = float(head.min())
            capped = peak[active] <= lam
            if capped.any():  # these reach their demand before any link fills
                done = active[capped]
                rate = peak[done]
            else:  # the fullest links fill: their jobs stop at lam
                full = head <= lam * (1 + 1e-9) + _TOL
                done = active[(a[active][:, full] > _TOL).any(axis=1)]
                rate = np.full(done.size, lam)
            x[done] = rate / peak[done]
            residual -= (a[done] * rate[:, None]).sum(axis=0)
            active = np.setdiff1d(active, done, assume_unique=True)
    return x
