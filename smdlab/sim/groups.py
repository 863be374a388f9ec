"""GPU-sharing groups of a run: which jobs share GPUs, how fast each runs, what the group holds.

A group is Muri's interleaving (``sharing=None``), space sharing (co-located, the co-location
model's rates) or time-slicing (docs/simulator.md, "GPU sharing"). Members have the same counts
and tasks; the group holds the per-machine maximum of its members' use, each member an equal
share of it. When a member leaves, the rest share the group's use anew and speed up.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection

import numpy as np

from smdlab.execution import SHARING_KINDS, TIME_SLICE_S, TIME_SLICE_SWITCH_S
from smdlab.model.interleave import MAX_GROUP, group_iteration_time, job_iteration_time
from smdlab.model.job import Job
from smdlab.model.timing import job_speeds, speed as speed_of
from smdlab.sim.engine import Engine
from smdlab.sim.errors import CapacityExceeded, InvalidDecision
from smdlab.sim.running import Run
from smdlab.solve.instance import task_vectors

__all__ = ["SharingGroups"]


class SharingGroups:
    """The sharing groups of one run on ``sim``: members, kinds and gradient accumulation."""

    def __init__(self, sim: Engine) -> None:
        self.sim = sim
        self.seq = 0
        self.members: dict[str, set[str]] = {}  # group id -> job names
        self.kinds: dict[str, str] = {}  # group id -> sharing kind (absent: Muri's interleaving)
        self.accumulation: dict[str, int] = {}  # gradient-accumulation steps of shared jobs
        self.time_sliced = False  # whether any group of the run was time-sliced

    def check(self, allocations, starts, where: str) -> dict[str, list]:
        """Allocations per group label, checked: at most 4 jobs, same counts and placement, all starts."""
        groups: dict[str, list] = {}
        started = {a.job for a in starts}
        for a in allocations:
            label = getattr(a, "group", None)
            if label is None:
                continue
            if a.job not in started:
                raise InvalidDecision(
                    f"{where}: group {label!r} resizes running job {a.job!r}; a group starts its jobs"
                )
            groups.setdefault(str(label), []).append(a)
        for label, members in groups.items():
            kind = getattr(members[0], "sharing", None)
            present = self.runs(label) if label in self.members else []
            if present:  # new jobs join a running sharing group (its id from RunningJob.group)
                if kind is None or self.kinds.get(label) != kind:
                    raise InvalidDecision(
                        f"{where}: group {label!r} is running; only jobs of its sharing kind "
                        f"({self.kinds.get(label)!r}) may join it"
                    )
                host = present[0]
                for a in members:
                    if (a.workers, a.ps) != (host.workers, host.ps) or sorted(
                        a.placement.tasks
                    ) != sorted(host.placement.tasks):
                        raise InvalidDecision(
                            f"{where}: job {a.job!r} joins group {label!r} on other counts or "
                            f"tasks than the group's"
                        )
                members = [*present, *members]
            if kind is not None and kind not in SHARING_KINDS:
                raise InvalidDecision(
                    f"{where}: group {label!r}: sharing must be one of {', '.join(SHARING_KINDS)} "
                    f"or None, got {kind!r}"
                )
            if any(getattr(a, "sharing", kind) != kind for a in members):  # a Run has none
                raise InvalidDecision(f"{where}: group {label!r} mixes sharing kinds")
            degree = self.sim.sharing_degree
            if kind == "space" and len(members) > degree:
                raise InvalidDecision(
                    f"{where}: group {label!r} co-locates {len(members)} jobs; the sharing degree "
                    f"allows [1, {degree}]"
                )
            if (
                kind == "space"
                and self.space_factors(
                    [self._member_job(a) for a in members],
                    [
                        self.accumulation.get(a.job.name, 1)
                        if isinstance(a, Run)
                        else getattr(a, "accumulation", 1)
                        for a in members
                    ],
                )
                is None
            ):
                raise CapacityExceeded(
                    f"{where}: group {label!r}: the co-location model predicts its jobs do not fit "
                    f"in one GPU's memory together"
                )
            if len(members) > MAX_GROUP:
                raise InvalidDecision(
                    f"{where}: group {label!r} has {len(members)} jobs; group size must be in "
                    f"[1, {MAX_GROUP}]"
                )
            first = members[0]
            for a in members[1:]:
                if (a.workers, a.ps) != (first.workers, first.ps):
                    raise InvalidDecision(
                        f"{where}: group {label!r} mixes {first.workers} and {a.workers} GPUs "
                        f"(workers) or PS counts; a group's jobs must have the same GPU count"
                    )
                if sorted(a.placement.tasks) != sorted(first.placement.tasks):
                    raise InvalidDecision(
                        f"{where}: group {label!r}: job {a.job!r} is not placed on the group's tasks"
                    )
        return groups

    def _member_job(self, a) -> Job:
        """The job of a group member: an allocation's, or a running member's own."""
        return a.job if isinstance(a, Run) else self.sim.alloc_job(a)

    def space_factors(self, jobs: list[Job], accs: list[int] | None = None) -> np.ndarray | None:
        """Each job's fraction of its solo rate when co-located (None: not in memory together)."""
        # imported here: the co-location model loads SciPy's optimisers, which runs without groups skip
        from smdlab.model.colocation import (
            accumulation_efficiency,
            gavel_job_type,
            shared_rate_factors,
        )

        if accs is None:
            accs = [self.accumulation.get(j.name, 1) for j in jobs]
        f = shared_rate_factors([gavel_job_type(j, k) for j, k in zip(jobs, accs, strict=True)])
        if f is None:
            return None
        eff = [
            accumulation_efficiency(j, k) if k > 1 else 1.0 for j, k in zip(jobs, accs, strict=True)
        ]
        return f * np.array(eff)

    def speeds(self, jobs: list[Job], w: int, p: int, kind: str | None) -> dict[str, float]:
        """Speed of each member of a group of ``jobs`` on (w, p) shared in the way ``kind`` says."""
        mode = self.sim.mode
        if kind is None:  # Muri's interleaving
            tau = group_iteration_time(jobs, w, p, mode)
            return {
                j.name: speed_of(j, w, p, mode) * job_iteration_time(j, w, p, mode) / tau
                for j in jobs
            }
        # the speed tables, as for a job alone (an all-reduce job's PS column is its p = 0)
        solo = {j.name: float(job_speeds(j, mode)[w - 1, max(p, 1) - 1]) for j in jobs}
        if kind == "space":
            f = self.space_factors(jobs)
            f = np.ones(len(jobs)) if f is None else f
            return {j.name: solo[j.name] * float(x) for j, x in zip(jobs, f, strict=True)}
        n = len(jobs)  # time-slicing: 1/n of the GPU time, less the switches
        keep = 1.0 if n == 1 else max(0.0, 1.0 - TIME_SLICE_SWITCH_S / TIME_SLICE_S) / n
        return {j.name: solo[j.name] * keep for j in jobs}

    def gpus_at_once(self) -> float:
        """GPUs the running jobs hold, each counted alone, a time-sliced member by its turn (1/n of a group of n)."""
        # Time-sliced members take turns on one set of GPUs: n of them are one job at a time there,
        # so they count once together; space-shared members run at once and count each.
        running = self.sim.running.values()
        if not self.time_sliced:
            return sum(r.gpus for r in running)
        turns = Counter(r.group for r in running if self.kinds.get(r.group or "") == "time")
        return sum(r.gpus / turns[r.group] if r.group in turns else r.gpus for r in running)

    def use(self, members) -> np.ndarray:
        """Per-machine use of a group: the maximum of its members' (machines x resources)."""
        sim = self.sim
        use = np.zeros_like(sim.capacity)
        for a in members:
            wv, pv = task_vectors(sim.alloc_job(a), sim.resources)
            one = np.zeros_like(sim.capacity)
            for m, w, p in a.placement.tasks:
                one[m] += w * wv + p * pv
            use = np.maximum(use, one)
        return use

    def runs(self, gid: str, leaving: Collection[str] | None = None) -> list[Run]:
        """Running members of group ``gid``, less ``leaving``."""
        leaving = leaving or ()
        running = self.sim.running
        return [
            r
            for n in sorted(self.members.get(gid, ()))
            if n not in leaving and (r := running.get(n)) is not None and r.group == gid
        ]

    def held_use(self, gid: str, leaving: Collection[str]) -> tuple[np.ndarray, np.ndarray]:
        """(what the members of ``gid`` that stay hold now, what they will hold as a group)."""
        cap = self.sim.capacity
        use = np.zeros_like(cap)
        held = np.zeros_like(cap)
        for r in self.runs(gid, leaving):
            one = np.zeros_like(cap)
            one[r.rows] = r.solo
            use = np.maximum(use, one)
            held[r.rows] += r.usage
        return held, use

    def regroup(self, gid: str, t: float, adjust_free: bool = True) -> None:
        """After a member left group ``gid`` (or joined it): the members share its use anew."""
        sim = self.sim
        runs = self.runs(gid)
        if not runs:
            self.members.pop(gid, None)
            return
        self.members[gid] = {r.job.name for r in runs}
        held, use = self.held_use(gid, set())
        if adjust_free:
            sim.free += held - use
        w, p = runs[0].workers, runs[0].ps
        jobs = [r.job for r in runs]
        speeds = self.speeds(jobs, w, p, self.kinds.get(gid))
        for r in runs:
            left = sim.close(r, t, final=False)
            v = speeds[r.job.name]
            sim.running[r.job.name] = sim.open(
                r.job,
                w,
                p,
                r.placement,
                t,
                r.start,
                left,
                r.att0 + r.gpus * (t - r.seg_start),
                max(0.0, r.resume - t),
                speed=v,
                share=use / len(runs),
                group=gid,
            )

    def start(
        self, groups: dict[str, list], joins: Collection[str], group_use: dict[str, np.ndarray]
    ) -> dict[str, tuple[str, dict[str, float], np.ndarray | None]]:
        """Per label of a decision: (group id, each starting member's speed, each member's share
        of the group's use; None when the members join a running group and regroup after)."""
        started: dict[str, tuple[str, dict[str, float], np.ndarray | None]] = {}
        for label, members in groups.items():
            if label in joins:
                started[label] = (label, {a.job: 1.0 for a in members}, None)
                continue
            self.seq += 1
            self.sim.beyond_bound = True  # grouped jobs share GPUs
            gid = f"{label}#{self.seq}"
            jobs = [self.sim.alloc_job(a) for a in members]
            w, p = members[0].workers, members[0].ps
            kind = getattr(members[0], "sharing", None)
            if kind is not None:
                self.kinds[gid] = kind
                self.time_sliced |= kind == "time"
            speed = self.speeds(jobs, w, p, kind)
            started[label] = (gid, speed, group_use[label] / len(members))
        return started
