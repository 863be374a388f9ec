"""Gandiva: packing, time-slicing and introspective migration (Xiao et al., OSDI 2018).

Source: W. Xiao et al., "Gandiva: Introspective Cluster Scheduling for Deep Learning", OSDI 2018.
Gandiva packs jobs onto the same GPUs when their utilisation is low, time-slices GPUs (suspend
and resume at mini-batch boundaries) when the cluster is oversubscribed, and introspects: it
watches packed jobs and unpacks and migrates one when packing slows it too much. It moves jobs
between GPUs (migration) and so runs in the elastic mode here: ``elastic``, every ``slot_s``
(600 s, an assumption: Gandiva introspects continuously; a slot keeps decisions cheap).

Reconstruction here (sharing groups, ``docs/simulator.md``, "GPU sharing"):
- **Utilisation:** each job's compute demand as the co-location model fits it for the job's
  Gavel type on V100 (``smdlab.model.colocation``; fitted to measurements, the stand-in for
  Gandiva's measured utilisation).
- **Queued jobs, in arrival order:** start alone when their request fits free GPUs (as a
  ``space`` group others may join); else pack into a running space group with room (the sharing
  degree, default 2) when the summed utilisation stays at most ``pack_threshold`` (1.0) and the
  memory fits; else join a time-sliced group with room (up to 4 jobs); else (oversubscribed)
  time-slice with a running job alone: it is suspended and both resume as a new ``time`` group
  on its GPUs (the suspended job pays ``restart_s``; the group pays the per-switch overhead).
- **Introspection:** a packed job predicted to run below ``unpack_below`` (0.5) of its solo
  speed is unpacked and migrated to free GPUs when its request fits there (``restart_s``).
- **Grow-shrink** (Gandiva section 3.2: a job that can use more GPUs grows onto idle ones when
  the cluster is underused and shrinks back when other jobs wait). Shrink first: while jobs are
  queued, a grown job goes back to its request on the GPUs it holds (``restart_s``). Grow last:
  when nothing is left waiting after this decision, a running job alone on its GPUs (not gang;
  packed or time-sliced partners all gone) grows to at most ``grow_factor`` (2) times its request (capped by
  its maximum workers) on free capacity, oldest job first, if the layered model predicts at
  least ``grow_min_gain`` (1.2) times its current speed (``restart_s`` is paid; the gain
  threshold keeps small gains from costing restarts).
Assumptions: time-slicing and packing only among jobs on the same GPU counts and placement; a
grown job is never packed with others (Gandiva grows jobs only on idle GPUs).
"""

from __future__ import annotations

import numpy as np

from smdlab.errors import InvalidInput, check_int, check_positive
from smdlab.model.colocation import (
    DEFAULT_SHARING_GPU,
    default_colocation_model,
    gavel_job_type,
)
from smdlab.model.interleave import MAX_GROUP
from smdlab.model.job import Job
from smdlab.policies.base import Allocation, ClusterState, Decision, Placement, Policy
from smdlab.policies.ps.srtf import request
from smdlab.policies.sharing._groups import (
    Share,
    can_share,
    factors,
    place_alone,
    running_shares,
    solo_speed,
    start_alone,
    take,
    try_join,
)
from smdlab.solve.placement import first_fit, placement_usage

SPACE, TIME = "gandiva-pack", "gandiva-slice"  # label prefixes of the two kinds of group


class Gandiva(Policy):
    """Pack by utilisation, time-slice when oversubscribed, unpack jobs that packing slows."""

    name = "gandiva"
    execution = "elastic"
    executions = ("elastic",)
    slot_s = 600.0

    def __init__(
        self,
        sharing_degree: int = 2,
        pack_threshold: float = 1.0,
        unpack_below: float = 0.5,
        grow_factor: float = 2.0,
        grow_min_gain: float = 1.2,
    ) -> None:
        self.sharing_degree = check_int("sharing_degree", sharing_degree, 1)
        self.pack_threshold = check_positive("pack_threshold", pack_threshold)
        self.unpack_below = check_positive("unpack_below", unpack_below)
        self.grow_factor = check_positive("grow_factor", grow_factor)
        if self.grow_factor < 1:
            raise InvalidInput(f"grow_factor must be >= 1 (1: never grow), got {grow_factor!r}")
        self.grow_min_gain = check_positive("grow_min_gain", grow_min_gain)

    def utilisation(self, job: Job) -> float:
        """The job's fitted GPU compute demand (fraction of one GPU) on V100."""
        m = default_colocation_model()
        g = m.gpus.index(DEFAULT_SHARING_GPU)
        return float(np.exp(m.params["log_demand"][g, m.jobs.index(gavel_job_type(job))]))

    def decide(self, state: ClusterState) -> Decision:
        """Introspect packed groups, then place queued jobs: alone, packed, or time-sliced."""
        k = state.sharing_degree
        free = np.array(state.free, dtype=float)
        shares = running_shares(state)
        out: list[Allocation] = []
        preempt: list[str] = []
        # Introspection: unpack the slowest packed member when it can move to free GPUs.
        for s in shares:
            if not state.preemptive or not s.label.startswith(SPACE) or len(s.jobs) < 2:
                continue  # (a wrapper may run it without preemption: then it never moves jobs)
            f = factors(s.jobs)
            if f is None or f.min() >= self.unpack_below:
                continue
            victim = s.jobs[int(np.argmin(f))]
            alone = place_alone(victim, free, state)
            if alone is None:
                continue
            w, p, pl = alone
            take(victim, pl, free, state)
            preempt.append(victim.name)
            out.append(
                Allocation(victim.name, w, p, pl, group=f"{SPACE}:{victim.name}", sharing="space")
            )
            i = s.jobs.index(victim)
            del s.jobs[i], s.accs[i], s.remaining[i]
            s.label = ""  # members left it in this decision: nobody joins it now
        # Shrink: while jobs wait, grown jobs go back to their request on the GPUs they hold.
        for s in shares if state.preemptive and state.queued else ():
            if not s.label.startswith(SPACE) or len(s.jobs) != 1 or s.jobs[0].name in preempt:
                continue
            job = s.jobs[0]
            w, p = self._grow_base(job)
            if s.workers <= w:
                continue
            back = self._replace(job, s, w, p, free, state)
            if back is None:
                continue
            preempt.append(job.name)
            out.append(
                Allocation(job.name, w, p, back, group=f"{SPACE}:{job.name}", sharing="space")
            )
            s.label = ""
        moved = set(preempt)
        for q in sorted(state.queued, key=lambda q: (q.job.arrival, q.job.name)):
            job = q.job
            alone = place_alone(job, free, state)
            if alone is not None:
                start_alone(q, alone, SPACE, free, state, shares, out)
                continue
            u = self.utilisation(job)
            host = None
            for s in shares:
                if (
                    not s.label
                    or s.label.endswith("^")  # a grown job is never packed with others
                    or not can_share(s, job)
                    or any(x.name in moved for x in s.jobs)
                ):
                    continue
                if s.label.startswith(SPACE) and len(s.jobs) < k:
                    if sum(self.utilisation(x) for x in s.jobs) + u > self.pack_threshold:
                        continue
                    if factors([*s.jobs, job]) is None:
                        continue
                elif not (s.label.startswith(TIME) and len(s.jobs) < MAX_GROUP):
                    continue
                if try_join(s, job, free, state):
                    host = s
                    break
            if host is not None:
                host.jobs.append(job)
                out.append(
                    Allocation(
                        job.name,
                        host.workers,
                        host.ps,
                        host.placement,
                        group=host.label,
                        sharing="space" if host.label.startswith(SPACE) else "time",
                    )
                )
                continue
            # Oversubscribed: suspend a running job that is alone and time-slice with it.
            for s in shares if state.preemptive else ():
                if (
                    len(s.jobs) != 1
                    or not s.label.startswith(SPACE)
                    or s.label.endswith("^")
                    or s.jobs[0].name in moved
                    or not can_share(s, job)
                    or not any(r.job.name == s.jobs[0].name for r in state.running)
                    or not try_join(s, job, free, state)
                ):
                    continue
                solo = s.jobs[0]
                label = f"{TIME}:{solo.name}"
                preempt.append(solo.name)
                moved.add(solo.name)
                for name in (solo.name, job.name):
                    out.append(
                        Allocation(name, s.workers, s.ps, s.placement, group=label, sharing="time")
                    )
                s.label, s.jobs = label, [solo, job]
                break
        placed = {a.job for a in out}
        if state.preemptive and all(q.job.name in placed for q in state.queued):
            self._grow(state, shares, free, out, preempt, moved)
        return Decision(tuple(out), preempt=tuple(preempt))

    @staticmethod
    def _grow_base(job: Job) -> tuple[int, int]:
        """The (workers, PSs) a job shrinks back to: its request."""
        return request(job)

    @staticmethod
    def _replace(
        job: Job, s: Share, w: int, p: int, free: np.ndarray, state: ClusterState
    ) -> Placement | None:
        """Re-place ``job`` (now on ``s``) at (w, p) on free capacity plus what it holds; take it."""
        n, res = free.shape[0], state.cluster.resources
        held = placement_usage(job, s.placement, n, res)
        pl = first_fit(job, w, p, free + held, res)
        if pl is None:
            return None
        free += held
        free -= placement_usage(job, pl, n, res)
        return pl

    def _grow(
        self,
        state: ClusterState,
        shares: list[Share],
        free: np.ndarray,
        out: list[Allocation],
        preempt: list[str],
        moved: set[str],
    ) -> None:
        """Grow running jobs alone on their GPUs onto free capacity (module docstring)."""
        gpu = state.cluster.resources.index("gpu")
        running = {r.job.name for r in state.running}  # not the jobs started in this decision
        for s in shares:
            if free[:, gpu].sum() < 1 or not s.label or len(s.jobs) != 1:
                continue
            job = s.jobs[0]
            if job.gang or job.name not in running or job.name in moved or job.name in preempt:
                continue
            w0 = request(job)[0]
            target = min(int(self.grow_factor * w0), job.max_workers)
            if job.arch != "allreduce":
                target = min(target, job.max_ps)
            if target <= s.workers:
                continue
            now = solo_speed(job, s.workers, s.ps, state.mode)
            for w in range(target, s.workers, -1):
                p = 1 if job.arch == "allreduce" else w
                if solo_speed(job, w, p, state.mode) < self.grow_min_gain * now:
                    break  # fewer workers gain even less
                pl = self._replace(job, s, w, p, free, state)
                if pl is None:
                    continue
                preempt.append(job.name)
                out.append(
                    Allocation(job.name, w, p, pl, group=f"{SPACE}:{job.name}^", sharing="space")
                )
                s.label = ""
                break
