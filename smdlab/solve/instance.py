"""One allocation problem (P) at a decision point: jobs, capacity, every configuration's cost and use.

Objective (the same for every method, so they are comparable):
    sum over started jobs   omega_i * d_i(w_i, p_i)          (the configuration is kept for life)
  + sum over unstarted jobs omega_i * (H + d_i(r_i))         (an expected wait, then its reference)
with r_i the job's reference configuration, the one minimising its own weighted duration plus
the delay its resource-time imposes on half of the other jobs' weight,
    omega_i d_i(c) + (Omega - omega_i) / 2 * f_i(c) d_i(c),   f_i(c) = max_r use_r(c) / pool_r,
over the configurations that fit the whole cluster (pool: capacity frees as running jobs end), and H = (1/2) sum_j f_j(r_j) d_j(r_j), half the
squashed time of the instance's jobs at their reference configurations (the mean start time of
a list schedule that keeps the capacity busy). Every job may stay unstarted: a job started small
stays small, so waiting for a larger configuration can be cheaper. See docs/solver.md ("Jobs
that wait").

Value term (optional, ``ValueTerm``; an addition of ours for SLO jobs, docs/deadlines.md): a job
with deadline options (``Job.slo``) is charged, beside omega_i d, the share of its value it loses
when it completes at the estimate of its configuration, scaled to the expected wait H:
    + kappa * H * (1 - V_i(t + d_i(c)) / V_i,max)   started at c,
    + kappa * H * (1 - V_i(t + H + d_i(r_i)) / V_i,max)   unstarted,
with t the decision time, V_i(T) the value of the first option whose deadline (arrival +
deadline) T meets (0 after the last) and V_i,max its first option's value. Off by default.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property
from operator import attrgetter, is_

import numpy as np
from numpy.typing import ArrayLike

from smdlab.caches import DEMAND_ROWS
from smdlab.errors import (
    InvalidInput,
    check_choice,
    check_items,
    check_positive,
    check_unique_names,
)
from smdlab.model.cluster import Cluster
from smdlab.model.job import Job, job_memo
from smdlab.model.timing import (
    MODES,
    job_speeds,
)  # job_speeds re-exported: solvers and policies import it here

_FIT_RTOL = 1e-9  # capacity comparisons tolerate float round-off of summed demands


@dataclass(frozen=True)
class ValueTerm:
    """The value term of (P) (module docstring): decision time ``now`` (s) and its weight ``kappa`` (> 0)."""

    now: float
    kappa: float = 1.0

    def __post_init__(self) -> None:
        if (
            isinstance(self.now, bool)
            or not isinstance(self.now, (int, float))
            or not np.isfinite(self.now)
        ):
            raise InvalidInput(f"value_term.now must be a finite time in seconds, got {self.now!r}")
        check_positive("value_term.kappa", self.kappa)


def fits(use: np.ndarray, capacity: np.ndarray) -> np.ndarray | bool:
    """Whether resource use (..., K) is within capacity (K,), with a round-off tolerance."""
    return np.all(use <= capacity + _FIT_RTOL * np.maximum(1.0, np.abs(capacity)), axis=-1)


def pareto_mask(obj: np.ndarray) -> np.ndarray:
    """Configurations not dominated by a smaller one: obj < min over (w', p') <= (w, p), (w', p') != (w, p).

    obj: (n, W, P) values to minimise, +inf where a configuration does not exist. A dominated
    configuration uses at least the resources of the dominating one (demands are >= 0) at no
    better objective, so removing it changes neither the MILP nor the LP optimum.
    """
    pm = np.minimum.accumulate(np.minimum.accumulate(obj, axis=1), axis=2)
    left = np.full_like(obj, np.inf)
    left[:, 1:, :] = pm[:, :-1, :]
    down = np.full_like(obj, np.inf)
    down[:, :, 1:] = pm[:, :, :-1]
    return np.isfinite(obj) & (obj < np.minimum(left, down))


@dataclass(frozen=True, eq=False)
class Instance:
    """Arrays describing (P) for a set of jobs and a capacity vector.

    jobs: the jobs, in order.
    resources: resource type names (order of every vector).
    capacity: (K,) capacity to allocate.
    alpha: (n, K) demand of one worker of each job.
    gamma: (n, K) demand of one PS of each job.
    weight: (n,) omega_i.
    tables: per job, its speed table S_i(w, p) (samples/s, max_workers x max_ps; ``job_speeds``).
    mode: timing overlap mode the speeds come from.
    allow_defer: whether jobs may stay unstarted (True for every instance ``build_instance`` makes;
        False only in hand-built instances that require every job to start).
    pool: (K,) capacity of the whole cluster (default: ``capacity``): what a waiting job can
        expect once running jobs finish; the reference configurations and H are taken on it.
    work: (n,) samples each job processes instead of its ``samples`` (None: the jobs'): a
        scheduler's remaining work without copying its jobs.
    value_term: charge SLO jobs the share of value they lose at each configuration (None: off).

    The (n, W, P) grids (``duration``, ``speed``, ``cost``, ``pareto``) are built on first use.
    """

    jobs: tuple[Job, ...]
    resources: tuple[str, ...]
    capacity: np.ndarray
    alpha: np.ndarray
    gamma: np.ndarray
    weight: np.ndarray
    tables: tuple[np.ndarray, ...] = field(repr=False)
    mode: str = "wfbp"
    allow_defer: bool = False
    pool: np.ndarray | None = None
    work: np.ndarray | None = None
    value_term: ValueTerm | None = None

    @property
    def n(self) -> int:
        """Number of jobs."""
        return len(self.jobs)

    @property
    def K(self) -> int:
        """Number of resource types."""
        return len(self.resources)

    @cached_property
    def samples(self) -> np.ndarray:
        """(n,) samples each job processes (``work`` when given, else the jobs' ``samples``)."""
        if self.work is not None:
            return np.asarray(self.work, dtype=float)
        return np.array([j.samples for j in self.jobs], dtype=float)

    @cached_property
    def duration(self) -> np.ndarray:
        """(n, W, P) exact durations d_i(w, p) (s), +inf beyond a job's caps."""
        W = max((t.shape[0] for t in self.tables), default=0)
        P = max((t.shape[1] for t in self.tables), default=0)
        grid = np.zeros((self.n, W, P))  # speed 0 beyond a job's caps
        for i, t in enumerate(self.tables):
            grid[i, : t.shape[0], : t.shape[1]] = t
        with np.errstate(divide="ignore"):
            return self.samples[:, None, None] / grid

    @cached_property
    def speed(self) -> np.ndarray:
        """(n, W, P) speeds S_i(w, p) (samples/s), 0 beyond a job's caps."""
        with np.errstate(divide="ignore"):
            return (
                self.samples[:, None, None] / self.duration
            )  # what the durations imply, to the last bit

    @cached_property
    def cost(self) -> np.ndarray:
        """(n, W, P) omega_i * d_i(w, p) (plus the value lost, with a value term), +inf beyond caps."""
        base = self.weight[:, None, None] * self.duration
        if self.value_term is None:
            return base
        return base + self.value_loss(self.duration)

    def value_loss(self, durations: np.ndarray) -> np.ndarray:
        """kappa H (1 - V_i(now + d) / V_i,max) for durations d of shape (n, ...) (0 for best-effort jobs; 0 without a value term)."""
        d = np.asarray(durations, dtype=float)
        out = np.zeros_like(d)
        term = self.value_term
        if term is None:
            return out
        scale = term.kappa * self.horizon
        for i, job in enumerate(self.jobs):
            slo = job.slo
            if slo is None:
                continue
            finish = term.now + d[i]
            kept = np.zeros_like(finish)
            # the first option met decides: walk the options from the last (least valuable) back
            for deadline, value in reversed(list(zip(slo.deadlines_s, slo.values, strict=True))):
                kept = np.where(finish <= job.arrival + deadline, value, kept)
            out[i] = scale * (1.0 - kept / slo.max_value)
        return out

    @cached_property
    def fastest(self) -> tuple[np.ndarray, np.ndarray]:
        """(workers, ps) of each job's fastest configuration (``fastest_configurations``)."""
        return fastest_configurations(self.tables)

    @cached_property
    def caps(self) -> tuple[np.ndarray, np.ndarray]:
        """(max workers, max PSs) of each job: its speed table's shape."""
        shape = np.array([t.shape for t in self.tables], dtype=int).reshape(-1, 2)
        return shape[:, 0], shape[:, 1]

    @cached_property
    def base_duration(self) -> np.ndarray:
        """(n,) d_i(1, 1), without building the grids."""
        if "duration" in self.__dict__:
            return self.duration[:, 0, 0]
        return self.samples / np.array([t[0, 0] for t in self.tables], dtype=float)

    @cached_property
    def base_use(self) -> np.ndarray:
        """(n, K) resources of each job at (1, 1)."""
        return self.alpha + self.gamma

    @cached_property
    def pool_vector(self) -> np.ndarray:
        """(K,) the whole cluster's capacity (``pool``, else ``capacity``)."""
        return self.capacity if self.pool is None else np.asarray(self.pool, dtype=float)

    @cached_property
    def share(self) -> np.ndarray:
        """(n, W, P) f_i(c) = max_r use_r(c) / pool_r: the dominant share of the cluster a configuration holds."""
        W, P = self.duration.shape[1:]
        wg = np.arange(1, W + 1, dtype=float)[None, :, None]
        pg = np.arange(1, P + 1, dtype=float)[None, None, :]
        out = np.zeros((self.n, W, P))
        pool = self.pool_vector
        scale = np.where(pool > 0, pool, 1.0)
        for r in range(self.K):
            a = (self.alpha[:, r] / scale[r])[:, None, None]
            g = (self.gamma[:, r] / scale[r])[:, None, None]
            np.maximum(out, a * wg + g * pg, out=out)
        return out

    def share_at(self, workers: np.ndarray, ps: np.ndarray) -> np.ndarray:
        """(n,) f_i(w_i, p_i), the dominant share of one configuration per job (``share`` without the grid)."""
        w = np.asarray(workers, dtype=float)
        p = np.asarray(ps, dtype=float)
        pool = self.pool_vector
        scale = np.where(pool > 0, pool, 1.0)
        out = np.zeros(self.n)
        for r in range(self.K):
            np.maximum(
                out, (self.alpha[:, r] / scale[r]) * w + (self.gamma[:, r] / scale[r]) * p, out=out
            )
        return out

    @cached_property
    def fits_alone(self) -> np.ndarray:
        """(n, W, P) configurations that exist and fit the whole cluster (``pool_vector``) on their own."""
        W, P = self.duration.shape[1:]
        wg = np.arange(1, W + 1, dtype=float)[None, :, None]
        pg = np.arange(1, P + 1, dtype=float)[None, None, :]
        ok = np.isfinite(self.duration)
        pool = self.pool_vector
        tol = _FIT_RTOL * np.maximum(1.0, np.abs(pool))
        for r in range(self.K):
            use = self.alpha[:, r][:, None, None] * wg + self.gamma[:, r][:, None, None] * pg
            ok &= use <= pool[r] + tol[r]
        return ok

    @cached_property
    def reference(self) -> tuple[np.ndarray, np.ndarray]:
        """(workers, ps) r_i: the configuration a job is expected to get when it starts later.

        It minimises omega_i d_i(c) + (Omega - omega_i) / 2 * f_i(c) d_i(c) over the
        configurations that fit the whole cluster (its own weighted duration plus the delay its
        resource-time imposes on half of the other jobs' weight); (1, 1) where nothing fits.
        """
        if self.n == 0:
            return np.zeros(0, dtype=int), np.zeros(0, dtype=int)
        # Per group of jobs with equal table shapes, on that shape's grid (not the instance's
        # (n, W, P) grid padded to the largest job): the same numbers, element by element.
        others = (self.weight.sum() - self.weight) / 2.0
        pool = self.pool_vector
        scale = np.where(pool > 0, pool, 1.0)
        tol = _FIT_RTOL * np.maximum(1.0, np.abs(pool))
        rw = np.ones(self.n, dtype=int)
        rp = np.ones(self.n, dtype=int)
        for (W, P), idx in _shape_groups(self.tables).items():
            if W * P == 1:
                continue  # one configuration: (1, 1) whether it fits or not
            grid = np.array([self.tables[i] for i in idx]).reshape(len(idx), W, P)
            with np.errstate(divide="ignore"):
                d = self.samples[idx][:, None, None] / grid
            wg = np.arange(1, W + 1, dtype=float)[None, :, None]
            pg = np.arange(1, P + 1, dtype=float)[None, None, :]
            share = np.zeros((len(idx), W, P))
            ok = np.isfinite(d)
            for r in range(self.K):
                a = (self.alpha[idx, r] / scale[r])[:, None, None]
                g = (self.gamma[idx, r] / scale[r])[:, None, None]
                np.maximum(share, a * wg + g * pg, out=share)
                use = (
                    self.alpha[idx, r][:, None, None] * wg + self.gamma[idx, r][:, None, None] * pg
                )
                ok &= use <= pool[r] + tol[r]
            w_ = self.weight[idx][:, None, None]
            score = w_ * d + others[idx][:, None, None] * share * d
            flat = np.where(ok, score, np.inf).reshape(len(idx), -1)
            k = np.argmin(flat, axis=1)
            k = np.where(np.isfinite(flat[np.arange(len(idx)), k]), k, 0)
            rw[idx], rp[idx] = k // P + 1, k % P + 1
        return rw, rp

    @cached_property
    def reference_duration(self) -> np.ndarray:
        """(n,) d_i(r_i): duration at the reference configuration."""
        w, p = self.reference
        return configuration_durations(self.tables, self.samples, w, p)

    @cached_property
    def horizon(self) -> float:
        """H = (1/2) sum_j f_j(r_j) d_j(r_j): the expected wait charged to a job that is not started."""
        if self.n == 0:
            return 0.0
        w, p = self.reference
        return float(0.5 * np.sum(self.share_at(w, p) * self.reference_duration))

    @cached_property
    def defer_cost(self) -> np.ndarray:
        """(n,) omega_i * (H + d_i(r_i)) (plus the value lost then, with a value term): cost of leaving job i unstarted."""
        wait = self.horizon + self.reference_duration
        return self.weight * wait + self.value_loss(wait)

    @cached_property
    def scale(self) -> np.ndarray:
        """(K,) normaliser of resources: the capacity (1 where it is 0)."""
        return np.where(self.capacity > 0, self.capacity, 1.0)

    @cached_property
    def pareto(self) -> np.ndarray:
        """(n, W, P) mask of configurations kept by dominance pruning of ``cost``."""
        return pareto_mask(self.cost)

    def subset(self, idx: Sequence[int] | np.ndarray) -> Instance:
        """The instance of the jobs ``idx`` only (same capacity, mode and deferral rule; grids cropped to their caps)."""
        idx = np.asarray(idx, dtype=int)
        jobs = tuple(self.jobs[i] for i in idx)
        tables = tuple(self.tables[i] for i in idx)
        sub = Instance(
            jobs,
            self.resources,
            self.capacity,
            self.alpha[idx],
            self.gamma[idx],
            self.weight[idx],
            tables,
            self.mode,
            self.allow_defer,
            self.pool,
            None if self.work is None else self.samples[idx],
            self.value_term,
        )
        # Grids already built here are sliced, not rebuilt: every entry is a function of its own
        # job (dominance included), and cropping drops only configurations beyond the caps.
        W = max((t.shape[0] for t in tables), default=0)
        P = max((t.shape[1] for t in tables), default=0)
        for name in ("duration", "speed", "cost", "pareto"):
            grid = self.__dict__.get(name)
            if grid is not None:
                sub.__dict__[name] = grid[idx, :W, :P]
        return sub

    def durations_at(self, workers: np.ndarray, ps: np.ndarray) -> np.ndarray:
        """(n,) d_i(w_i, p_i) of an allocation; nan where a job is not started."""
        w = np.asarray(workers, dtype=int)
        p = np.asarray(ps, dtype=int)
        out = np.full(self.n, np.nan)
        idx = np.flatnonzero(w > 0)
        out[idx] = configuration_durations(
            [self.tables[i] for i in idx], self.samples[idx], w[idx], p[idx]
        )
        return out

    def use(self, workers: np.ndarray, ps: np.ndarray) -> np.ndarray:
        """(K,) total resources of an allocation (0 workers = not started)."""
        w = np.asarray(workers, dtype=float)
        p = np.asarray(ps, dtype=float)
        return w @ self.alpha + p @ self.gamma

    def job_cost(self, workers: np.ndarray, ps: np.ndarray) -> np.ndarray:
        """(n,) cost of each job under an allocation (deferral cost where not started)."""
        started = np.asarray(workers, dtype=int) > 0
        d = self.durations_at(workers, ps)
        run = self.weight * d + self.value_loss(np.where(started, d, 0.0))
        return np.where(started, run, self.defer_cost)

    def objective(self, workers: np.ndarray, ps: np.ndarray) -> float:
        """The objective of an allocation evaluated with the exact durations."""
        return float(self.job_cost(workers, ps).sum())

    def check_allocation(self, workers: np.ndarray, ps: np.ndarray) -> None:
        """Raise if an allocation breaks caps, capacity or the every-job-starts rule."""
        w = np.asarray(workers, dtype=int)
        p = np.asarray(ps, dtype=int)
        caps_w, caps_p = self.caps
        if np.any((w > 0) != (p > 0)) or np.any(w > caps_w) or np.any(p > caps_p) or np.any(w < 0):
            raise AssertionError("allocation outside the jobs' configuration ranges")
        if not self.allow_defer and np.any(w == 0):
            raise AssertionError("a job was left out although every job fits at (1, 1)")
        if not fits(self.use(w, p), self.capacity):
            raise AssertionError("allocation exceeds capacity")


def _demand_row(job: Job, resources: tuple[str, ...]) -> np.ndarray:
    """[worker demand, PS demand] of ``job`` over ``resources`` as one read-only (2K,) row, cached by value."""
    memo = job_memo(job)
    hit = memo.get(resources)
    if hit is not None:
        return hit
    key = (resources, job.demand_key)
    hit = DEMAND_ROWS.get(key)
    if hit is not None:
        memo[resources] = hit
        return hit
    known = set(resources)
    for attr in ("worker_demand", "ps_demand"):
        d = getattr(job, attr)  # validated (finite, >= 0) by Job; only the names need checking here
        if not known.issuperset(d):
            bad = next(r for r in d if r not in known)
            raise InvalidInput(
                f"job {job.name!r} {attr} has unknown resource {bad!r}; allowed: {', '.join(resources)}"
            )
    row = np.array(
        [job.worker_demand.get(r, 0.0) for r in resources]
        + [job.ps_demand.get(r, 0.0) for r in resources],
        dtype=float,
    )
    row.setflags(write=False)
    memo[resources] = row
    return DEMAND_ROWS.put(key, row)


def demand_row(job: Job, resources: tuple[str, ...]) -> np.ndarray:
    """[worker demand, PS demand] of ``job`` over ``resources`` as one read-only (2K,) row (cached)."""
    return _demand_row(job, resources)


def task_vectors(job: Job, resources: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """(worker demand, PS demand) of ``job`` as vectors over ``resources`` (cached per job object, read-only)."""
    resources = tuple(resources)
    row = _demand_row(job, resources)
    K = len(resources)
    return row[:K], row[K:]


def demand_matrices(jobs: Sequence[Job], cluster: Cluster) -> tuple[np.ndarray, np.ndarray]:
    """(alpha, gamma): per-worker and per-PS demand vectors of each job over the cluster's resources (read-only)."""
    res = tuple(cluster.resources)
    K = len(res)
    if not len(jobs):
        return np.zeros((0, K)), np.zeros((0, K))
    both = np.array([_demand_row(j, res) for j in jobs])
    both.setflags(write=False)
    return both[:, :K], both[:, K:]


def base_speeds(jobs: Sequence[Job], mode: str = "wfbp") -> np.ndarray:
    """(n,) S_i(1, 1), each job's speed (samples/s) on one worker and one PS (cached)."""
    return np.array([job_speeds(j, mode)[0, 0] for j in jobs], dtype=float)


def demand_kinds(alpha: np.ndarray, gamma: np.ndarray) -> np.ndarray:
    """(n,) small integers, equal for jobs with equal (worker, PS) demand vectors."""
    rows = np.hstack([alpha, gamma])
    if rows.shape[0] == 0:
        return np.zeros(0, dtype=int)
    order = np.lexsort(rows.T[::-1])
    srt = rows[order]
    new = np.r_[True, np.any(srt[1:] != srt[:-1], axis=1)]
    out = np.empty(rows.shape[0], dtype=int)
    out[order] = np.cumsum(new) - 1
    return out


def _shape_groups(tables: Sequence[np.ndarray]) -> dict[tuple[int, int], np.ndarray]:
    """Indices of the tables of each shape (W, P), in order."""
    groups: dict[tuple[int, int], list[int]] = {}
    for i, t in enumerate(tables):
        groups.setdefault(t.shape, []).append(i)
    return {k: np.array(v, dtype=int) for k, v in groups.items()}


def fastest_configurations(tables: Sequence[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """(workers, ps) of each speed table's fastest configuration (the first in (w, p) order on ties)."""
    w = np.ones(len(tables), dtype=int)
    p = np.ones(len(tables), dtype=int)
    for (W, P), idx in _shape_groups(tables).items():
        if W * P == 1:
            continue
        k = np.argmax(np.array([tables[i] for i in idx]).reshape(len(idx), -1), axis=1)
        w[idx], p[idx] = k // P + 1, k % P + 1
    return w, p


def configuration_durations(
    tables: Sequence[np.ndarray], samples: ArrayLike, workers: ArrayLike, ps: ArrayLike
) -> np.ndarray:
    """d_k = samples_k / S_k(w_k, p_k) (s): durations at one configuration per speed table."""
    out = np.empty(len(tables))
    n = np.asarray(samples, dtype=float)
    for k, (t, w, p) in enumerate(
        zip(tables, np.asarray(workers).tolist(), np.asarray(ps).tolist())
    ):
        out[k] = n[k] / t[w - 1, p - 1]
    return out


def check_jobs(jobs) -> tuple[Job, ...]:
    """``jobs`` as a tuple of Job objects (at least one, unique names), else InvalidInput naming the field."""
    jobs = check_items("jobs", jobs, Job, what="job")
    check_unique_names("job names", (j.name for j in jobs))
    return jobs


def check_cluster(cluster) -> Cluster:
    """``cluster`` if it is a Cluster, else InvalidInput naming the field."""
    if not isinstance(cluster, Cluster):
        raise InvalidInput(
            f"cluster must be a Cluster (Cluster(machines, resources), Cluster.pooled(...) or "
            f"Cluster.homogeneous(n)), got {type(cluster).__name__} {cluster!r:.80}"
        )
    return cluster


def as_amounts(field: str, value, shape_hint: str) -> np.ndarray:
    """``value`` as a float array, else InvalidInput naming the field and the expected shape."""
    try:
        arr = np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        raise InvalidInput(
            f"{field} must be an array of numbers of shape {shape_hint}, got {value!r:.80}"
        ) from None
    return arr


_name = attrgetter("name")


def _checked_capacity(cluster: Cluster, capacity) -> np.ndarray:
    """``capacity`` as a (K,) float vector over ``cluster.resources``, else InvalidInput."""
    cap = as_amounts("capacity", capacity, f"({len(cluster.resources)},)").reshape(-1)
    if cap.shape != (len(cluster.resources),) or np.any(~np.isfinite(cap)) or np.any(cap < 0):
        raise InvalidInput(
            f"capacity must be {len(cluster.resources)} finite amounts >= 0 over {cluster.resources}, got {capacity!r}"
        )
    return cap


def _checked_work(work, n: int) -> np.ndarray | None:
    """``work`` as an (n,) float vector of amounts > 0 (None stays None), else InvalidInput."""
    if work is None:
        return None
    work = as_amounts("work", work, f"({n},)").reshape(-1)
    if work.shape != (n,) or not np.all(np.isfinite(work) & (work > 0)):
        raise InvalidInput(
            f"work must be {n} finite amounts > 0 (samples per job), got {work!r:.80}"
        )
    return work


def _pool(cluster: Cluster, cap: np.ndarray) -> np.ndarray:
    """The cluster's capacity vector, raised to ``cap`` (a hand-made capacity above it is its own pool)."""
    return np.maximum(np.asarray(cluster.capacity_vector, dtype=float), cap)


def _check_value_term(value_term) -> None:
    if value_term is not None and not isinstance(value_term, ValueTerm):
        raise InvalidInput(
            f"value_term must be a ValueTerm or None, got {type(value_term).__name__}"
        )


class InstanceRows:
    """Builds instances of (P) for a changing set of jobs, keeping each job's rows between calls.

    A simulation builds an instance at every decision, while its active jobs change only when one
    arrives or ends. Each job's demand row, speed table, caps, fastest configuration and weight
    are computed once, when the job (object) is first seen, and gathered by index after that;
    jobs absent from a call are forgotten. ``build`` returns what ``build_instance`` returns for
    the same arguments, array for array, and raises the same errors.
    """

    def __init__(self) -> None:
        self._key: tuple[tuple[str, ...], str] | None = None
        self._clear()

    def _clear(self) -> None:
        self._slot: dict[int, int] = {}  # id(job) -> row; the row keeps the job alive (ids unique)
        self._jobs: list[Job | None] = []
        self._tables: list[np.ndarray | None] = []
        self._rows = np.zeros(
            (0, 0)
        )  # per row: [worker demand, PS demand, weight, fastest w, p, caps W, P]
        self._unused: list[int] = []
        self._last: tuple[tuple[Job, ...], tuple] | None = None  # the last call's jobs and rows
        self._named: dict[str, int] = {}  # kept rows per job name
        self._dups = 0  # kept rows whose name another kept row has (0: kept names are distinct)
        self._mark = np.zeros(0, dtype=np.intp)  # scratch: per row, a position in the call

    def _distinct(self, index: np.ndarray) -> bool:
        """Whether the rows in ``index`` are distinct."""
        mark, n = self._mark, len(index)
        if len(mark) < len(self._jobs):
            mark = self._mark = np.zeros(len(self._jobs), dtype=np.intp)
        at = np.arange(n)
        mark[index] = at
        return bool((mark[index] == at).all())

    def __len__(self) -> int:
        return len(self._slot)

    def _add(self, jobs: Sequence[Job], resources: tuple[str, ...], mode: str) -> None:
        """Rows for ``jobs`` (new, distinct, checked), in free rows or appended ones."""
        K = len(resources)
        extra = len(jobs) - len(self._unused)
        if extra > 0:
            start = len(self._jobs)
            grow = max(extra, start)  # amortised: double the rows
            old = self._rows.reshape(start, 2 * K + 5)
            self._rows = np.vstack([old, np.zeros((grow, 2 * K + 5))])
            self._jobs.extend([None] * grow)
            self._tables.extend([None] * grow)
            self._unused.extend(range(start + grow - 1, start - 1, -1))
        for job in jobs:
            row = self._unused.pop()
            table = job_speeds(job, mode)
            fw, fp = fastest_configurations([table])
            self._rows[row, : 2 * K] = _demand_row(job, resources)
            self._rows[row, 2 * K :] = (job.weight, fw[0], fp[0], *table.shape)
            self._jobs[row] = job
            self._tables[row] = table
            self._slot[id(job)] = row
            count = self._named.get(job.name, 0)
            self._named[job.name] = count + 1
            self._dups += (count > 0) + (count == 1)  # this row, and the first one of the name

    def _forget(self, keep: set[int]) -> None:
        """Free the rows of jobs outside ``keep`` (ids)."""
        for key in [k for k in self._slot if k not in keep]:
            row = self._slot.pop(key)
            name = self._jobs[row].name  # type: ignore[union-attr]
            count = self._named.pop(name)
            if count > 1:
                self._named[name] = count - 1
            self._dups -= (count > 1) + (count == 2)
            self._jobs[row] = self._tables[row] = None
            self._unused.append(row)

    def build(
        self,
        jobs: Sequence[Job],
        cluster: Cluster,
        capacity: np.ndarray,
        mode: str = "wfbp",
        work: Sequence[float] | np.ndarray | None = None,
        value_term: ValueTerm | None = None,
    ) -> Instance:
        """``build_instance(jobs, cluster, capacity, mode, work, value_term)``, from the kept rows."""
        _check_value_term(value_term)
        check_choice("mode", mode, MODES)
        jobs = tuple(jobs) if isinstance(jobs, (list, tuple)) else check_jobs(jobs)
        if not jobs:
            check_jobs(jobs)  # raises: no jobs
        check_cluster(cluster)
        resources = tuple(cluster.resources)
        if self._key != (resources, mode):
            self._key = (resources, mode)
            self._clear()
        n = len(jobs)
        K = len(resources)
        last = self._last
        if last is not None and len(last[0]) == n and all(map(is_, jobs, last[0])):
            rows = last[1]  # the same jobs as the last call (checked then)
            cap = _checked_capacity(cluster, capacity)
        else:
            slot = self._slot
            found = list(map(slot.get, map(id, jobs)))
            if (
                None not in found
            ):  # every job kept: distinct rows of distinct names, or a name twice
                index = np.array(found, dtype=np.intp)
                if (self._dups or not self._distinct(index)) and (
                    len(set(found)) != n or len(set(map(_name, jobs))) != n
                ):
                    check_jobs(jobs)  # raises: a name twice
                cap = _checked_capacity(cluster, capacity)
            else:
                ids = list(map(id, jobs))
                new = [jobs[i] for i, f in enumerate(found) if f is None]
                check_items("jobs", new, Job)  # kept rows' jobs are checked Jobs
                if len(set(ids)) != n or len(set(map(_name, jobs))) != n:
                    check_jobs(jobs)  # raises: a name twice
                cap = _checked_capacity(cluster, capacity)
                for j in new:
                    _demand_row(j, resources)  # raises for an unknown resource, in job order
                if len(slot) + len(new) > 2 * n:  # forget jobs gone (kept rows keep ids unique)
                    self._forget(set(ids))
                self._add(new, resources, mode)
                index = np.fromiter(map(slot.__getitem__, ids), dtype=np.intp, count=n)
            data = self._rows[index]
            ints = data[:, 2 * K + 1 :].astype(int)
            rows = (
                np.ascontiguousarray(data[:, : 2 * K]),
                np.ascontiguousarray(data[:, 2 * K]),
                tuple(map(self._tables.__getitem__, index.tolist())),
                *(np.ascontiguousarray(ints[:, c]) for c in range(4)),
            )
            for a in rows:
                if isinstance(a, np.ndarray):
                    a.setflags(write=False)  # shared by the instances of later calls
            self._last = (jobs, rows)
        both, weight, tables, fw, fp, cw, cp = rows
        inst = Instance(
            jobs,
            resources,
            cap,
            both[:, :K],
            both[:, K:],
            weight,
            tables,
            mode,
            True,
            _pool(cluster, cap),
            _checked_work(work, n),
            value_term,
        )
        inst.__dict__["fastest"] = (fw, fp)  # the cached properties, gathered
        inst.__dict__["caps"] = (cw, cp)
        return inst


def build_instance(
    jobs: Sequence[Job],
    cluster: Cluster,
    capacity: np.ndarray,
    mode: str = "wfbp",
    work: Sequence[float] | np.ndarray | None = None,
    value_term: ValueTerm | None = None,
) -> Instance:
    """Build the arrays of (P) for ``jobs`` on ``capacity`` (a vector over ``cluster.resources``).

    work: samples each job processes instead of its ``samples`` (each finite and > 0).
    value_term: the value term of SLO jobs (module docstring); None: (P) as reconstructed.
    """
    _check_value_term(value_term)
    check_choice("mode", mode, MODES)
    jobs = check_jobs(jobs)
    check_cluster(cluster)
    cap = _checked_capacity(cluster, capacity)
    alpha, gamma = demand_matrices(jobs, cluster)
    tables = [job_speeds(j, mode) for j in jobs]  # a queue seen before costs look-ups only
    weight = np.array([j.weight for j in jobs], dtype=float)
    pool = _pool(cluster, cap)
    work = _checked_work(work, len(jobs))
    return Instance(
        jobs,
        tuple(cluster.resources),
        cap,
        alpha,
        gamma,
        weight,
        tuple(tables),
        mode,
        True,
        pool,
        work,
        value_term,
    )
