"""The base scenario of the experiments: a batch of synthetic jobs on a homogeneous cluster, and its variants.

A sweep changes one thing of the base scenario and keeps the jobs' work fixed: the jobs are drawn
once per seed (``smdlab.workloads.synthetic`` at the base cluster and bandwidth, all arriving at
time 0), then resized (bandwidth), re-profiled (communication scale) or put on another cluster.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from smdlab.errors import check_int, check_positive
from smdlab.experiments.config import ExperimentConfig
from smdlab.model.cluster import Cluster
from smdlab.model.job import DEFAULT_PS_DEMAND, DEFAULT_WORKER_DEMAND, Job
from smdlab.workloads.synthetic import synthetic

CPU_PER_MACHINE = 64
MEM_GB_PER_MACHINE = 256


def base_cluster(
    config: ExperimentConfig, machines: int | None = None, task_bw_gbps: float | None = None
) -> Cluster:
    """``machines`` servers (default: the config's) whose NIC carries ``nic_tasks`` tasks at ``task_bw_gbps``."""
    m = check_int("machines", config.machines if machines is None else machines, 1)
    bw = check_positive(
        "task_bw_gbps", config.task_bw_gbps if task_bw_gbps is None else task_bw_gbps
    )
    return Cluster.homogeneous(
        m,
        gpu=config.gpus_per_machine,
        cpu=CPU_PER_MACHINE,
        mem_gb=MEM_GB_PER_MACHINE,
        bw_gbps=config.nic_tasks * bw,
    )


def _demands(bw_gbps: float) -> tuple[dict[str, float], dict[str, float]]:
    return {**DEFAULT_WORKER_DEMAND, "bw_gbps": bw_gbps}, {**DEFAULT_PS_DEMAND, "bw_gbps": bw_gbps}


def batch_jobs(config: ExperimentConfig, seed: int, n_jobs: int | None = None) -> list[Job]:
    """``n_jobs`` synthetic jobs (default: the config's), all arriving at time 0, drawn with ``seed``."""
    n = check_int("n_jobs", config.n_jobs if n_jobs is None else n_jobs, 1)
    uniform = config.demands == "uniform"
    wd, pd_ = _demands(config.task_bw_gbps) if uniform else (None, None)
    jobs = synthetic(
        n,
        base_cluster(config),
        seed=seed,
        gpu_mix=dict(config.gpu_mix),
        cap_factor=config.cap_factor,
        duration_median_s=config.duration_median_s,
        mode=config.mode,
        demands=config.demands,
        task_bw_gbps=config.task_bw_gbps,
        worker_demand=wd,
        ps_demand=pd_,
        pipeline=False,
    )
    return [j.replace(arrival=0.0) for j in jobs]


def with_bandwidth(jobs: Sequence[Job], bw_gbps: float) -> list[Job]:
    """The same jobs with every worker and PS reserving ``bw_gbps`` of NIC bandwidth."""
    check_positive("bw_gbps", bw_gbps)
    return [
        j.replace(
            worker_demand={**j.worker_demand, "bw_gbps": bw_gbps},
            ps_demand={**j.ps_demand, "bw_gbps": bw_gbps},
        )
        for j in jobs
    ]


def with_comm_scale(jobs: Sequence[Job], scale: float) -> list[Job]:
    """The same jobs with every layer's parameter (and gradient) bytes times ``scale``."""
    check_positive("scale", scale)
    return [j.replace(profile=j.profile.scaled(params=scale)) for j in jobs]


def comm_comp_ratio(job: Job) -> float:
    """Per-iteration push time over compute time (forward + backward) at 1 worker and 1 PS."""
    comm = job.profile.total_param_bytes * max(1.0 / job.worker_bw_bytes, 1.0 / job.ps_bw_bytes)
    batch = job.batch
    compute = (job.profile.forward_total_s + job.profile.backward_total_s) * batch
    return float(comm / compute)


def median_comm_comp_ratio(jobs: Sequence[Job]) -> float:
    """Median over ``jobs`` of ``comm_comp_ratio``."""
    return float(np.median([comm_comp_ratio(j) for j in jobs]))
