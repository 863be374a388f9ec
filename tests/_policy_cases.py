"""Hand-built jobs, clusters and states shared by the policy tests (not a test module)."""

from __future__ import annotations

import numpy as np

from smdlab import Cluster, Job, LayerProfile, Machine
from smdlab.policies.base import ClusterState, Placement, QueuedJob, RunningJob
from smdlab.solve.instance import task_vectors
from smdlab.solve.placement import capacity_matrix


def profile(layers: int = 3, scale: float = 1.0) -> LayerProfile:
    """A small fixed network: ~40 us forward per sample per layer, 2 MB of parameters per layer."""
    f = np.full(layers, 4e-5 * scale)
    return LayerProfile([f"l{i}" for i in range(layers)], f, 2 * f, np.full(layers, 2e6))


def job(
    name: str,
    *,
    arrival: float = 0.0,
    samples: float = 1e5,
    worker=None,
    ps=None,
    max_workers: int = 8,
    max_ps: int = 8,
    prof: LayerProfile | None = None,
    **kw,
) -> Job:
    """A job with 1 GPU + 2 CPU + 5 Gbps workers and 2 CPU + 5 Gbps PSs unless told otherwise."""
    return Job(
        name,
        prof or profile(),
        samples,
        128,
        worker or {"gpu": 1, "cpu": 2, "bw_gbps": 5},
        ps or {"cpu": 2, "bw_gbps": 5},
        arrival=arrival,
        max_workers=max_workers,
        max_ps=max_ps,
        **kw,
    )


def cluster(n: int = 2, **cap) -> Cluster:
    """n identical machines over (gpu, cpu, bw_gbps); default 4 GPU, 32 CPU, 100 Gbps each."""
    c = {"gpu": 4, "cpu": 32, "bw_gbps": 100, **cap}
    return Cluster(tuple(Machine(f"m{i}", dict(c)) for i in range(n)), tuple(c))


def running(
    j: Job, tasks, *, start: float = 0.0, remaining: float | None = None, attained: float = 0.0
) -> RunningJob:
    """A running job on ``tasks`` ((machine, workers, ps) triples)."""
    pl = Placement(tuple(tasks))
    return RunningJob(
        j, pl.workers, pl.ps, pl, start, j.samples if remaining is None else remaining, attained
    )


def queued(
    j: Job, *, remaining: float | None = None, attained: float = 0.0, since: float | None = None
) -> QueuedJob:
    """A queued job (never run unless ``attained`` says otherwise)."""
    return QueuedJob(
        j,
        j.samples if remaining is None else remaining,
        attained,
        j.arrival if since is None else since,
    )


def state(
    cl: Cluster,
    queued_jobs=(),
    running_jobs=(),
    *,
    time: float = 0.0,
    mode: str = "wfbp",
    execution: str = "non_elastic",
) -> ClusterState:
    """A ClusterState whose free capacity is the cluster minus what the running jobs hold."""
    free = capacity_matrix(cl).copy()
    for r in running_jobs:
        wv, pv = task_vectors(r.job, cl.resources)
        for m, w, p in r.placement.tasks:
            free[m] -= w * wv + p * pv
    assert np.all(free >= -1e-9), "hand-built state over capacity"
    free.setflags(write=False)
    return ClusterState(time, cl, tuple(queued_jobs), tuple(running_jobs), free, mode, execution)


def alloc_of(decision, name: str):
    """(workers, ps) the decision gives ``name``, or None."""
    for a in decision.allocations:
        if a.job == name:
            return a.workers, a.ps
    return None
