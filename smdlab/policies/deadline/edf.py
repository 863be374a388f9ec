"""EDF: earliest deadline first, preemptive, over SLO jobs; best-effort jobs after them, first come first served.

Rule (Liu and Layland, "Scheduling Algorithms for Multiprogramming in a Hard-Real-Time
Environment", JACM 1973; the deadline baseline Chronus and UniSched compare with): at every
decision point rank every job, running or waiting, by the absolute time of its first deadline
(arrival + ``SLO.first_deadline_s``); best-effort jobs (``Job.slo`` None) rank after every SLO
job, by arrival. Walk that order over the pooled capacity as SRTF does (``smdlab.policies.ps.srtf``:
gang jobs on their request or not at all, others by bundles); running jobs that no longer fit are
preempted. Execution: ``preemptive`` (forced ``non_elastic``: never preempts).

``demote_late=True`` (ours, off by default): an SLO job that can no longer meet its last deadline
even if it ran from now at its request ranks with the best-effort jobs (Chronus' deadline
demotion, applied to EDF), so a hopeless job stops displacing ones that can still make it.
"""

from __future__ import annotations

import math

from smdlab.errors import check_bool
from smdlab.policies.base import ClusterState, Execution, QueuedJob, RunningJob
from smdlab.policies.ps.srtf import SRTF


class EDF(SRTF):
    """Earliest (first) deadline first; best-effort jobs last, by arrival."""

    name = "edf"
    execution: Execution = "preemptive"
    executions = ("non_elastic", "preemptive")

    def __init__(self, preemptive: bool = True, demote_late: bool = False) -> None:
        super().__init__(preemptive)
        self.demote_late = check_bool("demote_late", demote_late)

    def late(self, entry: QueuedJob | RunningJob, state: ClusterState) -> bool:
        """Whether the entry cannot meet its last deadline even if it ran from now at its request."""
        slo = entry.job.slo
        if slo is None:
            return False
        left = SRTF.rank(self, entry, state)  # remaining seconds at the request
        return state.time + left > entry.job.arrival + slo.deadlines_s[-1]

    def rank(self, entry: QueuedJob | RunningJob, state: ClusterState) -> float:
        """Absolute first deadline; infinite (after every SLO job) for best-effort or demoted jobs."""
        slo = entry.job.slo
        if slo is None or (self.demote_late and self.late(entry, state)):
            return math.inf
        return entry.job.arrival + slo.first_deadline_s
