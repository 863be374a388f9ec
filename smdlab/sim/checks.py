"""Checks of a policy's decision against the run, and of the jobs against the cluster.

Every check raises ``InvalidDecision`` (``CapacityExceeded`` for capacity) with one line naming
the policy, the time and what is wrong; nothing in the run changes before all checks pass.
"""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Sequence

import numpy as np

from smdlab.errors import Infeasible
from smdlab.model.job import Job
from smdlab.policies.base import Allocation, Decision, Placement
from smdlab.sim.engine import Engine
from smdlab.sim.errors import InvalidDecision
from smdlab.sim.running import Run
from smdlab.solve.instance import task_vectors
from smdlab.solve.placement import consolidated_tasks, first_fit

__all__ = [
    "as_allreduce",
    "breaks_gang",
    "check_allocation",
    "classify",
    "screen_unfit",
    "unchanged",
]


def as_allreduce(a: Allocation, job: Job) -> Allocation:
    """An all-reduce job's allocation with p = 0 and no PS tasks (policies written for PS jobs
    may give it PSs: their demand is zero, and the simulator drops them)."""
    if job.arch != "allreduce" or a.ps == 0 or not isinstance(a.placement, Placement):
        return a
    tasks = tuple((m, w, 0) for m, w, _ in a.placement.tasks if w)
    return dataclasses.replace(a, ps=0, placement=Placement(tasks))


def _is_int(x: object) -> bool:
    """An integer count (a bool is not one)."""
    return type(x) is int or (isinstance(x, (int, np.integer)) and not isinstance(x, bool))


def check_allocation(sim: Engine, a, job: Job) -> None:
    """Raise unless ``a`` gives ``job`` integer counts within its caps on a well-formed placement."""

    def where() -> str:  # built only for a message (checks run for every allocation)
        return f"policy {sim.policy_name!r} at t={sim.t:g}: allocation of job {a.job!r}"

    for field, value, low, cap in (
        ("workers", a.workers, 1, job.max_workers),
        ("ps", a.ps, 0 if job.arch == "allreduce" else 1, job.max_ps),
    ):
        if not _is_int(value) or not low <= value <= cap:
            raise InvalidDecision(
                f"{where()}: {field} must be an integer in [{low}, {cap}], got {value!r}"
            )
    acc = getattr(a, "accumulation", 1)
    if not _is_int(acc) or acc < 1:
        raise InvalidDecision(
            f"{where()}: accumulation (gradient-accumulation steps) must be an integer >= 1, "
            f"got {acc!r}"
        )
    if not isinstance(a.placement, Placement):
        raise InvalidDecision(
            f"{where()}: placement must be a Placement, got {type(a.placement).__name__}"
        )
    n_machines = sim.capacity.shape[0]
    for task in a.placement.tasks:
        if len(task) != 3:
            raise InvalidDecision(
                f"{where()}: placement tasks must be (machine, workers, ps), got {task!r}"
            )
        m, w, p = task
        ok_int = _is_int(m) and _is_int(w) and _is_int(p)
        if not ok_int or not 0 <= m < n_machines or w < 0 or p < 0:
            raise InvalidDecision(
                f"{where()}: placement task {task!r} must have a machine index in [0, {n_machines - 1}] "
                f"and workers, ps >= 0"
            )
    if job.gang and (a.workers, a.ps) != job.gang_allocation:
        raise InvalidDecision(
            f"{where()}: job {a.job!r} is a gang of {job.gang_allocation[0]} workers and "
            f"{job.gang_allocation[1]} PSs (all or nothing); the allocation gives {a.workers} and {a.ps}"
        )
    if (a.placement.workers, a.placement.ps) != (a.workers, a.ps):
        raise InvalidDecision(
            f"{where()}: placement holds {a.placement.workers} workers and {a.placement.ps} PSs, "
            f"the allocation says {a.workers} and {a.ps}"
        )


def classify(sim: Engine, d: Decision, where: str) -> tuple[list[str], list, list]:
    """(jobs to preempt, allocations that start jobs, allocations that resize running jobs),
    each allocation checked (``check_allocation``) against the execution mode and the job's state."""
    if not isinstance(d, Decision):
        raise InvalidDecision(f"{where}: decide() must return a Decision, got {type(d).__name__}")
    preempt = list(d.preempt)
    pset = set(preempt)
    if len(pset) != len(preempt):
        raise InvalidDecision(f"{where}: preempt lists a job twice: {preempt!r}")
    if preempt and sim.execution == "non_elastic":
        raise InvalidDecision(
            f"{where}: decision preempts {preempt[0]!r}, but execution is 'non_elastic' "
            f"(preempting needs 'preemptive' or 'elastic')"
        )
    for name in preempt:
        if name not in sim.running:
            raise InvalidDecision(f"{where}: preempt names {name!r}, which is not running")
    seen: set[str] = set()
    starts, resizes = [], []
    for a in d.allocations:
        if a.job in sim.index:
            a = as_allreduce(a, sim.jobs[sim.index[a.job]])
        if a.job in seen:
            raise InvalidDecision(f"{where}: job {a.job!r} has two allocations in one decision")
        seen.add(a.job)
        if a.job in sim.queued or a.job in pset:
            job = sim.jobs[sim.index[a.job]]
            starts.append(a)
        elif a.job in sim.running:
            if not sim.elastic:
                raise InvalidDecision(
                    f"{where}: allocation resizes running job {a.job!r}, but execution is "
                    f"{sim.execution!r} (resizing needs 'elastic')"
                )
            job = sim.running[a.job].job
            if job.gang:
                raise InvalidDecision(
                    f"{where}: allocation resizes running job {a.job!r}, a gang job (never resized)"
                )
            resizes.append(a)
        else:
            raise InvalidDecision(
                f"{where}: allocation names job {a.job!r}, which is {_job_state(sim, a.job)}"
            )
        check_allocation(sim, a, job)
        sim.alloc_job(a)  # validates the CPU/memory levels before anything changes
    return preempt, starts, resizes


def _job_state(sim: Engine, name: str) -> str:
    """What a job a decision may not name is: finished, not yet arrived or unknown."""
    if name not in sim.index:
        return "unknown"
    status = sim.records[sim.index[name]].status
    if status == "completed":
        return "finished"
    return "not yet arrived" if status == "pending" else "unknown"


def unchanged(r: Run, a) -> bool:
    """Whether allocation ``a`` keeps running job ``r``'s counts and per-machine tasks."""
    if (a.workers, a.ps) != (r.workers, r.ps):
        return False

    def per_machine(tasks) -> dict[int, tuple[int, int]]:
        out: dict[int, tuple[int, int]] = {}
        for m, w, p in tasks:
            w0, p0 = out.get(int(m), (0, 0))
            out[int(m)] = (w0 + int(w), p0 + int(p))
        return {m: wp for m, wp in out.items() if wp != (0, 0)}

    return per_machine(a.placement.tasks) == per_machine(r.placement.tasks)


def breaks_gang(sim: Engine, d: Decision) -> bool:
    """Whether ``d`` starts a gang job on less than its request or resizes a running one."""
    pre = d.preempt
    for a in d.allocations:
        i = sim.index.get(a.job) if isinstance(a, Allocation) else None
        if i is None:
            continue
        job = sim.jobs[i]
        if job.gang and (
            (a.workers, a.ps) != job.gang_allocation or (a.job in sim.running and a.job not in pre)
        ):
            return True
    return False


def _fits_empty(job: Job, capacity: np.ndarray, resources: Sequence[str]) -> bool:
    if job.gang:  # a gang runs on its whole request or not at all: that must fit the empty cluster
        w, p = job.gang_allocation
        wv, pv = task_vectors(job, resources)
        return consolidated_tasks(capacity, w, p, wv, pv) is not None
    return first_fit(job, 1, 1, capacity, resources) is not None


def screen_unfit(sim: Engine, unfit: str) -> list[int]:
    """Indices of jobs that can run at all; the rest are skipped (``unfit="skip"``) or raise."""
    # imported here: the co-location model loads SciPy's optimisers
    from smdlab.model.colocation import largest_gpu_memory, too_large_for_gpus

    ok: list[int] = []
    cache: dict = {}
    for i, j in enumerate(sim.jobs):
        wv, pv = task_vectors(j, sim.resources)
        key = (wv.tobytes(), pv.tobytes(), j.gang and j.gang_allocation)
        if key not in cache:
            cache[key] = _fits_empty(j, sim.capacity, sim.resources)
        mem_msg = None
        if cache[key]:
            # GPU memory: a job whose training state alone exceeds every GPU cannot run
            if "largest" not in cache:
                cache["largest"] = largest_gpu_memory(sim.cluster)
            mem_key = ("gpu_mem", id(j.profile))
            if mem_key not in cache:
                cache[mem_key] = too_large_for_gpus(j, sim.cluster, cache["largest"])
            if cache[mem_key] is None:
                ok.append(i)
                continue
            mem_msg = too_large_for_gpus(j, sim.cluster, cache["largest"])  # with its name
        if mem_msg is not None:
            msg = mem_msg
        elif j.gang:
            w, p = j.gang_allocation
            msg = (
                f"job {j.name!r} is a gang of {w} workers and {p} PSs (worker needs "
                f"{dict(j.worker_demand)}, PS needs {dict(j.ps_demand)}) that does not fit "
                f"the whole empty cluster"
            )
        else:
            msg = (
                f"job {j.name!r} fits on no machine even with 1 worker and 1 PS "
                f"(worker needs {dict(j.worker_demand)}, PS needs {dict(j.ps_demand)})"
            )
        if unfit == "raise":
            raise Infeasible(msg)
        warnings.warn(msg + "; skipped", stacklevel=3)
        sim.records[i].status = "skipped"
        sim.skipped.append(j.name)
    return ok
