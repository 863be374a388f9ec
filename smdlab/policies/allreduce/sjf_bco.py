"""SJF-BCO: smallest job first, each placed to balance communication contention and overhead.

Paper: Yu, Ji, Rajan, Liu, "On Scheduling Ring-All-Reduce Learning Jobs in Multi-Tenant GPU
Clusters with Communication Contention", MobiHoc 2022 (arXiv 2207.07817). What the paper states
and we follow: a ring all-reduce job's iteration time grows with the number of servers its
workers spread over (communication overhead) and with the number of other rings that share
those servers' links (contention); the makespan problem is an integer program; SJF-BCO takes the
jobs smallest first and places each one so as to balance the two. Mode: non-elastic (a job keeps
its placement), jobs wait in a queue until they fit.

How the parts the abstract leaves open are filled in (assumptions, each marked here):
- [A1] A job's worker count is fixed: its ``requested_workers``, else one machine's GPUs capped
  by ``max_workers`` (the paper gives every job a fixed number of workers).
- [A2] Job size = workers x duration at that count on a packed ring (GPU-seconds); smallest
  first, ties by arrival then name.
- [A3] Overhead and contention come from our layered all-reduce model
  (``smdlab.model.placement_speed.ring_iteration_time``): a ring on one machine uses the
  intra-machine link; a ring over m > 1 machines runs at the NIC share divided by the number of
  rings crossing its busiest machine's NIC (the rings already running there, plus this one).
- [A4] Balancing: for m = 1, 2, ... machines, the candidate set is the m machines with the fewest
  crossing rings (then the most room); the m whose estimated iteration time is smallest wins
  (ties: fewer machines); workers fill the chosen machines, most room first.
- [A5] Jobs are tried in order at every decision; one that does not fit now is passed over (not
  blocking), so smaller later jobs may start; the paper's time-slot model is replaced by the
  simulator's events.
- [A6] A PS job (the paper has none) gets one PS per worker up to its cap, placed first fit.
- [A7] When nothing runs and the first job in order does not fit at its worker count (the
  cluster or another resource cannot hold it), it starts with the most workers that fit, so
  that no job waits forever.
- [A8] On a racked cluster (our addition; the rack uplinks are in the simulated speeds) a ring
  whose balanced placement would cross racks is balanced within the first rack that can hold it
  (best-fit rack first, ``smdlab.solve.placement.rack_candidates``), if one can.
The simulator times each ring by the machines its placement spans; NIC sharing between rings
enters the policy's choice, not the simulated speeds.
"""

from __future__ import annotations

import numpy as np

from smdlab.model.job import Job
from smdlab.model.placement_speed import ring_iteration_time, table_speed, worker_machines
from smdlab.policies.base import Allocation, ClusterState, Decision, Placement, Policy
from smdlab.solve.instance import task_vectors
from smdlab.solve.placement import (
    Tasks,
    active_racks,
    first_fit_tasks,
    fit_counts,
    rack_candidates,
    usage,
)


def worker_count(job: Job, machine_gpus: int) -> int:
    """[A1] The job's fixed number of workers."""
    if job.requested_workers is not None:
        return job.requested_workers
    return max(1, min(job.max_workers, machine_gpus))


def job_size(job: Job, remaining: float, workers: int, mode: str) -> float:
    """[A2] workers x duration at ``workers`` on a packed ring (PS jobs: one PS per worker)."""
    ps = 0 if job.arch == "allreduce" else min(workers, job.max_ps)
    return workers * remaining / table_speed(job, workers, ps, mode)


def crossing_rings(state: ClusterState) -> np.ndarray:
    """Per machine, how many running all-reduce rings span it and at least one other machine."""
    count = np.zeros(state.free.shape[0], dtype=np.int64)
    for r in state.running:
        if r.job.arch != "allreduce":
            continue
        machines = worker_machines(r.placement.tasks)
        if len(machines) > 1:
            count[machines] += 1
    return count


def balanced_tasks(
    job: Job,
    workers: int,
    worker_demand: np.ndarray,
    free: np.ndarray,
    crossing: np.ndarray,
    mode: str,
) -> tuple[Tasks | None, float]:
    """[A4] Tasks for an all-reduce job's ``workers`` that minimise the estimated iteration time."""
    room = fit_counts(free, worker_demand)
    best: tuple[float, int, Tasks] | None = None
    order = np.lexsort((np.arange(free.shape[0]), -room, crossing))
    order = order[room[order] > 0]
    for m in range(1, min(len(order), workers) + 1):
        if m == 1:
            fits = order[room[order] >= workers]
            if not fits.size:
                continue
            chosen = fits[:1]
            sharing = 1
        else:
            chosen = order[:m]
            if room[chosen].sum() < workers:
                continue
            sharing = int(crossing[chosen].max()) + 1
        tau = ring_iteration_time(job, workers, m, mode, sharing)
        if best is not None and tau >= best[0]:
            continue
        left, tasks = workers, []
        for k in sorted(chosen.tolist(), key=lambda i: (-room[i], i)):
            take = int(min(left, room[k]))
            if take:
                tasks.append((int(k), take, 0))
                left -= take
        if left == 0 and len(tasks) == m:
            best = (tau, m, tuple(sorted(tasks)))
    return (best[2], best[0]) if best else (None, float("inf"))


def _in_one_rack(
    tasks: Tasks | None,
    job: Job,
    workers: int,
    worker_demand: np.ndarray,
    free: np.ndarray,
    crossing: np.ndarray,
    mode: str,
) -> Tasks | None:
    """[A8] ``tasks`` if they stay in one rack (or no rack layout is active); else the balanced
    placement within the first rack that holds the ring (``rack_candidates``), if one does."""
    racks = active_racks(free.shape[0])
    if tasks is None or racks is None or len({int(racks[m]) for m, _, _ in tasks}) < 2:
        return tasks
    for rows in rack_candidates(free, workers * worker_demand, racks):
        if len(set(racks[rows].tolist())) > 1:
            break  # single racks come first; none holds the ring
        inside, _ = balanced_tasks(job, workers, worker_demand, free[rows], crossing[rows], mode)
        if inside is not None:
            return tuple(sorted((int(rows[m]), w, p) for m, w, p in inside))
    return tasks


class SJFBCO(Policy):
    """Smallest job first; each all-reduce job placed balancing contention and overhead."""

    name = "sjf_bco"
    execution = "non_elastic"
    executions = ("non_elastic",)

    def decide(self, state: ClusterState) -> Decision:
        """Start queued jobs, smallest first, each where its estimated iteration time is least."""
        cluster = state.cluster
        gpu_i = cluster.resources.index("gpu") if "gpu" in cluster.resources else None
        machine_gpus = (
            round(float(state.cluster.machine_matrix[:, gpu_i].max()))
            if gpu_i is not None and cluster.has_machines
            else 1
        )
        free = np.array(state.free, dtype=float)
        crossing = crossing_rings(state)
        entries = []
        for q in state.queued:
            w = worker_count(q.job, machine_gpus)
            entries.append(
                (job_size(q.job, q.remaining, w, state.mode), q.job.arrival, q.job.name, q, w)
            )
        entries.sort(key=lambda e: e[:3])
        allocations: list[Allocation] = []
        for _, _, name, q, w in entries:
            job = q.job
            a, g = task_vectors(job, cluster.resources)
            idle = not state.running and not allocations
            tasks, ps = None, 0
            for k in range(w, 0 if idle else w - 1, -1):  # [A7] an idle cluster shrinks a job
                if gpu_i is not None and free[:, gpu_i].sum() + 1e-9 < k * a[gpu_i]:
                    continue
                if job.arch == "allreduce":
                    tasks, _ = balanced_tasks(job, k, a, free, crossing, state.mode)
                    tasks = _in_one_rack(tasks, job, k, a, free, crossing, state.mode)
                    ps = 0
                else:
                    ps = min(k, job.max_ps)
                    tasks = first_fit_tasks(free, k, ps, a, g)
                if tasks:
                    w = k
                    break
            if not tasks:
                continue
            free -= usage(tasks, a, g, free.shape[0])
            machines = worker_machines(tasks)
            if job.arch == "allreduce" and len(machines) > 1:
                crossing[machines] += 1
            allocations.append(Allocation(name, w, ps, Placement(tasks)))
        return Decision(tuple(allocations), note="sjf_bco")


__all__ = ["SJFBCO", "balanced_tasks", "crossing_rings", "job_size", "worker_count"]
