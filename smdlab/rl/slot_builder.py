"""DL2's slot state and action space (docs/rl.md).

DL2 ("DL2: A Deep Learning-driven Scheduler for Deep Learning Clusters", Peng et al., TPDS 2021;
public simulator pengyanghua/DL2, read, not copied) rebuilds every allocation each time slot
(1,200 s). Within a slot its network sees a window of up to 20 jobs sorted by arrival and picks,
one at a time, "add a worker", "add a PS" or "add a worker+PS bundle" to one job, or "end the
slot". ``SlotBuilder`` holds one slot's partial allocation and turns it into a ``Decision``; the
Gymnasium environment (``smdlab.rl``) and the ``DL2`` policy (``smdlab.policies.learned.dl2``)
share it, so a trained agent runs through the simulator's ordinary Decision path.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from smdlab.errors import InvalidInput
from smdlab.model.cluster import Cluster
from smdlab.model.job import Job
from smdlab.model.profiles import list_profiles
from smdlab.policies.base import (
    DEFAULT_SLOT_S,
    Allocation,
    ClusterState,
    Decision,
    Placement,
    QueuedJob,
    RunningJob,
)
from smdlab.policies.toolkit import inverse_capacity
from smdlab.solve.instance import demand_matrices
from smdlab.solve.placement import TOL, capacity_matrix

DEFAULT_WINDOW = 20  # DL2's job window: up to 20 jobs, sorted by arrival (TPDS 2021)
ACTION_KINDS = ("worker", "ps", "bundle")
# Per-job features after the type one-hot: slots since arrival, remaining-epoch fraction,
# dominant share, workers, PSs.
EXTRA_FEATURES = ("slots_since_arrival", "remaining_fraction", "dominant_share", "workers", "ps")
# The network's input scale per extra feature (counts of slots and tasks to about [0, 1]).
FEATURE_SCALE = (0.1, 1.0, 1.0, 1.0 / 16, 1.0 / 16)


def job_types() -> tuple[str, ...]:
    """The job types of the one-hot: every bundled network profile."""
    return tuple(list_profiles())


def at_slot(t: float, slot_s: float) -> bool:
    """Whether time ``t`` is a slot boundary (a multiple of ``slot_s``)."""
    k = t / slot_s
    return abs(k - round(k)) < 1e-9 * max(1.0, k)


class SlotCache:
    """What a slot needs that does not change between slots: the cluster's capacity arrays and
    each job's demand row and type index (computed once per job, not once per slot)."""

    def __init__(self, cluster: Cluster, types: Sequence[str]) -> None:
        self.cluster = cluster
        self.types = tuple(types)
        self.cap = capacity_matrix(cluster)
        self.machine_inv = inverse_capacity(self.cap)
        self.total_inv = inverse_capacity(self.cap.sum(axis=0))
        self.index = {name: k for k, name in enumerate(self.types)}
        self._rows: dict[int, tuple[Job, np.ndarray, int]] = {}

    def rows(self, jobs: Sequence[Job]) -> tuple[np.ndarray, np.ndarray]:
        """(alpha | gamma demand rows (n x 2K), type index or -1 (n,)) of ``jobs``."""
        out, kinds = [], []
        for job in jobs:
            # keyed by identity; the cache holds the job, so its id stays unique
            hit = self._rows.get(id(job))
            if hit is None or hit[0] is not job:
                a, g = demand_matrices([job], self.cluster)
                hit = (job, np.concatenate([a[0], g[0]]), self.index.get(job.profile.network, -1))
                self._rows[id(job)] = hit
            out.append(hit[1])
            kinds.append(hit[2])
        k = len(self.cluster.resources)
        rows = np.array(out) if out else np.zeros((0, 2 * k))
        return rows, np.array(kinds, dtype=int)


class SlotBuilder:
    """One slot's allocation under construction, from nothing (DL2 rebuilds every slot).

    The window holds the first ``window`` unfinished jobs by arrival; each starts with one
    worker+PS bundle where it fits, in arrival order (a job's first task is always a bundle). Every
    task goes to the least-loaded machine it fits on (a bundle's worker and PS together, as in
    DL2's port of DRF; where no machine holds both, each on the least-loaded machine it fits, as
    our DRF does); jobs outside the window get nothing this slot. An all-reduce job (no PSs) gets
    workers only. Outside elastic execution (a departure: DL2 is elastic) running jobs keep their
    allocations and only queued jobs are placed, in the free capacity. ``cache`` (a
    ``SlotCache`` of the same cluster) saves recomputing per-job rows every slot.
    """

    def __init__(
        self,
        state: ClusterState,
        window: int = DEFAULT_WINDOW,
        types: Sequence[str] | None = None,
        slot_s: float = DEFAULT_SLOT_S,
        cache: SlotCache | None = None,
    ) -> None:
        self.state = state
        self.window = window
        self.types = tuple(types) if types is not None else job_types()
        self.n_features = len(self.types) + len(EXTRA_FEATURES)
        cluster = state.cluster
        if cache is None or cache.cluster is not cluster or cache.types != self.types:
            cache = SlotCache(cluster, self.types)
        self.cap = cache.cap
        self.rebuild = state.execution == "elastic"
        self.free = self.cap.copy() if self.rebuild else np.array(state.free, dtype=float)
        self.machine_inv = cache.machine_inv
        self.total_inv = cache.total_inv
        every: list[QueuedJob | RunningJob] = [*state.queued]
        if self.rebuild:
            every += state.running
        entries = sorted(every, key=lambda e: (e.job.arrival, e.job.name))[:window]
        self.jobs: list[Job] = [e.job for e in entries]
        n = len(self.jobs)
        for job in self.jobs:
            if job.gang:
                raise InvalidInput(
                    f"workload: DL2 schedules elastic jobs; job {job.name!r} is a gang job "
                    "(all-or-nothing trace job), which it does not support"
                )
        rows, kinds = cache.rows(self.jobs)
        k = rows.shape[1] // 2
        self.alpha, self.gamma = rows[:, :k], rows[:, k:]
        self.bundle = self.alpha + self.gamma
        demands = np.stack([self.alpha, self.gamma, self.bundle])  # (kind x jobs x resources)
        self.demands = demands
        self.need = demands - TOL * np.maximum(1.0, demands)  # fits: free >= need
        # sum over resources of the used fraction of each machine
        self.load = ((self.cap - self.free) * self.machine_inv).sum(axis=1)
        self.max_w = np.array([j.max_workers for j in self.jobs], dtype=int)
        self.max_p = np.array([j.max_ps for j in self.jobs], dtype=int)
        self.w = np.zeros(n, dtype=int)
        self.p = np.zeros(n, dtype=int)
        # plain-int copies for the per-action checks (numpy scalars are slow one at a time)
        self._w = [0] * n
        self._p = [0] * n
        self._max_w = self.max_w.tolist()
        self._max_p = self.max_p.tolist()
        self.tasks = np.zeros((n, self.cap.shape[0], 2), dtype=int)
        # static part of the observation
        self.static = np.zeros((window, self.n_features), dtype=np.float32)
        base = len(self.types)
        if n:
            typed = np.flatnonzero(kinds >= 0)
            self.static[typed, kinds[typed]] = 1.0
            arrival = np.array([j.arrival for j in self.jobs])
            self.static[:n, base] = np.maximum(0.0, state.time - arrival) / slot_s
            samples = np.array([j.samples for j in self.jobs], dtype=float)
            remaining = np.array([e.remaining for e in entries], dtype=float)
            self.static[:n, base + 1] = np.where(
                samples > 0, remaining / np.where(samples > 0, samples, 1.0), 0.0
            )
        self._mask: np.ndarray | None = None
        self._initial_bundles()

    def _initial_bundles(self) -> None:
        """Each window job's first bundle, in arrival order, where it fits (what ``apply`` would
        do, without refreshing the fit table after every task: it is built once at the end)."""
        stale = True  # the fit table is missing or lags behind ``free``
        for i in range(len(self.jobs)):
            kind = 2 if self._max_p[i] > 0 else 0
            if self._max_w[i] < 1:
                continue
            fits = (self.free >= self.need[kind, i]).all(axis=1)
            if fits.any():
                m = int(np.argmin(np.where(fits, self.load, np.inf)))
                self._take(i, m, kind, refit=False)
                stale = True
            elif kind == 2:  # maybe split over two machines: the general path
                if stale:
                    self._refit()
                    stale = False
                self.apply(3 * i + 2)  # keeps the fit table current
        if stale:
            self._refit()

    @property
    def n_actions(self) -> int:
        """3 per window slot plus "end the slot"."""
        return 3 * self.window + 1

    def _refit(self, m: int | None = None) -> None:
        """Which (kind, job) demands fit which machine: all of them, or machine ``m`` after it changed."""
        if m is None:
            self.fit = (self.free[None, None, :, :] >= self.need[:, :, None, :]).all(axis=3)
            self.nfit = self.fit.sum(axis=2)  # machines each (kind, job) demand fits on
        else:
            new = (self.free[m] >= self.need).all(axis=2)
            self.nfit += new
            self.nfit -= self.fit[:, :, m]
            self.fit[:, :, m] = new
        self._mask = None

    def mask(self) -> np.ndarray:
        """Valid actions (bool, length ``n_actions``); "end the slot" is always valid."""
        if self._mask is None:
            n = len(self.jobs)
            out = np.zeros(self.n_actions, dtype=bool)
            if n:
                can_w = self.w < self.max_w
                can_p = self.p < self.max_p
                # a PS job starts with a bundle (it needs both kinds); all-reduce: workers only
                started = (self.w > 0) | (self.max_p == 0)
                any_fit = self.nfit > 0
                out[0 : 3 * n : 3] = started & can_w & any_fit[0]
                out[1 : 3 * n : 3] = started & can_p & any_fit[1]
                bundle = any_fit[2].copy()
                for i in np.flatnonzero(~bundle & any_fit[0] & any_fit[1] & can_w & can_p):
                    bundle[i] = self._split(int(i)) is not None
                out[2 : 3 * n : 3] = can_w & can_p & bundle
            out[-1] = True
            self._mask = out
        return self._mask

    def valid(self, action: int) -> bool:
        """Whether ``action`` (not "end the slot") is valid now: ``mask()[action]`` for one action."""
        i, kind = divmod(int(action), 3)
        if i >= len(self.jobs):
            return False
        if self._mask is not None:
            return bool(self._mask[action])
        can_w = self._w[i] < self._max_w[i]
        can_p = self._p[i] < self._max_p[i]
        nfit = self.nfit
        if kind == 0:
            return (self._w[i] > 0 or self._max_p[i] == 0) and can_w and nfit[0, i] > 0
        if kind == 1:
            return (self._w[i] > 0 or self._max_p[i] == 0) and can_p and nfit[1, i] > 0
        if not (can_w and can_p):
            return False
        if nfit[2, i] > 0:
            return True
        return nfit[0, i] > 0 and nfit[1, i] > 0 and self._split(i) is not None

    def dominant_shares(self) -> np.ndarray:
        """Each window job's dominant share of the pooled capacity at its current allocation."""
        use = self.w[:, None] * self.alpha + self.p[:, None] * self.gamma
        return (use * self.total_inv).max(axis=1) if len(self.jobs) else np.zeros(0)

    def observation(self) -> np.ndarray:
        """The (window x features) observation, flattened (rows past the jobs are zero)."""
        obs = self.static.copy()
        n = len(self.jobs)
        base = len(self.types)
        obs[:n, base + 2] = self.dominant_shares()
        obs[:n, base + 3] = self.w
        obs[:n, base + 4] = self.p
        return obs.reshape(-1)

    def _split(self, i: int) -> tuple[int, int] | None:
        """Machines (worker's, PS's) for job i's bundle on two machines (worker placed first,
        else PS first, each on the least-loaded machine it fits, as our DRF), or None."""
        for first, second in ((0, 1), (1, 0)):
            m1 = self._place(first, i)
            if m1 is None:
                continue
            d = self.demands[first, i]
            fits = (self.free >= self.need[second, i]).all(axis=1)
            fits[m1] = bool((self.free[m1] - d >= self.need[second, i]).all())
            if not fits.any():
                continue
            load = self.load.copy()
            load[m1] += float(d @ self.machine_inv[m1])
            m2 = int(np.argmin(np.where(fits, load, np.inf)))
            return (m1, m2) if first == 0 else (m2, m1)
        return None

    def _take(self, i: int, m: int, kind: int, refit: bool = True) -> None:
        d = self.demands[kind, i]
        self.free[m] -= d
        self.load[m] += float(d @ self.machine_inv[m])
        if kind != 1:
            self.w[i] += 1
            self._w[i] += 1
            self.tasks[i, m, 0] += 1
        if kind != 0:
            self.p[i] += 1
            self._p[i] += 1
            self.tasks[i, m, 1] += 1
        if refit:
            self._refit(m)
        else:
            self._mask = None

    def _place(self, kind: int, i: int) -> int | None:
        """The least-loaded machine where job i's demand of ``kind`` fits (ties by index), or None."""
        fits = self.fit[kind, i]
        if not fits.any():
            return None
        return int(np.argmin(np.where(fits, self.load, np.inf)))

    def apply(self, action: int) -> bool:
        """Apply one action (index < 3·window: kind action % 3 to job action // 3); False if
        it is "end the slot" or not valid now (then nothing changes)."""
        i, kind = divmod(int(action), 3)
        if not self.valid(action):
            return False
        m = self._place(kind, i)
        if m is not None:
            self._take(i, m, kind)
            return True
        pair = self._split(i) if kind == 2 else None
        if pair is None:  # pragma: no cover - the mask said it fits
            return False
        self._take(i, pair[0], 0)
        self._take(i, pair[1], 1)
        return True

    def drf_action(self) -> int:
        """DRF's next step (the warm-up's teacher): a bundle to the job of smallest dominant share
        under its caps, ties by arrival; "end the slot" when that bundle fits nowhere."""
        end = self.n_actions - 1
        ps_job = self.max_p > 0
        open_ = (self.w < self.max_w) & ((self.p < self.max_p) | ~ps_job)
        if not open_.any():
            return end
        shares = np.where(open_, self.dominant_shares(), np.inf)
        i = int(np.argmin(shares))  # jobs are in arrival order, argmin takes the first
        a = 3 * i + (2 if ps_job[i] else 0)
        return a if self.valid(a) else end

    def decision(self) -> Decision:
        """The slot's allocations; running jobs left without one are preempted."""
        running = {r.job.name: r for r in self.state.running}
        chosen = set()
        allocations = []
        for i, job in enumerate(self.jobs):
            if self.w[i] == 0:
                continue
            chosen.add(job.name)
            tasks = tuple(
                (m, int(c[0]), int(c[1])) for m, c in enumerate(self.tasks[i]) if c[0] or c[1]
            )
            r = running.get(job.name)
            if (
                r is not None
                and (r.workers, r.ps) == (int(self.w[i]), int(self.p[i]))
                and sorted(r.placement.tasks) == list(tasks)
            ):
                continue
            allocations.append(
                Allocation(job.name, int(self.w[i]), int(self.p[i]), Placement(tasks))
            )
        preempt = tuple(name for name in running if name not in chosen) if self.rebuild else ()
        return Decision(tuple(allocations), preempt)


def feature_scale(n_types: int, window: int) -> np.ndarray:
    """The network's input scale for a flattened observation."""
    row = np.concatenate([np.ones(n_types), np.asarray(FEATURE_SCALE)])
    return np.tile(row, window).astype(np.float32)
