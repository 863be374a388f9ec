"""SMD: outer job selection plus inner sum-of-ratios allocation at every decision point."""

from __future__ import annotations

from bisect import bisect_left, insort
from collections.abc import Callable
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
    RunningJob,
)
from smdlab.policies.toolkit import (
    queued_jobs,
    with_remaining,
    work_conserving_fill,
)
from smdlab.solve.instance import (
    InstanceRows,
    demand_kinds,
    demand_matrices,
    demand_row,
    fastest_configurations,
)
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
        self._runs = _Runs()
        self._fast: dict[tuple, tuple] = {}  # (id job, mode, resources) -> ``_fastest``

    @property
    def last_solution(self) -> Solution | None:
        """The latest decision's Solution (inspection; an elastic decision's is built when read)."""
        from smdlab.solve.api import PooledSolve

        last = self._last
        return last.solution if isinstance(last, (PooledSolve, _Deferred)) else last

    @last_solution.setter
    def last_solution(self, value) -> None:
        self._last = value

    def reset(self) -> None:
        """Forget the rows kept for the previous run's jobs."""
        super().reset()
        self._rows = InstanceRows()
        self._tasks = _TaskRows()
        self._runs = _Runs()
        self._fast = {}

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

    def _slack(self, runs: _Runs, act, queued, jobs, work, state, free_all):
        """SMD's allocation when its slack rule gives every job its fastest configuration
        (``smdlab.solve.smd.takes_fastest``), from the kept rows without building (P); else None.
        """
        if (
            self.method != "smd"
            or type(self)._solve is not SMD._solve  # a subclass that changes (P) solves it
            or "value_term" in self.options
            or len(queued) > _SLACK_QUEUE
        ):
            return None
        fast = runs.fastest(act)
        if fast is None:
            return None
        fw, fp, use = fast
        if queued:
            more = [self._fastest(q.job, state) for q in queued]
            if not all(x[3] for x in more):  # amounts whose sums round: (P) decides
                return None
            fw = np.concatenate([fw, [x[0] for x in more]])
            fp = np.concatenate([fp, [x[1] for x in more]])
            use = use + sum(x[2] for x in more)
        from smdlab.solve.smd import takes_fastest  # the solver's modules load on first use

        if not takes_fastest(len(jobs), use, free_all.sum(axis=0)):  # solve's capacity
            return None
        sol = _Slack(fw, fp)
        self.last_solution = _Deferred(self, jobs, state, free_all, work)
        return sol

    def _fastest(self, job: Job, state: ClusterState) -> tuple:
        """(fastest workers, PSs, their demand, whether its amounts sum exactly) of a job (kept)."""
        key = (id(job), state.mode, state.cluster.resources)
        hit = self._fast.get(key)
        if hit is None:
            if len(self._fast) >= 4096:
                self._fast.clear()
            w, p, use = _fastest_use(job, tuple(state.cluster.resources), state.mode)
            hit = self._fast[key] = (w, p, use, _dyadic(use), job)  # the job keeps its id
        return hit

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
        else:  # the solver's allocation of distinct jobs on a free capacity >= 0: checked already
            from smdlab.solve.shrink_placement import place_checked

            pairs = np.array(alloc, dtype=int).reshape(-1, 2)
            pr = place_checked(tuple(jobs), pairs, cluster, free, state.mode)
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
        if state.execution == "elastic":
            return self._decide_elastic(state)
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
        """The elastic decision, then the work-conserving fill (no GPU a job could use stays idle)."""
        view = state.running
        runs = self._runs if _is_view(view) else None
        queued = queued_jobs(state)
        if runs is not None:  # the simulator's runs: kept as arrays, refreshed where they changed
            runs.sync(view, state, lambda job: self._fastest(job, state))
            act, rem = runs.active(view)
            jobs_act = runs.jobs_of(act)
            held_wp = runs.counts[act, :2]
            held = runs.held(act, np.shape(state.free))
        else:
            active = [r for r in self._tasks.by_arrival(view) if r.remaining > 0]
            jobs_act = list(map(_job, active))
            rem = np.array(list(map(_remaining, active)), dtype=float)
            held_wp = np.array([(r.workers, r.ps) for r in active], dtype=int).reshape(-1, 2)
            # what each active job holds, task by task: (machine, resources) rows summed with add.at
            machine, use, owner, held = self._tasks.rows(
                active, state.cluster.resources, np.shape(state.free)
            )
        if not jobs_act and not queued:
            return work_conserving_fill(state, Decision())
        n_act = len(jobs_act)
        rem_act: list[float] = rem.tolist()
        free_all = np.asarray(state.free, dtype=float) + held
        # Each job's remaining work goes to the solver as ``work`` (no copies of the jobs).
        jobs = [*jobs_act, *map(_job, queued)]
        work = [*rem_act, *map(_remaining, queued)]
        sol = None if runs is None else self._slack(runs, act, queued, jobs, work, state, free_all)
        if sol is None:
            sol = self._solve(jobs, state, free_all, False, work)
        if isinstance(sol, _Slack):
            sw, sp = sol.w, sol.p
        else:
            sw, sp = np.asarray(sol.workers), np.asarray(sol.ps)
        # running jobs whose new allocation equals what they hold keep it (``toolkit.unchanged``)
        same = (held_wp[:, 0] == sw[:n_act]) & (held_wp[:, 1] == sp[:n_act])
        if same.all():
            kept = held  # the same sum, in the same order
        elif runs is not None:
            kept = runs.kept(act, same, held)
        else:
            kept = np.zeros_like(held)
            sel = same[owner]
            np.add.at(kept, machine[sel], use[sel])
        free = free_all - kept
        again = sw > 0  # jobs to place: started, and not a running job kept as it is
        again[:n_act] &= ~same
        todo = again.nonzero()[0].tolist()
        jobs_todo = [
            _at(jobs_act[i], rem_act[i]) if i < n_act else with_remaining(queued[i - n_act])
            for i in todo
        ]
        placed = (
            self._placements(jobs_todo, [(int(sw[i]), int(sp[i])) for i in todo], state, free)
            if todo
            else []
        )
        allocations = tuple(
            Allocation(j.name, *x) for j, x in zip(jobs_todo, placed) if x is not None
        )
        started = {a.job for a in allocations}
        moved = (~same).nonzero()[0].tolist()
        preempt = tuple(jobs_act[i].name for i in moved if jobs_act[i].name not in started)
        decision = Decision(allocations, preempt, note=sol.note)
        if runs is None:
            return work_conserving_fill(state, decision)
        # the fill grows only jobs below their worker caps or named by the decision: read those
        return work_conserving_fill(state, decision, running=runs.growable(act[moved], view))


def _at(job: Job, remaining: float) -> Job:
    """``job`` with ``samples`` set to ``remaining`` (``toolkit.with_remaining``)."""
    return job if remaining == job.samples else job.replace(samples=remaining)


def _is_view(running) -> bool:
    """Whether ``running`` is the simulator's view of its runs (``smdlab.sim.running.RunningView``,
    read by what it offers: ``runs``, ``source``, ``remaining_at``, ``running_job``; the
    simulator's layer is above the policies')."""
    return callable(getattr(running, "running_job", None))


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


class _Runs:
    """The simulator's running jobs as arrays kept between decisions, refreshed where they changed.

    Each run (``smdlab.sim.running.Run``) is read once per version: its job, (workers, PSs, worker
    cap), what ``remaining_at`` needs, and its placed task rows (reused while the job keeps its
    placement object) go to a slot; the slots are kept in arrival order (ties by name, updated by
    bisection) and in the simulator's order. A decision then costs a pass over the versions, a
    gather of arrays and the rows of the jobs that changed.
    """

    def __init__(self) -> None:
        self._clear(None, ())

    def _clear(self, source: object, res: tuple[str, ...], mode: str = "") -> None:
        self._source = source  # the simulation the slots belong to
        self._res = res
        self._mode = mode
        # per slot: the fastest configuration (workers, PSs) and its demand; their sum over slots
        self._fast = np.zeros((0, 2), dtype=int)
        self._fast_use = np.zeros((0, len(res)))
        self._fast_sum = np.zeros(len(res))
        self._vers: list[int] = []  # the runs' versions in the simulator's order, at the last sync
        self._slot: dict[int, int] = {}  # version -> slot
        self._unused: list[int] = []
        self._run: list[Any] = []  # per slot: the run (alive while its version is current)
        self._job: list[Any] = []
        self._tasks: list[Any] = []  # per slot: (machine, use) of its placed task groups
        self._keys: list[tuple[float, str, int]] = []  # (arrival, name, slot), sorted
        self._num = np.zeros((0, 3))  # per slot: rem0, speed, resume
        self.counts = np.zeros((0, 3), dtype=int)  # per slot: workers, PSs, worker cap
        self._order = np.zeros(0, dtype=int)  # the slots in arrival order
        # What all slots hold per machine, kept by adding and subtracting the rows that change.
        # It is exact while every amount is a multiple of 2**-10 below 2**30 and every total
        # below 2**40 (each partial sum is then a float), so it equals any other order's sum;
        # after one amount or total outside that it is never used again (``rows`` instead).
        self._held: np.ndarray | None = None
        self._exact = True
        self._below: set[int] = set()  # the slots below their worker caps
        self._version: list[int] = []  # per slot: its run's version
        self._last: tuple[bytes, tuple] | None = None  # the last ``rows`` call's slots and result

    def sync(self, view, state: ClusterState, fastest: Callable[[Job], tuple]) -> None:
        """Read the runs of ``view`` (``state.running``) whose versions are new; forget the others' old versions.

        fastest: a job's (workers, PSs, demand, exact) at its fastest configuration (``SMD._fastest``).
        """
        res, mode, shape = tuple(state.cluster.resources), state.mode, np.shape(state.free)
        if (
            view.source is not self._source
            or res != self._res
            or mode != self._mode
            or self._held is None
            or self._held.shape != shape
        ):
            self._clear(view.source, res, mode)
            self._held = np.zeros(shape)
        runs = view.runs
        vers = list(map(_version, runs))
        if vers == self._vers:
            return
        slot, keys = self._slot, self._keys
        now = set(vers)
        gone = slot.keys() - now
        new = now.difference(slot)
        # the rows of a job whose run changed but not its placement (id job, id placement)
        reuse: dict[tuple[int, int], Any] = {}
        held = self._held
        for v in gone:
            s = slot.pop(v)
            r = self._run[s]
            del keys[bisect_left(keys, (r.job.arrival, r.job.name, s))]
            rows = self._tasks[s]
            reuse[(id(r.job), id(r.placement))] = rows
            np.subtract.at(held, rows[0], rows[1])
            self._fast_sum -= self._fast_use[s]
            self._run[s] = self._job[s] = self._tasks[s] = None
            self._below.discard(s)
            self._unused.append(s)
        if new:
            self._grow(len(new))
            by_version = dict(zip(vers, runs))
            K = len(res)
            for v in sorted(new):
                r = by_version[v]
                s = self._unused.pop()
                slot[v] = s
                job = r.job
                self._run[s], self._job[s] = r, job
                self._num[s] = (r.rem0, r.speed, r.resume)
                self.counts[s] = (r.workers, r.ps, job.max_workers)
                self._version[s] = v
                if r.workers < job.max_workers:
                    self._below.add(s)
                rows = reuse.get((id(job), id(r.placement)))
                if rows is None:
                    row = demand_row(job, res)
                    t = np.array(r.placement.tasks, dtype=int).reshape(-1, 3)
                    use = t[:, 1:2] * row[:K] + t[:, 2:3] * row[K:]
                    rows = (t[:, 0], use, _dyadic(use))
                self._tasks[s] = rows
                np.add.at(held, rows[0], rows[1])
                self._exact &= rows[2]
                w, p, use, exact, _ = fastest(job)
                self._fast[s] = (w, p)
                self._fast_use[s] = use
                self._fast_sum += use
                self._exact &= exact
                insort(keys, (job.arrival, job.name, s))
        self._exact &= bool(max(held.max(initial=0), self._fast_sum.max(initial=0)) < 2.0**40)
        self._vers = vers
        if gone or new:
            self._order = np.fromiter(map(_third, keys), dtype=int, count=len(keys))
            self._last = None  # a slot may hold another run now

    def _grow(self, extra: int) -> None:
        """At least ``extra`` unused slots (doubling)."""
        n = len(self._run)
        if extra <= len(self._unused):
            return
        grow = max(extra, n, 16)
        self._run.extend([None] * grow)
        self._job.extend([None] * grow)
        self._tasks.extend([None] * grow)
        self._version.extend([0] * grow)
        self._num = np.vstack([self._num, np.zeros((grow, 3))])
        self._fast = np.vstack([self._fast, np.zeros((grow, 2), dtype=int)])
        self._fast_use = np.vstack([self._fast_use, np.zeros((grow, len(self._res)))])
        self.counts = np.vstack([self.counts, np.zeros((grow, 3), dtype=int)])
        self._unused.extend(range(n + grow - 1, n - 1, -1))

    def active(self, view) -> tuple[np.ndarray, np.ndarray]:
        """The slots of the running jobs with work left at ``view``'s time, in arrival order, and that work."""
        order = self._order
        num = self._num[order]
        rem = view.remaining_at(num[:, 0], num[:, 1], num[:, 2])
        left = rem > 0
        if left.all():
            return order, rem
        return order[left], rem[left]

    def fastest(self, slots: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
        """(workers, PSs) of the fastest configuration of ``slots`` and their summed demand; None
        where the sum may round (it is exact as the kept sum per machine is)."""
        if not self._exact:
            return None
        use = np.array(self._fast_sum)
        if len(slots) < len(self._order):
            use -= self._fast_use[np.setdiff1d(self._order, slots)].sum(axis=0)
        fast = self._fast[slots]
        return fast[:, 0], fast[:, 1], use

    def jobs_of(self, slots: np.ndarray) -> list[Job]:
        """The jobs of ``slots``."""
        return list(map(self._job.__getitem__, slots.tolist()))

    def held(self, slots: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
        """What the jobs of ``slots`` (a subset of the slots in arrival order) hold per machine."""
        if not self._exact:
            return self.rows(slots, shape)[3]
        held = np.array(self._held)
        if len(slots) < len(self._order):  # running jobs without work left (they end now)
            for s in np.setdiff1d(self._order, slots).tolist():
                np.subtract.at(held, *self._tasks[s][:2])
        return held

    def kept(self, slots: np.ndarray, same: np.ndarray, held: np.ndarray) -> np.ndarray:
        """What the jobs of ``slots`` marked ``same`` hold per machine, ``held`` being what all of them hold."""
        if not self._exact:
            machine, use, owner, _ = self.rows(slots, held.shape)
            kept = np.zeros_like(held)
            sel = same[owner]
            np.add.at(kept, machine[sel], use[sel])
            return kept
        kept = np.array(held)
        for s in slots[~same].tolist():
            np.subtract.at(kept, *self._tasks[s][:2])
        return kept

    def rows(
        self, slots: np.ndarray, shape: tuple[int, ...]
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(machine, use, owner) per placed task group of ``slots`` and their sum per machine (``_TaskRows.rows``)."""
        key = slots.tobytes()
        last = self._last
        if last is not None and last[0] == key:
            return last[1]
        K = len(self._res)
        held = np.zeros(shape)
        hits = list(map(self._tasks.__getitem__, slots.tolist()))
        machines = list(map(_first, hits))
        counts = list(map(len, machines))
        if not sum(counts):
            out = (np.zeros(0, dtype=int), np.zeros((0, K)), np.zeros(0, dtype=int), held)
        else:
            machine = np.concatenate(machines)
            use = np.concatenate(list(map(_second, hits)))
            np.add.at(held, machine, use)
            out = (machine, use, np.repeat(np.arange(len(hits)), counts), held)
        for a in out:
            a.setflags(write=False)  # reused by the next call with the same slots
        self._last = (key, out)
        return out

    def growable(self, named: np.ndarray, view) -> list[RunningJob]:
        """The running jobs below their worker caps or in ``named`` (slots), in the simulator's order, as ``view`` holds them."""
        pick = self._below.union(named.tolist())
        if not pick:
            return []
        vers, version = self._vers, self._version
        if len(pick) <= 8:  # a few: their positions by search
            at = {s: vers.index(version[s]) for s in pick}
        else:
            where = dict(zip(vers, range(len(vers))))
            at = {s: where[version[s]] for s in pick}
        run = self._run
        return [view.running_job(run[s]) for s in sorted(pick, key=at.__getitem__)]


_SLACK_QUEUE = 16  # above this many queued jobs the kept rows' slack check is left to solve


class _Slack:
    """SMD's allocation under its slack rule: every job at its fastest configuration (arrays)."""

    note = ""

    def __init__(self, w: np.ndarray, p: np.ndarray):
        self.w, self.p = w, p


class _Deferred:
    """The Solution of a decision the slack rule made, solved as ``SMD._solve`` would when read."""

    def __init__(self, policy: SMD, jobs, state, free, work) -> None:
        self._args = (policy, jobs, state, free, work)
        self._solution: Solution | None = None

    @property
    def solution(self) -> Solution:
        """The decision's Solution (built on first use)."""
        if self._solution is None:
            from smdlab.solve import solve_pooled

            policy, jobs, state, free, work = self._args
            inst = InstanceRows().build(jobs, state.cluster, free.sum(axis=0), state.mode, work)
            self._solution = solve_pooled(
                inst, state.cluster, policy.method, **policy.options
            ).solution
        return self._solution


def _fastest_use(job: Job, resources: tuple[str, ...], mode: str) -> tuple[int, int, np.ndarray]:
    """(workers, PSs) of ``job``'s fastest configuration and what it holds (``Instance.fastest``)."""
    from smdlab.model.timing import job_speeds

    K = len(resources)
    fw, fp = fastest_configurations([job_speeds(job, mode)])
    row = demand_row(job, resources)
    w, p = int(fw[0]), int(fp[0])
    return w, p, w * row[:K] + p * row[K:]


def _dyadic(use: np.ndarray) -> bool:
    """Whether every amount is a multiple of 2**-10 below 2**30 (then a sum of such below 2**43 is an exact float)."""
    scaled = use * 1024.0
    return bool(np.all(scaled == np.round(scaled)) and np.all(np.abs(use) < 2.0**30))


_job = attrgetter("job")
_placement = attrgetter("placement")
_first = itemgetter(0)
_second = itemgetter(1)
_third = itemgetter(2)
_workers = attrgetter("workers")
_ps = attrgetter("ps")
_remaining = attrgetter("remaining")
_version = attrgetter("version")
