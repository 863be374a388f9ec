"""Gavel's round-based scheduling mechanism, shared by ``gavel_max_sum`` and ``gavel_max_min``.

Narayanan et al., "Heterogeneity-Aware Cluster Scheduling Policies for Deep Learning Workloads",
OSDI 2020, section 5: a policy computes an allocation X[job, gpu type] of time fractions; time is
cut into rounds and each round gives every GPU type to the jobs whose received time on it lags
their target X most (priority = X[j, t] / fraction of rounds job j has received on type t, a job
that never ran on t with X[j, t] > 0 first), each job on at most one type per round. Rounds last
``round_s`` (Gavel's default: 6 minutes). The LP is solved at every decision point over the jobs
present (queued and running).

Assumptions here (ours, not Gavel's): a job runs at its request (``Job.gang_allocation``: its
``requested_workers`` workers, else ``max_workers``, and as many PSs up to ``max_ps``), Gavel's
fixed scale factor; its GPUs come from machines of the one type it gets this round (placed by
``toolkit.gang_placement`` on those machines only); throughput ``T[j, t]`` is the simulator's
speed at that allocation times ``smdlab.model.gpu_types.speed_ratio`` (Gavel's measured ratios for
the job's Gavel job type); a job that keeps its type from one round to the next keeps its
placement (no restart). An untyped cluster is one type. A forced ``non_elastic`` execution never
preempts: the rounds then only choose where queued jobs start. ``aware=False`` is the
heterogeneity-agnostic baseline: the same LP and rounds with every type's throughput set to the
job's V100 throughput (Gavel's agnostic variants see one throughput per job).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from smdlab.errors import check_bool, check_positive
from smdlab.model.gpu_types import speed_ratio
from smdlab.model.job import Job
from smdlab.policies.base import Allocation, ClusterState, Decision, Policy
from smdlab.policies.toolkit import gang_placement, max_allocation
from smdlab.solve.instance import job_speeds
from smdlab.solve.placement import TOL, placement_usage

ROUND_S = 360.0  # Gavel's round: 6 minutes (OSDI 2020, section 7: "rounds of 6 minutes")

Solver = Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray]


class GavelRounds(Policy):
    """Round-based execution of a Gavel allocation LP (subclasses set ``name`` and ``solve``)."""

    name = "gavel_rounds"
    # The allocation LP (throughput, gpus, capacity) -> X; each subclass sets Gavel's objective.
    solve: Solver
    arrival_order = False  # True: the LP's rows in arrival order (a FIFO allocation needs it)
    execution = "preemptive"
    executions = ("non_elastic", "preemptive")

    def __init__(self, round_s: float = ROUND_S, aware: bool = True) -> None:
        self.round_s = check_positive("round_s", round_s)
        self.aware = check_bool("aware", aware)
        self.reset()

    def reset(self) -> None:
        """Forget received time (one run's bookkeeping)."""
        self._received: dict[tuple[str, str], float] = {}  # (job, type) -> seconds run there
        self._active: dict[str, float] = {}  # job -> seconds present since first seen
        self._last_time: float | None = None

    def _account(self, state: ClusterState, types: list[str]) -> None:
        """Add the time since the previous decision to each job's received and active time."""
        dt = 0.0 if self._last_time is None else max(0.0, state.time - self._last_time)
        self._last_time = state.time
        for r in state.running:
            t = types[r.placement.tasks[0][0]]
            key = (r.job.name, t)
            self._received[key] = self._received.get(key, 0.0) + dt
        for j in [q.job for q in state.queued] + [r.job for r in state.running]:
            self._active[j.name] = self._active.get(j.name, 0.0) + dt

    def _throughput(self, job: Job, kinds: list[str], mode: str) -> np.ndarray:
        w, p = job.gang_allocation
        base = float(job_speeds(job, mode)[w - 1, p - 1])
        net, dev = job.profile.network, job.profile.device
        if not self.aware:
            return np.full(len(kinds), base * speed_ratio(net, "v100" if any(kinds) else "", dev))
        return np.array([base * speed_ratio(net, t, dev) for t in kinds])

    def decide(self, state: ClusterState) -> Decision:
        """Solve the LP over present jobs, then fill this round's GPUs by largest deficit."""
        cluster = state.cluster
        types = [m.gpu_type for m in cluster.machines] or [""]
        self._account(state, types)
        jobs = [q.job for q in state.queued] + [r.job for r in state.running]
        if not jobs:
            return Decision()
        if self.arrival_order:
            jobs.sort(key=lambda j: j.arrival)
        kinds = list(dict.fromkeys(types))
        res = cluster.resources
        gpu_i = res.index("gpu") if "gpu" in res else None
        cap = np.array(state.free, dtype=float)
        for r in state.running:
            cap += placement_usage(r.job, r.placement, cap.shape[0], res)
        type_rows = {t: np.array([x == t for x in types]) for t in kinds}
        G = np.array([cap[type_rows[t], gpu_i].sum() if gpu_i is not None else 1.0 for t in kinds])
        g = np.array([max(j.gang_gpus, 1e-9) if gpu_i is not None else 1.0 for j in jobs])
        T = np.array([self._throughput(j, kinds, state.mode) for j in jobs])
        X = self.solve(T, g, G)
        # Priority: target share over received share (never received with a positive target: first).
        prio = []
        for i, j in enumerate(jobs):
            active = self._active.get(j.name, 0.0)
            for k, t in enumerate(kinds):
                if X[i, k] <= 1e-6:
                    continue
                got = self._received.get((j.name, t), 0.0) / active if active > 0 else 0.0
                prio.append((np.inf if got <= 0 else X[i, k] / got, X[i, k], -i, i, k))
        prio.sort(reverse=True)
        running = {r.job.name: r for r in state.running}
        # Each job at most once, in priority order, on its type's machines; a running job that
        # keeps its type keeps its placement when those machines are still free.
        free = cap.copy()
        keep: set[str] = set()
        placed: set[int] = set()
        if state.execution not in ("preemptive", "elastic"):
            # A forced non-elastic run: running jobs keep their GPUs, only queued jobs are placed.
            free = np.array(state.free, dtype=float)
            keep = set(running)
            placed = {i for i, j in enumerate(jobs) if j.name in keep}
        allocations = []
        for _, _, _, i, k in prio:
            if i in placed:
                continue
            job = jobs[i]
            run = running.get(job.name)
            if (
                run is not None
                and (run.workers, run.ps) == job.gang_allocation
                and types[run.placement.tasks[0][0]] == kinds[k]
            ):
                use = placement_usage(job, run.placement, free.shape[0], res)
                if np.all(free - use >= -TOL * np.maximum(1.0, use)):
                    free -= use
                    keep.add(job.name)
                    placed.add(i)
                    continue
            masked = np.where(type_rows[kinds[k]][:, None], free, 0.0)
            pl = gang_placement(job, masked, res)
            if pl is None:
                continue
            free -= placement_usage(job, pl, free.shape[0], res)
            allocations.append(Allocation(job.name, *job.gang_allocation, pl))
            placed.add(i)
        # Work conservation: a job the LP rounds left out runs wherever it fits (several types:
        # at the slowest one's speed; a non-gang job with fewer workers than its request when
        # only that fits), so no GPU idles while a job that fits waits.
        for i, job in enumerate(jobs):
            if i in placed:
                continue
            run = running.get(job.name)
            if run is not None:
                use = placement_usage(job, run.placement, free.shape[0], res)
                if np.all(free - use >= -TOL * np.maximum(1.0, use)):
                    free -= use
                    keep.add(job.name)
                    continue
            w, p, pl = max_allocation(job, free, res)  # a non-gang job: fewer bundles if need be
            if pl is not None and w > 0:
                free -= placement_usage(job, pl, free.shape[0], res)
                allocations.append(Allocation(job.name, w, p, pl))
        preempt = tuple(n for n in running if n not in keep)
        note = f"{self.name}: {len(keep) + len(allocations)} jobs this round"
        return Decision(tuple(allocations), preempt, note=note, wake_at=state.time + self.round_s)


__all__ = ["ROUND_S", "GavelRounds"]
