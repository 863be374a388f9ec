"""DRF: Dominant Resource Fairness by progressive filling, one worker+PS bundle at a time."""

from __future__ import annotations

import heapq

from smdlab.policies.base import DEFAULT_SLOT_S, Allocation, ClusterState, Decision, Policy
from smdlab.policies.stages import (
    inverse_capacity,
    queued_jobs,
    total_capacity,
    work_conserving_fill,
)
from smdlab.solve.instance import demand_kinds, demand_matrices
from smdlab.solve.ledger import Ledger


class DRF(Policy):
    """Dominant Resource Fairness (Ghodsi et al., NSDI 2011) ported to parameter-server jobs.

    Rule (docs/simulator.md, Policies): repeatedly give one bundle to the job with the smallest dominant share (its
    largest share of any resource, over the pooled capacity of the whole cluster), ties by arrival,
    until no bundle fits.

    Assumptions where the paper is silent (it allocates generic tasks, not workers and PSs):
    - A bundle is one worker plus one PS; once a job has ``max_ps`` PSs its bundles are a worker
      alone; a job at ``max_workers`` receives nothing more. A queued job's first bundle starts it
      at (1, 1).
    - A bundle must fit the free capacity of real machines: each task goes to a machine the job
      already uses if it fits there, else to the first machine it fits (locality, then first fit);
      the worker first, and if the PS then fits nowhere, the PS first (``Ledger.add_pair``).
      A job whose next bundle fits nowhere is skipped for the rest of this decision (free
      capacity only shrinks while filling, so it cannot fit later in the same decision).
    - Execution: natural mode ``elastic`` every 1,200 s, as DL2 runs DRF as its baseline (and as
      the teacher of its supervised warm-up): its public simulator (pengyanghua/DL2,
      ``drf_env.py``, ``parameters.py: TS_DURATION = 1200.0``) re-allocates every time slot.
    - Non-elastic: only queued jobs receive bundles; running jobs keep what they hold.
      Elastic: running jobs join the filling with their current shares and may grow (never
      shrink), so DRF never preempts; then the shared work-conserving fill
      (``stages.work_conserving_fill``) hands out what bundles leave idle (e.g. a GPU whose
      machine has no room for a PS), so no job that could use a free GPU waits for it.
    - Shares use the whole cluster's capacity as denominator; job weights are ignored (plain DRF).
    """

    name = "drf"
    execution = "elastic"
    executions = ("non_elastic", "elastic")
    slot_s = DEFAULT_SLOT_S

    def decide(self, state: ClusterState) -> Decision:
        """Bundles to the job of smallest dominant share, until none fits."""
        cluster = state.cluster
        cap = total_capacity(state)
        inv = inverse_capacity(cap)
        ledger = Ledger(state.free)
        queued = queued_jobs(state)
        running = list(state.running) if state.elastic else []
        for r in running:
            ledger.preload(r.job.name, r.placement.tasks)
        jobs = [q.job for q in queued] + [r.job for r in running]
        if not jobs:
            return Decision()
        alpha, gamma = demand_matrices(jobs, cluster)
        kind = demand_kinds(alpha, gamma).tolist()
        w = [0] * len(queued) + [r.workers for r in running]
        p = [0] * len(queued) + [r.ps for r in running]
        start = list(zip(w, p))

        def share(i: int) -> float:
            return float(((w[i] * alpha[i] + p[i] * gamma[i]) * inv).max())

        # First bundles that fit nowhere, by demand kind: free capacity only shrinks during the
        # filling and a first bundle is placed by plain first fit, so every later job still at
        # (0, 0) with the same demands is skipped without a search (long queues).
        dead = [False] * (max(kind) + 1)

        def bundle(i: int) -> bool:
            """Give job i one more bundle if it fits (and it is under its caps)."""
            if w[i] == 0 and dead[kind[i]]:
                return False
            job = jobs[i]
            if w[i] >= job.max_workers:
                return False
            name, add_ps = job.name, p[i] < job.max_ps
            placed = (
                ledger.add_pair(name, alpha[i], gamma[i])
                if add_ps
                else ledger.add_task(name, "worker", alpha[i])
            )
            if placed is None:
                if w[i] == 0:
                    dead[kind[i]] = True
                return False
            w[i] += 1
            p[i] += 1 if add_ps else 0
            return True

        # The filling pops the smallest (share, arrival, index). Jobs at share 0 (every queued
        # job) come first, in (arrival, index) order, each as long as its share stays 0; the
        # rest go through a heap.
        heap = []
        zero = []
        for i in range(len(jobs)):
            s0 = share(i) if w[i] else 0.0
            if s0 == 0.0:
                zero.append((jobs[i].arrival, i))
            else:
                heap.append((s0, jobs[i].arrival, i))
        if running:
            zero.sort()
        for _, i in zero:
            while bundle(i):
                s1 = share(i)
                if s1 > 0.0:
                    heap.append((s1, jobs[i].arrival, i))
                    break
        heapq.heapify(heap)
        while heap:
            _, _, i = heapq.heappop(heap)
            if bundle(i):
                heapq.heappush(heap, (share(i), jobs[i].arrival, i))
        allocations = tuple(
            Allocation(jobs[i].name, w[i], p[i], ledger.placement(jobs[i].name))
            for i in range(len(jobs))
            if w[i] > 0 and (w[i], p[i]) != start[i]
        )
        return work_conserving_fill(state, Decision(allocations))  # elastic only
