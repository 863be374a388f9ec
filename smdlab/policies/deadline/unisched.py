"""UniSched-inspired: Chronus' lease selector with job durations estimated from finished jobs.

Inspired by Gao, Ye, Sun, Zhang, Wen, "UniSched: A Unified Scheduler for Deep Learning Training
Jobs with Different User Demands", IEEE Transactions on Computers 73(6), 2024. Its full text and
code were not available to us: what is built here follows its abstract (an Estimator of job
duration and a Selector that picks jobs and resources, for SLO and best-effort jobs); every rule
below is ours, documented as such in docs/deadlines.md.

- Selector: ``Chronus`` (admission, lease MILP, demotion, spot fill), unchanged; execution
  ``elastic`` as Chronus (asked at every lease boundary; never resizes a running job).
- Estimator (ours): a job's duration is not read from the job; it is the mean duration of the
  finished jobs with the same network and GPU count, else the same network, else all finished
  jobs, else ``prior_min`` (default 60 min, the median duration of the Chronus Philly traces).
  The estimate is fixed when the scheduler first sees the job. A job that runs past its padded
  estimate becomes an unaccepted, forced job (Chronus' overrun rule), so a short estimate costs a
  deadline, not a job. A finished job's duration (its run time at its request) enters the
  history when it finishes.
- Not built: UniSched's iteration-based and performance-based stopping.
"""

from __future__ import annotations

from collections import defaultdict

from smdlab.errors import check_positive
from smdlab.model.job import Job
from smdlab.policies.base import ClusterState
from smdlab.policies.deadline.chronus import Chronus, JobPlan
from smdlab.policies.ps.srtf import request
from smdlab.solve.instance import job_speeds

DEFAULT_PRIOR_MIN = 60.0


class UniSched(Chronus):
    """Chronus' selector with a duration estimator learnt from finished jobs (module docstring)."""

    name = "unisched"

    def __init__(
        self, lease_s: float = 1200.0, time_limit: float = 5.0, solver: str = "milp",
        backend: str = "highs", prior_min: float = DEFAULT_PRIOR_MIN,
    ) -> None:  # fmt: skip
        self.prior_min = check_positive("prior_min", prior_min)
        super().__init__(lease_s, time_limit, solver, backend)

    def reset(self) -> None:
        """Forget jobs, counters and the finished-job history."""
        super().reset()
        self.history: dict[tuple, list[float]] = defaultdict(list)
        self.estimates: list[tuple[str, float, float]] = []  # (job, estimate, actual) minutes

    @staticmethod
    def _keys(job: Job) -> list[tuple]:
        w, _ = request(job)
        return [("net_gpus", job.profile.network, w), ("net", job.profile.network), ("all",)]

    def duration_min(self, job: Job, state: ClusterState) -> float:
        """The mean duration of similar finished jobs (module docstring), else the prior."""
        for key in self._keys(job):
            seen = self.history.get(key)
            if seen:
                return sum(seen) / len(seen)
        return self.prior_min

    def observe_finished(self, plan: JobPlan, state: ClusterState) -> None:
        """Add the finished job's duration at its request to the history."""
        job = plan.job
        w, p = request(job)
        actual = float(job.samples / job_speeds(job, state.mode)[w - 1, p - 1]) / 60.0
        self.estimates.append((job.name, plan.duration, actual))
        for key in self._keys(job):
            self.history[key].append(actual)
