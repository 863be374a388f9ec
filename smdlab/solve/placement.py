"""Placement of a pooled allocation onto machines (specification section 8).

Tasks (the PSs and the workers of every job) are placed by first-fit decreasing on their
dominant resource share (max_r demand_r / cluster capacity_r). Identical tasks of one job are
placed together in one vectorised step (first fit of k identical tasks = fill the machines in
order), so a placement costs O(jobs x machines) numpy work. If some task does not fit, one task
is removed from the job whose loss per freed resource is smallest (loss = increase of omega * d,
freed resource = sum_r demand_r / capacity_r of the removed task; only tasks that use a resource
the failing task lacked, or the failing group itself, are candidates) and the placement of the
failing group is retried. A removed task that was already placed is taken off a machine where
that lets the failing task fit, if there is one. A job at (1, 1) is removed by leaving it
unstarted, charged the deferral cost of docs/solver.md. Every removal is one shrink step."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from smdlab.errors import InvalidInput, check_int
from smdlab.model.cluster import Cluster
from smdlab.model.job import Job
from smdlab.model.timing import duration_grid
from smdlab.solve.instance import demand_matrices

_TOL = 1e-9


@dataclass(frozen=True)
class Placement:
    """Where one job's tasks run: (machine index, workers there, PSs there) per machine used."""

    tasks: tuple[tuple[int, int, int], ...]

    @property
    def workers(self) -> int:
        """Total workers placed."""
        return sum(t[1] for t in self.tasks)

    @property
    def ps(self) -> int:
        """Total PSs placed."""
        return sum(t[2] for t in self.tasks)

    @property
    def machines(self) -> tuple[int, ...]:
        """Indices of the machines used."""
        return tuple(t[0] for t in self.tasks)


@dataclass(frozen=True, eq=False)
class PlacementResult:
    """A placed allocation.

    placements: per job, its Placement (empty tasks when the job does not run).
    workers, ps: per job, the allocation actually placed (after shrinking; 0/0 = not started).
    shrink_steps: number of single-task removals placement needed.
    shrunk: per job, how many tasks were removed from it.
    free: free capacity per machine after placement (machines x resources, read-only).
    """

    placements: tuple[Placement, ...]
    workers: tuple[int, ...]
    ps: tuple[int, ...]
    shrink_steps: int
    shrunk: tuple[int, ...]
    free: np.ndarray

    def __len__(self) -> int:
        return len(self.placements)


def _fit_counts(free: np.ndarray, d: np.ndarray, inv: np.ndarray, need: int) -> np.ndarray:
    """How many tasks of demand d fit on each machine (at most ``need``)."""
    pos = d > 0
    if not pos.any():
        return np.full(free.shape[0], need)
    q = np.floor((free[:, pos] + _TOL) * inv[pos]).min(axis=1)
    return np.clip(q, 0, need).astype(int)


def _cheapest_shrink(w, p, cost, defer, wd, pd, norm_w, norm_p, blocking, i_fail, kind_fail):
    """(job, new workers, new ps): the one-task removal with the smallest loss per freed resource.

    Candidates remove a worker (w > 1), a PS (p > 1), or a whole job at (1, 1); only tasks that
    use a resource the failing task lacked count. The failing group itself is always a candidate,
    so the repair ends.
    """
    jobs = np.flatnonzero(w > 0)
    wj, pj = w[jobs], p[jobs]
    here = cost[jobs, wj - 1, pj - 1]
    big = np.inf
    loss_w = np.where(wj > 1, cost[jobs, np.maximum(wj - 2, 0), pj - 1] - here, big)
    loss_p = np.where(pj > 1, cost[jobs, wj - 1, np.maximum(pj - 2, 0)] - here, big)
    unit = (wj == 1) & (pj == 1)
    loss_u = np.where(unit, defer[jobs] - here, big)
    use_w = (wd[jobs] > 0) @ blocking > 0
    use_p = (pd[jobs] > 0) @ blocking > 0
    use_u = use_w | use_p
    fail = jobs == i_fail
    # the failing group can always give up one of its own tasks
    use_w |= fail & (kind_fail == 0)
    use_p |= fail & (kind_fail == 1)
    use_u |= fail
    score = np.stack([
        np.where(use_w, loss_w / np.maximum(norm_w[jobs], 1e-12), big),
        np.where(use_p, loss_p / np.maximum(norm_p[jobs], 1e-12), big),
        np.where(use_u, loss_u / np.maximum(norm_w[jobs] + norm_p[jobs], 1e-12), big),
    ])
    if not np.isfinite(score).any():  # only the failing job is left and it is at (1, 1)
        return int(i_fail), 0, 0
    k, r = np.unravel_index(int(np.argmin(score)), score.shape)
    j = int(jobs[r])
    if k == 0:
        return j, int(w[j] - 1), int(p[j])
    if k == 1:
        return j, int(w[j]), int(p[j] - 1)
    return j, 0, 0


def place(
    jobs: Sequence[Job],
    alloc: Sequence[tuple[int, int]],
    cluster: Cluster,
    free: np.ndarray | None = None,
    mode: str = "wfbp",
) -> PlacementResult:
    """Place each job's (workers, ps) on the machines of ``cluster`` (free capacity ``free``), shrinking if needed."""
    jobs = tuple(jobs)
    if not cluster.has_machines:
        raise InvalidInput("cluster must have machines to place on (a pooled cluster has none)")
    if len(alloc) != len(jobs):
        raise InvalidInput(f"alloc must have one (workers, ps) pair per job ({len(jobs)}), got {len(alloc)}")
    w = np.zeros(len(jobs), dtype=int)
    p = np.zeros(len(jobs), dtype=int)
    for i, (job, a) in enumerate(zip(jobs, alloc)):
        wi, pi = int(a[0]), int(a[1])
        if (wi, pi) != (0, 0):
            check_int(f"alloc[{i}] workers of job {job.name!r}", a[0], 1, job.max_workers)
            check_int(f"alloc[{i}] ps of job {job.name!r}", a[1], 1, job.max_ps)
        w[i], p[i] = wi, pi
    full = cluster.machine_matrix
    if free is None:
        free0 = full.copy()
    else:
        free0 = np.array(free, dtype=float)
        if free0.shape != full.shape or np.any(~np.isfinite(free0)) or np.any(free0 < -_TOL):
            raise InvalidInput(f"free must be a finite (machines x resources) = {full.shape} matrix >= 0, got shape {free0.shape}")
    total = full.sum(axis=0)
    scale = np.where(total > 0, total, 1.0)
    wd, pd = demand_matrices(jobs, cluster)
    key_w = (wd / scale).max(axis=1) if jobs else np.zeros(0)
    key_p = (pd / scale).max(axis=1) if jobs else np.zeros(0)
    norm_w = (wd / scale).sum(axis=1)
    norm_p = (pd / scale).sum(axis=1)
    shrunk = np.zeros(len(jobs), dtype=int)
    steps = 0
    cost = defer = None
    for i in np.flatnonzero(w > 0):
        # a task that fits on no machine even before anything is placed can never run: unstart its job
        if not (np.all(wd[i] <= free0 + _TOL, axis=1).any() and np.all(pd[i] <= free0 + _TOL, axis=1).any()):
            shrunk[i] += w[i] + p[i]
            w[i] = p[i] = 0
            steps += 1
    n, H = len(jobs), full.shape[0]
    free_now = free0.copy()
    placed = np.zeros((n, H, 2), dtype=int)  # tasks per job, machine, kind (0 workers, 1 PSs)
    demand = (wd, pd)
    target = [w, p]
    groups = [(key_p[i], i, 1) for i in range(n) if p[i] > 0] + [(key_w[i], i, 0) for i in range(n) if w[i] > 0]
    # decreasing dominant share; PS groups before worker groups on ties, then job order
    groups.sort(key=lambda g: (-g[0], -g[2], g[1]))
    with np.errstate(divide="ignore"):
        inv = (np.where(wd > 0, 1.0 / np.where(wd > 0, wd, 1.0), 0.0), np.where(pd > 0, 1.0 / np.where(pd > 0, pd, 1.0), 0.0))
    for _, i, kind in groups:
        d = demand[kind][i]
        while True:
            need = int(target[kind][i] - placed[i, :, kind].sum())
            if need <= 0:
                break
            counts = _fit_counts(free_now, d, inv[kind][i], need)
            before = np.cumsum(counts) - counts
            take = np.clip(need - before, 0, counts)
            used = np.flatnonzero(take)
            free_now[used] -= take[used, None] * d[None, :]
            placed[i, used, kind] += take[used]
            if take.sum() == need:
                break
            # Not all fit: remove one task (the smallest loss per freed resource) and retry the rest.
            if cost is None:  # only a shrink needs the timing model
                dur = duration_grid(jobs, mode)
                weight = np.array([j.weight for j in jobs])
                cost = weight[:, None, None] * dur
                defer = weight * (dur[:, 0, 0].max() + dur[:, 0, 0])
            blocking = (d[None, :] > free_now + _TOL).any(axis=0)  # resources the task lacked somewhere
            j, new_w, new_p = _cheapest_shrink(w, p, cost, defer, wd, pd, norm_w, norm_p, blocking, i, kind)
            for k, new in ((0, new_w), (1, new_p)):
                surplus = int(placed[j, :, k].sum() - new)
                while surplus > 0:  # the task removed was already placed: free it where it helps most
                    hosts = np.flatnonzero(placed[j, :, k])
                    helps = hosts[np.all(free_now[hosts] + demand[k][j] + _TOL >= d, axis=1)]
                    h = int(helps[0]) if helps.size else int(hosts[-1])
                    placed[j, h, k] -= 1
                    free_now[h] += demand[k][j]
                    surplus -= 1
            shrunk[j] += (w[j] - new_w) + (p[j] - new_p)
            w[j], p[j] = new_w, new_p
            steps += 1
    placements = tuple(
        Placement(tuple((int(h), int(placed[i, h, 0]), int(placed[i, h, 1])) for h in np.flatnonzero(placed[i].sum(axis=1))))
        for i in range(n)
    )
    left = free_now
    left.setflags(write=False)
    return PlacementResult(placements, tuple(int(x) for x in w), tuple(int(x) for x in p), steps, tuple(int(x) for x in shrunk), left)
