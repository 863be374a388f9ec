"""Optimus: a fitted speed model per job and marginal-gain allocation of workers and PSs."""

from __future__ import annotations

import zlib
from collections.abc import Sequence

import numpy as np

from smdlab.errors import InvalidInput, check_choice, check_int, check_positive
from smdlab.model.cluster import Cluster
from smdlab.model.job import Job
from smdlab.model.optimus_form import SpeedModel, fit_speed_model
from smdlab.model.timing import MODES, iteration_time_table
from smdlab.policies.base import DEFAULT_SLOT_S, ClusterState, Decision, Policy
from smdlab.policies.stages import (
    Target,
    assemble,
    queued_jobs,
    running_by_arrival,
    total_capacity,
    work_conserving_fill,
)
from smdlab.solve.instance import task_vectors
from smdlab.solve.placement import TOL, consolidated_tasks, dominant_share

# The "measured points" of a short profiling run: (workers, PSs) pairs, clipped to a job's caps.
DEFAULT_PROFILE_POINTS: tuple[tuple[int, int], ...] = (
    (1, 1),
    (2, 1),
    (1, 2),
    (2, 2),
    (4, 2),
    (2, 4),
    (4, 4),
    (8, 4),
    (4, 8),
    (8, 8),
)


def profile_points(
    job: Job, points: Sequence[tuple[int, int]] = DEFAULT_PROFILE_POINTS
) -> list[tuple[int, int]]:
    """The profiling points within the job's caps (clipped, de-duplicated, order kept)."""
    out: list[tuple[int, int]] = []
    for w, p in points:
        pt = (min(int(w), job.max_workers), min(int(p), job.max_ps))
        if pt not in out:
            out.append(pt)
    return out


def profile_job(
    job: Job,
    mode: str = "wfbp",
    points: Sequence[tuple[int, int]] = DEFAULT_PROFILE_POINTS,
    noise: float = 0.0,
    seed: int = 0,
) -> SpeedModel:
    """Optimus' model of ``job``, fitted to iteration times "measured" at ``points`` on the exact model.

    noise: relative standard deviation of multiplicative Gaussian measurement noise (0: exact);
    the noise is seeded by ``seed`` and the job's name, so it is the same in every run.
    """
    check_choice("mode", mode, MODES)
    noise = check_positive("noise", noise, allow_zero=True)
    pts = profile_points(job, points)
    table = iteration_time_table([job], mode)[0]
    tau = np.array([table[w - 1, p - 1] for w, p in pts])
    if noise > 0:
        rng = np.random.default_rng([seed, zlib.crc32(job.name.encode())])
        tau = tau * np.clip(1 + noise * rng.standard_normal(tau.size), 0.05, None)
    batch = job.batch
    return fit_speed_model([w for w, _ in pts], [p for _, p in pts], tau, batch, job.batch_mode)


class Optimus(Policy):
    """Optimus (Peng et al., EuroSys 2018) in smdlab's parameter-server model.

    Speed model: each job's iteration time is fitted to Optimus' form a*M/w + b + c*w/p + d*w +
    e*p by non-negative least squares (``fit_speed_model``) on "measured" points: the exact
    layered model's iteration times at a handful of (w, p) pairs (``DEFAULT_PROFILE_POINTS``,
    clipped to the job's caps), optionally with seeded multiplicative noise (``noise``). Optimus
    then schedules with the fitted model, never the exact one. In per-worker batch mode the term
    a*M/w becomes a*m (the per-worker compute does not change with w).

    Allocation (docs/simulator.md, Policies): every job starts at 1 worker + 1 PS; then repeatedly add one worker or
    one PS to the job whose addition saves the most remaining time, per unit of that task's
    dominant resource share; stop when no addition helps or fits. Remaining time = remaining
    samples / fitted speed; the saving is weighted by the job's weight (1 by default, the paper's
    unweighted rule). Allocation works on pooled free capacity, as in the paper.

    Placement (docs/simulator.md, Policies): fewest servers, PSs and workers spread evenly over them
    (``smdlab.solve.placement.spread_tasks``); if no even spread fits, tasks one by one (first fit); if even that
    fails, the job loses the one task whose removal costs least predicted time and placement is
    tried again (docs/solver.md, Placement); at (1, 1) and still unplaced, it waits.

    Assumptions where the paper is silent:
    - Admission to (1, 1) in arrival order while the pooled free capacity holds another (1, 1);
      a job that does not fit is skipped, later smaller ones may still start.
    - Jobs are placed in decreasing order of task count (first-fit decreasing), running jobs
      (elastic mode) before queued ones so that a resize rarely turns into a preemption.
    - Execution: natural mode ``elastic``: Optimus re-allocates every job's workers and PSs at
      every scheduling interval (the paper's periodic re-scaling by checkpoint and restart).
      slot_s = 1,200 s, the slot in which DL2's public simulator runs Optimus as a baseline
      (pengyanghua/DL2, ``optimus_env.py``, ``parameters.py: TS_DURATION = 1200.0``), so that
      SMD, the MILP, Optimus and DRF re-decide on the same clock.
    - Non-elastic: only queued jobs are allocated, in the free capacity; running jobs
      keep their allocations. Elastic: Optimus' periodic re-allocation - all running and queued
      jobs are allocated afresh (running jobs admitted first) in the free capacity plus what the
      running jobs hold; a running job whose allocation is unchanged keeps its placement. The
      decision then goes through the shared work-conserving fill (``stages.work_conserving_fill``):
      GPUs the pooled allocation or placement left idle go to jobs that speed up with them.
    """

    name = "optimus"
    execution = "elastic"
    executions = ("non_elastic", "elastic")
    slot_s = DEFAULT_SLOT_S

    def __init__(
        self,
        points: Sequence[tuple[int, int]] = DEFAULT_PROFILE_POINTS,
        noise: float = 0.0,
        seed: int = 0,
    ):
        if (
            isinstance(points, (str, bytes))
            or not isinstance(points, Sequence)
            or not all(
                isinstance(pt, Sequence) and not isinstance(pt, str) and len(pt) == 2
                for pt in points
            )
        ):
            raise InvalidInput(f"points must be a list of (workers, ps) pairs, got {points!r}")
        pts = [
            (check_int("points[].workers", w, 1), check_int("points[].ps", p, 1)) for w, p in points
        ]
        if not pts:
            raise InvalidInput("points must list at least one (workers, ps) pair")
        self.points = tuple(pts)
        self.noise = check_positive("noise", noise, allow_zero=True)
        self.seed = check_int("seed", seed, 0)
        self._models: dict[tuple, SpeedModel] = {}

    def model(self, job: Job, mode: str) -> SpeedModel:
        """The fitted speed model of ``job`` (profiled once per job kind and cached)."""
        key = (
            job.profile,
            job.batch_mode,
            job.global_batch,
            job.per_worker_batch,
            job.worker_bw_bytes,
            job.ps_bw_bytes,
            job.latency_s,
            job.max_workers,
            job.max_ps,
            mode,
            job.name if self.noise > 0 else None,
        )
        if key not in self._models:
            self._models[key] = profile_job(job, mode, self.points, self.noise, self.seed)
        return self._models[key]

    def allocate(
        self,
        jobs: Sequence[Job],
        remaining: Sequence[float],
        free: np.ndarray,
        capacity: np.ndarray,
        cluster: Cluster,
        mode: str,
    ) -> list[tuple[int, int]]:
        """Optimus' marginal-gain allocation on pooled ``free`` capacity; (0, 0) for a job not admitted.

        Jobs are admitted to (1, 1) in the given order; ``capacity`` (the whole cluster's pooled
        capacity) is the denominator of dominant shares.
        """
        n = len(jobs)
        K = len(cluster.resources)
        alpha = np.array([task_vectors(j, cluster.resources)[0] for j in jobs]).reshape(n, K)
        gamma = np.array([task_vectors(j, cluster.resources)[1] for j in jobs]).reshape(n, K)
        left = np.array(free, dtype=float, copy=True)
        W = np.zeros(n, dtype=int)
        P = np.zeros(n, dtype=int)
        for i in range(n):
            need = alpha[i] + gamma[i]
            if np.all(left + TOL >= need):
                W[i], P[i] = 1, 1
                left -= need
        models = [self.model(j, mode) for j in jobs]
        rem = np.asarray(remaining, dtype=float) * np.array([j.weight for j in jobs])
        du_w = np.array([dominant_share(a, capacity) for a in alpha])
        du_p = np.array([dominant_share(g, capacity) for g in gamma])
        wcap = np.array([j.max_workers for j in jobs])
        pcap = np.array([j.max_ps for j in jobs])

        def rtime(i: int, w: int, p: int) -> float:
            return float(rem[i] / models[i].speed(w, p))

        on = np.flatnonzero(W > 0)
        gain_w = np.full(n, -np.inf)
        gain_p = np.full(n, -np.inf)

        def refresh(i: int) -> None:
            now = rtime(i, W[i], P[i])
            gain_w[i] = (now - rtime(i, W[i] + 1, P[i])) / du_w[i] if W[i] < wcap[i] else -np.inf
            gain_p[i] = (now - rtime(i, W[i], P[i] + 1)) / du_p[i] if P[i] < pcap[i] else -np.inf

        for i in on.tolist():
            refresh(i)
        while True:
            fits_w = np.all(left[None] + TOL >= alpha, axis=1)
            fits_p = np.all(left[None] + TOL >= gamma, axis=1)
            gw = np.where(fits_w, gain_w, -np.inf)
            gp = np.where(fits_p, gain_p, -np.inf)
            iw, ip = int(np.argmax(gw)), int(np.argmax(gp))
            best = max(gw[iw], gp[ip])
            if not best > 0:
                break
            if gw[iw] >= gp[ip]:
                W[iw] += 1
                left -= alpha[iw]
                refresh(iw)
            else:
                P[ip] += 1
                left -= gamma[ip]
                refresh(ip)
        return list(zip(W.tolist(), P.tolist()))

    def decide(self, state: ClusterState) -> Decision:
        """Marginal-gain allocation of the free capacity, then fewest-servers placement."""
        cluster = state.cluster
        queued = queued_jobs(state)
        free = np.asarray(state.free, dtype=float).sum(axis=0)
        entries: list[tuple[Job, float]] = []
        if state.elastic:
            for r in running_by_arrival(state):
                a, g = task_vectors(r.job, cluster.resources)
                free = free + r.workers * a + r.ps * g
                entries.append((r.job, r.remaining))
        entries += [(q.job, q.remaining) for q in queued]
        if not entries:
            return Decision()
        alloc = self.allocate(
            [j for j, _ in entries],
            [rem for _, rem in entries],
            free,
            total_capacity(state),
            cluster,
            state.mode,
        )
        targets = [Target(j, w, p) for (j, _), (w, p) in zip(entries, alloc) if w > 0]
        running = {r.job.name for r in state.running}
        targets.sort(key=lambda t: (t.job.name not in running, -(t.workers + t.ps)))
        rem_of = {j.name: rem for j, rem in entries}

        def shrink(job: Job, w: int, p: int) -> tuple[int, int] | None:
            m = self.model(job, state.mode)
            options = [(w - 1, p)] if w > 1 else []
            options += [(w, p - 1)] if p > 1 else []
            if not options:
                return None
            return min(options, key=lambda c: (float(rem_of[job.name] / m.speed(*c)), -c[0]))

        decision = assemble(state, targets, place=consolidated_tasks, shrink=shrink)
        return work_conserving_fill(state, decision)  # elastic only: no usable GPU left idle
