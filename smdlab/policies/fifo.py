"""FIFO: first come, first served, in worker+PS bundles, with head-of-line blocking.

Rule (docs/simulator.md, Policies; classic baselines as ported to the parameter-server setting): take queued jobs
in arrival order; give the head job as many bundles (1 worker + 1 PS) as fit, up to its cap,
before looking at the next job; stop at the first job that gets no bundle at all. The cap:
bundles up to min(max_workers, max_ps), then single workers up to max_workers once the job holds
max_ps PSs (the convention the other bundle baselines share). Assumptions where the rule is silent: a job starts with fewer bundles than its cap
when no more fit (no gang scheduling); running jobs are never resized or preempted; placement is
first-fit decreasing (``smdlab.solve.placement.first_fit``). Execution: ``non_elastic`` only (the
classic batch-scheduler rule has no resize or preemption).
"""

from __future__ import annotations

from smdlab.policies.base import ClusterState, Decision, Policy
from smdlab.policies.stages import admit_bundles


class FIFO(Policy):
    """First in, first out over worker+PS bundles; stops at the first job that does not fit."""

    name = "fifo"
    execution = "non_elastic"
    executions = ("non_elastic",)

    def decide(self, state: ClusterState) -> Decision:
        """Bundles for queued jobs in arrival order until one does not fit."""
        return admit_bundles(state.queued, state)
