"""SMD with storage: remote bandwidth and cache as extra dimensions of (P) (docs/storage.md).

SMD (the reconstructed model, ``smdlab.policies.ps.smd``) chooses workers and PSs by its
knapsack over the cluster's resources. Here (P) gains the storage rows, solved in three steps
per decision (an addition to the reconstruction; the paper has no storage):

1. cache (one row over datasets, shared by their readers): SiloD's fill (``cba_split`` with
   every GB worth caching) at the candidate jobs' demands, running jobs at their compute speeds
   and queued jobs at their reference speeds; it maximises the remote bandwidth saved for
   those demands (docs/storage.md, CBA's proof, step 1);
2. remote bandwidth (one row, linear like CPU per worker): each reading job's worker holds
   beta_j GB/s, its need per worker at its reference configuration of (P) with the planned
   cache (at most the pool, so that one worker always fits an empty pool). A configuration's
   speed is min(compute speed, IO-bound speed at its share beta_j w) and the knapsack row is
   sum_j beta_j w_j <= the pool (elastic: the whole pool; non-elastic: what the running jobs'
   needs leave). SMD's own solver (``smdlab.solve.smd.smd``) runs on that instance; placement
   is SMD's;
3. the decision's storage: the planned cache of the datasets read by the jobs that then run;
   each job first its knapsack share beta_j w_j (a job the solve did not allocate: what it
   holds), at most its need at its compute speed, then what the pool has left max-min fair up
   to the needs left (jobs grown by SMD's work-conserving fill run IO-bound on it). It never
   exceeds the cache or the pool.

When storage cannot bind (no storage, an infinite cache, free bandwidth, or every dataset read
now cached whole by the plan) step 2 adds no row and the decision is plain SMD's, exactly.
Options and execution modes are SMD's.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from smdlab.model.job import Job
from smdlab.model.storage import StorageAllocation, StorageView, remote_need_gbps
from smdlab.policies.base import ClusterState, Decision
from smdlab.policies.ps.smd import SMD
from smdlab.policies.storage._common import reference_speed, running_after
from smdlab.policies.storage.allocators import JobIO, fair_bandwidth, silod_allocation
from smdlab.solve.storage import cba_split

__all__ = ["SMDStorage", "StoragePlan"]

_SMD_ARGS = ("knapsack", "selection", "tol", "max_iter", "backend", "time_limit", "polish")


@dataclass(frozen=True)
class StoragePlan:
    """Step 1's cache (GB per dataset) and the remote GB/s the knapsack may allocate."""

    cache_gb: dict[str, float]
    pool_gbps: float
    shares: dict[str, float] = dataclasses.field(default_factory=dict)  # beta_j w_j per job


@dataclass(frozen=True)
class _Choice:
    """What SMD's decision reads of a solve: the pooled allocation (placed afterwards)."""

    workers: tuple[int, ...]
    ps: tuple[int, ...]
    note: str
    placement: None = None


class SMDStorage(SMD):
    """SMD over (workers, PSs) with the remote-bandwidth and cache rows of (P) (module docstring)."""

    name = "smd_storage"
    method = "smd"

    def __init__(self, **options: Any):
        super().__init__(**options)
        self.last_plan: StoragePlan | None = None

    def _plan(self, state: ClusterState) -> StoragePlan | None:
        """Step 1: the cache by SiloD's fill over the candidates; None when storage cannot bind."""
        view = state.storage
        if view is None or view.storage.unbounded:
            return None
        storage = view.storage
        demand: dict[str, float] = {}
        running = {r.job.name: view.speeds.get(r.job.name, 0.0) for r in state.running}
        jobs = [(r.job, running[r.job.name]) for r in state.running]
        jobs += [(q.job, reference_speed(q.job, state.mode)) for q in state.queued]
        for job, speed in jobs:
            d = storage.dataset_of(job.name)
            if d is not None:
                demand[d.name] = demand.get(d.name, 0.0) + remote_need_gbps(d, speed, 0.0)
        names = sorted(demand)
        cache: dict[str, float] = {}
        if names:
            sizes = np.array([storage.datasets[k].size_gb for k in names])
            cap = storage.cache_gb if math.isfinite(storage.cache_gb) else float(sizes.sum())
            split = cba_split(sizes, [demand[k] for k in names], cap, math.inf, 0.0, 1.0)
            cache = {k: float(c) for k, c in zip(names, split.cache_gb) if c > 0}
        pool = storage.remote_gbps
        if state.execution != "elastic":  # the running jobs keep theirs
            for name, speed in running.items():
                d = storage.dataset_of(name)
                if d is not None:
                    pool -= remote_need_gbps(d, speed, cache.get(d.name, 0.0))
        return StoragePlan(cache, max(pool, 0.0))

    def decide(self, state: ClusterState) -> Decision:
        """SMD's decision with the storage rows in its knapsack and SiloD's split attached."""
        self.last_plan = self._plan(state)
        decision = SMD.decide(self, state)
        view = state.storage
        if view is None:
            return decision
        jobs = running_after(state, decision)
        plan = self.last_plan
        if plan is None:
            return dataclasses.replace(decision, storage=silod_allocation(view.storage, jobs))
        return dataclasses.replace(decision, storage=_split(view, plan, jobs))

    def _solve(
        self,
        jobs: list[Job],
        state: ClusterState,
        free: np.ndarray,
        place: bool,
        work: list[float] | None = None,
    ) -> Any:
        """Step 2: SMD's solver on (P) with the bandwidth row and IO-capped speeds."""
        from smdlab.solve.instance import build_instance
        from smdlab.solve.smd import smd

        plan = self.last_plan
        if plan is None or state.storage is None:
            return super()._solve(jobs, state, free, place, work)
        storage = state.storage.storage
        inst = build_instance(jobs, state.cluster, free.sum(axis=0), state.mode, work)
        rw, rp = inst.reference
        beta = np.zeros(inst.n)
        tables = list(inst.tables)
        for i, job in enumerate(jobs):
            d = storage.dataset_of(job.name)
            if d is None:
                continue
            cached = plan.cache_gb.get(d.name, 0.0)
            per_worker = remote_need_gbps(d, float(tables[i][rw[i] - 1, rp[i] - 1]), cached) / rw[i]
            if per_worker <= 0:
                continue  # cached whole: storage never binds this job
            beta[i] = min(per_worker, storage.remote_gbps)
            workers = np.arange(1, tables[i].shape[0] + 1, dtype=float)[:, None]
            io = 1000.0 * beta[i] * workers / (d.sample_mb * (1.0 - cached / d.size_gb))
            tables[i] = np.minimum(tables[i], io)
        if not beta.any():
            return super()._solve(jobs, state, free, place, work)
        zero = np.zeros((inst.n, 1))
        ext = dataclasses.replace(
            inst,
            resources=(*inst.resources, "remote_gbps"),
            capacity=np.append(inst.capacity, plan.pool_gbps),
            alpha=np.hstack([inst.alpha, beta[:, None]]),
            gamma=np.hstack([inst.gamma, zero]),
            tables=tuple(tables),
            pool=np.append(inst.pool_vector, storage.remote_gbps),
        )
        opts = {k: v for k, v in self.options.items() if k in _SMD_ARGS}
        res = smd(ext, **opts)
        ext.check_allocation(res.workers, res.ps)  # a violated row is a bug, never a user error
        shares = {j.name: float(b * w) for j, b, w in zip(jobs, beta, res.workers) if b * w > 0}
        self.last_plan = dataclasses.replace(plan, shares=shares)
        self.last_solution = None
        return _Choice(tuple(res.workers.tolist()), tuple(res.ps.tolist()), res.note)


def _split(view: StorageView, plan: StoragePlan, jobs: Mapping[str, JobIO]) -> StorageAllocation:
    """Step 3: the plan's cache for the datasets read now; each job first its knapsack share
    (a job the solve did not allocate: what it holds), at most its need; the pool left over
    max-min fair to the needs left."""
    storage = view.storage
    read = {storage.job_dataset[j] for j in jobs if j in storage.job_dataset}
    cache = {k: c for k, c in plan.cache_gb.items() if k in read}
    needs: dict[str, float] = {}
    held: dict[str, float] = {}
    for name, io in jobs.items():
        d = storage.dataset_of(name)
        if d is None:
            continue
        needs[name] = remote_need_gbps(d, io.speed, cache.get(d.name, 0.0))
        share = plan.shares.get(name, view.allocation.remote_gbps.get(name, 0.0))
        held[name] = min(needs[name], share)
    total = sum(held.values())
    if total > storage.remote_gbps:  # shares beyond the pool (never from the knapsack): scale
        held = {j: b * storage.remote_gbps / total for j, b in held.items()}
        total = storage.remote_gbps
    extra = fair_bandwidth(
        max(storage.remote_gbps - total, 0.0), {j: needs[j] - held[j] for j in held}
    )
    bandwidth = {j: held[j] + extra.get(j, 0.0) for j in held}
    return StorageAllocation(cache, {j: b for j, b in bandwidth.items() if b > 0})
