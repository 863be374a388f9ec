"""The speed of a job on a placement: the timing tables, corrected for where its tasks sit.

The timing tables (``smdlab.model.timing.speed_table``) hold a job's speed at (workers, PSs) with
every task on its own NIC share and an all-reduce ring packed on the fewest machines
(``smdlab.model.allreduce.packed_machines``). A placement changes that in three ways:

1. rack uplinks: when the placement's path crosses a rack uplink slower than the NIC shares it
   carries (``smdlab.model.traffic.Uplinks.divisors``), the layered model runs with those slower
   links (``smdlab.model.timing.link_speed``);
2. otherwise, ring spread: an all-reduce ring without a data stage that spans another number of
   machines than the packed ring runs at the ring model's speed over the machines it spans
   (``ring_iteration_time``); every other job keeps its table speed;
3. GPU types: either speed times the slowest worker's GPU-type ratio to the profile's device
   (``smdlab.model.gpu_types.speed_ratio``; synchronous training waits for the slowest worker).

A job with a measured throughput (``Job.throughput``, ``smdlab.model.measured_speed``) keeps
its table speed on every placement (its profile has no communication term).

The simulator times every running job with ``placement_speed``; the placement agents and SJF-BCO
estimate speeds and ring times with the same functions.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from smdlab.model.allreduce import allreduce_iteration_time, packed_machines
from smdlab.model.gpu_types import speed_ratio
from smdlab.model.job import Job
from smdlab.model.timing import job_speeds, link_speed
from smdlab.model.traffic import Uplinks

__all__ = [
    "placement_speed",
    "ring_iteration_time",
    "table_speed",
    "type_factor",
    "worker_machines",
]

Tasks = Iterable[tuple[int, int, int]]  # (machine, workers, PSs) per machine


def worker_machines(tasks: Tasks) -> list[int]:
    """The machines that hold at least one of the placement's workers, in ascending order."""
    return sorted({m for m, w, _ in tasks if w > 0})


def table_speed(job: Job, workers: int, ps: int, mode: str = "wfbp") -> float:
    """Speed (samples/s) of the timing tables at (workers, ps): packed, on the job's NIC shares."""
    return float(job_speeds(job, mode)[workers - 1, max(ps, 1) - 1])


def ring_iteration_time(
    job: Job, workers: int, machines: int, mode: str = "wfbp", sharing: int = 1
) -> float:
    """Iteration time (s) of an all-reduce ring of ``workers`` over ``machines`` machines whose
    busiest NIC carries ``sharing`` rings (``smdlab.model.allreduce.allreduce_iteration_time``)."""
    return allreduce_iteration_time(job, workers, machines=machines, sharing=sharing, mode=mode)


def type_factor(job: Job, tasks: Tasks, machine_types: Sequence[str] | None) -> float:
    """Speed on the placement's GPU types relative to the job's profile device: the slowest
    worker's ratio (``smdlab.model.gpu_types.speed_ratio``); 1 on an untyped cluster (None)."""
    if machine_types is None:
        return 1.0
    types = {machine_types[m] for m, w, _ in tasks if w > 0}
    net, dev = job.profile.network, job.profile.device
    return min((speed_ratio(net, t, dev) for t in types), default=1.0)


def placement_speed(
    job: Job,
    workers: int,
    ps: int,
    mode: str = "wfbp",
    *,
    tasks: Sequence[tuple[int, int, int]] | None = None,
    machines: int | None = None,
    uplinks: Uplinks | None = None,
    machine_types: Sequence[str] | None = None,
) -> float:
    """Speed (samples/s) of ``job`` at (workers, ps) placed as ``tasks`` (the module docstring).

    tasks: (machine, workers, PSs) per machine; None: packed, unless ``machines`` says how many
    machines the workers span (for callers that know only the count). uplinks: the cluster's rack
    uplinks (``Uplinks.of``; None: flat). machine_types: GPU type per machine (None: untyped).
    Uplinks and GPU types need ``tasks``.
    """
    if job.throughput is not None:  # measured job model: its table, wherever it sits
        speed = table_speed(job, workers, ps, mode)
        return speed if tasks is None else speed * type_factor(job, tasks, machine_types)
    if tasks is not None:
        machines = len(worker_machines(tasks))
        if uplinks is not None:
            dw, dp = uplinks.divisors(job, tasks)
            if dw != 1.0 or dp != 1.0:
                v = link_speed(job, workers, ps, dw, dp, mode, machines)
                return v * type_factor(job, tasks, machine_types)
    if (
        machines is not None
        and job.arch == "allreduce"
        and job.pipeline is None
        and machines != int(packed_machines(job, workers))
    ):
        tau = ring_iteration_time(job, workers, machines, mode)
        speed = float(job.samples_per_iteration(workers) / tau)
    else:
        speed = table_speed(job, workers, ps, mode)
    if tasks is None:
        return speed
    return speed * type_factor(job, tasks, machine_types)
