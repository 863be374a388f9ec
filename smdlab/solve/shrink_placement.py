"""Shrink-placement: a pooled allocation of many jobs placed on the machines, shrunk where it does not fit.

The solver's placement (and SMD's; docs/solver.md, Placement). ``place`` puts every job's
(workers, PSs) on the machines by first-fit decreasing and shrinks the allocation where it does
not fit:

Tasks (the PSs and the workers of every job) are placed by first-fit decreasing on their
dominant resource share (max_r demand_r / cluster capacity_r). Identical tasks of one job are
placed together in one vectorised step (first fit of k identical tasks = fill the machines in
order), so a placement costs O(jobs x machines) numpy work. If some task does not fit, one task
is removed from the job whose loss per freed resource is smallest (loss = increase of omega * d,
freed resource = sum_r demand_r / capacity_r of the removed task; only tasks that use a resource
the failing task lacked, or the failing group itself, are candidates) and the placement of the
failing group is retried. A removed task that was already placed is taken off a machine where
that lets the failing task fit, if there is one. A job at (1, 1) is removed by leaving it
unstarted, charged the deferral cost of docs/solver.md. Every removal is one shrink step.
Under a rack layout (``smdlab.solve.placement.rack_layout``) a job's tasks fill the racks it
already uses first, else the first rack that holds all of its remaining tasks.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from smdlab.errors import InvalidInput, check_int
from smdlab.model.cluster import Cluster
from smdlab.model.job import Job
from smdlab.solve.instance import (
    as_amounts,
    base_speeds,
    check_cluster,
    check_jobs,
    demand_matrices,
    job_speeds,
)
from smdlab.solve.placement import TOL, Placement, fill, fit_counts, rack_order


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


class _Costs:
    """omega_i * d_i(w, p) of the jobs that may shrink, looked up on demand (a shrink is rare).

    Their durations sit in one padded (jobs, W, P) grid (+inf beyond a job's caps), so a look-up
    for many jobs is one fancy index. defer: each job's cost when left unstarted.
    """

    def __init__(self, jobs: Sequence[Job], mode: str, defer: np.ndarray):
        samples = np.array([j.samples for j in jobs], dtype=float)
        weight = np.array([j.weight for j in jobs], dtype=float)
        tables = [job_speeds(j, mode) for j in jobs]
        W = max(t.shape[0] for t in tables)
        P = max(t.shape[1] for t in tables)
        speed = np.zeros((len(tables), W, P))
        for k, t in enumerate(tables):
            speed[k, : t.shape[0], : t.shape[1]] = t
        with np.errstate(divide="ignore"):
            self.cost = weight[:, None, None] * (samples[:, None, None] / speed)
        self.defer = defer

    def at(self, idx: np.ndarray, w: np.ndarray, p: np.ndarray) -> np.ndarray:
        """Cost of jobs ``idx`` at (w, p)."""
        return self.cost[idx, w - 1, p - 1]


def defer_costs(jobs: Sequence[Job], mode: str) -> np.ndarray:
    """omega_i * (H + d_i(1, 1)) with H = max_j d_j(1, 1): a pessimistic waiting cost that ranks whole-job removals when ``Instance.defer_cost`` is not passed."""
    samples = np.array([j.samples for j in jobs], dtype=float)
    base = samples / base_speeds(jobs, mode)
    return np.array([j.weight for j in jobs], dtype=float) * (base.max() + base)


def _cheapest_shrink(w, p, costs: _Costs, wd, pd, norm_w, norm_p, blocking, i_fail, kind_fail):
    """(job, new workers, new ps): the one-task removal with the smallest loss per freed resource.

    Candidates remove a worker (w > 1), a PS (p > 1), or a whole job at (1, 1); only tasks that
    use a resource the failing task lacked count. The failing group itself is always a candidate,
    so the repair ends.
    """
    jobs = np.flatnonzero(w > 0)
    wj, pj = w[jobs], p[jobs]
    here = costs.at(jobs, wj, pj)
    big = np.inf
    loss_w = np.where(wj > 1, costs.at(jobs, np.maximum(wj - 1, 1), pj) - here, big)
    loss_p = np.where(pj > 1, costs.at(jobs, wj, np.maximum(pj - 1, 1)) - here, big)
    unit = (wj == 1) & (pj == 1)
    loss_u = np.where(unit, costs.defer[jobs] - here, big)
    use_w = (wd[jobs] > 0) @ blocking > 0
    use_p = (pd[jobs] > 0) @ blocking > 0
    use_u = use_w | use_p
    fail = jobs == i_fail
    # the failing group can always give up one of its own tasks
    use_w |= fail & (kind_fail == 0)
    use_p |= fail & (kind_fail == 1)
    use_u |= fail
    score = np.stack(
        [
            np.where(use_w, loss_w / np.maximum(norm_w[jobs], 1e-12), big),
            np.where(use_p, loss_p / np.maximum(norm_p[jobs], 1e-12), big),
            np.where(use_u, loss_u / np.maximum(norm_w[jobs] + norm_p[jobs], 1e-12), big),
        ]
    )
    if not np.isfinite(score).any():  # only the failing job is left and it is at (1, 1)
        return int(i_fail), 0, 0
    k, r = np.unravel_index(int(np.argmin(score)), score.shape)
    j = int(jobs[r])
    if k == 0:
        return j, int(w[j] - 1), int(p[j])
    if k == 1:
        return j, int(w[j]), int(p[j] - 1)
    return j, 0, 0


def _alloc_pairs(alloc, n: int) -> np.ndarray:
    """``alloc`` as an (n, 2) integer array of (workers, ps), else InvalidInput naming the field."""
    if isinstance(alloc, np.ndarray) and alloc.dtype.kind in "iu" and alloc.shape == (n, 2):
        return alloc.astype(int)
    allowed = f"one (workers, ps) pair of integers per job ({n} jobs), or an integer array of shape ({n}, 2)"
    if isinstance(alloc, (str, bytes)) or not isinstance(alloc, Iterable):
        raise InvalidInput(f"alloc must be {allowed}, got {alloc!r:.80}")
    rows = list(alloc)
    if len(rows) != n:
        raise InvalidInput(f"alloc must have one (workers, ps) pair per job ({n}), got {len(rows)}")
    out = np.zeros((n, 2), dtype=int)
    for i, a in enumerate(rows):
        try:
            w, p = a
            out[i] = check_int(f"alloc[{i}] workers", w, 0), check_int(f"alloc[{i}] ps", p, 0)
        except InvalidInput:
            raise
        except (TypeError, ValueError):
            raise InvalidInput(f"alloc must be {allowed}; alloc[{i}] is {a!r:.80}") from None
    return out


def _swap_unit_order(
    i: int, kind: int, w, p, placed: np.ndarray, free_now: np.ndarray, demand
) -> bool:
    """Job ``i`` at (1, 1) whose task ``kind`` failed after its other task was placed: try this task first.

    Takes the other task off its machine, places the failing task by first fit and then the
    other one; on success updates ``placed`` and ``free_now`` and returns True, else leaves both
    unchanged. With one task of each kind this finds a placement whenever one exists on the
    capacity left by the other jobs (see ``first_fit_tasks``).
    """
    other = 1 - kind
    if w[i] != 1 or p[i] != 1 or placed[i, :, other].sum() != 1 or placed[i, :, kind].sum() != 0:
        return False
    h = int(np.argmax(placed[i, :, other]))
    trial = free_now.copy()
    trial[h] += demand[other][i]
    first = fill(trial, demand[kind][i], 1)
    second = fill(trial, demand[other][i], 1) if first is not None else None
    if second is None:
        return False
    free_now[:] = trial
    placed[i, :, kind] = first
    placed[i, :, other] = second
    return True


def place(
    jobs: Sequence[Job],
    alloc: Sequence[tuple[int, int]] | np.ndarray,
    cluster: Cluster,
    free: np.ndarray | None = None,
    mode: str = "wfbp",
    *,
    demands: tuple[np.ndarray, np.ndarray] | None = None,
) -> PlacementResult:
    """Place each job's (workers, ps) on the machines of ``cluster`` (free capacity ``free``), shrinking if needed.

    mode: timing overlap mode of the durations a shrink compares. demands: the jobs' (alpha,
    gamma) over ``cluster.resources`` when already built (the solver passes its instance's).
    """
    jobs = check_jobs(jobs)
    check_cluster(cluster)
    if not cluster.has_machines:
        raise InvalidInput("cluster must have machines to place on (a pooled cluster has none)")
    n = len(jobs)
    pairs = _alloc_pairs(alloc, n)
    w, p = pairs[:, 0], pairs[:, 1]
    for i in np.flatnonzero(
        (w != 0) | (p != 0)
    ).tolist():  # a job left out is (0, 0); the others need valid counts
        check_int(f"alloc[{i}] workers of job {jobs[i].name!r}", int(w[i]), 1, jobs[i].max_workers)
        check_int(f"alloc[{i}] ps of job {jobs[i].name!r}", int(p[i]), 1, jobs[i].ps_slots)
    full = cluster.machine_matrix
    if free is not None:
        free = as_amounts("free", free, f"{full.shape}")
        if free.shape != full.shape or np.any(~np.isfinite(free)) or np.any(free < -TOL):
            raise InvalidInput(
                f"free must be a finite (machines x resources) = {full.shape} matrix >= 0, got shape {free.shape}"
            )
    return place_checked(jobs, pairs, cluster, free, mode, demands)


def place_checked(
    jobs: tuple[Job, ...],
    pairs: np.ndarray,
    cluster: Cluster,
    free: np.ndarray | None,
    mode: str,
    demands: tuple[np.ndarray, np.ndarray] | None = None,
    defer: np.ndarray | None = None,
) -> PlacementResult:
    """``place`` on arguments already checked (the solver's call: valid jobs, an (n, 2) int allocation, free or None).

    defer: the jobs' costs when left unstarted (``Instance.defer_cost``), if known.
    """
    n = len(jobs)
    w_all, p_all = pairs[:, 0].astype(int), pairs[:, 1].astype(int)
    full = cluster.machine_matrix
    free0 = full.astype(float) if free is None else np.array(free, dtype=float)
    total = full.sum(axis=0)
    scale = np.where(total > 0, total, 1.0)
    wd_all, pd_all = demand_matrices(jobs, cluster) if demands is None else demands
    # Only jobs with tasks take part (a long queue of which few start costs little more than its length).
    live = np.flatnonzero(w_all > 0)
    w, p = w_all[live], p_all[live]
    wd, pd = wd_all[live], pd_all[live]
    L = live.size
    key_w = (wd / scale).max(axis=1) if L else np.zeros(0)
    key_p = (pd / scale).max(axis=1) if L else np.zeros(0)
    norm_w = (wd / scale).sum(axis=1)
    norm_p = (pd / scale).sum(axis=1)
    shrunk = np.zeros(L, dtype=int)
    steps = 0
    # a task that fits on no machine even before anything is placed can never run: unstart its job
    fits_w = np.all(wd[:, None, :] <= free0[None] + TOL, axis=2).any(axis=1)
    fits_p = np.all(pd[:, None, :] <= free0[None] + TOL, axis=2).any(axis=1)
    never = np.flatnonzero(~(fits_w & fits_p))
    shrunk[never] += w[never] + p[never]
    w[never] = p[never] = 0
    steps += never.size
    costs = None
    H = full.shape[0]
    free_now = free0.copy()
    placed = np.zeros((L, H, 2), dtype=int)  # tasks per job, machine, kind (0 workers, 1 PSs)
    count = np.zeros((L, 2), dtype=int)  # tasks placed per job and kind
    demand = (wd, pd)
    target = [w, p]
    gp, gw = np.flatnonzero(p > 0), np.flatnonzero(w > 0)
    # decreasing dominant share; PS groups before worker groups on ties, then job order
    g_key = np.concatenate([key_p[gp], key_w[gw]])
    g_job = np.concatenate([gp, gw])
    g_kind = np.concatenate([np.ones(gp.size, dtype=int), np.zeros(gw.size, dtype=int)])
    for g in np.lexsort((g_job, -g_kind, -g_key)):
        i, kind = int(g_job[g]), int(g_kind[g])
        d = demand[kind][i]
        while True:
            need = int(target[kind][i] - count[i, kind])
            if need <= 0:
                break
            counts = fit_counts(free_now, d)
            order = rack_order(
                free_now,
                placed[i].sum(axis=1) > 0,
                (target[0][i] - count[i, 0]) * wd[i] + (target[1][i] - count[i, 1]) * pd[i],
            )
            if order is None:
                before = np.cumsum(counts) - counts
                take = np.clip(need - before, 0, counts)
            else:  # racked: the job's racks (or one that holds it) first
                c = counts[order]
                take = np.zeros_like(counts)
                take[order] = np.clip(need - (np.cumsum(c) - c), 0, c)
            used = np.flatnonzero(take)
            free_now[used] -= take[used, None] * d[None, :]
            placed[i, used, kind] += take[used]
            got = int(take[used].sum())
            count[i, kind] += got
            if got == need:
                break
            # A job at (1, 1) whose second task fails may fit with the other task order (costs nothing).
            if _swap_unit_order(i, kind, w, p, placed, free_now, demand):
                count[i] = 1
                break
            # Not all fit: remove one task (the smallest loss per freed resource) and retry the rest.
            if costs is None:  # only a shrink needs the timing model
                dc = defer_costs(jobs, mode) if defer is None else np.asarray(defer, dtype=float)
                costs = _Costs([jobs[k] for k in live.tolist()], mode, dc[live])
            blocking = (d[None, :] > free_now + TOL).any(
                axis=0
            )  # resources the task lacked somewhere
            j, new_w, new_p = _cheapest_shrink(
                w, p, costs, wd, pd, norm_w, norm_p, blocking, i, kind
            )
            for k, new in ((0, new_w), (1, new_p)):
                surplus = int(count[j, k] - new)
                while (
                    surplus > 0
                ):  # the task removed was already placed: free it where it helps most
                    hosts = np.flatnonzero(placed[j, :, k])
                    helps = hosts[np.all(free_now[hosts] + demand[k][j] + TOL >= d, axis=1)]
                    h = int(helps[0]) if helps.size else int(hosts[-1])
                    placed[j, h, k] -= 1
                    count[j, k] -= 1
                    free_now[h] += demand[k][j]
                    surplus -= 1
            shrunk[j] += (w[j] - new_w) + (p[j] - new_p)
            w[j], p[j] = new_w, new_p
            steps += 1
    placements = [Placement(())] * n
    jobs_i, hosts = np.nonzero(placed.sum(axis=2))  # row-major: machines ascending per job
    tasks = zip(
        hosts.tolist(), placed[jobs_i, hosts, 0].tolist(), placed[jobs_i, hosts, 1].tolist()
    )
    for i, grp in itertools.groupby(zip(live[jobs_i].tolist(), tasks), key=lambda x: x[0]):
        placements[i] = Placement(tuple(t for _, t in grp))
    w_all[live], p_all[live] = w, p
    shrunk_all = np.zeros(n, dtype=int)
    shrunk_all[live] = shrunk
    w, p, shrunk = w_all, p_all, shrunk_all
    left = free_now
    left.setflags(write=False)
    return PlacementResult(
        tuple(placements), tuple(w.tolist()), tuple(p.tolist()), steps, tuple(shrunk.tolist()), left
    )
