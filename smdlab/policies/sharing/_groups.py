"""Shared idioms of the GPU-sharing policies (SJF-FFS, SJF-BSBF, Horus): groups, requests, fits.

Every job runs on its request (``srtf.request``: its gang allocation, else n worker+PS
bundles), started as a ``space`` sharing group of its own (``Allocation.sharing``) so that a
later job with the same request can join its GPUs (``docs/simulator.md``, "GPU sharing").
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from smdlab.model.colocation import (
    accumulation_efficiency,
    gavel_job_type,
    shared_rate_factors,
)
from smdlab.model.job import Job
from smdlab.policies.base import Allocation, ClusterState, Placement, QueuedJob, RunningJob
from smdlab.policies.ps.srtf import remaining_time, request
from smdlab.policies.toolkit import max_bundles
from smdlab.solve.instance import job_speeds
from smdlab.solve.placement import TOL, first_fit, placement_usage


@dataclass
class Share:
    """A set of GPUs some jobs share (running, or started in this decision)."""

    label: str  # the running group's id, or a new label
    workers: int
    ps: int
    placement: Placement
    jobs: list[Job] = field(default_factory=list)
    accs: list[int] = field(default_factory=list)
    remaining: list[float] = field(default_factory=list)  # samples left per member


def sjf_order(state: ClusterState) -> list[QueuedJob]:
    """Queued jobs by remaining time at their request, ties by arrival and name."""
    return sorted(
        state.queued,
        key=lambda q: (remaining_time(q, state.mode), q.job.arrival, q.job.name),
    )


def running_shares(state: ClusterState) -> list[Share]:
    """The running sharing groups, in the order their first member started."""
    out: dict[str, Share] = {}
    runs: Sequence[RunningJob] = sorted(state.running, key=lambda r: (r.start, r.job.name))
    for r in runs:
        if r.group is None:
            continue
        s = out.setdefault(r.group, Share(r.group, r.workers, r.ps, r.placement))
        s.jobs.append(r.job)
        s.accs.append(1)
        s.remaining.append(r.remaining)
    return list(out.values())


def factors(jobs: Sequence[Job], accs: Sequence[int] | None = None) -> np.ndarray | None:
    """Each job's predicted fraction of its solo rate when all share (None: memory does not fit)."""
    accs = [1] * len(jobs) if accs is None else list(accs)
    f = shared_rate_factors([gavel_job_type(j, k) for j, k in zip(jobs, accs, strict=True)])
    if f is None:
        return None
    eff = [accumulation_efficiency(j, k) if k > 1 else 1.0 for j, k in zip(jobs, accs, strict=True)]
    return f * np.array(eff)


def solo_speed(job: Job, workers: int, ps: int, mode: str) -> float:
    """The job's samples per second alone on (workers, ps)."""
    return float(job_speeds(job, mode)[workers - 1, ps - 1])


def place_alone(
    job: Job, free: np.ndarray, state: ClusterState
) -> tuple[int, int, Placement] | None:
    """The job placed alone on free capacity (None: not even one bundle fits now).

    A gang or all-reduce job gets its request or nothing; another job as many worker+PS bundles
    as fit, up to its request (SRTF's convention), placed first-fit decreasing.
    """
    w, p = request(job)
    if job.gang or job.arch == "allreduce":
        pl = first_fit(job, w, p, free, state.cluster.resources)
        return None if pl is None else (w, p, pl)
    n, pl = max_bundles(job, free, state.cluster.resources, w)
    return None if n == 0 or pl is None else (n, n, pl)


def start_alone(
    q: QueuedJob,
    alone: tuple[int, int, Placement],
    prefix: str,
    free: np.ndarray,
    state: ClusterState,
    shares: list[Share],
    out: list[Allocation],
) -> None:
    """Start ``q`` on ``alone`` (from ``place_alone``) as a space-sharing group of its own."""
    w, p, pl = alone
    take(q.job, pl, free, state)
    label = f"{prefix}:{q.job.name}"
    shares.append(Share(label, w, p, pl, [q.job], [1], [q.remaining]))
    out.append(Allocation(q.job.name, w, p, pl, group=label, sharing="space"))


def can_share(share: Share, job: Job) -> bool:
    """Whether ``job`` may run on ``share``'s counts: its exact request (gang, all-reduce), else
    at most its requested bundles."""
    w, p = request(job)
    if job.gang or job.arch == "allreduce":
        return (share.workers, share.ps) == (w, p)
    return share.workers == share.ps and share.workers <= w


def take(job: Job, placement: Placement, free: np.ndarray, state: ClusterState) -> None:
    """Subtract what ``job`` uses at ``placement`` from ``free`` (in place)."""
    free -= placement_usage(job, placement, free.shape[0], state.cluster.resources)


def try_join(share: Share, job: Job, free: np.ndarray, state: ClusterState) -> bool:
    """Whether ``job`` can join ``share`` within free capacity; if so take the extra (in place).

    A group reserves the per-machine maximum of its members' demands (``docs/simulator.md``):
    a member with a larger CPU or memory demand than the others needs the difference free.
    """
    n, res = free.shape[0], state.cluster.resources
    now = np.max([placement_usage(j, share.placement, n, res) for j in share.jobs], axis=0)
    extra = np.maximum(now, placement_usage(job, share.placement, n, res)) - now
    if np.any(free - extra < -TOL * np.maximum(1.0, extra)):
        return False
    free -= extra
    return True
