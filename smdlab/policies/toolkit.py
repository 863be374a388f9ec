"""Stages the baseline policies share (Blox-style): admission order -> allocation -> placement -> decision.

- Admission order: ``queued_jobs`` (arrival order), ``running_by_arrival``; policies sort them
  their own way.
- Shared arithmetic: ``task_vectors`` (``smdlab.solve.instance``: the one per-task demand
  accessor), ``base_speeds`` (the speed at one worker and one PS), ``inverse_capacity``,
  ``unchanged`` (running jobs a decision leaves as they are: only changes are returned).
- Allocation: bundles (one worker plus one PS, the unit of the classic PS-setting baselines):
  ``max_bundles``, ``max_allocation``, and ``admit_bundles`` (FIFO, SRTF), or a
  policy's own rule producing ``Target`` allocations.
- Placement: the rules of ``smdlab.solve.placement`` (``first_fit``, ``local``, ``spread``,
  ``consolidated``; ``Ledger`` for one task at a time); ``assemble`` places targets with a rule,
  shrinking one task at a time where they do not fit.
- Decision: ``assemble`` returns it; ``apply_decision`` re-checks one against every machine
  (tests use it).

Every policy plans against a private copy of the free capacity per machine, so whatever it
returns fits every machine by construction.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from smdlab.errors import Infeasible, InvalidInput, check_choice
from smdlab.model.job import Job, job_memo
from smdlab.model.pipeline import with_worker_resources
from smdlab.policies.base import (
    Allocation,
    ClusterState,
    Decision,
    Placement,
    QueuedJob,
    RunningJob,
)
from smdlab.solve.instance import task_vectors
from smdlab.solve.placement import (
    RULES,
    TOL,
    PlaceRule,
    consolidated_tasks,
    first_fit,
    placement_usage,
    usage,
)


def queued_jobs(state: ClusterState) -> list[QueuedJob]:
    """Queued jobs with work left, in arrival order (ties by name)."""
    queued = state.queued
    if len(queued) < 2:  # in order already
        return [q for q in queued if q.remaining > 0]
    # The simulator's queue is already in arrival order: check that cheaply before sorting.
    arrival = np.array([q.job.arrival for q in queued], dtype=float)
    remaining = np.array([q.remaining for q in queued], dtype=float)
    if np.all(remaining > 0) and np.all(arrival[1:] >= arrival[:-1]):
        ties = np.flatnonzero(arrival[1:] == arrival[:-1]).tolist()
        if all(queued[i].job.name < queued[i + 1].job.name for i in ties):
            return list(queued)
    return sorted((q for q in queued if q.remaining > 0), key=lambda q: (q.job.arrival, q.job.name))


def with_remaining(entry: QueuedJob | RunningJob) -> Job:
    """The entry's job with ``samples`` set to its remaining work (what solvers and time estimates use)."""
    job = entry.job
    return job if entry.remaining == job.samples else job.replace(samples=entry.remaining)


def total_capacity(state: ClusterState) -> np.ndarray:
    """Pooled capacity of the whole cluster (free or not): the denominator of dominant shares."""
    return state.cluster.capacity_vector.astype(float)


def inverse_capacity(capacity: np.ndarray) -> np.ndarray:
    """1 / capacity elementwise, 0 where the capacity is 0 (shares of a resource nobody has count 0)."""
    cap = np.asarray(capacity, dtype=float)
    return np.where(cap > 0, 1.0 / np.where(cap > 0, cap, 1.0), 0.0)


def running_by_arrival(state: ClusterState) -> list[RunningJob]:
    """Running jobs in arrival order (ties by name): the order policies revisit them in."""
    return sorted(state.running, key=lambda r: (r.job.arrival, r.job.name))


def unchanged(running: Iterable[RunningJob], configs: Mapping[str, tuple[int, int]]) -> set[str]:
    """Names of running jobs whose (workers, ps) in ``configs`` equals what they hold (kept as they are)."""
    return {r.job.name for r in running if configs.get(r.job.name) == (r.workers, r.ps)}


# ---- allocation by bundles ------------------------------------------------------------------


def _largest(feasible, hi: int) -> tuple[int, Placement | None]:
    """Largest n in [0, hi] with feasible(n) not None (feasibility monotone in n), and its value."""
    if hi <= 0:
        return 0, None
    best = feasible(hi)
    if best is not None:
        return hi, best
    lo, found = 0, None
    while lo < hi - 1:
        mid = (lo + hi) // 2
        pl = feasible(mid)
        if pl is None:
            hi = mid
        else:
            lo, found = mid, pl
    return lo, found


def max_bundles(
    job: Job, free: np.ndarray, resources: Sequence[str], cap: int
) -> tuple[int, Placement | None]:
    """Largest n <= cap such that n bundles of ``job`` fit first-fit, with their placement."""
    wv, pv = task_vectors(job, resources)
    bundle = wv + pv
    pooled = free.sum(axis=0)
    pos = bundle > 0
    hi = cap
    if pos.any():
        hi = min(
            cap,
            int(np.floor(((pooled[pos] + TOL * np.maximum(1.0, bundle[pos])) / bundle[pos]).min())),
        )
    # First-fit feasibility is monotone in n (fewer tasks leave a superset of room): binary search.
    return _largest(lambda n: first_fit(job, n, n, free, resources), hi)


def gang_placement(
    job: Job, free: np.ndarray, resources: Sequence[str], pooled: np.ndarray | None = None
) -> Placement | None:
    """The placement of a gang job's whole request, or None when it does not fit now.

    Rule (Tiresias' placement, made machine-aware): consolidated on one machine when it fits,
    else spread over the fewest machines, else tasks by first fit with PSs beside their workers
    (``smdlab.solve.placement.consolidated_tasks``). For a GPU-only job this fits exactly when
    the free GPUs of the cluster add up to its request, as in Tiresias' count-based scheme.
    ``pooled``: the column sums of ``free`` when the caller keeps them (a cheap first check).
    """
    w, p, wv, pv, need, slack, col = _gang_request(job, resources)
    if pooled is None:
        pooled = free.sum(axis=0)
    if (pooled + slack < need).any():
        return None
    if col is not None:
        # The one-machine case of the rule below, in one pass: the machine with the most room
        # for this job's workers (lowest index on ties) takes the whole gang and the empty PS.
        k, per = col
        if k >= 0:  # one resource limits it: that column alone (the same numbers)
            room = (free[:, k] + TOL) / per
        else:
            with np.errstate(divide="ignore", invalid="ignore"):
                room = np.where(wv > 0, (free + TOL) / np.where(wv > 0, wv, 1.0), np.inf).min(
                    axis=1
                )
        m = int(room.argmax())
        if room[m] >= w:
            return Placement(((m, w, 1),))
    tasks = consolidated_tasks(free, w, p, wv, pv)
    return None if tasks is None else Placement(tasks)


def _gang_request(job: Job, resources: Sequence[str]) -> tuple:
    """(w, p, worker vector, PS vector, need, need's tolerance, one-machine rule or None) of a
    gang job's request, kept in the job's memo (placement asks for it at every decision)."""
    w, p = job.gang_allocation
    memo = job_memo(job)  # shared by copies that differ in scheduling fields: keyed by (w, p)
    key = ("gang_request", tuple(resources), w, p)
    hit = memo.get(key)
    if hit is not None:
        return hit
    wv, pv = task_vectors(job, resources)
    need = w * wv + p * pv
    col = None
    if job.gpu_only and p == 1 and not pv.any():
        pos = np.flatnonzero(wv > 0)
        col = (int(pos[0]), wv[int(pos[0])]) if len(pos) == 1 else (-1, None)
    hit = memo[key] = (w, p, wv, pv, need, TOL * np.maximum(1.0, need), col)
    return hit


def max_allocation(
    job: Job, free: np.ndarray, resources: Sequence[str]
) -> tuple[int, int, Placement | None]:
    """Most (workers, ps, placement) a job gets by bundles; (0, 0, None) if not one bundle fits.

    Bundles up to min(max_workers, max_ps); once the job holds ``max_ps`` PSs, single workers up
    to ``max_workers`` (the bundle convention of the classic baselines). A gang job gets its
    whole request (``gang_placement``) or nothing.
    """
    if job.gang:
        pl = gang_placement(job, free, resources)
        return (*job.gang_allocation, pl) if pl is not None else (0, 0, None)
    n, placement = max_bundles(job, free, resources, min(job.max_workers, job.ps_slots))
    if n == 0 or n < job.ps_slots or job.max_workers <= n:
        return n, n, placement
    k, extra = _largest(lambda k: first_fit(job, n + k, n, free, resources), job.max_workers - n)
    return (n + k, n, extra) if k else (n, n, placement)


def admit_bundles(
    order: Iterable[QueuedJob],
    state: ClusterState,
    *,
    stop_at_first_unfit: bool = True,
    note: str = "",
) -> Decision:
    """Give each job in ``order`` as much as fits by bundles (``max_allocation``) before the next job.

    With ``stop_at_first_unfit`` the pass ends at the first job that gets no bundle (FIFO's
    head-of-line rule); otherwise that job is passed over.
    """
    free = np.array(state.free, dtype=float)
    resources = state.cluster.resources
    allocations = []
    pooled = free.sum(axis=0)
    for q in order:
        job = q.job
        if job.gang:
            placement = gang_placement(job, free, resources, pooled)
            w, p = job.gang_allocation if placement is not None else (0, 0)
        else:
            w, p, placement = max_allocation(job, free, resources)
        if w == 0 or placement is None:
            if stop_at_first_unfit:
                break
            if not pooled.any():
                break  # nothing left for anyone
            continue
        used = placement_usage(job, placement, free.shape[0], resources)
        free -= used
        pooled = pooled - used.sum(axis=0)
        allocations.append(Allocation(job.name, w, p, placement))
    return Decision(tuple(allocations), note=note)


# ---- decision assembly ---------------------------------------------------------------------


@dataclass(frozen=True)
class Target:
    """A policy's wish for one job before placement: its (workers, ps), and the job itself."""

    job: Job
    workers: int
    ps: int


ShrinkFn = Callable[[Job, int, int], "tuple[int, int] | None"]


def default_shrink(job: Job, workers: int, ps: int) -> tuple[int, int] | None:
    """One task fewer: drop a PS while PSs outnumber half the workers, else a worker; None at (1, 1)."""
    if workers == 1 and ps == 1:
        return None
    if ps > 1 and (2 * ps > workers or workers == 1):
        return workers, ps - 1
    return workers - 1, ps


def assemble(
    state: ClusterState,
    targets: Sequence[Target],
    *,
    place: PlaceRule | str = consolidated_tasks,
    shrink: ShrinkFn = default_shrink,
    note: str = "",
    preempt_untargeted: bool | None = None,
) -> Decision:
    """Turn target allocations into a Decision that fits every machine.

    ``targets`` are in placement order. A running job whose target equals its current allocation
    keeps its placement. A running job with another target is, in elastic execution, released and
    placed again (a resize); in preemptive execution, preempted and started again on its target
    (a checkpoint-restart); in non-elastic execution it is an error. A running job without a
    target is preempted when ``preempt_untargeted`` is True (preemptive or elastic execution
    only) and keeps its placement when it is False; None: preempted in elastic execution, kept
    otherwise. A job whose
    placement fails is shrunk one task at a time by ``shrink`` (placement with shrinking, as in
    docs/solver.md, Placement); a job that cannot be placed even at (1, 1) waits (a running one is
    preempted). ``place`` is a placement rule or its name in ``smdlab.solve.placement.RULES``.
    """
    if isinstance(place, str):
        place = RULES[check_choice("place", place, tuple(RULES))]
    execution = state.execution
    if preempt_untargeted is None:
        preempt_untargeted = execution == "elastic"
    elif not isinstance(preempt_untargeted, bool):
        raise InvalidInput(
            f"preempt_untargeted must be True, False or None, got {preempt_untargeted!r}"
        )
    elif preempt_untargeted and execution == "non_elastic":
        raise InvalidInput(
            "preempt_untargeted=True needs preemptive or elastic execution; the state is non_elastic"
        )
    cluster = state.cluster
    running = {r.job.name: r for r in state.running}
    wanted = {t.job.name: t for t in targets}
    free = np.array(state.free, dtype=float, copy=True)
    keep: set[str] = set()
    for name, r in running.items():
        t = wanted.get(name)
        if (t is None and not preempt_untargeted) or (
            t is not None and (r.job.gang or (t.workers, t.ps) == (r.workers, r.ps))
        ):
            keep.add(name)
        elif t is not None and execution == "non_elastic":
            raise InvalidInput(
                f"target for running job {name!r} differs from its allocation, but the state is "
                "non_elastic"
            )
        else:
            a, g = task_vectors(r.job, cluster.resources)
            free += usage(r.placement.tasks, a, g, free.shape[0])
    allocations: list[Allocation] = []
    placed: set[str] = set()
    for t in targets:
        name = t.job.name
        if name in keep:
            continue
        a, g = task_vectors(t.job, cluster.resources)
        config: tuple[int, int] | None = t.job.gang_allocation if t.job.gang else (t.workers, t.ps)
        while config is not None:
            tasks = place(free, config[0], config[1], a, g)
            if tasks:
                free -= usage(tasks, a, g, free.shape[0])
                allocations.append(Allocation(name, config[0], config[1], Placement(tasks)))
                placed.add(name)
                break
            config = None if t.job.gang else shrink(t.job, *config)
    # Outside elastic execution a running job changes allocation only through a preemption.
    preempt = tuple(
        n for n in running if n not in keep and (n not in placed or execution != "elastic")
    )
    return Decision(tuple(allocations), preempt, note=note)


def apply_decision(
    state: ClusterState,
    decision: Decision,
    *,
    running: Mapping[str, RunningJob] | None = None,
) -> np.ndarray:
    """Free capacity per machine after ``decision`` (raises Infeasible if any machine is exceeded).

    Order: preempted jobs release, resized running jobs release their old placement, then every
    allocation takes its placement. Allocations must name queued jobs, or running jobs in elastic mode.
    running: the running jobs by name when the caller has them (at least every one ``decision``
    names); default: those of ``state.running``.
    """
    cluster = state.cluster
    free = np.array(state.free, dtype=float, copy=True)
    if running is None:
        running = {r.job.name: r for r in state.running}
    queued = {q.job.name: q for q in state.queued}
    for name in decision.preempt:
        if name not in running:
            raise InvalidInput(f"preempt names {name!r}, which is not running")
        r = running[name]
        free += usage(r.placement.tasks, *task_vectors(r.job, cluster.resources), free.shape[0])
    seen: set[str] = set()
    for alloc in decision.allocations:
        if alloc.job in seen:
            raise InvalidInput(f"job {alloc.job!r} has two allocations in one decision")
        seen.add(alloc.job)
        if alloc.job in running and alloc.job not in decision.preempt:
            if state.execution != "elastic":
                raise InvalidInput(
                    f"allocation resizes running job {alloc.job!r} but the state is not elastic"
                )
            r = running[alloc.job]
            free += usage(r.placement.tasks, *task_vectors(r.job, cluster.resources), free.shape[0])
            job = r.job
        elif alloc.job in queued:
            job = queued[alloc.job].job
        elif alloc.job in running:
            job = running[alloc.job].job
        else:
            raise InvalidInput(
                f"allocation names {alloc.job!r}, which is neither queued nor running"
            )
        # an all-reduce job may get a zero-demand PS slot from PS-minded policies; it runs with p = 0
        job.check_config(alloc.workers, 0 if job.arch == "allreduce" else alloc.ps)
        if (alloc.placement.workers, alloc.placement.ps) != (alloc.workers, alloc.ps):
            raise InvalidInput(
                f"allocation of {alloc.job!r}: placement holds {alloc.placement.workers} workers and "
                f"{alloc.placement.ps} PSs, allocation says {alloc.workers} and {alloc.ps}"
            )
        job = with_worker_resources(job, alloc.cpu, alloc.mem_gb)  # per-worker levels, if set
        free -= usage(alloc.placement.tasks, *task_vectors(job, cluster.resources), free.shape[0])
    over = free < -TOL * np.maximum(1.0, np.abs(np.asarray(state.free)))
    if over.any():
        m, k = np.argwhere(over)[0]
        raise Infeasible(
            f"decision exceeds machine {m} capacity of {cluster.resources[k]} by {-free[m, k]:g}"
        )
    return free


def enforce_gang(decision: Decision, state: ClusterState) -> Decision:
    """``decision`` with every gang job held to all-or-nothing (the simulator applies it to every policy).

    The policy chooses which jobs start; a gang job it starts gets its whole request
    (``Job.gang_allocation``, placed by ``gang_placement`` after the decision's preemptions and
    its other allocations), or keeps waiting when that does not fit. An allocation resizing a
    running gang job is dropped (the job keeps what it holds). Decisions that already respect
    the rule are returned unchanged.
    """
    run = {r.job.name: r for r in state.running}
    lookup = {q.job.name: q.job for q in state.queued}
    lookup.update((n, r.job) for n, r in run.items())
    pre = set(decision.preempt)
    allocs = decision.allocations

    def resize(a: Allocation) -> bool:
        return a.job in run and a.job not in pre

    def ok(a: Allocation) -> bool:
        job = lookup.get(a.job)
        return (
            job is None
            or not job.gang
            or (not resize(a) and (a.workers, a.ps) == job.gang_allocation)
        )

    if all(ok(a) for a in allocs):
        return decision
    cluster = state.cluster
    resources = cluster.resources
    free = np.array(state.free, dtype=float, copy=True)
    n_m = free.shape[0]
    for name in pre:
        r = run[name]
        free += usage(r.placement.tasks, *task_vectors(r.job, cluster.resources), n_m)
    kept: list[Allocation | None] = []
    for a in allocs:
        job = lookup.get(a.job)
        if job is None or job.gang:
            kept.append(None)  # gang jobs are placed below, in the policy's order
            continue
        if resize(a):
            r = run[a.job]
            free += usage(r.placement.tasks, *task_vectors(r.job, cluster.resources), n_m)
        free -= placement_usage(job, a.placement, n_m, resources)
        kept.append(a)
    for i, a in enumerate(allocs):
        job = lookup.get(a.job)
        if job is None:
            kept[i] = a  # unknown job: left for the simulator to report
            continue
        if kept[i] is not None or resize(a):
            continue  # a running gang job is never resized
        pl: Placement | None = None
        if (a.workers, a.ps) == job.gang_allocation:
            use = placement_usage(job, a.placement, n_m, resources)
            if np.all(free + TOL >= use):
                pl = a.placement
        if pl is None:
            pl = gang_placement(job, free, resources)
        if pl is None:
            continue
        free -= placement_usage(job, pl, n_m, resources)
        kept[i] = Allocation(a.job, *job.gang_allocation, pl)
    return Decision(
        tuple(a for a in kept if a is not None),
        decision.preempt,
        note=decision.note,
        wake_at=decision.wake_at,
    )


# ---- work-conserving fill (elastic execution) -------------------------------------------------


def work_conserving_fill(
    state: ClusterState,
    decision: Decision,
    *,
    note: str = "",
    running: Sequence[RunningJob] | None = None,
) -> Decision:
    """``decision`` plus GPUs that would otherwise stay idle, for elastic execution.

    After the decision, while some free GPU can be used by a job below its caps that speeds up
    under the model, give it: a queued (or just preempted) job whose (1, 1) fits starts at (1, 1),
    in arrival order; otherwise the job that saves the most weighted time, ``weight x remaining x
    (1/speed now - 1/speed after)``, gets one more worker (or one more worker and one more PS,
    whichever saves more), placed on a machine it already uses where it fits, else by first fit.
    A running job the decision leaves as it is pays ``restart_s`` (``state.restart_s``) when it
    grows, so it grows only if the saving exceeds that. Each step takes a GPU, so the fill ends.
    Outside elastic execution the decision is returned unchanged. running: the running jobs that
    may grow, in ``state.running``'s order, when the caller knows them: at least every one below
    its worker cap and every one ``decision`` names (the fill changes no other), and then the
    decision is not checked again when nothing can grow; default: all of ``state.running``.
    """
    if state.execution != "elastic":
        return decision
    from smdlab.solve.instance import job_speeds
    from smdlab.solve.placement import first_fit_tasks

    cluster = state.cluster
    if "gpu" not in cluster.resources:
        return decision
    gpu = cluster.resources.index("gpu")
    told = running is not None
    if running is None:
        running = state.running
    given = {a.job: a for a in decision.allocations}
    preempted = set(decision.preempt)
    # per job: [job, remaining, tasks {machine: [w, p]}, pays_restart_if_changed, arrival rank]
    # Only jobs below their worker cap can take a step (workers only grow here): the others are
    # left out from the start (long traces hold hundreds of jobs at their caps).
    jobs: dict[str, list] = {}
    for r in running:
        name = r.job.name
        if name in given:
            alloc = given[name]
            tasks, w_now = alloc.placement.tasks, alloc.workers
        elif name in preempted:
            tasks, w_now = (), 0
        else:
            tasks, w_now = r.placement.tasks, r.workers
        if w_now < r.job.max_workers:
            jobs[name] = [r.job, r.remaining, tasks, name not in given and name not in preempted]
    for q in state.queued:
        if q.remaining > 0:
            got = given.get(q.job.name)
            if (got.workers if got is not None else 0) < q.job.max_workers:
                tasks = got.placement.tasks if got is not None else ()
                jobs[q.job.name] = [q.job, q.remaining, tasks, False]
    if told and not jobs:  # nothing can grow (the caller's decision fits by construction)
        return decision
    free = apply_decision(
        state, decision, running={r.job.name: r for r in running} if told else None
    )
    n_m = free.shape[0]
    per_machine: dict[str, dict[int, list[int]]] = {}
    for name, (_, _, tasks, _) in jobs.items():
        pm: dict[int, list[int]] = {}
        for m, w, p in tasks:
            pm.setdefault(int(m), [0, 0])
            pm[int(m)][0] += int(w)
            pm[int(m)][1] += int(p)
        per_machine[name] = pm
    changed: set[str] = set()
    vectors = {name: task_vectors(entry[0], cluster.resources) for name, entry in jobs.items()}
    held = {
        name: (sum(v[0] for v in pm.values()), sum(v[1] for v in pm.values()))
        for name, pm in per_machine.items()
    }

    def counts(name: str) -> tuple[int, int]:
        return held[name]

    def take(name: str, tasks) -> None:
        a, g = vectors[name]
        w0, p0 = held[name]
        for m, w, p in tasks:
            slot = per_machine[name].setdefault(int(m), [0, 0])
            slot[0] += int(w)
            slot[1] += int(p)
            w0, p0 = w0 + int(w), p0 + int(p)
        held[name] = (w0, p0)
        free[:] -= usage(tasks, a, g, n_m)
        changed.add(name)

    def worker_machine(name: str, a: np.ndarray) -> int | None:
        fits = np.all(free + TOL * np.maximum(1.0, np.abs(free)) >= a, axis=1)
        own = [m for m in per_machine[name] if fits[m]]
        if own:
            return own[0]
        idx = np.flatnonzero(fits)
        return int(idx[0]) if idx.size else None

    order = sorted(jobs, key=lambda n: (jobs[n][0].arrival, n))
    order = [n for n in order if vectors[n][0][gpu] > 0 and held[n][0] < jobs[n][0].max_workers]
    while True:
        # 1. queued jobs whose (1, 1) fits start, in arrival order
        started = False
        for name in order:
            if held[name][0] == 0:
                a, g = vectors[name]
                unit = first_fit_tasks(free, 1, 1, a, g)
                if unit is not None:
                    take(name, unit)
                    started = True
        if started:
            continue
        # 2. the largest weighted saving from one more worker (and maybe a PS)
        order = [n for n in order if held[n][0] < jobs[n][0].max_workers]
        best: tuple[float, str, tuple] | None = None
        for name in order:
            job, remaining, _, pays = jobs[name]
            w, p = held[name]
            a, g = vectors[name]
            if w == 0:
                continue
            speeds = job_speeds(job, state.mode)
            now = remaining / speeds[w - 1, p - 1]
            cost = state.restart_s if pays and name not in changed else 0.0
            m = worker_machine(name, a)
            if m is not None:
                gain = job.weight * (now - remaining / speeds[w, p - 1] - cost)
                if gain > 1e-9 * now and (best is None or gain > best[0]):
                    best = (gain, name, ((m, 1, 0),))
            if p < job.max_ps:
                gain = job.weight * (now - remaining / speeds[w, p] - cost)
                if gain > 1e-9 * now and (best is None or gain > best[0]):
                    unit = first_fit_tasks(free, 1, 1, a, g)
                    if unit is not None:
                        best = (gain, name, unit)
        if best is None:
            break
        take(best[1], best[2])
    if not changed:
        return decision
    allocations = [a for a in decision.allocations if a.job not in changed]
    for name in (n for n in jobs if n in changed):  # job order: a set's order varies by hash seed
        tasks = tuple(
            (m, w, p) for m, (w, p) in sorted(per_machine[name].items()) if (w, p) != (0, 0)
        )
        w, p = counts(name)
        allocations.append(Allocation(name, w, p, Placement(tasks)))
    restarted = {a.job for a in allocations}
    preempt = tuple(n for n in decision.preempt if n not in restarted)
    return Decision(tuple(allocations), preempt, note=note or decision.note)
