"""Placement: where the tasks (workers and PSs) of jobs go on the machines of a cluster.

The one placement stage of smdlab; the solver, every policy and the simulator use it. Everything
works on a (machines x resources) matrix of free capacity and per-task demand vectors (a worker
needs ``alpha``, a PS ``gamma``). Placement does not change a job's speed in the model (every
task reserves its own NIC share), so it matters only for capacity.

Rules for one job's (workers, PSs), each ``rule(free, workers, ps, alpha, gamma) -> tasks or None``
(``RULES``):

- ``first_fit``: first-fit decreasing on the dominant resource (docs/solver.md, Placement): the
  task type with the larger dominant share of the pooled free capacity goes first, each task on
  the lowest-index machine it fits on (FIFO, SRTF, the simulator's fit check).
- ``local``: workers by first fit, then each PS on a machine already holding most of the job's
  tasks, else first fit: the rule of ``Ledger.add_task`` for a whole job at once.
- ``spread``: Optimus' rule: the fewest machines, workers and PSs spread evenly over them.
- ``consolidated``: ``spread``, else ``local`` (Optimus, Tiresias).

``Ledger`` places tasks one at a time on a private copy of the free capacity (DRF's and Tetris'
progressive filling). ``place`` puts a pooled allocation of many jobs on the machines by
first-fit decreasing and shrinks it where it does not fit (the solver, SMD; section 8):

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

import itertools
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from smdlab.errors import Infeasible, InvalidInput, check_int
from smdlab.model.cluster import Cluster
from smdlab.model.job import Job
from smdlab.solve.instance import (
    as_amounts,
    base_speeds,
    check_cluster,
    check_jobs,
    demand_matrices,
    job_speeds,
    task_vectors,
)

# Slack on capacity comparisons (relative to the demand where it exceeds 1): amounts are sums of
# user floats (e.g. 0.1 CPU).
TOL = 1e-9
_UNBOUNDED = 2**40  # tasks that demand nothing: 'any number' without int64 overflow in sums

Tasks = tuple[tuple[int, int, int], ...]


@dataclass(frozen=True)
class Placement:
    """Where one job's tasks run: (machine index, workers there, PSs there) per machine used."""

    tasks: Tasks

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


# ---- capacity arithmetic --------------------------------------------------------------------


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


def fill(
    free: np.ndarray, demand: np.ndarray, n: int, order: np.ndarray | None = None
) -> np.ndarray | None:
    """Place ``n`` tasks of ``demand`` filling machines in ``order`` (default: index order); per-machine counts, or None.

    On success the demand placed is subtracted from ``free`` in place; on failure ``free`` is unchanged.
    """
    if n <= 0:
        return np.zeros(free.shape[0], dtype=np.int64)
    counts = fit_counts(free, demand)
    c = counts if order is None else counts[order]
    before = np.cumsum(c) - c
    if c.size == 0 or before[-1] + c[-1] < n:
        return None
    take = np.clip(n - before, 0, c)
    if order is not None:
        take, ordered = np.zeros_like(counts), take
        take[order] = ordered
    free -= take[:, None] * demand[None, :]
    return take


def dominant_share(demand: np.ndarray, capacity: np.ndarray) -> float:
    """Largest share of any resource that ``demand`` takes of ``capacity``."""
    with np.errstate(divide="ignore", invalid="ignore"):
        share = np.where(capacity > 0, demand / capacity, np.where(demand > 0, np.inf, 0.0))
    return float(share.max())


def usage(
    tasks: Iterable[tuple[int, int, int]], alpha: np.ndarray, gamma: np.ndarray, machines: int
) -> np.ndarray:
    """Resources held per machine by ``tasks`` ((machine, workers, ps) triples) as a (machines x K) array."""
    out = np.zeros((machines, len(alpha)))
    for m, w, p in tasks:
        out[m] += w * alpha + p * gamma
    return out


def placement_usage(
    job: Job, placement: Placement, machines: int, resources: Sequence[str]
) -> np.ndarray:
    """Resources a job's placement takes on each machine (machines x resources)."""
    return usage(placement.tasks, *task_vectors(job, resources), machines)


def _tasks(w_take: np.ndarray, p_take: np.ndarray) -> Tasks:
    used = np.flatnonzero(w_take + p_take)
    return tuple(zip(used.tolist(), w_take[used].tolist(), p_take[used].tolist()))


# ---- rules for one job ----------------------------------------------------------------------


def first_fit_tasks(
    free: np.ndarray, workers: int, ps: int, alpha: np.ndarray, gamma: np.ndarray
) -> Tasks | None:
    """First-fit decreasing: the task type of larger dominant share first, each on the lowest-index machine it fits."""
    pooled = free.sum(axis=0)
    if np.any(workers * alpha + ps * gamma > pooled + TOL * np.maximum(1.0, pooled)):
        return None  # cannot fit even pooled: skip the per-machine pass
    workers_first = dominant_share(alpha, pooled) >= dominant_share(gamma, pooled)
    for first in (workers_first, not workers_first):
        # The other order when the first fails: with one worker and one PS, one of the two orders
        # finds a placement whenever any exists (a PS that fits only where the worker went goes there
        # first, and the worker then fits elsewhere).
        work = free.copy()
        order = ((alpha, workers), (gamma, ps)) if first else ((gamma, ps), (alpha, workers))
        takes = []
        for demand, n in order:
            take = fill(work, demand, n)
            if take is None:
                break
            takes.append(take)
        else:
            w_take, p_take = takes if first else takes[::-1]
            return _tasks(w_take, p_take)
        if workers == 0 or ps == 0:
            return None  # one task type only: the order does not matter
    return None


def _local_pass(free: np.ndarray, n1: int, n2: int, d1: np.ndarray, d2: np.ndarray):
    """n1 tasks of d1 by first fit, then n2 of d2 on the machines holding most of the first, then first fit."""
    work = free.copy()
    take1 = fill(work, d1, n1)
    if take1 is None:
        return None
    used = np.flatnonzero(take1)
    rest = np.flatnonzero(take1 == 0)
    order = np.concatenate([used[np.argsort(-take1[used], kind="stable")], rest])
    take2 = fill(work, d2, n2, order)
    if take2 is None:
        return None
    return take1, take2


def local_tasks(
    free: np.ndarray, workers: int, ps: int, alpha: np.ndarray, gamma: np.ndarray
) -> Tasks | None:
    """Workers by first fit, then PSs on the machines holding most of the job's workers, then first fit.

    The same tasks as ``Ledger.add_task`` called for each worker and then each PS of the job
    (locality first, then first fit), computed per machine instead of per task. If that fails,
    the same with the PSs first (``Ledger.add_pair``'s retry): for one worker and one PS one of
    the two orders places the job whenever any placement exists.
    """
    takes = _local_pass(free, workers, ps, alpha, gamma)
    if takes is not None:
        return _tasks(*takes)
    if workers == 0 or ps == 0:
        return None
    takes = _local_pass(free, ps, workers, gamma, alpha)
    return None if takes is None else _tasks(takes[1], takes[0])


def spread_tasks(
    free: np.ndarray, workers: int, ps: int, alpha: np.ndarray, gamma: np.ndarray
) -> Tasks | None:
    """Fewest machines holding the job with workers and PSs spread evenly over them (Optimus' rule).

    Machines are ranked by how many worker+PS pairs of this job they can still hold (most first);
    for k = 1, 2, ... the top k machines get workers // k (+1 for the first workers % k) and PSs
    // k (+1 for the *last* ps % k, so remainders do not pile on one machine). The first k at
    which every share fits wins; None if none does.
    """
    n = free.shape[0]
    pair = alpha + gamma
    with np.errstate(divide="ignore", invalid="ignore"):
        room = np.where(pair > 0, (free + TOL) / np.where(pair > 0, pair, 1.0), np.inf).min(axis=1)
    order = np.lexsort((np.arange(n), -room))
    for k in range(1, min(n, max(workers, ps)) + 1):
        chosen = order[:k]
        i = np.arange(k)
        ws = workers // k + (i < workers % k)
        ps_ = ps // k + (i >= k - ps % k)
        need = ws[:, None] * alpha + ps_[:, None] * gamma
        if np.all(free[chosen] + TOL >= need):
            keep = (ws > 0) | (ps_ > 0)
            return tuple(sorted(zip(chosen[keep].tolist(), ws[keep].tolist(), ps_[keep].tolist())))
    return None


def consolidated_tasks(
    free: np.ndarray, workers: int, ps: int, alpha: np.ndarray, gamma: np.ndarray
) -> Tasks | None:
    """Even spread over the fewest machines (``spread``); if no even spread fits, ``local``."""
    return spread_tasks(free, workers, ps, alpha, gamma) or local_tasks(
        free, workers, ps, alpha, gamma
    )


PlaceRule = Callable[[np.ndarray, int, int, np.ndarray, np.ndarray], "Tasks | None"]

RULES: dict[str, PlaceRule] = {
    "first_fit": first_fit_tasks,
    "local": local_tasks,
    "spread": spread_tasks,
    "consolidated": consolidated_tasks,
}


def first_fit(
    job: Job,
    workers: int,
    ps: int,
    free: np.ndarray,
    resources: Sequence[str],
    *,
    commit: bool = False,
) -> Placement | None:
    """Place ``workers`` workers and ``ps`` PSs of ``job`` by first-fit decreasing; None if they do not fit.

    With ``commit`` the placed demand is subtracted from ``free`` in place.
    """
    alpha, gamma = task_vectors(job, resources)
    tasks = first_fit_tasks(free, workers, ps, alpha, gamma)
    if tasks is None:
        return None
    if commit:
        free -= usage(tasks, alpha, gamma, free.shape[0])
    return Placement(tasks)


# ---- one task at a time ---------------------------------------------------------------------


class Ledger:
    """A private per-machine free-capacity ledger on which a policy places tasks one at a time.

    free: (machines x resources) free capacity (copied).
    Tasks already held by running jobs can be recorded with ``preload`` (no capacity is taken)
    so that locality sees them and ``placement`` returns the job's whole placement.
    """

    def __init__(self, free: np.ndarray):
        self.free = np.array(free, dtype=float, copy=True)
        if self.free.ndim != 2:
            raise InvalidInput(
                f"free must be a (machines x resources) array, got shape {self.free.shape}"
            )
        self._tasks: dict[str, dict[int, list[int]]] = {}

    @property
    def machines(self) -> int:
        """Number of machines in the ledger."""
        return self.free.shape[0]

    def fits_mask(self, demand: np.ndarray) -> np.ndarray:
        """Boolean per machine: does one task of ``demand`` fit there now?"""
        return np.all(self.free + TOL * np.maximum(1.0, demand) >= demand, axis=1)

    def preload(self, job: str, tasks: Iterable[tuple[int, int, int]]) -> None:
        """Record tasks a job already holds (their capacity is not in ``free``)."""
        slot = self._tasks.setdefault(job, {})
        for m, w, p in tasks:
            cur = slot.setdefault(int(m), [0, 0])
            cur[0] += int(w)
            cur[1] += int(p)

    def add_task(self, job: str, kind: str, demand: np.ndarray) -> int | None:
        """Place one task (``kind`` 'worker' or 'ps') of ``job``: a machine it already uses, else first fit.

        Among the machines the job uses, the one holding most of its tasks (then the one used
        first). Returns the machine index, or None when the task fits nowhere.
        """
        used = self._tasks.get(job)
        if used:
            # Locality first (fewer machines per job): check the job's own machines before the rest.
            for m in sorted(used, key=lambda m: -sum(used[m])):
                if np.all(self.free[m] + TOL * np.maximum(1.0, demand) >= demand):
                    self.put_task(job, kind, m, demand)
                    return m
        mask = self.fits_mask(demand)
        if not mask.any():
            return None
        m = int(mask.argmax())  # first fit keeps whole machines free
        self.put_task(job, kind, m, demand)
        return m

    def add_pair(self, job: str, alpha: np.ndarray, gamma: np.ndarray) -> tuple[int, int] | None:
        """Place one worker (demand ``alpha``) and one PS (``gamma``) of ``job`` by ``add_task``; (worker machine, PS machine) or None.

        The worker first; if the PS then fits nowhere, the PS first and then the worker (for one
        worker and one PS, one of the two orders succeeds whenever the pair fits at all). On
        failure nothing stays placed.
        """
        for kinds in (("worker", alpha, "ps", gamma), ("ps", gamma, "worker", alpha)):
            k1, d1, k2, d2 = kinds
            m1 = self.add_task(job, k1, d1)
            if m1 is None:
                return None  # fits nowhere now, so neither after the other task
            m2 = self.add_task(job, k2, d2)
            if m2 is not None:
                return (m1, m2) if k1 == "worker" else (m2, m1)
            self.remove_task(job, k1, m1, d1)
        return None

    def remove_task(self, job: str, kind: str, machine: int, demand: np.ndarray) -> None:
        """Undo ``add_task``: take one task of ``kind`` of ``job`` off ``machine``."""
        slot = self._tasks[job][machine]
        slot[0 if kind == "worker" else 1] -= 1
        if not any(slot):
            del self._tasks[job][machine]  # no longer a machine the job uses (locality)
        self.free[machine] += demand

    def put_task(self, job: str, kind: str, machine: int, demand: np.ndarray) -> None:
        """Place one task of ``job`` on a chosen ``machine`` (raises Infeasible if it does not fit)."""
        if np.any(self.free[machine] + TOL * np.maximum(1.0, demand) < demand):
            raise Infeasible(f"job {job!r}: a {kind} does not fit on machine {machine}")
        self.free[machine] -= demand
        slot = self._tasks.setdefault(job, {}).setdefault(machine, [0, 0])
        slot[0 if kind == "worker" else 1] += 1

    def tasks(self, job: str) -> Tasks:
        """The job's recorded tasks as sorted (machine, workers, ps) triples."""
        return tuple((m, w, p) for m, (w, p) in sorted(self._tasks.get(job, {}).items()) if w or p)

    def placement(self, job: str) -> Placement:
        """The job's recorded tasks as a Placement."""
        return Placement(self.tasks(job))


# ---- many jobs, with shrinking (the solver's placement) ------------------------------------


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
    """omega_i * (H + d_i(1, 1)) with H = max_j d_j(1, 1): as ``Instance.defer_cost``."""
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
        check_int(f"alloc[{i}] ps of job {jobs[i].name!r}", int(p[i]), 1, jobs[i].max_ps)
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
            before = np.cumsum(counts) - counts
            take = np.clip(need - before, 0, counts)
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
