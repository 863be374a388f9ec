"""The speed of a job on a placement (smdlab.model.placement_speed) and samples per iteration."""

from __future__ import annotations

import numpy as np

from smdlab.model.allreduce import allreduce_iteration_time
from smdlab.model.cluster import Cluster
from smdlab.model.gpu_types import speed_ratio
from smdlab.model.job import make_job
from smdlab.model.placement_speed import (
    placement_speed,
    ring_iteration_time,
    table_speed,
    type_factor,
    worker_machines,
)
from smdlab.model.timing import job_speeds, link_speed
from smdlab.model.traffic import Uplinks
from smdlab.rl.placement_builder import ring_speed


def _ring(**kw):
    return make_job(
        "r", "resnet50", 1e6, arch="allreduce", max_workers=16, gpus_per_machine=4, **kw
    )


def test_samples_per_iteration_global_and_per_worker():
    g = make_job("g", "resnet50", 1e6, global_batch=256)
    p = make_job("p", "resnet50", 1e6, batch_mode="per_worker", per_worker_batch=32)
    assert [g.samples_per_iteration(w) for w in (1, 4)] == [256, 256]
    assert [p.samples_per_iteration(w) for w in (1, 4)] == [32, 128]
    assert p.samples_per_iteration(np.array([1, 2, 3])).tolist() == [32, 64, 96]


def test_packed_placement_is_the_table_speed():
    job = _ring()
    tasks = ((0, 4, 0), (1, 4, 0))  # 8 workers on 2 machines of 4 GPUs: packed
    assert placement_speed(job, 8, 0, tasks=tasks) == job_speeds(job)[7, 0]
    assert table_speed(job, 8, 0) == job_speeds(job)[7, 0]
    # the tables hold the ring model's packed ring exactly
    tau = allreduce_iteration_time(job, 8, machines=2)
    assert float(job.samples_per_iteration(8) / tau) == table_speed(job, 8, 0)


def test_a_spread_ring_runs_at_the_ring_model_speed():
    slow_nic = {"gpu": 1, "cpu": 4, "mem_gb": 16, "bw_gbps": 1}
    job = _ring(worker_demand=slow_nic)
    tasks = ((0, 2, 0), (1, 2, 0))  # 4 workers on 2 machines; packed: 1 machine of 4 GPUs
    assert worker_machines(tasks) == [0, 1]
    tau = ring_iteration_time(job, 4, 2)
    assert tau == allreduce_iteration_time(job, 4, machines=2)
    assert placement_speed(job, 4, 0, tasks=tasks) == float(job.samples_per_iteration(4) / tau)
    assert placement_speed(job, 4, 0, tasks=tasks) < table_speed(job, 4, 0)  # NIC, not NVLink
    assert placement_speed(job, 4, 0, machines=2) == placement_speed(job, 4, 0, tasks=tasks)
    assert ring_iteration_time(job, 4, 2, sharing=2) > tau  # a shared NIC slows the ring


def test_ps_jobs_and_data_stages_keep_the_table_speed_when_spread():
    ps = make_job("p", "resnet50", 1e6, max_workers=8)
    piped = make_job("d", "resnet50", 1e6, arch="allreduce", pipeline=True, gpus_per_machine=4)
    spread = ((0, 1, 1), (1, 1, 1), (2, 1, 1), (3, 1, 1))
    assert placement_speed(ps, 4, 4, tasks=spread) == table_speed(ps, 4, 4)
    ring = tuple((m, 1, 0) for m in range(4))
    assert placement_speed(piped, 4, 0, tasks=ring) == table_speed(piped, 4, 0)


def test_the_slowest_gpu_type_sets_the_speed():
    job = make_job("p", "resnet50", 1e6, max_workers=8)
    types = ["v100", "k80"]
    tasks = ((0, 1, 1), (1, 1, 0))
    k80 = speed_ratio("resnet50", "k80", job.profile.device)
    assert type_factor(job, tasks, types) == k80 < 1.0
    assert type_factor(job, ((0, 1, 1), (1, 0, 0)), types) == 1.0  # PS-only machine: no worker
    assert type_factor(job, tasks, None) == 1.0
    v = placement_speed(job, 2, 1, tasks=tasks, machine_types=types)
    assert v == table_speed(job, 2, 1) * k80


def test_a_binding_uplink_uses_the_slower_links():
    cluster = Cluster.racks(racks=2, machines_per_rack=2, uplink_gbps=20)
    uplinks = Uplinks.of(cluster)
    assert uplinks is not None
    job = make_job("p", "resnet50", 1e6, max_workers=8)
    across = ((0, 1, 1), (2, 1, 0))  # a worker in the other rack than the PS
    dw, dp = uplinks.divisors(job, across)
    assert (dw, dp) != (1.0, 1.0)
    expected = link_speed(job, 2, 1, dw, dp, "wfbp", 2)
    assert placement_speed(job, 2, 1, tasks=across, uplinks=uplinks) == expected
    inside = ((0, 1, 1), (1, 1, 0))
    assert placement_speed(job, 2, 1, tasks=inside, uplinks=uplinks) == table_speed(job, 2, 1)


def test_a_ring_over_m_machines_is_the_ring_models_speed_packed_or_not():
    # The placement agents' ring_speed computed the ring model for every machine count, packed
    # included; the tables hold the packed ring's speed to the last bit, so both agree.
    for job in (_ring(), _ring(batch_mode="per_worker", per_worker_batch=32)):
        for w in (1, 3, 4, 8, 16):
            for machines in range(1, 6):
                m = max(1, min(machines, w))
                ring = float(
                    job.samples_per_iteration(w) / allreduce_iteration_time(job, w, machines=m)
                )
                assert placement_speed(job, w, 0, machines=m) == ring
                assert ring_speed(job, w, 0, machines, "wfbp") == ring
