"""AutoCBA: GPUs, cache and remote IO chosen together to maximise welfare within a budget.

At each decision point every queued job may start at one of its GPU options (powers of two up to
its cap; a gang job only at its request) or wait, and every running job keeps running (its own
allocation, or in elastic execution any option). Datasets are cached whole or not at all. The
choice maximises the sum of the jobs' utilities of their normalised speeds (``utility``: linear,
sqrt or log, or ``mixed``: one of them per job) subject to the budget per hour (GPUs at
``gpu_price``, cache and remote bandwidth at the storage's prices), the cluster's GPUs, the
cache and the remote pool (``smdlab.solve.storage.autocba_solve``: greedy, refined by the 0/1
program on small decisions). Placement is consolidated, shrinking a job that does not fit.
Execution: elastic by default (autoscaling: every event re-chooses the running jobs' GPU
options too; a running job is never stopped), or non-elastic (a running job keeps its
allocation). The remote pool binds only with ``pool_bound`` (default off: a job may start on
what the pool has left and share it, IO-bound, as the baselines' jobs do).
"""

from __future__ import annotations

import math

import numpy as np

from smdlab.errors import InvalidInput, check_bool, check_choice, check_positive
from smdlab.model.job import Job
from smdlab.model.placement_speed import table_speed
from smdlab.model.storage import StorageAllocation, remote_need_gbps
from smdlab.policies.base import ClusterState, Decision, Policy, QueuedJob, RunningJob
from smdlab.policies.storage._common import reference_speed, running_after, utility_kind
from smdlab.policies.storage.allocators import fair_bandwidth
from smdlab.policies.toolkit import Target, assemble
from smdlab.solve.storage import UTILITIES, AutoCBAProblem, autocba_solve, utility

__all__ = ["AutoCBA"]


def gpu_options(job: Job) -> list[tuple[int, int]]:
    """(workers, PSs) a job may start at: its request for a gang job, else powers of two up to
    ``max_workers`` (and the cap itself), each with as many PSs up to ``max_ps``."""
    if job.gang:
        return [job.gang_allocation]
    ws = sorted({*(2**i for i in range(int(math.log2(job.max_workers)) + 1)), job.max_workers})
    return [(w, 0 if job.is_allreduce else min(w, job.max_ps)) for w in ws]


class AutoCBA(Policy):
    """Welfare-maximising GPUs, cache and remote IO within a budget per hour."""

    name = "autocba"
    execution = "elastic"
    executions = ("non_elastic", "elastic")
    decide_on_completion = True

    def __init__(
        self,
        budget: float | None = None,
        gpu_price: float = 1.0,
        utility: str = "mixed",
        refine_jobs: int = 40,
        pool_bound: bool = False,
    ) -> None:
        self.budget = math.inf if budget is None else check_positive("budget", budget)
        self.gpu_price = check_positive("gpu_price", gpu_price, allow_zero=True)
        self.utility = check_choice("utility", utility, (*UTILITIES, "mixed"))
        self.refine_jobs = int(refine_jobs)
        self.pool_bound = check_bool("pool_bound", pool_bound)
        self.last_seconds = 0.0  # solver seconds of the last decision

    def problem(self, state: ClusterState) -> tuple[AutoCBAProblem, list]:
        """The decision's AutoCBA problem and, per job, (job, options, running?)."""
        view = state.storage
        storage = None if view is None else view.storage
        names: list[str] = []
        sizes: list[float] = []
        entries = []
        gpus, value, remote, dataset, required = [], [], [], [], []
        elastic = state.execution == "elastic"
        pending: list[RunningJob | QueuedJob] = [*state.running, *state.queued]
        for entry in pending:
            job = entry.job
            running = isinstance(entry, RunningJob)
            if isinstance(entry, RunningJob) and not elastic:
                opts = [(entry.workers, entry.ps)]
            else:
                opts = gpu_options(job)
            speeds = np.array(
                [
                    view.speeds[job.name]
                    if running and not elastic and view is not None and job.name in view.speeds
                    else table_speed(job, w, max(p, 1), state.mode)
                    for w, p in opts
                ]
            )
            ref = reference_speed(job, state.mode)
            kind = utility_kind(job, self.utility)
            d = None if storage is None else storage.dataset_of(job.name)
            k = -1
            if d is not None:
                if d.name not in names:
                    names.append(d.name)
                    sizes.append(d.size_gb)
                k = names.index(d.name)
            entries.append((job, opts, running))
            gpus.append(
                np.array(
                    [
                        w * job.worker_demand.get("gpu", 0.0) + p * job.ps_demand.get("gpu", 0.0)
                        for w, p in opts
                    ]
                )
            )
            value.append(job.weight * np.asarray(utility(kind, speeds / ref)))
            remote.append(
                np.array([0.0 if d is None else remote_need_gbps(d, v, 0.0) for v in speeds])
            )
            dataset.append(k)
            required.append(running)
        gpu_cap = float(np.asarray(state.free).sum(axis=0)[state.cluster.resources.index("gpu")])
        gpu_cap += sum(float(g[0]) for g, e in zip(gpus, entries) if e[2])
        cache_cap = 0.0 if storage is None else storage.cache_gb
        if math.isinf(cache_cap):
            cache_cap = float(sum(sizes))
        problem = AutoCBAProblem(
            tuple(gpus), tuple(value), tuple(remote), np.array(dataset, dtype=np.int64),
            np.array(required, dtype=bool), np.array(sizes, dtype=float), self.gpu_price,
            0.0 if storage is None else storage.cache_price,
            0.0 if storage is None else storage.remote_price,
            self.budget, gpu_cap, cache_cap, math.inf if storage is None or not self.pool_bound else storage.remote_gbps,
            not state.running and bool(state.queued),
        )  # fmt: skip
        return problem, [(e, names) for e in entries]

    def decide(self, state: ClusterState) -> Decision:
        """Solve the decision's AutoCBA problem; place its GPU choices; attach its cache and IO."""
        problem, entries = self.problem(state)
        if not entries:
            return Decision()
        try:
            sol = autocba_solve(problem, refine_jobs=self.refine_jobs)
        except InvalidInput as exc:
            raise InvalidInput(f"{exc} (at t={state.time:g})") from None
        self.last_seconds = sol.seconds
        targets = []
        for ((job, opts, _), _), o in zip(entries, sol.choice):
            if o >= 0:
                targets.append(Target(job, *opts[o]))
        decision = assemble(state, targets, preempt_untargeted=False, note=sol.method)
        if state.storage is None:
            return decision
        storage = state.storage.storage
        names = entries[0][1]
        cache = {k: storage.datasets[k].size_gb for k, on in zip(names, sol.cached) if on}
        jobs = running_after(state, decision)
        needs = {}
        for name, io in jobs.items():
            d = storage.dataset_of(name)
            if d is not None:
                needs[name] = remote_need_gbps(d, io.speed, cache.get(d.name, 0.0))
        return Decision(
            decision.allocations,
            decision.preempt,
            decision.note,
            decision.wake_at,
            StorageAllocation(cache, fair_bandwidth(storage.remote_gbps, needs)),
        )
