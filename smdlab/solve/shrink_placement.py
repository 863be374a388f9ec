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
from smdlab.solve.placement import (
    TOL,
    Placement,
    active_racks,
    fill,
    fit_counts,
    rack_order,
)


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


class _Shrinks:
    """The one-task removal with the smallest loss per freed resource, at every shrink step.

    Candidates remove a worker (w > 1), a PS (p > 1), or a whole job at (1, 1); only tasks that
    use a resource the failing task lacked count. The failing group itself is always a candidate,
    so the repair ends. Each job's three losses per freed resource are kept and recomputed only for
    the job a step shrinks, so a step costs O(jobs) comparisons, not a timing look-up per job.
    """

    def __init__(self, w, p, costs: _Costs, wd, pd, norm_w, norm_p) -> None:
        self.w, self.p, self.costs = w, p, costs
        self.uses_w, self.uses_p = wd > 0, pd > 0
        self.norm = np.stack(
            [
                np.maximum(norm_w, 1e-12),
                np.maximum(norm_p, 1e-12),
                np.maximum(norm_w + norm_p, 1e-12),
            ]
        )
        self.score = np.full((3, len(w)), np.inf)
        self.update(np.arange(len(w)))

    def update(self, jobs: np.ndarray) -> None:
        """Recompute the scores of ``jobs`` from their current (w, p)."""
        w, p, costs = self.w[jobs], self.p[jobs], self.costs
        on = w > 0
        ws, ps = np.maximum(w, 1), np.maximum(p, 1)
        here = costs.at(jobs, ws, ps)
        big = np.inf
        loss = np.stack(
            [
                np.where(on & (w > 1), costs.at(jobs, np.maximum(ws - 1, 1), ps) - here, big),
                np.where(on & (p > 1), costs.at(jobs, ws, np.maximum(ps - 1, 1)) - here, big),
                np.where(on & (w == 1) & (p == 1), costs.defer[jobs] - here, big),
            ]
        )
        self.score[:, jobs] = loss / self.norm[:, jobs]

    def cheapest(self, blocking: np.ndarray, i_fail: int, kind_fail: int) -> tuple[int, int, int]:
        """(job, new workers, new ps) of the best removal; the scores then follow that job."""
        use_w = self.uses_w @ blocking > 0
        use_p = self.uses_p @ blocking > 0
        use = np.stack([use_w, use_p, use_w | use_p])
        # the failing group can always give up one of its own tasks
        use[kind_fail, i_fail] = True
        use[2, i_fail] = True
        score = np.where(use, self.score, np.inf)
        if not np.isfinite(score).any():  # only the failing job is left and it is at (1, 1)
            return int(i_fail), 0, 0
        k, r = np.unravel_index(int(np.argmin(score)), score.shape)
        j = int(r)
        w, p = int(self.w[j]), int(self.p[j])
        return (j, w - 1, p) if k == 0 else (j, w, p - 1) if k == 1 else (j, 0, 0)


def _first_live(free: np.ndarray, dead_below: np.ndarray, lo: int) -> int:
    """The first machine from ``lo`` on that may still host a task (H if none)."""
    H, size = free.shape[0], 256
    while lo < H:
        dead = _below_any(free[lo : lo + size], dead_below)
        i = int(dead.argmin())
        if not dead[i]:
            return lo + i
        lo += size
        size *= 4
    return H


def _below_any(rows: np.ndarray, bound: np.ndarray) -> np.ndarray:
    """Per row, whether some column is below ``bound`` (``np.any(rows < bound, axis=1)``, a column at a time)."""
    if not rows.shape[1]:
        return np.zeros(rows.shape[0], dtype=bool)
    out = rows[:, 0] < bound[0]
    for k in range(1, rows.shape[1]):
        out |= rows[:, k] < bound[k]
    return out


def _fits_some(demand: np.ndarray, kinds_tol: np.ndarray) -> np.ndarray:
    """Per row of ``demand``, whether it is <= some row of ``kinds_tol`` in every column."""
    if len(demand) > 4:
        return np.all(demand[:, None, :] <= kinds_tol[None], axis=2).any(axis=1)
    # a few rows: one pass over the machines each (a row fits where no column is below it)
    return np.array([not _below_any(kinds_tol, d).all() for d in demand], dtype=bool)


def _first_fit_from(
    free: np.ndarray, d: np.ndarray, need: int, lo: int
) -> tuple[np.ndarray, np.ndarray]:
    """(machines, tasks on each): first fit of ``need`` tasks of demand ``d`` from machine ``lo`` on.

    Windows of machines grow until they hold ``need`` tasks: the same machines and counts as a
    scan of every machine, whose first ``lo`` hold none.
    """
    H, size, hi, got = free.shape[0], 64, lo, 0
    parts: list[tuple[int, np.ndarray]] = []
    while hi < H and got < need:
        c = fit_counts(free[hi : hi + size], d)
        if need == 1 and not parts:  # one task: the first machine it fits on (the same as below)
            first = int((c > 0).argmax())
            if c[first] > 0:
                return np.array([hi + first]), np.ones(1, dtype=np.int64)
        parts.append((hi, c))
        got += int(min(c.sum(), need))
        hi += c.size
        size *= 4
    if not parts:
        return np.zeros(0, dtype=int), np.zeros(0, dtype=np.int64)
    counts = np.concatenate([c for _, c in parts])
    take = np.clip(need - (np.cumsum(counts) - counts), 0, counts)
    used = np.flatnonzero(take)
    return lo + used, take[used]


def _racked_fit(
    free: np.ndarray, d: np.ndarray, need: int, home_of: dict[int, list[int]], rest: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """(machines, tasks on each): fit of ``need`` tasks on a racked cluster, the job's racks (or one that holds it) first."""
    counts = fit_counts(free, d)
    home = np.zeros(free.shape[0], dtype=bool)
    home[list(home_of)] = True
    order = rack_order(free, home, rest)
    if order is None:
        take = np.clip(need - (np.cumsum(counts) - counts), 0, counts)
    else:
        c = counts[order]
        take = np.zeros_like(counts)
        take[order] = np.clip(need - (np.cumsum(c) - c), 0, c)
    used = np.flatnonzero(take)
    return used, take[used]


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
    i: int, kind: int, w, p, placed: list[dict[int, list[int]]], free_now: np.ndarray, demand
) -> bool:
    """Job ``i`` at (1, 1) whose task ``kind`` failed after its other task was placed: try this task first.

    Takes the other task off its machine, places the failing task by first fit and then the
    other one; on success updates ``placed`` and ``free_now`` and returns True, else leaves both
    unchanged. With one task of each kind this finds a placement whenever one exists on the
    capacity left by the other jobs (see ``first_fit_tasks``).
    """
    other = 1 - kind
    on = placed[i]
    if w[i] != 1 or p[i] != 1 or sum(c[other] for c in on.values()) != 1:
        return False
    if sum(c[kind] for c in on.values()) != 0:
        return False
    h = next(m for m, c in on.items() if c[other])
    trial = free_now.copy()
    trial[h] += demand[other][i]
    first = fill(trial, demand[kind][i], 1)
    second = fill(trial, demand[other][i], 1) if first is not None else None
    if first is None or second is None:
        return False
    free_now[:] = trial
    on.clear()
    for k, take in ((kind, first), (other, second)):
        m = int(np.argmax(take))
        on.setdefault(m, [0, 0])[k] += 1
    return True


_DIRECT_FIT_CHECK = 20_000  # up to this many (job, machine) pairs, check every machine row


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
    H = full.shape[0]
    # a task that fits on no machine even before anything is placed can never run: unstart its job
    # (checked against the distinct machine rows: clusters hold few kinds of machine; a few tasks
    # are checked against every row directly, cheaper than finding the distinct ones)
    kinds = np.unique(free0, axis=0) if free0.size and L * H > _DIRECT_FIT_CHECK else free0
    kinds_tol = kinds + TOL
    fits_w = _fits_some(wd, kinds_tol)
    fits_p = _fits_some(pd, kinds_tol)
    never = np.flatnonzero(~(fits_w & fits_p))
    shrunk[never] += w[never] + p[never]
    w[never] = p[never] = 0
    steps += never.size
    shrinks: _Shrinks | None = None
    free_now = free0.copy()
    # tasks per job: machine -> [workers, PSs] (sparse: a job uses few of many machines)
    placed: list[dict[int, list[int]]] = [{} for _ in range(L)]
    racked = active_racks(H) is not None
    count = np.zeros((L, 2), dtype=int)  # tasks placed per job and kind
    demand = (wd, pd)
    target = [w, p]
    gp, gw = np.flatnonzero(p > 0), np.flatnonzero(w > 0)
    # decreasing dominant share; PS groups before worker groups on ties, then job order
    g_key = np.concatenate([key_p[gp], key_w[gw]])
    g_job = np.concatenate([gp, gw])
    g_kind = np.concatenate([np.ones(gp.size, dtype=int), np.zeros(gw.size, dtype=int)])
    # First fit without racks scans from the first machine that may still host a task: one
    # whose free amount of some resource is below half of every task's demand of it can host
    # none (free capacity only shrinks until a shrink or an order swap frees some: then rescan).
    every = np.vstack([wd[w > 0], pd[p > 0]])
    dmin = every.min(axis=0) if every.size else np.zeros(full.shape[1])
    dead_below = np.where(dmin > 0, 0.5 * dmin, -np.inf)
    lo = 0
    for g in np.lexsort((g_job, -g_kind, -g_key)):
        i, kind = int(g_job[g]), int(g_kind[g])
        d = demand[kind][i]
        while True:
            need = int(target[kind][i] - count[i, kind])
            if need <= 0:
                break
            if not racked:
                lo = _first_live(free_now, dead_below, lo)
                used, take_used = _first_fit_from(free_now, d, need, lo)
            else:
                used, take_used = _racked_fit(free_now, d, need, placed[i],
                    (target[0][i] - count[i, 0]) * wd[i] + (target[1][i] - count[i, 1]) * pd[i])  # fmt: skip
            free_now[used] -= take_used[:, None] * d[None, :]
            for m, t in zip(used.tolist(), take_used.tolist(), strict=True):
                placed[i].setdefault(m, [0, 0])[kind] += t
            got = int(take_used.sum())
            count[i, kind] += got
            if got == need:
                break
            lo = 0  # what follows may free capacity anywhere
            # A job at (1, 1) whose second task fails may fit with the other task order (costs nothing).
            if _swap_unit_order(i, kind, w, p, placed, free_now, demand):
                count[i] = 1
                break
            # Not all fit: remove one task (the smallest loss per freed resource) and retry the rest.
            if shrinks is None:  # only a shrink needs the timing model
                dc = defer_costs(jobs, mode) if defer is None else np.asarray(defer, dtype=float)
                costs = _Costs([jobs[k] for k in live.tolist()], mode, dc[live])
                shrinks = _Shrinks(w, p, costs, wd, pd, norm_w, norm_p)
            blocking = (d[None, :] > free_now + TOL).any(
                axis=0
            )  # resources the task lacked somewhere
            j, new_w, new_p = shrinks.cheapest(blocking, i, kind)
            for k, new in ((0, new_w), (1, new_p)):
                surplus = int(count[j, k] - new)
                while (
                    surplus > 0
                ):  # the task removed was already placed: free it where it helps most
                    hosts = np.array(sorted(m for m, c in placed[j].items() if c[k]), dtype=int)
                    helps = hosts[np.all(free_now[hosts] + demand[k][j] + TOL >= d, axis=1)]
                    h = int(helps[0]) if helps.size else int(hosts[-1])
                    placed[j][h][k] -= 1
                    if not any(placed[j][h]):
                        del placed[j][h]
                    count[j, k] -= 1
                    free_now[h] += demand[k][j]
                    surplus -= 1
            shrunk[j] += (w[j] - new_w) + (p[j] - new_p)
            w[j], p[j] = new_w, new_p
            shrinks.update(np.array([j]))
            steps += 1
    placements = [Placement(())] * n
    for k, on in zip(live.tolist(), placed, strict=True):
        tasks = tuple((m, c[0], c[1]) for m, c in sorted(on.items()) if c[0] or c[1])
        if tasks:
            placements[k] = Placement(tasks)
    w_all[live], p_all[live] = w, p
    shrunk_all = np.zeros(n, dtype=int)
    shrunk_all[live] = shrunk
    w, p, shrunk = w_all, p_all, shrunk_all
    left = free_now
    left.setflags(write=False)
    return PlacementResult(
        tuple(placements), tuple(w.tolist()), tuple(p.tolist()), steps, tuple(shrunk.tolist()), left
    )
