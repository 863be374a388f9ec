"""A private per-machine free-capacity ledger on which a policy places tasks one at a time.

DRF's and Tetris' progressive filling: each step places one worker or PS of one job, so the
ledger keeps the free capacity and, per job, the tasks placed on each machine (for locality:
``add_task`` puts a PS where the job already has most tasks).
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from smdlab.errors import Infeasible, InvalidInput
from smdlab.solve.placement import TOL, Placement, Tasks, prefer, rack_preference


class Ledger:
    """A private per-machine free-capacity ledger on which a policy places tasks one at a time.

    free: (machines x resources) free capacity (copied).
    Tasks already held by running jobs can be recorded with ``preload`` (no capacity is taken)
    so that locality sees them and ``placement`` returns the job's whole placement.
    """

    def __init__(self, free: np.ndarray):
        self.free = np.array(free, dtype=float, copy=True)
        if self.free.ndim != 2:
            raise InvalidInput(
                f"free must be a (machines x resources) array, got shape {self.free.shape}"
            )
        self._tasks: dict[str, dict[int, list[int]]] = {}

    @property
    def machines(self) -> int:
        """Number of machines in the ledger."""
        return self.free.shape[0]

    def fits_mask(self, demand: np.ndarray) -> np.ndarray:
        """Boolean per machine: does one task of ``demand`` fit there now?"""
        return np.all(self.free + TOL * np.maximum(1.0, demand) >= demand, axis=1)

    def preload(self, job: str, tasks: Iterable[tuple[int, int, int]]) -> None:
        """Record tasks a job already holds (their capacity is not in ``free``)."""
        slot = self._tasks.setdefault(job, {})
        for m, w, p in tasks:
            cur = slot.setdefault(int(m), [0, 0])
            cur[0] += int(w)
            cur[1] += int(p)

    def add_task(self, job: str, kind: str, demand: np.ndarray) -> int | None:
        """Place one task (``kind`` 'worker' or 'ps') of ``job``: a machine it already uses, else first fit.

        Among the machines the job uses, the one holding most of its tasks (then the one used
        first); under a rack layout (``smdlab.solve.placement.rack_layout``) first fit prefers
        the racks the job uses. Returns the machine index, or None when the task fits nowhere.
        """
        used = self._tasks.get(job)
        if used:
            # Locality first (fewer machines per job): check the job's own machines before the rest.
            for m in sorted(used, key=lambda m: -sum(used[m])):
                if np.all(self.free[m] + TOL * np.maximum(1.0, demand) >= demand):
                    self.put_task(job, kind, m, demand)
                    return m
        mask = self.fits_mask(demand)
        if not mask.any():
            return None
        if used:  # rack-aware: the job's racks before the others
            mask = prefer(mask, rack_preference(self.machines, used))
        m = int(mask.argmax())  # first fit keeps whole machines free
        self.put_task(job, kind, m, demand)
        return m

    def add_pair(self, job: str, alpha: np.ndarray, gamma: np.ndarray) -> tuple[int, int] | None:
        """Place one worker (demand ``alpha``) and one PS (``gamma``) of ``job`` by ``add_task``; (worker machine, PS machine) or None.

        The worker first; if the PS then fits nowhere, the PS first and then the worker (for one
        worker and one PS, one of the two orders succeeds whenever the pair fits at all). On
        failure nothing stays placed.
        """
        for kinds in (("worker", alpha, "ps", gamma), ("ps", gamma, "worker", alpha)):
            k1, d1, k2, d2 = kinds
            m1 = self.add_task(job, k1, d1)
            if m1 is None:
                return None  # fits nowhere now, so neither after the other task
            m2 = self.add_task(job, k2, d2)
            if m2 is not None:
                return (m1, m2) if k1 == "worker" else (m2, m1)
            self.remove_task(job, k1, m1, d1)
        return None

    def remove_task(self, job: str, kind: str, machine: int, demand: np.ndarray) -> None:
        """Undo ``add_task``: take one task of ``kind`` of ``job`` off ``machine``."""
        slot = self._tasks[job][machine]
        slot[0 if kind == "worker" else 1] -= 1
        if not any(slot):
            del self._tasks[job][machine]  # no longer a machine the job uses (locality)
        self.free[machine] += demand

    def put_task(self, job: str, kind: str, machine: int, demand: np.ndarray) -> None:
        """Place one task of ``job`` on a chosen ``machine`` (raises Infeasible if it does not fit)."""
        if np.any(self.free[machine] + TOL * np.maximum(1.0, demand) < demand):
            raise Infeasible(f"job {job!r}: a {kind} does not fit on machine {machine}")
        self.free[machine] -= demand
        slot = self._tasks.setdefault(job, {}).setdefault(machine, [0, 0])
        slot[0 if kind == "worker" else 1] += 1

    def tasks(self, job: str) -> Tasks:
        """The job's recorded tasks as sorted (machine, workers, ps) triples."""
        return tuple((m, w, p) for m, (w, p) in sorted(self._tasks.get(job, {}).items()) if w or p)

    def placement(self, job: str) -> Placement:
        """The job's recorded tasks as a Placement."""
        return Placement(self.tasks(job))
