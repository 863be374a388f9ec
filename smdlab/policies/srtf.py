"""SRTF: shortest remaining time first, in worker+PS bundles.

Rule (docs/simulator.md, Policies): as FIFO, but queued jobs are ordered by remaining work, measured as
remaining samples divided by the speed at the minimal allocation (1 worker, 1 PS) of the
layered timing model; ties by arrival. Assumptions: non-preemptive (a running job keeps its
allocation, so this is the non-preemptive shortest-job-first form); head-of-line blocking as in
FIFO (the pass stops at the first job that gets no bundle); first-fit decreasing placement.
Execution: ``non_elastic`` only (this non-preemptive form never resizes or preempts).
"""

from __future__ import annotations

import bisect

from smdlab.policies.base import ClusterState, Decision, Policy, QueuedJob
from smdlab.policies.stages import admit_bundles
from smdlab.solve.instance import base_speeds


def remaining_time_at_minimum(q: QueuedJob, mode: str) -> float:
    """Remaining samples / speed at (1 worker, 1 PS), in seconds."""
    return q.remaining / float(base_speeds([q.job], mode)[0])


class SRTF(Policy):
    """Shortest remaining time (at the minimal allocation) first, bundles up to each job's cap."""

    name = "srtf"
    execution = "non_elastic"
    executions = ("non_elastic",)

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        """Forget the queue order kept between decisions (the simulator calls this before a run)."""
        self._order: list[
            tuple[float, float, int, int]
        ] = []  # (time, arrival, seq, id), sorted; may hold stale ids
        self._known: dict[
            int, QueuedJob
        ] = {}  # id -> object; holding it keeps the id from being reused
        self._ids: set[int] = set()
        self._seq = 0

    def _compact(self, keep: set[int]) -> None:
        self._order = [e for e in self._order if e[3] in keep]
        self._known = {i: q for i, q in self._known.items() if i in keep}

    def _sync(self, queued: tuple[QueuedJob, ...], mode: str) -> None:
        # QueuedJob objects are immutable, so a job's key is fixed while the same object waits:
        # the order is kept across decisions and only new arrivals are sorted in (set operations
        # in C; the scan for new objects starts at the tail, where arrivals are).
        ids = set(map(id, queued))
        new = ids - self._ids
        if new & self._known.keys() or len(self._order) > 2 * len(ids) + 64:
            self._compact(ids - new)
        if new:
            found = []
            for q in reversed(queued):
                if id(q) in new:
                    found.append(q)
                    if len(found) == len(new):
                        break
            for q in reversed(found):  # queue order, so that ties go to the earlier position
                self._known[id(q)] = q
                self._seq += 1
                bisect.insort(
                    self._order,
                    (remaining_time_at_minimum(q, mode), q.job.arrival, self._seq, id(q)),
                )
        self._ids = ids

    def decide(self, state: ClusterState) -> Decision:
        """Bundles for queued jobs, shortest remaining work first, until one does not fit."""
        self._sync(state.queued, state.mode)
        ids, known = self._ids, self._known
        return admit_bundles((known[e[3]] for e in self._order if e[3] in ids), state)
