"""Stages the classic policies share: task demand vectors, first-fit placement, bundle admission.

A *bundle* is one worker plus one PS (the unit the classic PS-setting baselines hand out).
Placement here is first-fit decreasing on the dominant resource (smd-model.md section 8): the task
type with the larger dominant share is placed first, each task on the lowest-index machine it
fits on. Placement does not change a job's speed in the model (every task reserves its own NIC
share), so it matters only for capacity.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

from smdlab.errors import InvalidInput
from smdlab.model.cluster import Cluster
from smdlab.model.job import Job
from smdlab.model.timing import speed_table
from smdlab.policies.base import Allocation, ClusterState, Decision, Placement, QueuedJob

# Relative slack on capacity comparisons: demands are sums of user floats (e.g. 0.1 CPU).
TOL = 1e-9
_UNBOUNDED = 2**40  # tasks that demand nothing: 'any number' without int64 overflow in sums

_VECTORS: dict[tuple[int, tuple[str, ...]], tuple[Job, np.ndarray, np.ndarray]] = {}
_VECTORS_MAX = 200_000


_SPEEDS: dict[tuple[int, str], tuple[Job, np.ndarray]] = {}


def job_speeds(job: Job, mode: str = "wfbp") -> np.ndarray:
    """The job's speed table (samples/s, W x P, read-only), cached per job object and mode."""
    key = (id(job), mode)
    hit = _SPEEDS.get(key)
    if hit is not None and hit[0] is job:
        return hit[1]
    table = speed_table(job, mode)
    table.setflags(write=False)
    if len(_SPEEDS) >= _VECTORS_MAX:
        _SPEEDS.clear()
    _SPEEDS[key] = (job, table)
    return table


def task_vectors(job: Job, resources: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """(worker demand, PS demand) of ``job`` as vectors over ``resources`` (cached, read-only)."""
    key = (id(job), tuple(resources))
    hit = _VECTORS.get(key)
    if hit is not None and hit[0] is job:
        return hit[1], hit[2]
    unknown = [r for r in (*job.worker_demand, *job.ps_demand) if r not in resources]
    if unknown:
        raise InvalidInput(
            f"job {job.name!r} demands resource {unknown[0]!r}, which the cluster does not have; "
            f"cluster resources: {', '.join(resources)}"
        )
    wv = np.array([job.worker_demand.get(r, 0.0) for r in resources], dtype=float)
    pv = np.array([job.ps_demand.get(r, 0.0) for r in resources], dtype=float)
    wv.setflags(write=False)
    pv.setflags(write=False)
    if len(_VECTORS) >= _VECTORS_MAX:
        _VECTORS.clear()
    _VECTORS[key] = (job, wv, pv)
    return wv, pv


def capacity_matrix(cluster: Cluster) -> np.ndarray:
    """Per-machine capacities (machines x resources); a pooled cluster is one virtual machine."""
    if cluster.has_machines:
        return cluster.machine_matrix.astype(float)
    return cluster.capacity_vector.astype(float)[None, :]


def fit_counts(free: np.ndarray, demand: np.ndarray) -> np.ndarray:
    """How many tasks of ``demand`` fit on each machine of ``free`` (an int array per machine)."""
    pos = demand > 0
    if not pos.any():
        return np.full(free.shape[0], _UNBOUNDED, dtype=np.int64)
    d = demand[pos]
    counts = np.floor((free[:, pos] + TOL * np.maximum(1.0, d)) / d).min(axis=1)
    return np.maximum(counts, 0).astype(np.int64)


def _fill(free: np.ndarray, demand: np.ndarray, n: int) -> np.ndarray | None:
    """Place ``n`` tasks first-fit (lowest machine index first); per-machine counts, or None."""
    if n == 0:
        return np.zeros(free.shape[0], dtype=np.int64)
    counts = fit_counts(free, demand)
    before = np.cumsum(counts) - counts
    if before[-1] + counts[-1] < n:
        return None
    take = np.clip(n - before, 0, counts)
    free -= take[:, None] * demand[None, :]
    return take


def dominant_share(demand: np.ndarray, capacity: np.ndarray) -> float:
    """Largest share of any resource that ``demand`` takes of ``capacity``."""
    with np.errstate(divide="ignore", invalid="ignore"):
        share = np.where(capacity > 0, demand / capacity, np.where(demand > 0, np.inf, 0.0))
    return float(share.max())


def first_fit(
    job: Job, workers: int, ps: int, free: np.ndarray, resources: Sequence[str], *, commit: bool = False
) -> Placement | None:
    """Place ``workers`` workers and ``ps`` PSs by first-fit decreasing; None if they do not fit.

    With ``commit`` the placed demand is subtracted from ``free`` in place.
    """
    wv, pv = task_vectors(job, resources)
    work = free if commit else free.copy()
    pooled = free.sum(axis=0)
    if np.any(workers * wv + ps * pv > pooled + TOL * np.maximum(1.0, pooled)):
        return None  # cannot fit even pooled: skip the per-machine pass
    snapshot = work.copy() if commit else None
    first_workers = dominant_share(wv, pooled) >= dominant_share(pv, pooled)
    order = ((wv, workers), (pv, ps)) if first_workers else ((pv, ps), (wv, workers))
    takes = []
    for demand, n in order:
        take = _fill(work, demand, n)
        if take is None:
            if snapshot is not None:
                work[...] = snapshot  # leave the caller's matrix untouched on failure
            return None
        takes.append(take)
    w_take, p_take = takes if first_workers else takes[::-1]
    used = np.flatnonzero(w_take + p_take)
    return Placement(tuple((int(m), int(w_take[m]), int(p_take[m])) for m in used))


def placement_usage(job: Job, placement: Placement, machines: int, resources: Sequence[str]) -> np.ndarray:
    """Resources a placement takes on each machine (machines x resources)."""
    wv, pv = task_vectors(job, resources)
    out = np.zeros((machines, len(resources)))
    for m, w, p in placement.tasks:
        out[m] += w * wv + p * pv
    return out


def _largest(feasible, hi: int) -> tuple[int, Placement | None]:
    """Largest n in [0, hi] with feasible(n) not None (feasibility monotone in n), and its value."""
    if hi <= 0:
        return 0, None
    best = feasible(hi)
    if best is not None:
        return hi, best
    lo, found = 0, None
    while lo < hi - 1:
        mid = (lo + hi) // 2
        pl = feasible(mid)
        if pl is None:
            hi = mid
        else:
            lo, found = mid, pl
    return lo, found


def max_bundles(job: Job, free: np.ndarray, resources: Sequence[str], cap: int) -> tuple[int, Placement | None]:
    """Largest n <= cap such that n bundles of ``job`` fit first-fit, with their placement."""
    wv, pv = task_vectors(job, resources)
    bundle = wv + pv
    pooled = free.sum(axis=0)
    pos = bundle > 0
    hi = cap
    if pos.any():
        hi = min(cap, int(np.floor(((pooled[pos] + TOL * np.maximum(1.0, bundle[pos])) / bundle[pos]).min())))
    # First-fit feasibility is monotone in n (fewer tasks leave a superset of room): binary search.
    return _largest(lambda n: first_fit(job, n, n, free, resources), hi)


def max_allocation(job: Job, free: np.ndarray, resources: Sequence[str]) -> tuple[int, int, Placement | None]:
    """Most (workers, ps, placement) a job gets by bundles; (0, 0, None) if not one bundle fits.

    Bundles up to min(max_workers, max_ps); once the job holds ``max_ps`` PSs, single workers up
    to ``max_workers`` (the bundle convention of the classic baselines).
    """
    n, placement = max_bundles(job, free, resources, min(job.max_workers, job.max_ps))
    if n == 0 or n < job.max_ps or job.max_workers <= n:
        return n, n, placement
    k, extra = _largest(lambda k: first_fit(job, n + k, n, free, resources), job.max_workers - n)
    return (n + k, n, extra) if k else (n, n, placement)


def bundle_cap(job: Job) -> int:
    """Most bundles a job may hold: min(max_workers, max_ps)."""
    return min(job.max_workers, job.max_ps)


def admit_bundles(
    order: Iterable[QueuedJob], state: ClusterState, *, stop_at_first_unfit: bool = True, note: str = ""
) -> Decision:
    """Give each job in ``order`` as much as fits by bundles (``max_allocation``) before the next job.

    With ``stop_at_first_unfit`` the pass ends at the first job that gets no bundle (FIFO's
    head-of-line rule); otherwise that job is passed over.
    """
    free = np.array(state.free, dtype=float)
    resources = state.cluster.resources
    allocations = []
    for q in order:
        w, p, placement = max_allocation(q.job, free, resources)
        if w == 0:
            if stop_at_first_unfit:
                break
            continue
        free -= placement_usage(q.job, placement, free.shape[0], resources)
        allocations.append(Allocation(q.job.name, w, p, placement))
    return Decision(tuple(allocations), note=note)
