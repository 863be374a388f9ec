"""SMD: outer job selection plus inner sum-of-ratios allocation at every decision point."""

from __future__ import annotations

from bisect import bisect_left, insort
from operator import attrgetter, itemgetter
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from smdlab.errors import check_choice
from smdlab.model.job import Job
from smdlab.policies.base import (
    DEFAULT_SLOT_S,
    Allocation,
    ClusterState,
    Decision,
    Placement,
    Policy,
    QueuedJob,
    RunningJob,
)
from smdlab.policies.toolkit import (
    queued_jobs,
    with_remaining,
    work_conserving_fill,
)
from smdlab.solve.instance import InstanceRows, demand_kinds, demand_matrices, demand_row
from smdlab.solve.placement import TOL, first_fit_tasks

if TYPE_CHECKING:
    from smdlab.solve.api import Method, PooledSolve
    from smdlab.solve.solution import Solution


class SMD(Policy):
    """SMD, the reconstructed model of Yu, Wu, Ji, Liu (INFOCOM 2021), as an online policy.

    What it follows: docs/solver.md (SMD, Placement). At a decision point the jobs to allocate are
    handed to ``smdlab.solve.solve(..., method="smd")``: outer job selection (by default the jobs
    the objective of (P) starts, waiting charge included, so a job may wait for a larger
    configuration even when it fits; ``selection="smith"`` for the specification's Smith's-rule
    knapsack), then Jong's sum-of-ratios iteration with a
    multiple-choice multi-dimensional knapsack per step, then placement on the machines by
    first-fit decreasing with shrinking. Each job's work is its remaining samples;
    durations come from the exact layered model in the state's overlap mode.

    Execution (docs/simulator.md): natural mode ``elastic`` with ``slot_s`` = 1,200 s, as the
    schedulers of the authors' group run: Optimus (Peng et al., EuroSys 2018) and DL2 (Peng et
    al., TPDS 2021) re-decide every job's workers and PSs each time slot, and DL2's public
    simulator (pengyanghua/DL2, ``TS_DURATION = 1200.0``) uses 1,200 s slots.

    - Non-elastic (a controlled-comparison mode): the queued jobs share the free capacity of each
      machine; running jobs keep their allocations.
    - Elastic: the queued and the running jobs (with their remaining work) are re-solved over the
      free capacity plus what the running jobs hold. A running job whose new allocation equals its
      current one keeps its placement; the others are placed again (solve's placement stage, on
      the capacity the kept jobs leave); a running job the solver leaves out, or that placement
      cannot hold even at (1, 1), is preempted (assumed: the paper's online mode is not specified
      beyond re-solving; smdlab lets the solver's selection decide). Then the shared
      work-conserving fill (``toolkit.work_conserving_fill``) gives GPUs the solution leaves idle
      to jobs that speed up with them, so no usable GPU stays idle (work conservation).
    - When no queued job's (1, 1) fits the free machines (a worker and a PS, on one machine or
      two), the decision is empty without a solve (its placement could start nothing).
    - A pooled cluster (no machines) is one virtual machine, index 0.

    Options are passed to ``solve`` (``knapsack``, ``selection``, ``tol``, ``max_iter``, ``backend``,
    ``time_limit``, ``bound``). The LP lower bound is off by default (``bound=False``): the policy
    needs only the allocation, and the bound costs one more LP per decision. Results from this
    policy are results of "the reconstructed SMD model".
    """

    name = "smd"
    method: Method = "smd"
    execution = "elastic"
    executions = ("non_elastic", "elastic")
    slot_s = DEFAULT_SLOT_S
    _defaults: ClassVar[dict[str, Any]] = {"bound": False}

    def __init__(self, **options: Any):
        from smdlab.solve import OPTIONS, SOLVE_OPTIONS

        allowed = SOLVE_OPTIONS[self.method]
        for key in options:
            check_choice(f"option of policy {self.name!r}", key, sorted(allowed))
        self.options = {k: v for k, v in self._defaults.items() if k in allowed} | options
        OPTIONS[self.method](**self.options)  # a bad value fails here, not at the first decision
        self.last_solution = None
        self._rows = InstanceRows()  # the active jobs' rows of (P), kept between decisions
        self._tasks = _TaskRows()

    @property
    def last_solution(self) -> Solution | None:
        """The latest decision's Solution (inspection; an elastic decision's is built when read)."""
        from smdlab.solve.api import PooledSolve

        last = self._last
        return last.solution if isinstance(last, PooledSolve) else last

    @last_solution.setter
    def last_solution(self, value) -> None:
        self._last = value

    def reset(self) -> None:
        """Forget the rows kept for the previous run's jobs."""
        super().reset()
        self._rows = InstanceRows()
        self._tasks = _TaskRows()

    def _solve(
        self,
        jobs: list[Job],
        state: ClusterState,
        free: np.ndarray,
        place: bool,
        work: list[float] | None = None,
    ):
        from smdlab.solve import solve, solve_pooled

        cluster = state.cluster
        arg = free if cluster.has_machines else free.sum(axis=0)
        sol: Solution | PooledSolve
        if place and cluster.has_machines:
            sol = solve(
                jobs, cluster, self.method, mode=state.mode, place=True, free=arg, work=work,
                **self.options,
            )  # fmt: skip
        else:  # the pooled allocation only: from the kept rows, without the Solution's report
            options = dict(self.options)
            value_term = options.pop("value_term", None)
            capacity = arg.sum(axis=0) if arg.ndim == 2 else arg
            inst = self._rows.build(jobs, cluster, capacity, state.mode, work, value_term)
            sol = solve_pooled(inst, cluster, self.method, **options)
        self.last_solution = sol
        return sol

    def _placements(
        self,
        jobs: list[Job],
        alloc: list[tuple[int, int]],
        state: ClusterState,
        free: np.ndarray,
        sol=None,
    ):
        """Per job (workers, ps, Placement) or None, placing ``alloc`` on ``free`` (or taking solve's placement)."""
        cluster = state.cluster
        if not cluster.has_machines:  # one virtual machine: the pooled allocation fits it
            return [(w, p, Placement(((0, w, p),))) if w > 0 else None for w, p in alloc]
        if sol is not None and sol.placement is not None:
            pr = sol.placement
        else:
            from smdlab.solve import place

            pr = place(jobs, alloc, cluster, free, state.mode)
        return [(w, p, pl) if w > 0 else None for w, p, pl in zip(pr.workers, pr.ps, pr.placements)]

    @staticmethod
    def _any_unit_fits(jobs: list[Job], state: ClusterState, free: np.ndarray) -> bool:
        """Whether some job's (1 worker, 1 PS) fits the free capacity (checked once per distinct demand)."""
        alpha, gamma = demand_matrices(jobs, state.cluster)
        pooled = free.sum(axis=0) + TOL
        ok = np.all(alpha + gamma <= pooled, axis=1)
        if not ok.any():
            return False
        if not state.cluster.has_machines:
            return True
        kinds = demand_kinds(alpha, gamma)
        _, first = np.unique(kinds, return_index=True)
        return any(
            first_fit_tasks(free, 1, 1, alpha[i], gamma[i]) is not None
            for i in first[ok[first]].tolist()
        )

    def decide(self, state: ClusterState) -> Decision:
        """Allocate (and place) by the reconstructed SMD model's solver."""
        if (
            state.execution == "elastic"
        ):  # then no GPU a job could use stays idle (work-conserving fill)
            return work_conserving_fill(state, self._decide_elastic(state))
        free = np.asarray(state.free, dtype=float)
        queued = queued_jobs(state)
        # When no queued job's (1, 1) fits the free machines (one worker and one PS, on one machine
        # or two; first fit finds such a placement whenever one exists) the solver's placement could
        # start nothing: skip the solve (arrivals on a full or fragmented cluster). Otherwise every
        # queued job enters the instance, as the deferral horizon and selection depend on all of them.
        jobs = [with_remaining(q) for q in queued]
        if not jobs or not self._any_unit_fits(jobs, state, free):
            return Decision()
        sol = self._solve(jobs, state, free, place=True)
        placed = self._placements(jobs, list(zip(sol.workers, sol.ps)), state, free, sol)
        allocations = tuple(Allocation(j.name, *x) for j, x in zip(jobs, placed) if x is not None)
        return Decision(allocations, note=sol.note)

    def _decide_elastic(self, state: ClusterState) -> Decision:
        tasks = self._tasks
        active = [r for r in tasks.by_arrival(state.running) if r.remaining > 0]
        entries: list[RunningJob | QueuedJob] = [*active, *queued_jobs(state)]
        if not entries:
            return Decision()
        # What each active job holds, task by task: (machine, resources) rows, summed with add.at
        # (one pass over the tasks, not a machines x resources array per job).
        state_free = np.asarray(state.free, dtype=float)
        machine, use, owner, held = tasks.rows(active, state.cluster.resources, state_free.shape)
        free_all = state_free + held
        # Each job's remaining work goes to the solver as ``work`` (no copies of the jobs).
        sol = self._solve(
            list(map(_job, entries)), state, free_all, False, list(map(_remaining, entries))
        )
        sw, sp = sol.workers, sol.ps
        n_act = len(active)
        # running jobs whose new allocation equals what they hold keep it (``toolkit.unchanged``)
        same = (np.fromiter(map(_workers, active), int, n_act) == np.asarray(sw[:n_act])) & (
            np.fromiter(map(_ps, active), int, n_act) == np.asarray(sp[:n_act])
        )
        if same.all():
            kept = held  # the same sum, in the same order
        else:
            kept = np.zeros_like(held)
            sel = same[owner]
            np.add.at(kept, machine[sel], use[sel])
        free = free_all - kept
        again = np.asarray(sw) > 0  # jobs to place: started, and not a running job kept as it is
        again[:n_act] &= ~same
        todo = [
            (with_remaining(entries[i]), (sw[i], sp[i])) for i in np.flatnonzero(again).tolist()
        ]
        placed = (
            self._placements([j for j, _ in todo], [a for _, a in todo], state, free)
            if todo
            else []
        )
        allocations = tuple(
            Allocation(j.name, *x) for (j, _), x in zip(todo, placed) if x is not None
        )
        started = {a.job for a in allocations}
        preempt = tuple(
            r.job.name
            for r in (active[i] for i in np.flatnonzero(~same).tolist())
            if r.job.name not in started
        )
        return Decision(allocations, preempt, note=sol.note)


class _TaskRows:
    """The running jobs in arrival order and their placed task groups, kept while the same jobs run where they ran.

    Between two decisions a few jobs start, end or move: the order is updated for those (by
    bisection), and each other job's task rows are reused (looked up by its job and placement
    objects, which the simulator keeps while a job runs unchanged).
    """

    def __init__(self) -> None:
        self._memo: dict[
            tuple[int, int], tuple
        ] = {}  # (id job, id placement) -> rows, job, placement
        self._ids: set[int] = set()  # the jobs of the last call (ids; ``_keys`` keeps them alive)
        self._keys: list[tuple[float, str, int]] = []  # (arrival, name, id) of those jobs, sorted
        self._jobs: dict[int, Job] = {}
        self._res: tuple[str, ...] = ()  # the resources the memo's rows are over

    def by_arrival(self, running) -> list[RunningJob]:
        """The running jobs in arrival order, ties by name (``toolkit.running_by_arrival``)."""
        items = list(running)
        ids = list(map(id, map(_job, items)))
        now = set(ids)
        if now != self._ids:
            keys, jobs = self._keys, self._jobs
            for gone in self._ids - now:
                job = jobs.pop(gone)
                del keys[bisect_left(keys, (job.arrival, job.name, gone))]
            for r in items:
                if id(r.job) not in jobs:
                    jobs[id(r.job)] = r.job
                    insort(keys, (r.job.arrival, r.job.name, id(r.job)))
            self._ids = now
        return list(map(dict(zip(ids, items)).__getitem__, map(_third, self._keys)))

    def rows(
        self, runs: list[RunningJob], resources, shape: tuple[int, int]
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(machine, use, owner) per placed task group of ``runs`` (its machine, the resources it holds, the run's index), and their sum per machine."""
        res = tuple(resources)
        K = len(res)
        if res != self._res:
            self._res, self._memo = res, {}
        keys = list(zip(map(id, map(_job, runs)), map(id, map(_placement, runs))))
        hits: list[Any] = list(map(self._memo.get, keys))
        for i in [i for i, h in enumerate(hits) if h is None] if None in hits else ():
            r = runs[i]
            row = demand_row(r.job, res)
            t = np.array(r.placement.tasks, dtype=int).reshape(-1, 3)
            machine, use = t[:, 0], t[:, 1:2] * row[:K] + t[:, 2:3] * row[K:]
            machine.setflags(write=False)
            use.setflags(write=False)
            hits[i] = (machine, use, r.job, r.placement)  # the objects keep their ids unique
        self._memo = dict(zip(keys, hits))  # jobs that ended or moved are forgotten
        held = np.zeros(shape)
        machines = list(map(_first, hits))
        counts = list(map(len, machines))
        if not sum(counts):
            return np.zeros(0, dtype=int), np.zeros((0, K)), np.zeros(0, dtype=int), held
        machine = np.concatenate(machines)
        use = np.concatenate(list(map(_second, hits)))
        np.add.at(held, machine, use)
        return machine, use, np.repeat(np.arange(len(runs)), counts), held


_job = attrgetter("job")
_placement = attrgetter("placement")
_first = itemgetter(0)
_second = itemgetter(1)
_third = itemgetter(2)
_workers = attrgetter("workers")
_ps = attrgetter("ps")
_remaining = attrgetter("remaining")
