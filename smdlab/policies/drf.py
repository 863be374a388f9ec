"""DRF: Dominant Resource Fairness by progressive filling, one worker+PS bundle at a time."""

from __future__ import annotations

import heapq

import numpy as np

from smdlab.policies.base import Allocation, ClusterState, Decision
from smdlab.policies.stages import queued_jobs, total_capacity
from smdlab.solve.instance import demand_matrices
from smdlab.solve.placement import TOL, Ledger


class DRF:
    """Dominant Resource Fairness (Ghodsi et al., NSDI 2011) ported to parameter-server jobs.

    Rule (field.md): repeatedly give one bundle to the job with the smallest dominant share (its
    largest share of any resource, over the pooled capacity of the whole cluster), ties by arrival,
    until no bundle fits.

    Assumptions where the paper is silent (it allocates generic tasks, not workers and PSs):
    - A bundle is one worker plus one PS; once a job has ``max_ps`` PSs its bundles are a worker
      alone; a job at ``max_workers`` receives nothing more. A queued job's first bundle starts it
      at (1, 1).
    - A bundle must fit the free capacity of real machines: each task goes to a machine the job
      already uses if it fits there, else to the first machine it fits (locality, then first fit).
      A job whose next bundle fits nowhere is skipped for the rest of this decision (free
      capacity only shrinks while filling, so it cannot fit later in the same decision).
    - Non-elastic (default): only queued jobs receive bundles; running jobs keep what they hold.
      Elastic: running jobs join the filling with their current shares and may grow (never
      shrink), so DRF never preempts.
    - Shares use the whole cluster's capacity as denominator; job weights are ignored (plain DRF).
    """

    name = "drf"

    def decide(self, state: ClusterState) -> Decision:
        """Bundles to the job of smallest dominant share, until none fits."""
        cluster = state.cluster
        cap = total_capacity(state)
        inv = np.where(cap > 0, 1.0 / np.where(cap > 0, cap, 1.0), 0.0)
        packer = Ledger(state.free)
        queued = queued_jobs(state)
        running = list(state.running) if state.elastic else []
        for r in running:
            packer.preload(r.job.name, r.placement.tasks)
        jobs = [q.job for q in queued] + [r.job for r in running]
        if not jobs:
            return Decision()
        alpha, gamma = demand_matrices(jobs, cluster)
        ws = np.array([0] * len(queued) + [r.workers for r in running], dtype=int)
        ps = np.array([0] * len(queued) + [r.ps for r in running], dtype=int)
        # A job whose next bundle fits on no machine now never gets one in this decision (free
        # capacity only shrinks while filling): leave it out before the filling (long queues).
        free = packer.free
        fit_w = np.all(free[None] + TOL * np.maximum(1.0, alpha)[:, None] >= alpha[:, None], axis=2).any(axis=1)
        fit_p = np.all(free[None] + TOL * np.maximum(1.0, gamma)[:, None] >= gamma[:, None], axis=2).any(axis=1)
        caps = np.array([(j.max_workers, j.max_ps) for j in jobs], dtype=int).reshape(-1, 2)
        hopeful = (ws < caps[:, 0]) & fit_w & (fit_p | (ps >= caps[:, 1]))
        # entry: [job, workers, ps, alpha, gamma]
        entries = [[jobs[i], int(ws[i]), int(ps[i]), alpha[i], gamma[i]] for i in np.flatnonzero(hopeful).tolist()]
        start = {e[0].name: (e[1], e[2]) for e in entries}

        def share(e) -> float:
            return float(((e[1] * e[3] + e[2] * e[4]) * inv).max())

        heap = [(share(e) if e[1] else 0.0, e[0].arrival, i) for i, e in enumerate(entries)]
        heapq.heapify(heap)
        # First bundles that fit nowhere, by demand: free capacity only shrinks during the filling
        # and a first bundle is placed by plain first fit, so every later job still at (0, 0) with
        # the same demands is skipped without a search (long queues).
        failed: set[tuple] = set()
        while heap:
            _, _, i = heapq.heappop(heap)
            e = entries[i]
            job, w, p, alpha, gamma = e[:5]
            if w >= job.max_workers:
                continue
            name = job.name
            add_ps = p < job.max_ps
            kind = (alpha.tobytes(), gamma.tobytes()) if w == 0 else None
            if kind is not None and kind in failed:
                continue
            mw = packer.add_task(name, "worker", alpha)
            if mw is None or (add_ps and packer.add_task(name, "ps", gamma) is None):
                if mw is not None:
                    packer.remove_task(name, "worker", mw, alpha)
                if kind is not None:
                    failed.add(kind)
                continue
            e[1], e[2] = w + 1, p + (1 if add_ps else 0)
            heapq.heappush(heap, (share(e), job.arrival, i))
        allocations = tuple(
            Allocation(e[0].name, e[1], e[2], packer.placement(e[0].name))
            for e in entries
            if e[1] > 0 and (e[1], e[2]) != start[e[0].name]
        )
        return Decision(allocations)
