"""LSF: least slack first (least laxity first), preemptive, with best-effort jobs after SLO jobs.

Rule (Mok, "Fundamental Design Problems of Distributed Systems for the Hard-Real-Time
Environment", MIT PhD thesis 1983; the laxity baseline of deadline-aware DL schedulers): at every
decision point rank every job, running or waiting, by its slack: first deadline (absolute) - now
- its remaining time at its request (remaining samples / speed at the request, as SRTF measures
it); best-effort jobs rank after every SLO job, by arrival. Walk the order as SRTF does
(``smdlab.policies.ps.srtf``); running jobs that no longer fit are preempted. Slack changes only
for waiting jobs between events, so LSF also decides every ``slot_s`` (default 1,200 s, ours:
the lease of Chronus' artifact, so the two re-rank as often). ``demote_late`` as for EDF.
"""

from __future__ import annotations

import math

from smdlab.errors import check_positive
from smdlab.policies.base import ClusterState, Execution, QueuedJob, RunningJob
from smdlab.policies.deadline.edf import EDF
from smdlab.policies.ps.srtf import SRTF

DEFAULT_LSF_SLOT_S = 1200.0


class LSF(EDF):
    """Least slack (first deadline - now - remaining time) first; best-effort jobs last."""

    name = "lsf"
    execution: Execution = "preemptive"
    executions = ("non_elastic", "preemptive")

    def __init__(
        self, preemptive: bool = True, demote_late: bool = False, slot_s: float = DEFAULT_LSF_SLOT_S
    ) -> None:
        super().__init__(preemptive, demote_late)
        self.slot_s = check_positive("slot_s", slot_s)

    def rank(self, entry: QueuedJob | RunningJob, state: ClusterState) -> float:
        """Slack in seconds; infinite for best-effort or demoted jobs."""
        slo = entry.job.slo
        if slo is None or (self.demote_late and self.late(entry, state)):
            return math.inf
        left = SRTF.rank(self, entry, state)
        return entry.job.arrival + slo.first_deadline_s - state.time - left
