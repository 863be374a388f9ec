"""Placement rules: where the tasks (workers and PSs) of one job go on the machines of a cluster.

The solver, every policy and the simulator use these rules. Everything works on a (machines x
resources) matrix of free capacity and per-task demand vectors (a worker needs ``alpha``, a PS
``gamma``). Placement does not change a job's speed in the model (every task reserves its own
NIC share), so it matters only for capacity.

Rules for one job's (workers, PSs), each ``rule(free, workers, ps, alpha, gamma) -> tasks or None``
(``RULES``):

- ``first_fit``: first-fit decreasing on the dominant resource (docs/solver.md, Placement): the
  task type with the larger dominant share of the pooled free capacity goes first, each task on
  the lowest-index machine it fits on (FIFO, SRTF, the simulator's fit check).
- ``local``: workers by first fit, then each PS on a machine already holding most of the job's
  tasks, else first fit: the rule of ``Ledger.add_task`` for a whole job at once.
- ``spread``: Optimus' rule: the fewest machines, workers and PSs spread evenly over them.
- ``consolidated``: ``spread``, else ``local`` (Optimus, Tiresias).

Rack awareness (one rule for every policy): while a rack layout is active (``rack_layout``, set
by the simulator on a racked cluster for each decision), each rule above prefers to hold a job
that spans machines within one rack: when its own placement crosses racks, the same rule is run
on one rack at a time, best fit first (the rack with the least free capacity, then index), and
the first rack that holds the whole job wins; when none does, the rule runs on the 2, 3, ...
racks with most free capacity (``rack_candidates``), as long as that is fewer racks than its own
placement crosses. A job
that fits on one machine, or a flat cluster, is placed as without racks. The ledger (tasks one
at a time) prefers the racks a job already uses, and shrink-placement fills a job's racks first
(``rack_order``).

Two other modules build on them: ``smdlab.solve.ledger`` (tasks placed one at a time: DRF's and
Tetris' progressive filling) and ``smdlab.solve.shrink_placement`` (a whole allocation of many
jobs placed at once, shrunk where it does not fit: the solver's placement).
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextvars import ContextVar
from dataclasses import dataclass

import numpy as np

from smdlab.model.cluster import Cluster
from smdlab.model.job import Job
from smdlab.model.placement_speed import placement_speed
from smdlab.model.traffic import Uplinks
from smdlab.solve.instance import Instance, task_vectors

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


def _first_fit_tasks_flat(
    free: np.ndarray, workers: int, ps: int, alpha: np.ndarray, gamma: np.ndarray
) -> Tasks | None:
    """First-fit decreasing: the task type of larger dominant share first, each on the lowest-index machine it fits."""
    if _small(free, alpha, gamma):
        return _first_fit_tasks_small(free.tolist(), workers, ps, alpha.tolist(), gamma.tolist())
    pooled = free.sum(axis=0)
    if np.any(workers * alpha + ps * gamma > pooled + TOL * np.maximum(1.0, pooled)):
        return None  # cannot fit even pooled: skip the per-machine pass
    workers_first = dominant_share(alpha, pooled) >= dominant_share(gamma, pooled)
    return _in_either_order(workers_first, workers, ps, alpha, gamma, free.copy, fill, _tasks)


def _in_either_order(workers_first, workers, ps, alpha, gamma, fresh, fill_rule, tasks_of):
    """Fill the task type ``workers_first`` names first, then the other; on failure the other order.

    fresh: a copy of the free capacity to fill; fill_rule and tasks_of: ``fill`` and ``_tasks``
    or their list versions.
    """
    for first in (workers_first, not workers_first):
        # The other order when the first fails: with one worker and one PS, one of the two orders
        # finds a placement whenever any exists (a PS that fits only where the worker went goes there
        # first, and the worker then fits elsewhere).
        work = fresh()
        order = ((alpha, workers), (gamma, ps)) if first else ((gamma, ps), (alpha, workers))
        takes = []
        for demand, n in order:
            take = fill_rule(work, demand, n)
            if take is None:
                break
            takes.append(take)
        else:
            w_take, p_take = takes if first else takes[::-1]
            return tasks_of(w_take, p_take)
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


def _local_tasks_flat(
    free: np.ndarray, workers: int, ps: int, alpha: np.ndarray, gamma: np.ndarray
) -> Tasks | None:
    """Workers by first fit, then PSs on the machines holding most of the job's workers, then first fit.

    The same tasks as ``Ledger.add_task`` called for each worker and then each PS of the job
    (locality first, then first fit), computed per machine instead of per task. If that fails,
    the same with the PSs first (``Ledger.add_pair``'s retry): for one worker and one PS one of
    the two orders places the job whenever any placement exists.
    """
    if _small(free, alpha, gamma):
        return _local_tasks_small(free.tolist(), workers, ps, alpha.tolist(), gamma.tolist())
    takes = _local_pass(free, workers, ps, alpha, gamma)
    if takes is not None:
        return _tasks(*takes)
    if workers == 0 or ps == 0:
        return None
    takes = _local_pass(free, ps, workers, gamma, alpha)
    return None if takes is None else _tasks(takes[1], takes[0])


_SPREAD_AT_ONCE = 4096  # from k = 3 the spread rule tries every k at once, up to this many entries


def _spread_tasks_flat(
    free: np.ndarray, workers: int, ps: int, alpha: np.ndarray, gamma: np.ndarray
) -> Tasks | None:
    """Fewest machines holding the job with workers and PSs spread evenly over them (Optimus' rule).

    Machines are ranked by how many worker+PS pairs of this job they can still hold (most first);
    for k = 1, 2, ... the top k machines get workers // k (+1 for the first workers % k) and PSs
    // k (+1 for the *last* ps % k, so remainders do not pile on one machine). The first k at
    which every share fits wins; None if none does.
    """
    if _small(free, alpha, gamma):
        return _spread_tasks_small(free.tolist(), workers, ps, alpha.tolist(), gamma.tolist())
    n = free.shape[0]
    pair = alpha + gamma
    with np.errstate(divide="ignore", invalid="ignore"):
        room = np.where(pair > 0, (free + TOL) / np.where(pair > 0, pair, 1.0), np.inf).min(axis=1)
    order = np.lexsort((np.arange(n), -room))
    top = min(n, max(workers, ps))
    k = 1
    while k <= top:
        if k == 3 and top > 3 and top * top * len(alpha) <= _SPREAD_AT_ONCE:
            found = _first_spread(free[order[:top]], workers, ps, alpha, gamma, k)
            if found is None:
                return None
            k = found
        chosen = order[:k]
        i = np.arange(k)
        ws = workers // k + (i < workers % k)
        ps_ = ps // k + (i >= k - ps % k)
        need = ws[:, None] * alpha + ps_[:, None] * gamma
        if np.all(free[chosen] + TOL >= need):
            keep = (ws > 0) | (ps_ > 0)
            return tuple(sorted(zip(chosen[keep].tolist(), ws[keep].tolist(), ps_[keep].tolist())))
        k += 1
    return None


def _first_spread(
    ranked: np.ndarray, workers: int, ps: int, alpha: np.ndarray, gamma: np.ndarray, lo: int
) -> int | None:
    """The first k >= ``lo`` at which ``_spread_tasks_flat``'s even spread fits the first k rows of
    ``ranked`` (every k at once, with the same element-wise sums and comparisons); None: none."""
    top = ranked.shape[0]
    kk = np.arange(lo, top + 1)[:, None]
    i = np.arange(top)[None, :]
    ws = workers // kk + (i < workers % kk)
    ps_ = ps // kk + (i >= kk - ps % kk)
    need = ws[:, :, None] * alpha + ps_[:, :, None] * gamma
    fits = ((ranked + TOL >= need).all(axis=2) | (i >= kk)).all(axis=1)
    return lo + int(fits.argmax()) if fits.any() else None


# Up to this many machines x resources the spread and local rules run on Python floats: the same
# element-wise sums and comparisons, without numpy's per-call cost on a handful of machines.
SMALL_PLACE = 64


def _small(free: np.ndarray, alpha: np.ndarray, gamma: np.ndarray) -> bool:
    """Whether the rules' plain-float versions apply (a small float64 problem)."""
    return (
        free.ndim == 2
        and free.size <= SMALL_PLACE
        and free.dtype == alpha.dtype == gamma.dtype == np.float64
    )


def _fit_counts_small(free: list, d: list) -> list:
    """``fit_counts`` on lists."""
    pos = [r for r, x in enumerate(d) if x > 0]
    if not pos:
        return [_UNBOUNDED] * len(free)
    slack = [TOL * max(1.0, d[r]) for r in pos]
    return [
        max(min(math.floor((row[r] + e) / d[r]) for r, e in zip(pos, slack)), 0) for row in free
    ]


def _fill_small(free: list, d: list, n: int, order: list | None = None) -> list | None:
    """``fill`` on lists (``free``'s rows are replaced on success)."""
    if n <= 0:
        return [0] * len(free)
    counts = _fit_counts_small(free, d)
    seq = range(len(free)) if order is None else order
    c = [counts[m] for m in seq]
    if not c or sum(c) < n:
        return None
    take = [0] * len(free)
    before = 0
    for m, x in zip(seq, c):
        take[m] = min(max(n - before, 0), x)  # np.clip(n - before, 0, c)
        before += x
    for m, t in enumerate(take):  # every row, as numpy does (0 * x may be -0.0)
        free[m] = [f - t * x for f, x in zip(free[m], d)]
    return take


def _local_pass_small(free: list, n1: int, n2: int, d1: list, d2: list):
    """``_local_pass`` on lists."""
    work = [list(row) for row in free]
    take1 = _fill_small(work, d1, n1)
    if take1 is None:
        return None
    used = [m for m, t in enumerate(take1) if t]
    rest = [m for m, t in enumerate(take1) if t == 0]
    take2 = _fill_small(work, d2, n2, sorted(used, key=lambda m: -take1[m]) + rest)
    return None if take2 is None else (take1, take2)


def _tasks_small(w_take: list, p_take: list) -> Tasks:
    """``_tasks`` on lists."""
    return tuple((m, w, p) for m, (w, p) in enumerate(zip(w_take, p_take)) if w + p)


def _local_tasks_small(free: list, workers: int, ps: int, alpha: list, gamma: list) -> Tasks | None:
    """``_local_tasks_flat`` on lists."""
    takes = _local_pass_small(free, workers, ps, alpha, gamma)
    if takes is not None:
        return _tasks_small(*takes)
    if workers == 0 or ps == 0:
        return None
    takes = _local_pass_small(free, ps, workers, gamma, alpha)
    return None if takes is None else _tasks_small(takes[1], takes[0])


def _column_sums(free: list) -> list:
    """``free.sum(axis=0)`` of the rows ``free``: row after row, or numpy's pairwise sum for one
    column (then contiguous)."""
    if len(free[0]) == 1:
        from smdlab.solve.local_search import _pairwise_sum

        return [_pairwise_sum([row[0] for row in free], 0, len(free))]
    tot = [0.0] * len(free[0])
    for row in free:
        tot = [t + x for t, x in zip(tot, row)]
    return tot


def _dominant_share_small(demand: list, capacity: list) -> float:
    """``dominant_share`` on lists."""
    inf = math.inf
    return max(d / c if c > 0 else (inf if d > 0 else 0.0) for d, c in zip(demand, capacity))


def _first_fit_tasks_small(
    free: list, workers: int, ps: int, alpha: list, gamma: list
) -> Tasks | None:
    """``_first_fit_tasks_flat`` on lists."""
    pooled = _column_sums(free)
    if any(workers * a + ps * g > x + TOL * max(1.0, x) for a, g, x in zip(alpha, gamma, pooled)):
        return None  # cannot fit even pooled: skip the per-machine pass
    workers_first = _dominant_share_small(alpha, pooled) >= _dominant_share_small(gamma, pooled)
    return _in_either_order(
        workers_first,
        workers,
        ps,
        alpha,
        gamma,
        lambda: [list(row) for row in free],
        _fill_small,
        _tasks_small,
    )


def _spread_tasks_small(
    free: list, workers: int, ps: int, alpha: list, gamma: list
) -> Tasks | None:
    """``_spread_tasks_flat`` on lists: every k in turn (the array version's jump to the first
    fitting k from 3 on checks the same k's with the same comparisons)."""
    n, inf = len(free), math.inf
    pair = [a + g for a, g in zip(alpha, gamma)]
    room = [min((f + TOL) / x if x > 0 else inf for f, x in zip(row, pair)) for row in free]
    order = sorted(range(n), key=lambda m: (-room[m], m))
    top = min(n, max(workers, ps))
    for k in range(1, top + 1):
        ws = [workers // k + (i < workers % k) for i in range(k)]
        pk = [ps // k + (i >= k - ps % k) for i in range(k)]
        if all(
            f + TOL >= ws[i] * a + pk[i] * g
            for i in range(k)
            for f, a, g in zip(free[order[i]], alpha, gamma)
        ):
            return tuple(sorted((order[i], ws[i], pk[i]) for i in range(k) if ws[i] or pk[i]))
    return None


def _consolidated_tasks_flat(
    free: np.ndarray, workers: int, ps: int, alpha: np.ndarray, gamma: np.ndarray
) -> Tasks | None:
    """Even spread over the fewest machines (``spread``); if no even spread fits, ``local``."""
    return _spread_tasks_flat(free, workers, ps, alpha, gamma) or _local_tasks_flat(
        free, workers, ps, alpha, gamma
    )


PlaceRule = Callable[[np.ndarray, int, int, np.ndarray, np.ndarray], "Tasks | None"]


# ---- racks ----------------------------------------------------------------------------------

_RACKS: ContextVar[np.ndarray | None] = ContextVar("smdlab_rack_layout", default=None)


def rack_array(cluster: Cluster) -> np.ndarray | None:
    """Rack index per machine of a racked cluster with more than one rack; None otherwise."""
    if len(cluster.topology) < 2:
        return None
    return np.array(cluster.rack_of, dtype=np.int64)


def set_rack_layout(racks: np.ndarray | None) -> np.ndarray | None:
    """Make ``racks`` (rack index per machine, or None) the active layout; returns the previous one."""
    prev = _RACKS.get()
    _RACKS.set(racks)
    return prev


@contextlib.contextmanager
def rack_layout(cluster: Cluster) -> Iterator[None]:
    """Within the block, the placement rules are rack-aware on ``cluster``'s racks (module docstring)."""
    prev = set_rack_layout(rack_array(cluster))
    try:
        yield
    finally:
        _RACKS.set(prev)


def active_racks(machines: int) -> np.ndarray | None:
    """The active rack layout if it describes ``machines`` machines, else None."""
    racks = _RACKS.get()
    return racks if racks is not None and racks.shape[0] == machines else None


def _rack_rows(racks: np.ndarray) -> list[np.ndarray]:
    return [np.flatnonzero(racks == r) for r in range(int(racks.max()) + 1)]


def _remap(tasks: Tasks, rows: np.ndarray) -> Tasks:
    return tuple(sorted((int(rows[m]), w, p) for m, w, p in tasks))


def _rack_aware(
    rule: PlaceRule,
    free: np.ndarray,
    workers: int,
    ps: int,
    alpha: np.ndarray,
    gamma: np.ndarray,
) -> Tasks | None:
    """``rule``, holding a job that spans machines within one rack when one can (module docstring)."""
    tasks = rule(free, workers, ps, alpha, gamma)
    racks = active_racks(free.shape[0])
    if tasks is None or racks is None or len({int(racks[m]) for m, _, _ in tasks}) < 2:
        return tasks
    span = len({int(racks[m]) for m, _, _ in tasks})
    for rows in rack_candidates(free, workers * alpha + ps * gamma, racks):
        if len(set(racks[rows].tolist())) >= span:
            break  # no fewer racks than the rule's own placement
        held = rule(free[rows], workers, ps, alpha, gamma)
        if held is not None:
            return _remap(held, rows)
    return tasks


def rack_candidates(free: np.ndarray, need: np.ndarray, racks: np.ndarray) -> list[np.ndarray]:
    """Machine sets to try, in order, for a job of total demand ``need`` (the rack-aware rule).

    First each rack whose pooled free capacity holds ``need``, best fit first (least free
    capacity, summed over resources as fractions of the cluster's free total; then index); then
    the racks ordered most free first, as growing prefixes of k = 2, 3, ... racks from the
    first whose pooled free capacity holds ``need`` (machines rack by rack); the last set is
    every machine.
    """
    rows = _rack_rows(racks)
    total = free.sum(axis=0)
    scale = np.where(total > 0, total, 1.0)
    sums = [free[r].sum(axis=0) for r in rows]
    room = np.array([float((x / scale).sum()) for x in sums])
    tol = TOL * np.maximum(1.0, need)
    out = [
        rows[r]
        for r in np.lexsort((np.arange(len(rows)), room)).tolist()
        if np.all(sums[r] + tol >= need)
    ]
    order = np.lexsort((np.arange(len(rows)), -room)).tolist()
    pooled = np.cumsum([sums[r] for r in order], axis=0)
    for k in range(2, len(rows) + 1):
        if k == len(rows) or np.all(pooled[k - 1] + tol >= need):
            out.append(np.concatenate([rows[r] for r in order[:k]]))
    return out


def rack_preference(machines: int, used: Iterable[int]) -> np.ndarray | None:
    """Machines in the racks of ``used`` (a job's machines) under the active layout, as a mask.

    None on a flat layout or when the job uses no machine yet. Task-at-a-time placements (the
    ledger, DRF's least-loaded machine, Tetris' best alignment) pick within this mask when a task
    fits there.
    """
    racks = active_racks(machines)
    used = [int(m) for m in used]
    if racks is None or not used:
        return None
    return np.isin(racks, racks[used])


def prefer(fits: np.ndarray, preferred: np.ndarray | None) -> np.ndarray:
    """``fits`` restricted to ``preferred`` machines when a task fits on one of them."""
    if preferred is None:
        return fits
    near = fits & preferred
    return near if near.any() else fits


def rack_order(free: np.ndarray, home: np.ndarray, need: np.ndarray) -> np.ndarray | None:
    """Machine order for placing more tasks of one job under the active rack layout (None: flat).

    home: machines the job already uses (bool per machine). Racks holding them come first; with
    none, the lowest-index rack whose free capacity holds ``need`` (the job's remaining demand)
    comes first; then the other racks in index order, machines in index order within a rack.
    """
    racks = active_racks(free.shape[0])
    if racks is None:
        return None
    rows = _rack_rows(racks)
    first = sorted({int(racks[m]) for m in np.flatnonzero(home)})
    if not first:
        tol = TOL * np.maximum(1.0, need)
        first = [r for r, rr in enumerate(rows) if np.all(free[rr].sum(axis=0) + tol >= need)][:1]
    rest = [r for r in range(len(rows)) if r not in first]
    return np.concatenate([rows[r] for r in first + rest])


def first_fit_tasks(
    free: np.ndarray, workers: int, ps: int, alpha: np.ndarray, gamma: np.ndarray
) -> Tasks | None:
    """First-fit decreasing: the task type of larger dominant share first, each on the lowest-index machine it fits (rack-aware)."""
    return _rack_aware(_first_fit_tasks_flat, free, workers, ps, alpha, gamma)


def local_tasks(
    free: np.ndarray, workers: int, ps: int, alpha: np.ndarray, gamma: np.ndarray
) -> Tasks | None:
    """Workers by first fit, then PSs on the machines holding most of the job's workers (rack-aware)."""
    return _rack_aware(_local_tasks_flat, free, workers, ps, alpha, gamma)


def spread_tasks(
    free: np.ndarray, workers: int, ps: int, alpha: np.ndarray, gamma: np.ndarray
) -> Tasks | None:
    """Fewest machines holding the job, workers and PSs spread evenly over them (rack-aware)."""
    return _rack_aware(_spread_tasks_flat, free, workers, ps, alpha, gamma)


def consolidated_tasks(
    free: np.ndarray, workers: int, ps: int, alpha: np.ndarray, gamma: np.ndarray
) -> Tasks | None:
    """Even spread over the fewest machines (``spread``); if none fits, ``local`` (rack-aware)."""
    return _rack_aware(_consolidated_tasks_flat, free, workers, ps, alpha, gamma)


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


def placed_speeds(
    jobs: Sequence[Job], cluster: Cluster, placements: Sequence[Placement], mode: str = "wfbp"
) -> np.ndarray:
    """(n,) each job's speed (samples/s) on its placement, as the simulator times it (0: not placed)."""
    up = Uplinks.of(cluster)
    types = [m.gpu_type for m in cluster.machines]
    typed = types if any(types) else None
    out = np.zeros(len(jobs))
    for i, (job, pl) in enumerate(zip(jobs, placements, strict=True)):
        if pl.tasks:
            out[i] = placement_speed(
                job, pl.workers, pl.ps, mode, tasks=pl.tasks, uplinks=up, machine_types=typed
            )
    return out


def evaluate(inst: Instance, cluster: Cluster, placements: Sequence[Placement]) -> np.ndarray:
    """(n,) per-job costs of ``placements``: omega_i W_i / placed speed, or the deferral cost."""
    speed = placed_speeds(inst.jobs, cluster, placements, inst.mode)
    with np.errstate(divide="ignore"):
        run = inst.weight * inst.samples / speed
    return np.where(speed > 0, run, inst.defer_cost)
