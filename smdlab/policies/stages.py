"""Shared stages of the baseline policies: demand vectors, per-machine packing, placement rules and
the assembly of a Decision from target allocations (admission order -> allocation -> placement).

Complements ``smdlab.policies.common`` (demand vectors, speeds, first-fit placement of a whole
job), which it reuses: the policies here need a ledger they can fill one task at a time, an
even-spread placement rule and elastic re-placement. Every policy here plans against a private
copy of the free capacity per machine, so whatever it returns fits every machine by construction; ``apply_decision`` re-checks that (tests use it).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from smdlab.errors import Infeasible, InvalidInput
from smdlab.model.cluster import Cluster
from smdlab.model.job import Job
from smdlab.policies.base import Allocation, ClusterState, Decision, Placement, QueuedJob, RunningJob
from smdlab.policies.common import task_vectors

EPS = 1e-9  # slack on capacity comparisons (amounts are sums of floats)

Tasks = tuple[tuple[int, int, int], ...]


def demands(job: Job, cluster: Cluster) -> tuple[np.ndarray, np.ndarray]:
    """(worker demand, PS demand) of ``job`` as vectors over ``cluster.resources`` (cached, read-only)."""
    return task_vectors(job, cluster.resources)


def usage(tasks: Iterable[tuple[int, int, int]], alpha: np.ndarray, gamma: np.ndarray, machines: int) -> np.ndarray:
    """Resources held per machine by ``tasks`` ((machine, workers, ps) triples) as a (machines x K) array."""
    out = np.zeros((machines, len(alpha)))
    for m, w, p in tasks:
        out[m] += w * alpha + p * gamma
    return out


class Packer:
    """A private per-machine free-capacity ledger on which a policy places tasks one at a time.

    free: (machines x resources) free capacity (copied).
    Tasks already held by running jobs can be recorded with ``preload`` (no capacity is taken)
    so that locality preferences see them and ``placement`` returns the job's whole placement.
    """

    def __init__(self, free: np.ndarray):
        self.free = np.array(free, dtype=float, copy=True)
        if self.free.ndim != 2:
            raise InvalidInput(f"free must be a (machines x resources) array, got shape {self.free.shape}")
        self._tasks: dict[str, dict[int, list[int]]] = {}

    @property
    def machines(self) -> int:
        """Number of machines in the ledger."""
        return self.free.shape[0]

    def fits_mask(self, demand: np.ndarray) -> np.ndarray:
        """Boolean per machine: does one task of ``demand`` fit there now?"""
        return np.all(self.free + EPS >= demand, axis=1)

    def preload(self, job: str, tasks: Iterable[tuple[int, int, int]]) -> None:
        """Record tasks a job already holds (their capacity is not in ``free``)."""
        slot = self._tasks.setdefault(job, {})
        for m, w, p in tasks:
            cur = slot.setdefault(int(m), [0, 0])
            cur[0] += int(w)
            cur[1] += int(p)

    def add_task(self, job: str, kind: str, demand: np.ndarray) -> int | None:
        """Place one task (``kind`` 'worker' or 'ps') of ``job``: a machine it already uses, else first fit.

        Returns the machine index, or None when the task fits nowhere.
        """
        mask = self.fits_mask(demand)
        if not mask.any():
            return None
        used = self._tasks.get(job, {})
        # Locality first (fewer machines per job), then first fit (keeps whole machines free).
        candidates = [m for m in sorted(used, key=lambda m: -sum(used[m])) if mask[m]]
        m = candidates[0] if candidates else int(np.flatnonzero(mask)[0])
        self.put_task(job, kind, m, demand)
        return m

    def remove_task(self, job: str, kind: str, machine: int, demand: np.ndarray) -> None:
        """Undo ``add_task``: take one task of ``kind`` of ``job`` off ``machine``."""
        slot = self._tasks[job][machine]
        slot[0 if kind == "worker" else 1] -= 1
        self.free[machine] += demand

    def put_task(self, job: str, kind: str, machine: int, demand: np.ndarray) -> None:
        """Place one task of ``job`` on a chosen ``machine`` (raises Infeasible if it does not fit)."""
        if np.any(self.free[machine] + EPS < demand):
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


def spread_tasks(free: np.ndarray, workers: int, ps: int, alpha: np.ndarray, gamma: np.ndarray) -> Tasks | None:
    """Fewest machines holding the job with workers and PSs spread evenly over them (Optimus' rule).

    Machines are ranked by how many worker+PS pairs of this job they can still hold (most first);
    for k = 1, 2, ... the top k machines get workers // k (+1 for the first workers % k) and PSs
    // k (+1 for the *last* ps % k, so remainders do not pile on one machine). The first k at
    which every share fits wins; None if none does.
    """
    n = free.shape[0]
    pair = alpha + gamma
    with np.errstate(divide="ignore", invalid="ignore"):
        room = np.where(pair > 0, (free + EPS) / np.where(pair > 0, pair, 1.0), np.inf).min(axis=1)
    order = sorted(range(n), key=lambda m: (-room[m], m))
    for k in range(1, min(n, max(workers, ps)) + 1):
        chosen = order[:k]
        ws = [workers // k + (1 if i < workers % k else 0) for i in range(k)]
        ps_ = [ps // k + (1 if i >= k - ps % k else 0) for i in range(k)]
        if all(np.all(free[m] + EPS >= w * alpha + p * gamma) for m, w, p in zip(chosen, ws, ps_)):
            return tuple(sorted((m, w, p) for m, w, p in zip(chosen, ws, ps_) if w or p))
    return None


def first_fit_tasks(free: np.ndarray, workers: int, ps: int, alpha: np.ndarray, gamma: np.ndarray) -> Tasks | None:
    """Tasks placed one by one (workers first), each on a machine the job already uses, else first fit."""
    packer = Packer(free)
    for kind, count, demand in (("worker", workers, alpha), ("ps", ps, gamma)):
        for _ in range(count):
            if packer.add_task("_", kind, demand) is None:
                return None
    return packer.tasks("_")


def consolidated_tasks(free: np.ndarray, workers: int, ps: int, alpha: np.ndarray, gamma: np.ndarray) -> Tasks | None:
    """Even spread over the fewest machines; if no even spread fits, tasks one by one (first fit)."""
    return spread_tasks(free, workers, ps, alpha, gamma) or first_fit_tasks(free, workers, ps, alpha, gamma)


@dataclass(frozen=True)
class Target:
    """A policy's wish for one job before placement: its (workers, ps), and the job itself."""

    job: Job
    workers: int
    ps: int


PlaceFn = Callable[[np.ndarray, int, int, np.ndarray, np.ndarray], "Tasks | None"]
ShrinkFn = Callable[[Job, int, int], "tuple[int, int] | None"]


def default_shrink(job: Job, workers: int, ps: int) -> tuple[int, int] | None:
    """One task fewer: drop a PS while PSs outnumber half the workers, else a worker; None at (1, 1)."""
    if workers == 1 and ps == 1:
        return None
    if ps > 1 and (2 * ps > workers or workers == 1):
        return workers, ps - 1
    return workers - 1, ps


def assemble(
    state: ClusterState,
    targets: Sequence[Target],
    *,
    place: PlaceFn = consolidated_tasks,
    shrink: ShrinkFn = default_shrink,
    note: str = "",
) -> Decision:
    """Turn target allocations into a Decision that fits every machine.

    ``targets`` are in placement order. A running job whose target equals its current allocation
    keeps its placement, and so does one without a target in non-elastic mode; in elastic mode a
    running job with another target is released and placed again, and one without a target is
    preempted. A job whose
    placement fails is shrunk one task at a time by ``shrink`` (placement with shrinking, as in
    smd-model.md section 8); a job that cannot be placed even at (1, 1) waits (a running one is
    preempted).
    """
    cluster = state.cluster
    running = {r.job.name: r for r in state.running}
    wanted = {t.job.name: t for t in targets}
    free = np.array(state.free, dtype=float, copy=True)
    keep: set[str] = set()
    for name, r in running.items():
        t = wanted.get(name)
        if (t is None and not state.elastic) or (t is not None and (t.workers, t.ps) == (r.workers, r.ps)):
            keep.add(name)
        elif not state.elastic:
            raise InvalidInput(f"target for running job {name!r} differs from its allocation, but the state is not elastic")
        else:
            a, g = demands(r.job, cluster)
            free += usage(r.placement.tasks, a, g, free.shape[0])
    allocations: list[Allocation] = []
    placed: set[str] = set()
    for t in targets:
        name = t.job.name
        if name in keep:
            continue
        a, g = demands(t.job, cluster)
        config: tuple[int, int] | None = (t.workers, t.ps)
        while config is not None:
            tasks = place(free, config[0], config[1], a, g)
            if tasks:
                free -= usage(tasks, a, g, free.shape[0])
                allocations.append(Allocation(name, config[0], config[1], Placement(tasks)))
                placed.add(name)
                break
            config = shrink(t.job, *config)
    preempt = tuple(n for n in running if n not in keep and n not in placed)
    return Decision(tuple(allocations), preempt, note=note)


def apply_decision(state: ClusterState, decision: Decision) -> np.ndarray:
    """Free capacity per machine after ``decision`` (raises Infeasible if any machine is exceeded).

    Order: preempted jobs release, resized running jobs release their old placement, then every
    allocation takes its placement. Allocations must name queued jobs, or running jobs in elastic mode.
    """
    cluster = state.cluster
    free = np.array(state.free, dtype=float, copy=True)
    running = {r.job.name: r for r in state.running}
    queued = {q.job.name: q for q in state.queued}
    for name in decision.preempt:
        if name not in running:
            raise InvalidInput(f"preempt names {name!r}, which is not running")
        r = running[name]
        free += usage(r.placement.tasks, *demands(r.job, cluster), free.shape[0])
    seen: set[str] = set()
    for alloc in decision.allocations:
        if alloc.job in seen:
            raise InvalidInput(f"job {alloc.job!r} has two allocations in one decision")
        seen.add(alloc.job)
        if alloc.job in running and alloc.job not in decision.preempt:
            if not state.elastic:
                raise InvalidInput(f"allocation resizes running job {alloc.job!r} but the state is not elastic")
            r = running[alloc.job]
            free += usage(r.placement.tasks, *demands(r.job, cluster), free.shape[0])
            job = r.job
        elif alloc.job in queued:
            job = queued[alloc.job].job
        elif alloc.job in running:
            job = running[alloc.job].job
        else:
            raise InvalidInput(f"allocation names {alloc.job!r}, which is neither queued nor running")
        job.check_config(alloc.workers, alloc.ps)
        if (alloc.placement.workers, alloc.placement.ps) != (alloc.workers, alloc.ps):
            raise InvalidInput(
                f"allocation of {alloc.job!r}: placement holds {alloc.placement.workers} workers and "
                f"{alloc.placement.ps} PSs, allocation says {alloc.workers} and {alloc.ps}"
            )
        free -= usage(alloc.placement.tasks, *demands(job, cluster), free.shape[0])
    over = free < -EPS * np.maximum(1.0, np.abs(np.asarray(state.free)))
    if over.any():
        m, k = np.argwhere(over)[0]
        raise Infeasible(
            f"decision exceeds machine {m} capacity of {cluster.resources[k]} by {-free[m, k]:g}"
        )
    return free


def queued_jobs(state: ClusterState) -> list[QueuedJob]:
    """Queued jobs with work left, in arrival order (ties by name)."""
    return sorted((q for q in state.queued if q.remaining > 0), key=lambda q: (q.job.arrival, q.job.name))


def with_remaining(entry: QueuedJob | RunningJob) -> Job:
    """The entry's job with ``samples`` set to its remaining work (what solvers and time estimates use)."""
    job = entry.job
    return job if entry.remaining == job.samples else job.replace(samples=entry.remaining)


def total_capacity(state: ClusterState) -> np.ndarray:
    """Pooled capacity of the whole cluster (free or not): the denominator of dominant shares."""
    return state.cluster.capacity_vector.astype(float)
