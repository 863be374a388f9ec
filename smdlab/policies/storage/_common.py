"""What the storage policies share: the jobs a decision leaves running, and attaching storage."""

from __future__ import annotations

import zlib
from dataclasses import replace

from smdlab.model.job import Job
from smdlab.model.placement_speed import table_speed
from smdlab.policies.base import ClusterState, Decision
from smdlab.policies.storage.allocators import JobIO, allocate
from smdlab.solve.storage import UTILITIES

__all__ = ["reference_speed", "running_after", "utility_kind", "with_storage"]


def running_after(state: ClusterState, decision: Decision) -> dict[str, JobIO]:
    """Compute-bound speed and GPUs of every job that runs once ``decision`` is applied."""
    view = state.storage
    assert view is not None
    gone = set(decision.preempt) | {a.job for a in decision.allocations}
    out = {}
    for r in state.running:
        if r.job.name not in gone and r.job.name in view.speeds:
            out[r.job.name] = JobIO(view.speeds[r.job.name], _gpus(r.job, r.workers, r.ps))
    jobs = {q.job.name: q.job for q in state.queued} | {r.job.name: r.job for r in state.running}
    for a in decision.allocations:
        job = jobs[a.job]
        out[a.job] = JobIO(
            view.speed_of(job, a.workers, a.ps, a.placement), _gpus(job, a.workers, a.ps)
        )
    return out


def _gpus(job: Job, workers: int, ps: int) -> float:
    return workers * job.worker_demand.get("gpu", 0.0) + ps * job.ps_demand.get("gpu", 0.0)


def with_storage(state: ClusterState, decision: Decision, rule: str) -> Decision:
    """``decision`` with the cache and remote IO of ``rule`` for the jobs it leaves running
    (unchanged in a run without storage)."""
    view = state.storage
    if view is None:
        return decision
    jobs = running_after(state, decision)
    return replace(decision, storage=allocate(view.storage, rule, jobs, view.last_read))


def utility_kind(job: Job, utility: str) -> str:
    """A job's utility function: ``utility`` itself, or for ``mixed`` one of ``UTILITIES`` by a
    stable hash of its name (diverse users)."""
    if utility != "mixed":
        return utility
    return UTILITIES[zlib.crc32(job.name.encode()) % len(UTILITIES)]


def reference_speed(job: Job, mode: str = "wfbp") -> float:
    """The speed a job's utility is normalised by: the timing tables' at its request (gang
    allocation: requested workers, else max_workers, with as many PSs)."""
    w, p = job.gang_allocation
    return table_speed(job, w, p, mode)
