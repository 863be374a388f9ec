"""FIFO: first come, first served, strict (head-of-line blocking) by default, backfill as an option.

Rule (docs/simulator.md, Policies; the ``fifo`` / ``fjf`` schedulers of the Tiresias simulator,
SymbioticLab/Tiresias ``run_sim.py``): take queued jobs in arrival order and start each on what
it gets before looking at the next. Strict (``backfill=False``, default): the pass stops at the
first job that does not fit, so a large job at the head blocks the smaller ones behind it (the
field's FIFO). Backfill (``backfill=True``, the reference's fit-job-first): a job that does not
fit is passed over and later jobs may start. Mode: non-preemptive (running jobs keep their
allocation; never resized). Execution: ``non_elastic`` only.

Allocation: a gang job (``Job.gang``, e.g. every ``demands="gpu_only"`` trace job) gets its whole
request or nothing (``toolkit.gang_placement``: consolidated on one machine, else spread). Other
jobs get worker+PS bundles up to their cap (bundles up to min(max_workers, max_ps), then single
workers up to max_workers once the job holds max_ps PSs: the convention the bundle baselines
share); such a job starts with fewer bundles than its cap when no more fit, and its placement is
first-fit decreasing (``smdlab.solve.placement.first_fit``).
"""

from __future__ import annotations

from smdlab.errors import check_bool
from smdlab.policies.base import ClusterState, Decision, Policy
from smdlab.policies.toolkit import admit_bundles


class FIFO(Policy):
    """First in, first out; strict head-of-line blocking unless ``backfill``."""

    name = "fifo"
    execution = "non_elastic"
    executions = ("non_elastic",)

    def __init__(self, backfill: bool = False) -> None:
        self.backfill = check_bool("backfill", backfill)

    def decide(self, state: ClusterState) -> Decision:
        """Queued jobs in arrival order until one does not fit (strict) or through the queue (backfill)."""
        return admit_bundles(state.queued, state, stop_at_first_unfit=not self.backfill)
