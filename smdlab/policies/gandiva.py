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
Assumptions: time-slicing and packing only among jobs on the same GPU counts and placement;
grow-shrink is not modelled.
"""

from __future__ import annotations

import numpy as np

from smdlab.errors import check_int, check_positive
from smdlab.model.colocation import (
    DEFAULT_SHARING_GPU,
    default_colocation_model,
    gavel_job_type,
)
from smdlab.model.job import Job
from smdlab.model.pipeline import MAX_GROUP
from smdlab.policies.base import Allocation, ClusterState, Decision, Policy
from smdlab.policies.sharing import (
    Share,
    can_share,
    factors,
    place_alone,
    running_shares,
    take,
    try_join,
)

SPACE, TIME = "gandiva-pack", "gandiva-slice"  # label prefixes of the two kinds of group


class Gandiva(Policy):
    """Pack by utilisation, time-slice when oversubscribed, unpack jobs that packing slows."""

    name = "gandiva"
    execution = "elastic"
    executions = ("elastic",)
    slot_s = 600.0

    def __init__(
        self, sharing_degree: int = 2, pack_threshold: float = 1.0, unpack_below: float = 0.5
    ) -> None:
        self.sharing_degree = check_int("sharing_degree", sharing_degree, 1)
        self.pack_threshold = check_positive("pack_threshold", pack_threshold)
        self.unpack_below = check_positive("unpack_below", unpack_below)

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
        moved = set(preempt)
        for q in sorted(state.queued, key=lambda q: (q.job.arrival, q.job.name)):
            job = q.job
            alone = place_alone(job, free, state)
            if alone is not None:
                w, p, pl = alone
                take(job, pl, free, state)
                label = f"{SPACE}:{job.name}"
                shares.append(Share(label, w, p, pl, [job], [1], [q.remaining]))
                out.append(Allocation(job.name, w, p, pl, group=label, sharing="space"))
                continue
            u = self.utilisation(job)
            host = None
            for s in shares:
                if not s.label or not can_share(s, job) or any(x.name in moved for x in s.jobs):
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
                kind = "space" if host.label.startswith(SPACE) else "time"
                out.append(
                    Allocation(
                        job.name,
                        host.workers,
                        host.ps,
                        host.placement,
                        group=host.label,
                        sharing=kind,
                    )
                )
                continue
            # Oversubscribed: suspend a running job that is alone and time-slice with it.
            for s in shares if state.preemptive else ():
                if (
                    len(s.jobs) != 1
                    or not s.label.startswith(SPACE)
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
        return Decision(tuple(out), preempt=tuple(preempt))
