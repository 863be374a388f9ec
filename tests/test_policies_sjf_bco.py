"""SJF-BCO: smallest job first, placements balancing ring overhead and NIC contention."""

from __future__ import annotations

import numpy as np

import smdlab
from smdlab.model.allreduce import allreduce_iteration_time
from smdlab.policies.allreduce.sjf_bco import SJFBCO, balanced_tasks, job_size
from smdlab.policies.base import ClusterState, QueuedJob
from smdlab.sim import simulate
from smdlab.solve.placement import capacity_matrix


def _job(name, net="resnet50", workers=4, samples=1e5):
    return smdlab.make_job(
        name,
        net,
        samples,
        arch="allreduce",
        max_workers=8,
        requested_workers=workers,
        gpus_per_machine=4,
    )


def test_one_machine_when_the_ring_fits():
    cluster = smdlab.Cluster.homogeneous(3, gpu=4, cpu=64, mem_gb=256, bw_gbps=100)
    free = capacity_matrix(cluster)
    job = _job("a")
    a = np.array([job.worker_demand.get(r, 0.0) for r in cluster.resources])
    tasks, tau = balanced_tasks(job, 4, a, free, np.zeros(3, dtype=int), "wfbp")
    assert len(tasks) == 1 and tau == allreduce_iteration_time(job, 4, machines=1)


def test_spread_avoids_contended_machines():
    cluster = smdlab.Cluster.homogeneous(4, gpu=4, cpu=64, mem_gb=256, bw_gbps=100)
    free = capacity_matrix(cluster)
    free[:, 0] = 2  # two free GPUs everywhere: a 4-GPU ring must span two machines
    job = _job("a")
    a = np.array([job.worker_demand.get(r, 0.0) for r in cluster.resources])
    crossing = np.array([3, 0, 2, 0])
    tasks, tau = balanced_tasks(job, 4, a, free, crossing, "wfbp")
    assert sorted(m for m, _, _ in tasks) == [1, 3]
    assert tau == allreduce_iteration_time(job, 4, machines=2, sharing=1)


def test_smallest_job_starts_first_and_all_finish():
    cluster = smdlab.Cluster.homogeneous(2, gpu=4, cpu=64, mem_gb=256, bw_gbps=100)
    jobs = [_job("big", samples=4e5), _job("small", samples=1e4), _job("mid", samples=1e5)]
    sizes = {j.name: job_size(j, j.samples, 4, "wfbp") for j in jobs}
    assert sizes["small"] < sizes["mid"] < sizes["big"]
    state = ClusterState(
        0.0, cluster, tuple(QueuedJob(j, j.samples) for j in jobs), (), capacity_matrix(cluster)
    )
    started = [a.job for a in SJFBCO().decide(state).allocations]
    assert started == ["small", "mid"]
    r = simulate(jobs, cluster, "sjf_bco")
    assert r.summary["jobs_completed"] == 3 and (r.jobs["ps"] == 0).all()
