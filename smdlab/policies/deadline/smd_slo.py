"""SMD with deadlines: SMD's problem (P) with each SLO job's value in its weight (ours).

An addition to the reconstruction, not from a paper: (P) minimises sum_i omega_i d_i (plus the
waiting charge of unstarted jobs; docs/solver.md), so a job's weight is what one second of its
time costs. ``smd_slo`` runs SMD unchanged (``smdlab.policies.ps.smd``: selection, sum-of-ratios,
placement, work-conserving fill; elastic, a decision every 1,200 s slot and at every event) on
jobs whose weight is fixed when the policy first sees them:

    omega_i = 1 + kappa x v_i x min(1, r_i / (D_i - a_i))   for an SLO job,
    omega_i = 1                                              for a best-effort job,

with a_i its arrival, r_i its isolated duration (alone, at its request), D_i the absolute
deadline of its first option and v_i that option's value: r_i / (D_i - a_i) is the share of its
deadline window the job needs, so a job with much value and little slack weighs most (a
value-density weight). ``kappa`` (default 1: a Chronus job worth 10 with no slack weighs 11
best-effort jobs) is ours. The weight is fixed, not re-read at every decision: SMD re-solves
every running job at every decision and restarts those whose allocation changes, and weights
that drift with the clock reorder the jobs and restart them (``fixed=False`` re-reads them at
every decision, from the remaining time and the first option still reachable; measured in
EXPERIMENTS.md).

``value_kappa`` > 0 (ours, off by default) adds the value term of (P) per configuration
(``smdlab.solve.instance.ValueTerm``): at a decision at time t, an SLO job started at
configuration c is also charged value_kappa x H x (1 - V_i(t + d_i(c)) / V_i,max), the share of its
value lost if it completes at that configuration's estimate (its remaining work at that speed),
and a job left waiting the share lost at t + H + d_i(r_i); H is (P)'s expected wait. SMD's
selection (the LP of (P)) and its closing local search then weigh each configuration's deadline
option; its sum-of-ratios step between them still sees only omega_i d_i.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from smdlab.errors import check_bool, check_positive
from smdlab.model.job import Job
from smdlab.policies.base import ClusterState, Decision, QueuedJob, RunningJob
from smdlab.policies.ps.smd import SMD
from smdlab.policies.ps.srtf import remaining_time
from smdlab.solve.instance import ValueTerm

DEFAULT_KAPPA = 1.0


def slo_weight(job: Job, remaining_s: float, now: float, kappa: float = DEFAULT_KAPPA) -> float:
    """Weight at ``now`` of a job with ``remaining_s`` left at its request: 1 + kappa x value x need.

    The option is the first the job can still meet; with none left, 1 (as best-effort).
    """
    slo = job.slo
    if slo is None:
        return 1.0
    finish = now + remaining_s
    for deadline, value in zip(slo.deadlines_s, slo.values, strict=True):
        due = job.arrival + deadline
        if finish <= due:
            need = remaining_s / (due - now) if due > now else 1.0
            return 1.0 + kappa * value * min(1.0, need)
    return 1.0


class SMDSLO(SMD):
    """SMD whose job weights carry each SLO job's value at stake and urgency (module docstring)."""

    name = "smd_slo"

    def __init__(
        self,
        kappa: float = DEFAULT_KAPPA,
        fixed: bool = True,
        value_kappa: float = 0.0,
        **options: Any,
    ) -> None:
        self.kappa = check_positive("kappa", kappa, allow_zero=True)
        self.fixed = check_bool("fixed", fixed)
        self.value_kappa = check_positive("value_kappa", value_kappa, allow_zero=True)
        super().__init__(**options)
        self.weights: dict[str, float] = {}

    def reset(self) -> None:
        """Forget the weights of earlier runs."""
        super().reset()
        self.weights = {}

    def _weight(self, entry: QueuedJob | RunningJob, state: ClusterState) -> float:
        job = entry.job
        if not self.fixed:  # re-read now: the first option still reachable, the time left
            return slo_weight(job, remaining_time(entry, state.mode), state.time, self.kappa)
        w = self.weights.get(job.name)
        if w is None:
            w = slo_weight(
                job,
                remaining_time(QueuedJob(job, job.samples), state.mode),
                job.arrival,
                self.kappa,
            )
            self.weights[job.name] = w
        return w

    def _weighted(self, entry, state: ClusterState):
        job = entry.job
        w = self._weight(entry, state)
        return (
            entry
            if w == 1.0
            else dataclasses.replace(entry, job=job.replace(weight=job.weight * w))
        )

    def _solve(self, jobs, state, free, place, work=None):
        """SMD's solve, with the value term of (P) at this decision when ``value_kappa`` > 0."""
        if self.value_kappa == 0:
            return super()._solve(jobs, state, free, place, work)
        plain = self.options
        self.options = {**plain, "value_term": ValueTerm(state.time, self.value_kappa)}
        try:
            return super()._solve(jobs, state, free, place, work)
        finally:
            self.options = plain

    def decide(self, state: ClusterState) -> Decision:
        """SMD's decision on the state whose jobs carry their SLO weights."""
        queued: tuple[QueuedJob, ...] = tuple(self._weighted(q, state) for q in state.queued)
        running: tuple[RunningJob, ...] = tuple(self._weighted(r, state) for r in state.running)
        return super().decide(dataclasses.replace(state, queued=queued, running=running))
