"""Storage in a simulation run: the cache and remote IO in force, each running job's speed capped
by its IO-bound speed, and the IO cost (docs/storage.md).

At every event the simulator first charges the interval since the last one (``advance``), then,
after completions and the decision, sets the allocation (the decision's, else the policy's last,
else the run's default rule) and re-segments every running job whose capped speed changed
(``update``): no restart pause, the new speed from that instant.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from smdlab.errors import InvalidInput
from smdlab.model.job import Job
from smdlab.model.measured_speed import lease_speed
from smdlab.model.placement_speed import placement_speed
from smdlab.model.storage import (
    Storage,
    StorageAllocation,
    StorageView,
    cost_rate,
    held_gb,
    io_speed,
    local_cache_gb,
    place_cache,
    remote_need_gbps,
)
from smdlab.policies.storage.allocators import JobIO, allocate, fair_bandwidth
from smdlab.sim.errors import InvalidDecision

__all__ = ["STORAGE_SUMMARY_KEYS", "StorageRun"]

# Summary entries a run with storage adds (a run without storage keeps exactly SUMMARY_KEYS).
STORAGE_SUMMARY_KEYS = (
    "io_cost",
    "cache_gb_hours",
    "remote_gbps_hours",
    "remote_gb_read",
    "io_bound_share",
    "storage_allocator",
)


class StorageRun:
    """The storage state of one run and its accounting."""

    def __init__(self, storage: Storage, jobs: Sequence[Job], machines: int | None = None) -> None:
        if not isinstance(storage, Storage):
            raise InvalidInput(f"storage must be a smdlab.model.storage.Storage, got {storage!r}")
        per = storage.machine_cache_gb
        if storage.cache_scope == "machine" and not machines:
            raise InvalidInput("storage cache_scope 'machine' needs a cluster with machines")
        if per is not None and machines and len(per) != machines:
            raise InvalidInput(
                f"storage machine_cache_gb has {len(per)} entries; the cluster has {machines} machines"
            )
        names = {j.name for j in jobs}
        for name in storage.job_dataset:
            if name not in names:
                raise InvalidInput(
                    f"storage job_dataset names job {name!r}, which is not in the workload"
                )
        self.storage = storage
        self.reset()

    def reset(self) -> None:
        """Nothing allocated, nothing charged."""
        self.alloc = StorageAllocation()
        self.explicit = False  # the policy has given an allocation of its own
        self.own_machines = False  # ... with per-machine caches of its own
        self.compute: dict[str, float] = {}
        self.last_read: dict[str, float] = {}
        self.t_last = 0.0
        self.cost = self.cache_gb_h = self.remote_gbps_h = self.remote_gb = 0.0
        self.run_s = self.io_bound_s = 0.0

    def view(self, sim: Any) -> StorageView:
        """What a policy sees of storage at this decision point."""
        mode, uplinks, types, lease = sim.mode, sim.uplinks, sim.machine_types, sim.lease_s

        def speed_of(job: Job, workers: int, ps: int, placement) -> float:
            speed = placement_speed(
                job, workers, ps, mode, tasks=placement.tasks, uplinks=uplinks, machine_types=types
            )
            return lease_speed(job, workers, speed, lease) if lease is not None else speed

        speeds = {n: self.compute[n] for n in sim.running if n in self.compute}
        return StorageView(self.storage, self.alloc, speeds, dict(self.last_read), speed_of)

    def advance(self, sim: Any, t: float) -> None:
        """Charge the interval from the last event to ``t`` at the allocation in force."""
        dt = t - self.t_last
        if dt > 0:
            hours = dt / 3600.0
            self.cost += cost_rate(self.storage, self.alloc) * hours
            self.cache_gb_h += held_gb(self.storage, self.alloc) * hours
            self.remote_gbps_h += sum(self.alloc.remote_gbps.values()) * hours
            for name, r in sim.running.items():
                d = self.storage.dataset_of(name)
                busy = max(0.0, t - max(r.resume, self.t_last))
                self.run_s += busy
                if d is None:
                    continue
                self.last_read[d.name] = t
                self.remote_gb += remote_need_gbps(d, r.speed, self._cached(d.name, r)) * busy
                if r.speed < self.compute.get(name, r.speed) * (1 - 1e-12):
                    self.io_bound_s += busy
        self.t_last = t

    def update(self, sim: Any, t: float, given: StorageAllocation | None) -> None:
        """Set the allocation after this event's changes; re-segment jobs whose speed changed."""
        running = sim.running
        for name in list(self.compute):
            if name not in running:
                del self.compute[name]
        if given is not None:
            if not isinstance(given, StorageAllocation):
                raise InvalidDecision(
                    f"policy {sim.policy_name!r} at t={t:g}: Decision.storage must be a "
                    f"StorageAllocation, got {type(given).__name__}"
                )
            try:
                self.storage.check(given, running)
            except InvalidInput as exc:
                raise InvalidDecision(f"policy {sim.policy_name!r} at t={t:g}: {exc}") from None
            self.alloc, self.explicit = given, True
            self.own_machines = bool(given.machine_cache_gb)
        elif self.explicit:  # the policy's last allocation, without jobs that have left
            kept = {j: b for j, b in self.alloc.remote_gbps.items() if j in running}
            self.alloc = StorageAllocation(
                self.alloc.cache_gb, kept, self.alloc.machine_cache_gb if self.own_machines else {}
            )
        else:
            jobs = {n: JobIO(self.compute[n], r.gpus) for n, r in running.items()}
            self.alloc = allocate(self.storage, self.storage.allocator, jobs, self.last_read)
        if self.storage.cache_scope == "machine" and not self.own_machines:
            self._place(running)  # the policy's (or the rule's) split, on the readers' machines
        for name in running:
            d = self.storage.dataset_of(name)
            if d is not None:
                self.last_read[d.name] = t
        if self.storage.unbounded:
            return  # every dataset is served at any speed: today's results exactly
        for name, r in running.items():
            d = self.storage.dataset_of(name)
            if d is None:
                continue
            compute = self.compute[name]
            cap = io_speed(d, self._cached(d.name, r), self.alloc.remote_gbps.get(name, 0.0))
            speed = min(compute, cap)
            if speed != r.speed:
                sim.beyond_bound = True  # speeds are no longer the tables' (docs/bound.md)
                sim.set_speed(r, t, speed)

    def _cached(self, dataset: str, r: Any) -> float:
        """GB of ``dataset`` the running job ``r`` reads from the cache (docs/storage.md)."""
        if self.storage.cache_scope == "machine":
            return local_cache_gb(self.alloc, dataset, r.placement.tasks)
        return self.alloc.cache_gb.get(dataset, 0.0)

    def _place(self, running: Any) -> None:
        """Per-machine caches for a cluster-level allocation: ``place_cache`` on the machines
        where each dataset's readers run now; the pool then shared again to the local needs."""
        readers: dict[str, dict[int, float]] = {}
        for name, r in running.items():
            k = self.storage.job_dataset.get(name)
            if k is None:
                continue
            row = readers.setdefault(k, {})
            for m, w, _ in r.placement.tasks:
                row[m] = row.get(m, 0.0) + w
        placed = place_cache(self.storage, self.alloc.cache_gb, readers)
        alloc = StorageAllocation(self.alloc.cache_gb, {}, placed)
        # The split's bandwidth assumed every reader hits the whole cluster-level cache: share
        # the pool again, max-min fair to each job's need at what its own machines hold.
        needs = {}
        for name, r in running.items():
            d = self.storage.dataset_of(name)
            if d is not None and name in self.compute:
                needs[name] = remote_need_gbps(
                    d, self.compute[name], local_cache_gb(alloc, d.name, r.placement.tasks)
                )
        bandwidth = fair_bandwidth(self.storage.remote_gbps, needs)
        self.alloc = StorageAllocation(self.alloc.cache_gb, bandwidth, placed)

    def summary(self) -> dict[str, Any]:
        """The run's storage entries (``STORAGE_SUMMARY_KEYS``)."""
        return {
            "io_cost": self.cost,
            "cache_gb_hours": self.cache_gb_h,
            "remote_gbps_hours": self.remote_gbps_h,
            "remote_gb_read": self.remote_gb,
            "io_bound_share": self.io_bound_s / self.run_s if self.run_s > 0 else 0.0,
            "storage_allocator": "policy" if self.explicit else self.storage.allocator,
        }
