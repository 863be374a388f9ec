"""Applying a policy's decision: check it, release what leaving jobs hold, then start and resize.

Order (docs/simulator.md): the decision is checked whole (``smdlab.sim.checks``, sharing groups
by ``SharingGroups.check``); the capacity check releases what preempted and resized jobs hold,
then takes every new placement; only then does anything change: preempted jobs go back to the
queue, resized jobs restart on their new allocation, and started jobs (alone or in groups) run.
"""

from __future__ import annotations

import math
from collections.abc import Collection

import numpy as np

from smdlab.policies.base import Decision, QueuedJob
from smdlab.sim.checks import classify, unchanged
from smdlab.sim.engine import Engine
from smdlab.sim.errors import CapacityExceeded, InvalidDecision
from smdlab.sim.groups import SharingGroups
from smdlab.solve.instance import task_vectors

__all__ = ["apply_decision"]


def apply_decision(sim: Engine, groups: SharingGroups, d: Decision) -> tuple[int, int, int]:
    """Apply ``d`` at ``sim.t``; return (jobs started, preempted, resized). Raises
    ``InvalidDecision`` (``CapacityExceeded``) before changing anything when ``d`` is not valid."""
    t = sim.t
    if isinstance(d, Decision) and not d.allocations and not d.preempt:
        return 0, 0, 0  # nothing to check or change (a busy queue's usual answer)
    where = f"policy {sim.policy_name!r} at t={t:g}"
    preempt, starts, resizes = classify(sim, d, where)
    by_label = groups.check(d.allocations, starts, where)
    # An allocation that repeats a running job's allocation, placement and levels changes nothing.
    resizes = [
        a
        for a in resizes
        if not (
            unchanged(sim.running[a.job], a)
            and sim.alloc_job(a).worker_demand == sim.running[a.job].job.worker_demand
        )
    ]
    # Insertion-ordered (dicts, not sets): the order jobs release and groups regroup in fixes the
    # float sums and the history's row order, which a set's order would tie to the hash seed.
    leaving = dict.fromkeys([*preempt, *(a.job for a in resizes)])
    touched = dict.fromkeys(g for n in leaving if (g := sim.running[n].group) is not None)
    joins = dict.fromkeys(label for label in by_label if groups.runs(label))
    for label in joins:
        if label in touched:
            raise InvalidDecision(f"{where}: jobs join group {label!r} while members leave it")
    group_use = {label: groups.use(members) for label, members in by_label.items()}
    sim.free = _free_after(sim, groups, leaving, touched, (*starts, *resizes), group_use, joins)
    _preempt(sim, preempt, t)
    _resize(sim, resizes, t)
    for gid in touched:
        groups.regroup(gid, t, adjust_free=False)
    _start(sim, groups, starts, by_label, joins, group_use, t)
    for label in joins:  # every member now runs at the rates of the larger group
        groups.regroup(label, t, adjust_free=False)
    if preempt or starts:
        sim._queued_tuple = None
    return len(starts), len(preempt), len(resizes)


def _free_after(
    sim: Engine,
    groups: SharingGroups,
    leaving: Collection[str],
    touched: Collection[str],
    taking: tuple,
    group_use: dict[str, np.ndarray],
    joins: Collection[str],
) -> np.ndarray:
    """Free resources once ``leaving`` jobs release theirs and ``taking`` allocations (and the
    groups) take theirs; raises ``CapacityExceeded`` when a machine would be overfull."""
    free = sim.free.copy()
    for name in leaving:
        r = sim.running[name]
        free[r.rows] += r.usage
    for gid in touched:  # members that stay share their group's use anew
        held, use = groups.held_use(gid, leaving)
        free += held - use
    for a in taking:
        if getattr(a, "group", None) is not None:
            continue  # charged once per group below
        job = sim.alloc_job(a)
        wv, pv = task_vectors(job, sim.resources)
        for m, w, p in a.placement.tasks:
            free[m] -= w * wv + p * pv
    for label, use in group_use.items():
        if label in joins:  # the group's use grows to the maximum with its new members
            now = groups.held_use(label, set())[1]
            use = np.maximum(now, use) - now
        free -= use
    over = free < sim.overfull
    if over.any():
        m, k = (int(x) for x in np.argwhere(over)[0])
        raise CapacityExceeded(
            f"policy {sim.policy_name!r} at t={sim.t:g}: decision exceeds machine "
            f"{sim.machine_names[m]!r} (index {m}) capacity of "
            f"{sim.resources[k]} ({sim.capacity[m, k]:g}) by {-free[m, k]:g}"
        )
    return free


def _preempt(sim: Engine, preempt: list[str], t: float) -> None:
    """Stop the ``preempt`` jobs and queue them again with their remaining work."""
    if not preempt:
        return
    for name in preempt:
        r = sim.running.pop(name)
        left = sim.close(r, t, final=False)
        rec = sim.records[sim.index[name]]
        rec.preemptions += 1
        rec.status = "queued"
        sim.queued[name] = QueuedJob(
            sim.jobs[sim.index[name]], left, r.att0 + r.gpus * (t - r.seg_start), t
        )
    # Queue order is arrival order (ties by input position), also for re-queued jobs.
    queued = sim.queued
    sim.queued = {n: queued[n] for n in sorted(queued, key=sim.queue_rank.__getitem__)}


def _resize(sim: Engine, resizes: list, t: float) -> None:
    """Restart each resized job on its new allocation after the restart pause."""
    for a in resizes:
        r = sim.running.pop(a.job)
        left = sim.close(r, t, final=False)
        rec = sim.records[sim.index[a.job]]
        rec.resizes += 1
        rec.restarts += 1
        sim.running[a.job] = sim.open(
            sim.alloc_job(a),
            a.workers,
            a.ps,
            a.placement,
            t,
            r.start,
            left,
            r.att0 + r.gpus * (t - r.seg_start),
            sim.restart_pause(r.job),
        )


def _start(
    sim: Engine,
    groups: SharingGroups,
    starts: list,
    by_label: dict[str, list],
    joins: Collection[str],
    group_use: dict[str, np.ndarray],
    t: float,
) -> None:
    """Start (or resume, after the restart pause) each started job, alone or in its group."""
    for a in starts:
        if getattr(a, "accumulation", 1) > 1:
            groups.accumulation[a.job] = int(a.accumulation)
        else:
            groups.accumulation.pop(a.job, None)
    started_groups = groups.start(by_label, joins, group_use)
    for a in starts:
        q = sim.queued.pop(a.job)
        rec = sim.records[sim.index[a.job]]
        pause = 0.0
        if math.isnan(rec.first_start):
            rec.first_start, rec.workers, rec.ps = t, a.workers, a.ps
        else:  # a preempted job resumes from its checkpoint
            pause = sim.restart_pause(q.job)
            rec.restarts += 1
        rec.status = "running"
        glabel = getattr(a, "group", None)
        if glabel is not None:
            gid, speed, share = started_groups[str(glabel)]
            groups.members.setdefault(gid, set()).add(a.job)
            sim.running[a.job] = sim.open(
                sim.alloc_job(a),
                a.workers,
                a.ps,
                a.placement,
                t,
                t,
                q.remaining,
                q.attained_service,
                pause,
                speed=speed[a.job],
                share=share,
                group=gid,
            )
            continue
        sim.running[a.job] = sim.open(
            sim.alloc_job(a),
            a.workers,
            a.ps,
            a.placement,
            t,
            t,
            q.remaining,
            q.attained_service,
            pause,
        )
