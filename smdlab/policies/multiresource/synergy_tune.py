"""Synergy-TUNE: resource-sensitive CPU and memory on top of a GPU ordering policy.

Source: Mohan, Phanishayee, Kulkarni, Chidambaram, "Looking Beyond GPUs for DNN Scheduling on
Multi-Tenant Clusters", OSDI 2022, section 4 (Synergy-TUNE); simulator msr-fiddle/synergy (MIT).
Mode: preemptive lease rounds (``LEASE_S`` = 300 s; run with ``slot_s=LEASE_S``).

Rule, per round, for the jobs the ``base`` policy (fifo, srtf or las) picks while GPUs last, in
priority order:
1. give the job its best-case demand (its worker demand: the smallest CPU and memory that reach
   its peak speed) where that fits on the machines;
2. otherwise its GPU-proportional share;
3. when even that does not fit, shrink peers already placed this round that hold more than
   their proportional share back to it (lowest priority first, one at a time) until it fits;
   a job that still does not fit waits for the next round.
``rule="simulator"`` follows the authors' simulator instead (msr-fiddle/synergy
``resources/cluster.py`` ``_tune``; single-worker jobs without PS, else the rule above): each
step places on the lowest-numbered machine that fits (first fit); step 3 picks the machine with
the fewest free GPUs (at least one; ties: the lowest number), walks the jobs placed there this
round by fewest machines, most CPU, most memory, and returns each one's excess over its
proportional share until the job's shortfall on that machine is covered.
Assumptions: those of ``smdlab.policies.multiresource._rounds`` (PSs keep their demand; the proportional
share of a worker is the cluster's per-GPU share less its PSs' share). Synergy's profiling is
exact here: the best-case demand is the model's, not a measured estimate.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from smdlab.errors import check_choice
from smdlab.model.cluster import Cluster
from smdlab.model.pipeline import with_worker_resources
from smdlab.policies.base import ClusterState
from smdlab.policies.multiresource._rounds import (
    RULES,
    Planned,
    SynergyRounds,
    best_levels,
    first_fit,
    first_with_gpu,
    proportional_levels,
)
from smdlab.solve.instance import task_vectors
from smdlab.solve.placement import TOL, usage


class SynergyTune(SynergyRounds):
    """Best-case demand where it fits, else the proportional share, shrinking greedy peers."""

    name = "synergy_tune"

    def __init__(
        self,
        base: str = "fifo",
        round_decisions: bool = False,
        starvation_h: float | None = None,
        rule: str = "paper",
    ) -> None:
        self.rule = check_choice("rule", rule, RULES)
        super().__init__(base, round_decisions, starvation_h)

    def levels(self, plans: Sequence[Planned], cluster: Cluster, state: ClusterState) -> None:
        """TUNE's three steps for each picked job in priority order (module docstring)."""
        if self.rule == "simulator" and all((p.workers, p.ps) == (1, 0) for p in plans):
            self._simulator_levels(plans, cluster)
            return
        free = self.start_free(cluster)
        placed: list[Planned] = []
        for plan in plans:
            job = self._job(plan)
            prop = proportional_levels(job, plan.workers, plan.ps, cluster)
            plan.cpu, plan.mem_gb = best_levels(job)
            if self.try_place(plan, free, cluster):
                placed.append(plan)
                continue
            plan.cpu, plan.mem_gb = prop
            ok = self.try_place(plan, free, cluster)
            for peer in reversed(placed):
                if ok:
                    break
                self._shrink(peer, free, cluster)
                ok = self.try_place(plan, free, cluster)
            if not ok:
                ok = self.fallback_place(plan, free, cluster)
            if ok:
                placed.append(plan)
            else:
                plan.tasks = None

    def _simulator_levels(self, plans: Sequence[Planned], cluster: Cluster) -> None:
        """The authors' simulator's TUNE for single-worker jobs (module docstring)."""
        # Plain lists: a round places up to one job per GPU, so per-call numpy overhead dominates.
        free = [list(map(float, row)) for row in self.start_free(cluster)]
        gi = cluster.resources.index("gpu")
        on: dict[int, list[Planned]] = {}  # jobs placed per machine this round, in its order

        def need(plan: Planned, levels: tuple[float, float]) -> tuple[float, ...]:
            return self.worker_vector(plan, levels, cluster)

        def prop_of(plan: Planned) -> tuple[float, float]:
            return self.single_share(plan, cluster)

        def fits(row: list[float], v: tuple[float, ...]) -> bool:
            return all(a >= b - TOL for a, b in zip(row, v, strict=True))

        lo = 0  # machines before lo hold no free GPU (a round only fills GPUs)

        def lowest_fit(v: tuple[float, ...]) -> int | None:
            nonlocal lo
            lo = first_with_gpu(free, gi, lo)
            return first_fit(free, v, gi, lo if v[gi] > TOL else 0)

        for plan in plans:
            best = best_levels(self._job(plan))
            prop = prop_of(plan)
            levels = best
            m = lowest_fit(need(plan, levels))
            if m is None and (best[0] > prop[0] or best[1] > prop[1]):
                levels = prop
                m = lowest_fit(need(plan, levels))
            if m is None:
                m = self._peer_step(need(plan, levels), free, gi, on, need, prop_of)
                if m is not None and not fits(free[m], need(plan, levels)):
                    m = None
            if m is None:
                plan.tasks = None
                continue
            free[m] = [a - b for a, b in zip(free[m], need(plan, levels), strict=True)]
            plan.cpu, plan.mem_gb = levels
            plan.tasks = ((m, 1, 0),)
            on.setdefault(m, []).append(plan)

    def _peer_step(self, vec, free, gi, on, need, prop_of) -> int | None:
        """Return peers' excess on the machine with the fewest free GPUs; that machine or None."""
        open_ = [i for i, row in enumerate(free) if row[gi] >= 1 - TOL]
        if not open_:
            return None
        m = min(open_, key=lambda i: (free[i][gi], i))
        short = [0.0 if k == gi else max(0.0, v - f) for k, (v, f) in enumerate(zip(vec, free[m]))]
        if not any(x > TOL for x in short):
            return m
        peers = on.get(m, [])
        peers.sort(key=lambda p: (-p.cpu, -p.mem_gb))  # in place: the order persists this round
        for peer in peers:
            pprop = prop_of(peer)
            held = need(peer, (peer.cpu, peer.mem_gb))
            fair = need(peer, pprop)
            short = [max(0.0, x - max(0.0, h - f)) for x, h, f in zip(short, held, fair)]
            if peer.cpu > pprop[0] or peer.mem_gb > pprop[1]:
                free[m] = [a + h - f for a, h, f in zip(free[m], held, fair)]
                peer.cpu, peer.mem_gb = pprop
            if not any(x > TOL for x in short):
                break
        return m

    def _shrink(self, peer: Planned, free: np.ndarray, cluster: Cluster) -> None:
        """Lower ``peer`` to its proportional share where it holds more, on the same machines."""
        job = self._job(peer)
        pc, pm = proportional_levels(job, peer.workers, peer.ps, cluster)
        new = (min(peer.cpu, pc), min(peer.mem_gb, pm))
        if new == (peer.cpu, peer.mem_gb) or peer.tasks is None:
            return
        old_a, g = task_vectors(
            with_worker_resources(job, peer.cpu, peer.mem_gb), cluster.resources
        )
        new_a, _ = task_vectors(with_worker_resources(job, *new), cluster.resources)
        free += usage(peer.tasks, old_a, g, free.shape[0]) - usage(
            peer.tasks, new_a, g, free.shape[0]
        )
        peer.cpu, peer.mem_gb = new
