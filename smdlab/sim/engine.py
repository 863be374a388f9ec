"""The state of one simulation run and its primitive moves: open and close a running job's segment.

``smdlab.sim.simulator`` drives it (the event loop); ``smdlab.sim.decisions`` applies a policy's
decision to it; ``smdlab.sim.groups`` keeps its GPU-sharing groups.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Sequence

import numpy as np

from smdlab.errors import InvalidInput
from smdlab.execution import Execution
from smdlab.model.cluster import Cluster
from smdlab.model.gpu_types import speed_ratio
from smdlab.model.job import Job
from smdlab.model.measured_speed import lease_speed
from smdlab.model.pipeline import with_worker_resources
from smdlab.model.placement_speed import placement_speed
from smdlab.model.traffic import Uplinks
from smdlab.policies.base import Placement, QueuedJob
from smdlab.sim.errors import InvalidDecision
from smdlab.sim.network import Network
from smdlab.sim.records import Recorder
from smdlab.sim.running import Run
from smdlab.sim.storage import StorageRun
from smdlab.solve.instance import task_vectors
from smdlab.solve.placement import TOL, capacity_matrix, rack_array

__all__ = ["Engine", "check_jobs"]


def check_jobs(cluster: Cluster, jobs: Sequence[Job]) -> list[Job]:
    """``jobs`` as a list, checked: Job objects with unique names, at least one; raises InvalidInput."""
    if not isinstance(cluster, Cluster):
        raise InvalidInput(f"cluster must be a Cluster, got {type(cluster).__name__}")
    try:
        jobs = list(jobs)
    except TypeError:
        raise InvalidInput(f"jobs must be a sequence of Job objects, got {jobs!r}") from None
    if not jobs:
        raise InvalidInput("jobs must list at least one job, got 0")
    for j in jobs:
        if not isinstance(j, Job):
            raise InvalidInput(f"jobs must be Job objects, got {type(j).__name__}")
    names = [j.name for j in jobs]
    if len(set(names)) != len(names):
        dup = next(n for n in names if names.count(n) > 1)
        raise InvalidInput(f"job names must be unique; {dup!r} appears more than once")
    return jobs


class Engine:
    """The cluster, the jobs and what runs where at time ``t``.

    free: resources left per machine. running: job name -> ``Run``; queued: job name ->
    ``QueuedJob`` in arrival order; heap: (finish, job index, run version) of every run (stale
    entries are skipped). log: the run's ``Recorder``.
    """

    t: float
    heap: list[tuple[float, int, int]]
    inline_close = True  # the every-event charge closes segments inline (False: by the Recorder)
    running: dict[str, Run]
    queued: dict[str, QueuedJob]
    _queued_tuple: tuple[QueuedJob, ...] | None

    def __init__(
        self,
        jobs: list[Job],
        cluster: Cluster,
        mode: str,
        execution: Execution,
        slot_s: float | None,
        restart_s: float,
        record_history: bool,
        policy_name: str,
        restart_rule: str = "on_restart",
    ) -> None:
        self.mode = mode
        self.restart_rule = restart_rule
        self.policy_name = policy_name
        self.execution, self.delta = execution, slot_s
        self.elastic = self.execution == "elastic"
        self.restart_s = restart_s
        self.sharing_degree = 1
        self.lease_s: float | None = None  # set for a lease_rounds policy: its slot
        self.cluster = cluster
        self.beyond_bound = False  # set when a run leaves the lower bound's model (docs/bound.md)
        self.with_bound = (
            True  # False: no lower-bound LP at the end (simulate_steps(lower_bound=False))
        )
        self.storage_run: StorageRun | None = None  # storage in the run (smdlab.sim.storage)
        self.resources = cluster.resources
        self.capacity = capacity_matrix(cluster)
        self.free = self.capacity.copy()
        self.pooled_capacity = self.capacity.sum(axis=0)
        self.overfull = -TOL * np.maximum(1.0, self.capacity)  # free below it: over capacity
        self.machine_names = [m.name for m in cluster.machines] or ["pool"]
        # GPU type per machine; None on an untyped cluster (every speed is the tables' speed).
        types = [m.gpu_type for m in cluster.machines]
        self.machine_types = types if any(types) else None
        if self.machine_types is not None:
            # Fail before the run, not mid-way, when the throughput table lacks what the jobs need.
            kinds = [t for t in dict.fromkeys(types) if t]
            for net, dev in dict.fromkeys((j.profile.network, j.profile.device) for j in jobs):
                for t in kinds:
                    speed_ratio(net, t, dev)
        # Racks: bytes sent across rack uplinks (cross_rack_gb); None on a flat cluster.
        self.rack_of = cluster.rack_of if cluster.topology else None
        self.uplinks = Uplinks.of(cluster)  # rack uplinks in the timing model; None when flat
        self.network = None  # the flow-level fabric (``smdlab.sim.network``); None: off
        if cluster.fabric is not None:
            self.uplinks = None  # contention on the fabric replaces the worst-case divisors
            self.network = Network(self, cluster.fabric)
        self.racks = rack_array(cluster)  # rack-aware placement rules while a policy decides
        self.gpu_index = self.resources.index("gpu") if "gpu" in self.resources else None
        self.jobs = jobs
        self.index = {j.name: i for i, j in enumerate(jobs)}
        # queue order: arrival, ties by input position (an int per job, so re-sorting is cheap)
        by_arrival = sorted(range(len(jobs)), key=lambda i: (jobs[i].arrival, i))
        self.queue_rank = {jobs[i].name: k for k, i in enumerate(by_arrival)}
        self.log = Recorder(
            len(jobs),
            self.index,
            bool(record_history),
            self.rack_of,
            self.machine_types,
            self.capacity,
            self.gpu_index,
        )
        self.records = self.log.records

    def reset_run(self) -> None:
        """Empty the run state: nothing queued or running, time 0."""
        self.heap = []
        self.running = {}
        self.queued = {}
        self._queued_tuple = ()
        self.version = 0
        self.skipped: list[str] = []
        # (job name, cpu, mem_gb) -> the job at those levels: a decision's allocations are
        # resolved several times (checks, capacity, start), every round for lease policies
        self._at_levels: dict[tuple[str, float | None, float | None], Job] = {}
        self.t = 0.0
        self.log.reset()
        if self.storage_run is not None:
            self.storage_run.reset()
        if self.network is not None:
            self.network.reset()

    def alloc_job(self, a) -> Job:
        """The job as allocated: its worker CPU and memory set to the allocation's levels, if given."""
        job = self.jobs[self.index[a.job]]
        cpu, mem = getattr(a, "cpu", None), getattr(a, "mem_gb", None)
        if cpu is None and mem is None:
            return job
        self.beyond_bound = True  # its speed is no longer the (workers, PS) table's
        key = (a.job, cpu, mem)
        hit = self._at_levels.get(key)
        if hit is not None:
            return hit
        try:
            hit = self._at_levels[key] = with_worker_resources(job, cpu, mem)
            return hit
        except InvalidInput as exc:
            raise InvalidDecision(
                f"policy {self.policy_name!r} at t={self.t:g}: allocation of job {a.job!r}: {exc}"
            ) from None

    def open(
        self,
        job: Job,
        workers: int,
        ps: int,
        placement: Placement,
        t: float,
        start: float,
        remaining: float,
        attained: float,
        pause: float = 0.0,
        speed: float | None = None,
        share: np.ndarray | None = None,
        group: str | None = None,
    ) -> Run:
        """A new constant-speed segment of ``job`` from ``t`` (progress from ``t + pause``).

        speed: None for the job's speed on its placement (``placement_speed``). share: the
        group's per-machine use each member holds (None: the job alone).
        """
        wv, pv = task_vectors(job, self.resources)
        tasks = placement.tasks
        if len(tasks) == 1:  # one machine (the common case): the same sums, without the merge
            m, w, p = tasks[0]
            rows = np.array([int(m)], dtype=np.int64)
            usage = (0.0 + w * wv + p * pv).reshape(1, len(self.resources))
        else:
            per_machine: dict[int, np.ndarray] = {}
            for m, w, p in tasks:  # merged per machine, so that free[rows] += usage is exact
                per_machine[int(m)] = per_machine.get(int(m), 0.0) + w * wv + p * pv
            rows = np.fromiter(per_machine, dtype=np.int64, count=len(per_machine))
            usage = np.array(list(per_machine.values())).reshape(len(rows), len(self.resources))
        solo = usage
        if share is not None:  # a group member holds its share of the group's use
            usage = share[rows]
        if speed is None:
            speed = placement_speed(
                job,
                workers,
                ps,
                self.mode,
                tasks=placement.tasks,
                uplinks=self.uplinks,
                machine_types=self.machine_types,
            )
            if self.lease_s is not None:  # leases count whole iterations (lease_rounds)
                speed = lease_speed(job, workers, speed, self.lease_s)
        if self.storage_run is not None:  # compute-bound; the storage update caps it
            self.storage_run.compute[job.name] = speed
        self.version += 1
        gpu_i = self.gpu_index
        gpus = 0.0 if gpu_i is None else workers * wv[gpu_i] + ps * pv[gpu_i]
        r = Run(
            job,
            workers,
            ps,
            placement,
            rows,
            usage,
            start,
            t,
            t + pause,
            remaining,
            attained,
            speed,
            gpus,
            t + pause + remaining / speed,
            self.version,
            group,
            solo,
            speed,
        )
        heapq.heappush(self.heap, (r.finish, self.index[job.name], r.version))
        return r

    def close(self, r: Run, t: float, final: bool) -> float:
        """End the current segment of ``r`` at ``t``; return the samples left."""
        return self.log.close_segment(r, t, final)

    def set_speed(self, r: Run, t: float, speed: float) -> None:
        """Close ``r``'s segment at ``t`` and go on at ``speed`` (no restart: the job only waits
        or runs faster; the fabric and storage re-time running jobs this way)."""
        left = self.close(r, t, final=False)
        r.att0 += r.gpus * (t - r.seg_start)
        r.seg_start = t
        r.resume = max(r.resume, t)
        r.rem0 = left
        r.speed = speed
        r.finish = r.resume + left / speed if speed > 0 else math.inf
        self.version += 1
        r.version = self.version
        heapq.heappush(self.heap, (r.finish, self.index[r.job.name], r.version))

    def restart_of(self, job: Job) -> float:
        """Seconds without progress ``job`` pays for a restart: its own, else the run's."""
        return self.restart_s if job.restart_s is None else job.restart_s

    def restart_pause(self, job: Job) -> float:
        """Pause of a resumed or re-allocated job: none under the ``every_event`` rule."""
        return 0.0 if self.restart_rule == "every_event" else self.restart_of(job)

    def charge_event(self, t: float, groups: dict[str, set[str]]) -> None:
        """The ``every_event`` restart rule at event ``t``: each running job loses the first
        min(overhead, time since its segment began) of its segment, and a new segment begins at
        ``t``. A job's overhead is its own restart seconds, or its group's sum (Muri's simulator
        charges a packing the sum of its members' overheads)."""
        log = self.log
        # Without racks a segment's close is inlined (the same sums as Recorder.close_segment):
        # every running job closes one at every event, the run's most frequent move.
        inline = self.inline_close and log.rack_of is None
        records = log.records
        history = log.history if log.record_history else None
        index = self.index
        restart_s = self.restart_s
        version = self.version
        for name, r in self.running.items():
            seg = r.seg_start
            dt = t - seg
            if dt <= 0:
                continue
            own = r.job.restart_s  # restart_of, inline
            oh: float = restart_s if own is None else own
            if r.group is not None:
                members = groups.get(r.group, {name})
                oh = sum(self.restart_of(self.jobs[index[m]]) for m in sorted(members))
            resume = max(r.resume, seg + min(oh, dt))
            if inline:
                rem0 = r.rem0
                done = min(rem0, r.speed * max(0.0, t - resume))
                rec = records[index[name]]
                rec.run_time += dt
                rec.worker_time += r.workers * dt
                rec.ps_time += r.ps * dt
                rec.samples_done += done
                if history is not None:
                    paused = min(t, resume)
                    if paused > seg:  # the restart pause: resources held, no progress
                        history.append((name, seg, paused, r.workers, r.ps, 0.0, 0.0))
                    if t > paused:
                        history.append((name, paused, t, r.workers, r.ps, r.speed, done))
                left = rem0 - done
            else:
                r.resume = resume
                left = self.close(r, t, final=False)
            r.att0 += r.gpus * dt
            r.seg_start = r.resume = t
            r.rem0 = left
            r.finish = t + left / r.speed if r.speed > 0 else math.inf
            version += 1
            r.version = version
        self.version = version
        # Every running job's heap entry is renewed: rebuilt from the running jobs, the heap
        # drops the stale entries at once (entries compare whole, so the pop order is unchanged).
        self.heap = [(r.finish, index[name], r.version) for name, r in self.running.items()]
        heapq.heapify(self.heap)

    def stale(self, entry: tuple[float, int, int]) -> bool:
        """Whether a heap entry belongs to a run that has ended or changed since."""
        r = self.running.get(self.jobs[entry[1]].name)
        return r is None or r.version != entry[2]
