"""SMD on pools of machines (GPU types, racks whose uplinks bind) as an online policy."""

from __future__ import annotations

import numpy as np

from smdlab.policies.base import (
    Allocation,
    ClusterState,
    Decision,
    Placement,
    QueuedJob,
    RunningJob,
)
from smdlab.policies.ps.smd import SMD
from smdlab.policies.toolkit import queued_jobs, running_by_arrival, with_remaining
from smdlab.solve.instance import build_instance
from smdlab.solve.smd_pools import machine_pools, place_on_pools, regions, smd_pools


class SMDPools(SMD):
    """SMD that sees GPU types and rack uplinks: ``smdlab.solve.smd_pools`` at every decision.

    Our extension of the reconstructed SMD model (docs/solver.md, "SMD on pools of machines"),
    not the paper's. On a cluster with one pool (one GPU type, no binding uplink), with an
    all-reduce job, or with a flow-level fabric, it decides exactly as ``SMD``. Otherwise:

    - Non-elastic: the queued jobs are planned and placed on the free machines by ``smd_pools``.
    - Elastic: queued and running jobs (remaining work) are planned on the free capacity plus
      what the running jobs hold. A running job keeps its placement when its new allocation
      equals what it holds and its workers already sit in its new pool and its PSs in the pool's
      region; the others are placed again (``place_on_pools``) on the capacity the kept jobs
      leave, and a running job left out is preempted. No work-conserving fill follows: it is
      blind to GPU types (it would add a slow GPU's worker to a fast job).
    """

    name = "smd_pools"

    def decide(self, state: ClusterState) -> Decision:
        """Allocate and place by SMD on pools (``SMD.decide`` where there is one pool)."""
        cluster = state.cluster
        jobs_now = [r.job for r in state.running] + [q.job for q in state.queued]
        if (
            not cluster.has_machines
            or cluster.fabric is not None
            or any(j.arch != "ps" for j in jobs_now)
            or len(pools := machine_pools(cluster)) < 2
        ):
            return super().decide(state)
        if state.execution == "elastic":
            return self._decide_pools_elastic(state, pools)
        free = np.asarray(state.free, dtype=float)
        jobs = [with_remaining(q) for q in queued_jobs(state)]
        if not jobs or not self._any_unit_fits(jobs, state, free):
            return Decision()
        inst = build_instance(jobs, cluster, free.sum(axis=0), state.mode)
        a = smd_pools(inst, cluster, free, pools)
        return Decision(
            tuple(
                Allocation(j.name, pl.workers, pl.ps, pl)
                for j, pl in zip(jobs, a.placements, strict=True)
                if pl.tasks
            )
        )

    def _decide_pools_elastic(self, state: ClusterState, pools) -> Decision:
        """The elastic decision on pools (class docstring)."""
        cluster = state.cluster
        active = [r for r in running_by_arrival(state) if r.remaining > 0]
        entries: list[RunningJob | QueuedJob] = [*active, *queued_jobs(state)]
        if not entries:
            return Decision()
        shape = np.shape(state.free)
        machine, use, owner, held = self._tasks.rows(active, cluster.resources, shape)
        free_all = np.asarray(state.free, dtype=float) + held
        inst = build_instance(
            [e.job for e in entries], cluster, free_all.sum(axis=0), state.mode,
            [e.remaining for e in entries],
        )  # fmt: skip
        pool_of = np.full(len(cluster.machines), -1)
        for g, m in enumerate(pools):
            pool_of[m] = g
        current = np.full(inst.n, -1)
        for i, r in enumerate(active):  # the pool holding all of a running job's workers
            on = {int(pool_of[m]) for m, w, _ in r.placement.tasks if w}
            current[i] = on.pop() if len(on) == 1 else -1
        a = smd_pools(inst, cluster, free_all, pools, current)
        region = regions(cluster, pools)
        rack = np.array(cluster.rack_of)
        same = []
        for i, r in enumerate(active):
            g = int(a.pool[i])
            ok = g >= 0 and (r.workers, r.ps) == (int(a.workers[i]), int(a.ps[i]))
            if ok:
                home = set(pools[g].tolist())
                area = rack == rack[int(pools[g][0])] if region.max() > 0 else None
                ok = all(
                    (not w or m in home) and (area is None or area[m])
                    for m, w, _ in r.placement.tasks
                )
            same.append(ok)
        kept = np.zeros_like(held)
        sel = np.array(same, dtype=bool)[owner]
        np.add.at(kept, machine[sel], use[sel])
        todo = np.array(
            [a.workers[i] > 0 and not (i < len(active) and same[i]) for i in range(inst.n)]
        )
        placements: list[Placement] = []
        if todo.any():
            w = np.where(todo, a.workers, 0)
            p = np.where(todo, a.ps, 0)
            _, placements = place_on_pools(inst, cluster, free_all - kept, pools, a.pool, w, p)
        allocations = tuple(
            Allocation(entries[i].job.name, placements[i].workers, placements[i].ps, placements[i])
            for i in np.flatnonzero(todo).tolist()
            if placements[i].tasks
        )
        started = {x.job for x in allocations}
        keep = {r.job.name for r, k in zip(active, same, strict=True) if k}
        preempt = tuple(
            r.job.name for r in active if r.job.name not in keep and r.job.name not in started
        )
        return Decision(allocations, preempt)
