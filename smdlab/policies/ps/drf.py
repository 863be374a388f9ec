"""DRF: Dominant Resource Fairness by progressive filling, one worker+PS bundle at a time (docs/baselines.md)."""

from __future__ import annotations

import heapq
from typing import Literal, get_args

import numpy as np

from smdlab.errors import FORMER_VARIANT, check_bool, check_choice, reject_former
from smdlab.model.job import Job
from smdlab.policies.base import (
    DEFAULT_SLOT_S,
    Allocation,
    ClusterState,
    Decision,
    Placement,
    Policy,
)
from smdlab.policies.toolkit import (
    inverse_capacity,
    queued_jobs,
    total_capacity,
    work_conserving_fill,
)
from smdlab.solve.instance import demand_matrices, task_vectors
from smdlab.solve.placement import (
    TOL,
    active_racks,
    capacity_matrix,
    prefer,
    rack_preference,
    usage,
)

NodeChoice = Literal["fit", "dl2"]  # the machine rule of a bundle (class docstring)
# Up to this many machines x resources the filling runs on Python floats (``_fill_small_loop``).
_SMALL = 64


class DRF(Policy):
    """Dominant Resource Fairness (Ghodsi et al., NSDI 2011) for parameter-server jobs.

    Every rule, whether it follows the source, and why: docs/baselines.md (section DRF).

    The paper's Algorithm 1 with DL2's port (``drf_env.py``,
    ``DRF_Env._schedule``) for what the paper leaves open:
    - Progressive filling: repeatedly give one bundle (one worker and one PS) to the job of
      smallest dominant share (its largest share of any resource over the pooled capacity of the
      whole cluster), ties by arrival; stop at the first bundle that does not fit (Algorithm 1
      returns when the cluster is full; DL2 breaks), rather than skipping that job.
    - A bundle is co-located: its worker and its PS go to one machine, the least-loaded one (the
      smallest sum over resources of the used fraction of the machine's capacity, ties by index;
      DL2 keeps machines in a priority queue by used slots) among those where the bundle fits.
      DL2 tries only the least-loaded machine and stops if the bundle does not fit there, even
      when another machine has room; ``node_choice="dl2"`` does the same (the default, ``"fit"``,
      checks every machine, as the paper's test is whether the cluster can hold the task).
      Where no machine holds the whole bundle (possible only on unequal machines), its worker
      and PS go to the least-loaded machines each fits on (a departure: DL2's machines are equal).
    - Racked cluster (our addition, ``smdlab.solve.placement.rack_preference``): a job's next
      bundle goes to the least-loaded machine within the racks it already uses when it fits there.
    - A job leaves the filling when it reaches ``max_workers`` workers or ``max_ps`` PSs (DL2
      stops at either cap).
    - Natural mode: elastic, every ``slot_s`` = 1,200 s (DL2 re-runs the filling from zero for
      every unfinished job at each time slot, ``TS_DURATION = 1200.0`` in its ``parameters.py``;
      DL2 also trains its network to imitate this DRF): in elastic execution every running
      and queued job is filled afresh on the whole capacity; a
      running job whose allocation and placement come out unchanged keeps running as it is, one
      left without a bundle is preempted. Not elastic: only queued jobs are filled, in the free
      capacity. Job weights are ignored (plain DRF). Not work conserving: what the filling
      leaves idle stays idle; ``work_conserving=True`` passes each decision through
      ``toolkit.work_conserving_fill`` (elastic execution only).
    """

    name = "drf"
    execution = "elastic"
    executions = ("non_elastic", "elastic")
    slot_s = DEFAULT_SLOT_S  # DL2's time slot (parameters.py, TS_DURATION)

    NODE_CHOICES: tuple[NodeChoice, ...] = get_args(NodeChoice)

    def __init__(
        self, work_conserving: bool = False, node_choice: str = "fit", variant: None = None
    ) -> None:
        if variant is not None:  # a former option: one line naming what replaces it
            reject_former("DRF", {"variant": variant}, FORMER_VARIANT)
        self.node_choice = check_choice("node_choice", node_choice, self.NODE_CHOICES)
        self.work_conserving = check_bool("work_conserving", work_conserving)

    def decide(self, state: ClusterState) -> Decision:
        """Bundles to the job of smallest dominant share, until the next one does not fit."""
        decision = self._decide_paper(state)
        # elastic execution only; the paper stops at the first misfit and leaves the rest idle
        return work_conserving_fill(state, decision) if self.work_conserving else decision

    def _decide_paper(self, state: ClusterState) -> Decision:
        """Algorithm 1 of the paper with DL2's co-located bundles on the least-loaded machine."""
        cluster = state.cluster
        cap = total_capacity(state)
        inv = inverse_capacity(cap)
        machine_cap = capacity_matrix(cluster)
        machine_inv = inverse_capacity(machine_cap)
        free = np.array(state.free, dtype=float, copy=True)
        queued = queued_jobs(state)
        running = list(state.running) if state.execution == "elastic" else []
        for r in running:  # the filling starts from zero for every job: release what they hold
            free += usage(r.placement.tasks, *task_vectors(r.job, cluster.resources), free.shape[0])
        jobs = [q.job for q in queued] + [r.job for r in running]
        if not jobs:
            return Decision()
        alpha, gamma = demand_matrices(jobs, cluster)
        # a few machines and resources, no racks: the same arithmetic on Python floats (numpy's
        # row sums of fewer than 8 terms add them one by one, as ``sum`` does)
        small = free.size <= _SMALL and free.shape[1] < 8 and active_racks(free.shape[0]) is None
        if small:
            return self._fill_small(state, jobs, alpha, gamma, free, machine_cap, machine_inv, inv)
        bundle = alpha + gamma
        n = len(jobs)
        w = [0] * n
        tasks: list[dict[int, list[int]]] = [{} for _ in range(n)]
        heap = [(0.0, jobs[i].arrival, jobs[i].name, i) for i in range(n)]
        heapq.heapify(heap)

        def least_loaded(d: np.ndarray, i: int) -> int | None:
            fits = np.all(free + TOL * np.maximum(1.0, d) >= d, axis=1)
            load = ((machine_cap - free) * machine_inv).sum(axis=1)
            near = rack_preference(free.shape[0], tasks[i])  # racked: the job's racks first
            if self.node_choice == "dl2":  # DL2 tries the least-loaded machine only
                if near is not None and (fits & near).any():
                    load = np.where(near, load, np.inf)
                m = int(np.argmin(load))
                return m if fits[m] else None
            fits = prefer(fits, near)
            if not fits.any():
                return None
            return int(np.flatnonzero(fits)[np.argmin(load[fits])])

        def put(i: int, m: int, kind: int, d: np.ndarray) -> None:
            free[m] -= d
            tasks[i].setdefault(m, [0, 0])[kind] += 1

        while heap:
            _, arrival, name, i = heapq.heappop(heap)
            m = least_loaded(bundle[i], i)
            if m is not None:
                put(i, m, 0, alpha[i])
                put(i, m, 1, gamma[i])
            else:
                # Departure: no machine holds the bundle whole. DL2's machines are identical, so
                # there it fits nowhere; on unequal machines its worker and PS may still fit
                # apart: worker first, else PS first, each on the least-loaded machine it fits.
                placed = False
                for first, second, k1, k2 in (
                    (alpha[i], gamma[i], 0, 1),
                    (gamma[i], alpha[i], 1, 0),
                ):
                    m1 = least_loaded(first, i)
                    if m1 is None:
                        continue
                    free[m1] -= first
                    m2 = least_loaded(second, i)
                    free[m1] += first
                    if m2 is not None:
                        put(i, m1, k1, first)
                        put(i, m2, k2, second)
                        placed = True
                        break
                if not placed:
                    break  # the paper: the cluster is full for the lowest-share job; stop
            w[i] += 1
            if w[i] < jobs[i].max_workers and w[i] < jobs[i].max_ps:
                share = float((w[i] * bundle[i] * inv).max())
                heapq.heappush(heap, (share, arrival, name, i))
        return _decision(state, jobs, w, w, tasks)

    def _fill_small(self, state, jobs, alpha, gamma, free, machine_cap, machine_inv, inv):
        """The filling of ``_decide_paper`` on Python floats (a few machines, no racks)."""
        w, tasks = _fill_small_loop(
            jobs, alpha.tolist(), gamma.tolist(), free.tolist(), machine_cap.tolist(),
            machine_inv.tolist(), inv.tolist(), self.node_choice == "dl2",
        )  # fmt: skip
        return _decision(state, jobs, w, w, tasks)


def _fill_small_loop(jobs, alpha, gamma, free, cap, cinv, inv, dl2: bool):
    """``DRF._decide_paper``'s filling on lists (no racks): (workers per job, tasks per job)."""
    n = len(jobs)
    bundle = [[a + g for a, g in zip(ra, rg)] for ra, rg in zip(alpha, gamma)]
    w = [0] * n
    tasks: list[dict[int, list[int]]] = [{} for _ in range(n)]
    heap = [(0.0, jobs[i].arrival, jobs[i].name, i) for i in range(n)]
    heapq.heapify(heap)

    def least_loaded(d: list) -> int | None:
        e = [TOL * max(1.0, x) for x in d]
        fits = [all(f + t >= x for f, t, x in zip(row, e, d)) for row in free]
        load = [
            sum([(c - f) * v for c, f, v in zip(cr, fr, vr)]) for cr, fr, vr in zip(cap, free, cinv)
        ]
        if dl2:  # the least-loaded machine only (first of equal loads)
            m = load.index(min(load))
            return m if fits[m] else None
        best = None
        for m, ok in enumerate(fits):
            if ok and (best is None or load[m] < load[best]):
                best = m
        return best

    def put(i: int, m: int, kind: int, d: list) -> None:
        free[m] = [f - x for f, x in zip(free[m], d)]
        tasks[i].setdefault(m, [0, 0])[kind] += 1

    while heap:
        _, arrival, name, i = heapq.heappop(heap)
        m = least_loaded(bundle[i])
        if m is not None:
            put(i, m, 0, alpha[i])
            put(i, m, 1, gamma[i])
        else:
            placed = False
            for first, second, k1, k2 in ((alpha[i], gamma[i], 0, 1), (gamma[i], alpha[i], 1, 0)):
                m1 = least_loaded(first)
                if m1 is None:
                    continue
                row = free[m1]
                free[m1] = [f - x for f, x in zip(row, first)]
                m2 = least_loaded(second)
                free[m1] = [f + x for f, x in zip(free[m1], first)]
                if m2 is not None:
                    put(i, m1, k1, first)
                    put(i, m2, k2, second)
                    placed = True
                    break
            if not placed:
                break
        w[i] += 1
        if w[i] < jobs[i].max_workers and w[i] < jobs[i].max_ps:
            share = max(w[i] * b * v for b, v in zip(bundle[i], inv))
            heapq.heappush(heap, (share, arrival, name, i))
    return w, tasks


def _decision(
    state: ClusterState,
    jobs: list[Job],
    w: list[int],
    p: list[int],
    tasks: list[dict[int, list[int]]],
) -> Decision:
    """Allocations for jobs whose allocation or placement changed; running jobs left out are preempted."""
    running = {r.job.name: r for r in state.running}
    allocations = []
    preempt = []
    for i, job in enumerate(jobs):
        r = running.get(job.name)
        if w[i] == 0:
            if r is not None:
                preempt.append(job.name)
            continue
        pl = Placement(tuple((m, c[0], c[1]) for m, c in sorted(tasks[i].items())))
        if (
            r is not None
            and (r.workers, r.ps) == (w[i], p[i])
            and sorted(r.placement.tasks) == list(pl.tasks)
        ):
            continue
        allocations.append(Allocation(job.name, w[i], p[i], pl))
    return Decision(tuple(allocations), tuple(preempt))
