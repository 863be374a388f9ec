"""Optimus: a fitted speed model per job and marginal-utility allocation of workers and PSs (docs/baselines.md)."""

from __future__ import annotations

import heapq
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType

import numpy as np
from scipy.optimize import nnls

from smdlab.errors import (
    FORMER_VARIANT,
    check_bool,
    check_choice,
    check_int,
    check_positive,
    reject_former,
)
from smdlab.model.cluster import Cluster
from smdlab.model.job import Job
from smdlab.model.optimus_form import SpeedModel, design_matrix, fit_speed_model
from smdlab.model.timing import MODES, iteration_time_table
from smdlab.policies.base import (
    Allocation,
    ClusterState,
    Decision,
    Placement,
    Policy,
)
from smdlab.policies.ps._convergence import (
    DEFAULT_NOISE as DEFAULT_LOSS_NOISE,
    ConvergenceEstimator,
)
from smdlab.policies.toolkit import (
    queued_jobs,
    total_capacity,
    work_conserving_fill,
)
from smdlab.solve.instance import task_vectors
from smdlab.solve.placement import (
    TOL,
    capacity_matrix,
    first_fit_tasks,
    rack_preference,
    usage,
)

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
        pt = (min(int(w), job.max_workers), min(int(p), job.ps_slots))
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


# The source's profiling (scheduler/estimator.py, Estimator.test_speed): runs at w = p = k for k
# drawn uniformly from 1..10 without repeats until a job kind has 8 points.
DIAGONAL_RANGE = (1, 10)
DIAGONAL_POINTS = 8
# Former options of Optimus (removed in 0.2) -> what replaces them.
FORMER_OPTIONS = {
    **FORMER_VARIANT,
    "points": "use noise and seed: the profiling is the source's (diagonal points, DIAGONAL_RANGE)",
}
SLOT_S = 600.0  # TS_INTERVAL in scheduler/params.py: every allocation is rebuilt each slot


@dataclass(frozen=True)
class ProfiledSpeed:
    """A fitted speed model plus the measured speeds, which win at the measured points (``est_speed``)."""

    fit: SpeedModel
    measured: Mapping[tuple[int, int], float]

    def speed(self, workers: int, ps: int) -> float:
        """Measured speed (samples/s) at a profiled (w, p), else the fitted one."""
        w, p = int(workers), int(ps)
        hit = self.measured.get((w, p))
        if hit is not None:
            return float(hit)
        # SpeedModel.speed on scalars, without numpy's per-call overhead (the hot path)
        a, b, c, d, e = self.fit.coef
        m = self.fit.batch
        glob = self.fit.batch_mode == "global"
        tau = max(a * (m / w if glob else m) + b + c * w / p + d * w + e * p, 1e-300)
        return (m if glob else w * m) / tau


def diagonal_profile(
    job: Job, mode: str = "wfbp", noise: float = 0.0, seed: int = 0
) -> ProfiledSpeed:
    """Optimus' profiling as in its code: 8 distinct diagonal points w = p in 1..10, then the NNLS fit.

    The points are drawn once per job kind (network and batch; the source reuses a kind's points
    for later jobs of that kind), seeded by ``seed``; ``noise`` is the relative standard deviation
    of multiplicative Gaussian measurement noise. The job's caps do not limit the profiling runs.
    """
    check_choice("mode", mode, MODES)
    noise = check_positive("noise", noise, allow_zero=True)
    kind = f"{job.profile.network}|{job.batch_mode}|{job.global_batch}|{job.per_worker_batch}"
    rng = np.random.default_rng([seed, zlib.crc32(kind.encode())])
    lo, hi = DIAGONAL_RANGE
    ks = np.sort(rng.choice(np.arange(lo, hi + 1), size=DIAGONAL_POINTS, replace=False))
    top = int(ks.max())
    if job.arch == "allreduce":  # no PS: the profiling runs vary the ring size only (p = 0)
        wide = job.replace(max_workers=max(top, job.max_workers))
        tau = iteration_time_table([wide], mode)[0][ks - 1, 0]
    else:
        wide = job.replace(max_workers=max(top, job.max_workers), max_ps=max(top, job.max_ps))
        table = iteration_time_table([wide], mode)[0]
        tau = np.array([table[k - 1, k - 1] for k in ks])
    if noise > 0:
        tau = tau * np.clip(1 + noise * rng.standard_normal(tau.size), 0.05, None)
    batch = float(job.batch)
    # On the diagonal w/p = 1 and w = p, so the points fix only a, b + c and d + e; the source's
    # curve_fit starts every coefficient at 1 and gives b and c (d and e) the same gradient, so
    # they would stay equal in exact arithmetic: fit (a, b + c, d + e), split each sum in half.
    X = design_matrix(ks, ks, batch, job.batch_mode)
    X3 = np.column_stack([X[:, 0], X[:, 1] + X[:, 2], X[:, 3] + X[:, 4]]) / tau[:, None]
    norms = np.linalg.norm(X3, axis=0)
    norms[norms == 0] = 1.0
    sol = nnls(X3 / norms, np.ones_like(tau))[0] / norms
    a, bc, de = (float(v) for v in sol)
    model = SpeedModel((a, bc / 2, bc / 2, de / 2, de / 2), batch, job.batch_mode)
    err = float(np.mean(np.abs(model.iteration_time(ks, ks) - tau) / tau))
    fit = SpeedModel(model.coef, model.batch, job.batch_mode, err)
    per_iter = job.samples_per_iteration(ks)
    measured = {(int(k), int(k)): float(s) for k, s in zip(ks, per_iter / tau)}
    return ProfiledSpeed(fit, MappingProxyType(measured))


class Optimus(Policy):
    """Optimus (Peng et al., EuroSys 2018) for parameter-server jobs, as its public code runs it.

    Every rule, whether it follows the source (pengyanghua/optimus), and why: docs/baselines.md
    (section Optimus).

    As ``scheduler/optimus_scheduler.py`` (``UTIL_Scheduler._schedule``,
    ``__update_util_queue``, ``__place``), ``estimator.py`` and ``params.py``:
    - Natural mode: elastic. Every ``slot_s`` = 600 s (``TS_INTERVAL``) every unfinished
      job's allocation is rebuilt from nothing: jobs in arrival order get one worker and one PS
      while the pooled capacity holds them (a job that does not fit is passed over).
    - Then, from a queue holding each job's better addition (a PS wins ties), the one of largest
      utility = saving in predicted remaining time / the *raw amount* of the task's dominant
      resource (dominant by share of the cluster) is added while that utility is not negative;
      the first addition that does not fit the pooled free capacity ends the allocation.
    - Speed: Optimus' form fitted by NNLS to 8 diagonal profiling points (``diagonal_profile``);
      a measured point is used as measured.
    - Remaining work: estimated from the job's progress with a fitted loss curve
      (``smdlab.policies.ps._convergence``); ``oracle=True`` gives Optimus the exact remaining samples.
    - Placement: jobs in ascending order of task count; machines in ascending order of CPU used;
      a job takes the fewest such machines that hold it, PSs then workers round-robin over them;
      the first job that fits on no set of machines gets what fits task by task (PS and worker
      alternately, first fit) if that is at least one of each, and the jobs after it wait. On a
      racked cluster (our addition) a job's further machines come from the rack of its first one
      while that rack has any (``smdlab.solve.placement.rack_preference``).
    - Not elastic (a forced mode): the same on the queued jobs and the free capacity only.
    - Job weights are ignored, as in the source.
    - Not work conserving: GPUs the source leaves idle stay idle. ``work_conserving=True`` passes
      each decision through ``toolkit.work_conserving_fill`` (elastic execution only).
    """

    name = "optimus"
    execution = "elastic"
    executions = ("non_elastic", "elastic")
    slot_s = SLOT_S

    def __init__(
        self,
        oracle: bool = False,
        noise: float = 0.0,
        seed: int = 0,
        loss_noise: float = DEFAULT_LOSS_NOISE,
        work_conserving: bool = False,
        variant: None = None,
        points: None = None,
    ):
        for key, value in (("variant", variant), ("points", points)):
            if value is not None:  # a former option: one line naming what replaces it
                reject_former("Optimus", {key: value}, FORMER_OPTIONS)
        self.work_conserving = check_bool("work_conserving", work_conserving)
        self.oracle = check_bool("oracle", oracle)
        self.noise = check_positive("noise", noise, allow_zero=True)
        self.seed = check_int("seed", seed, 0)
        self.estimator = ConvergenceEstimator(loss_noise, self.seed)
        self._models: dict[tuple, SpeedModel | ProfiledSpeed] = {}

    def reset(self) -> None:
        """Forget the loss-curve fits of a previous run (profiles depend only on the job kind)."""
        self.estimator.reset()

    def remaining_estimate(self, job: Job, remaining: float) -> float:
        """Samples Optimus believes ``job`` still needs: exact with ``oracle``, else from its loss curve."""
        return remaining if self.oracle else self.estimator.remaining(job, remaining)

    def decide(self, state: ClusterState) -> Decision:
        """Rebuild every job's allocation by marginal utility, then place jobs smallest first."""
        decision = self._decide_source(state)
        # elastic execution only; the source leaves what it cannot use idle
        return work_conserving_fill(state, decision) if self.work_conserving else decision

    def model(self, job: Job, mode: str) -> SpeedModel | ProfiledSpeed:
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
        )
        if key not in self._models:
            self._models[key] = diagonal_profile(job, mode, self.noise, self.seed)
        return self._models[key]

    # ---- the source's rules ---------------------------------------------------------------------

    def allocate_source(
        self,
        jobs: Sequence[Job],
        remaining: Sequence[float],
        free: np.ndarray,
        capacity: np.ndarray,
        cluster: Cluster,
        mode: str,
    ) -> list[tuple[int, int]]:
        """``_schedule``'s allocation on pooled ``free`` capacity, jobs in the given (arrival) order; (0, 0) if not admitted."""
        n = len(jobs)
        K = len(cluster.resources)
        alpha = np.array([task_vectors(j, cluster.resources)[0] for j in jobs]).reshape(n, K)
        gamma = np.array([task_vectors(j, cluster.resources)[1] for j in jobs]).reshape(n, K)
        left = np.array(free, dtype=float, copy=True)
        W = [0] * n
        P = [0] * n
        models = [self.model(j, mode) for j in jobs]
        rem = [self.remaining_estimate(j, r) for j, r in zip(jobs, remaining)]

        def raw_dominant(d: np.ndarray) -> list[float]:
            # per row: the amount of the resource of largest share, in that resource's own unit
            inv = np.where(capacity > 0, 1.0 / np.where(capacity > 0, capacity, 1.0), 0.0)
            return d[np.arange(n), np.argmax(d * inv, axis=1)].tolist() if n else []

        raw_w = raw_dominant(alpha)
        raw_p = raw_dominant(gamma)
        heap: list[tuple[float, float, str, int, str]] = []

        def push(i: int) -> None:
            def rtime(w: int, p: int) -> float:
                return rem[i] / float(models[i].speed(w, p))

            now = rtime(W[i], P[i])
            util_p = util_w = -np.inf
            if P[i] < jobs[i].max_ps and raw_p[i] > 0:
                util_p = (now - rtime(W[i], P[i] + 1)) / raw_p[i]
            if W[i] < jobs[i].max_workers and raw_w[i] > 0:
                util_w = (now - rtime(W[i] + 1, P[i])) / raw_w[i]
            if util_p == util_w == -np.inf:
                return  # at both caps: nothing more to add
            kind = "ps" if util_p >= util_w else "worker"
            heapq.heappush(heap, (-max(util_p, util_w), jobs[i].arrival, jobs[i].name, i, kind))

        # Python floats from here: one job's few resources per step, where numpy's per-call cost
        # dominates (the same operations element by element, so the same allocation)
        room, al, ga = left.tolist(), alpha.tolist(), gamma.tolist()
        for i in range(n):  # one worker and one PS each, while the pooled capacity holds them
            need = [a + g for a, g in zip(al[i], ga[i])]
            if _holds(room, need):
                W[i], P[i] = 1, 1
                room = [x - y for x, y in zip(room, need)]
                push(i)
        while heap:
            neg, _, _, i, kind = heapq.heappop(heap)
            if neg > 0:
                break  # the best addition slows its job down
            d = ga[i] if kind == "ps" else al[i]
            if not _holds(room, d):
                break  # the source stops at the first addition that does not fit
            room = [x - y for x, y in zip(room, d)]
            if kind == "ps":
                P[i] += 1
            else:
                W[i] += 1
            push(i)
        return list(zip(W, P))

    def _decide_source(self, state: ClusterState) -> Decision:
        cluster = state.cluster
        free = np.array(state.free, dtype=float, copy=True)
        entries: list[tuple[Job, float]] = []
        if state.execution == "elastic":  # rebuild: every running job releases what it holds
            for r in state.running:
                free += usage(
                    r.placement.tasks, *task_vectors(r.job, cluster.resources), free.shape[0]
                )
                entries.append((r.job, r.remaining))
        entries += [(q.job, q.remaining) for q in queued_jobs(state)]
        if not entries:
            return Decision()
        entries.sort(key=lambda e: (e[0].arrival, e[0].name))
        jobs = [j for j, _ in entries]
        alloc = self.allocate_source(
            jobs,
            [r for _, r in entries],
            free.sum(axis=0),
            total_capacity(state),
            cluster,
            state.mode,
        )
        placed = place_source(cluster, free, jobs, alloc)
        running = {r.job.name: r for r in state.running}
        allocations = []
        for job in jobs:
            tasks = placed.get(job.name)
            if tasks is None:
                continue
            pl = Placement(tasks)
            prev = running.get(job.name)
            if prev is not None and sorted(prev.placement.tasks) == sorted(tasks):
                continue  # same machines, same counts: the job runs on undisturbed
            allocations.append(Allocation(job.name, pl.workers, pl.ps, pl))
        preempt = tuple(n for n in running if state.execution == "elastic" and n not in placed)
        return Decision(tuple(allocations), preempt)


def place_source(
    cluster: Cluster,
    free: np.ndarray,
    jobs: Sequence[Job],
    alloc: Sequence[tuple[int, int]],
) -> dict[str, tuple[tuple[int, int, int], ...]]:
    """``__place`` of the source: placements (machine, workers, ps) by job name for the jobs placed."""
    cap = capacity_matrix(cluster)
    # a list of per-machine lists of Python floats: one machine's few resources per step, where
    # numpy's per-call cost dominates (the same operations element by element)
    free = np.array(free, dtype=float, copy=True).tolist()
    res = list(cluster.resources)
    cpu = res.index("cpu") if "cpu" in res else None
    M = len(free)

    def used_cpu(m: int) -> float:
        # machines are ordered by CPU used ("cpu is usually the bottleneck"); without a CPU
        # resource, by the summed used fraction of every resource
        if cpu is not None:
            return float(cap[m, cpu] - free[m][cpu])
        with np.errstate(divide="ignore", invalid="ignore"):
            return float(np.where(cap[m] > 0, (cap[m] - free[m]) / cap[m], 0.0).sum())

    def fits(m: int, d: list[float]) -> bool:
        return _holds(free[m], d)

    def take(m: int, d: list[float], sign: float) -> None:
        free[m] = (
            [x - y for x, y in zip(free[m], d)] if sign > 0 else [x + y for x, y in zip(free[m], d)]
        )

    order = sorted(
        (i for i, (w, p) in enumerate(alloc) if w > 0 and p > 0),
        key=lambda i: (alloc[i][0] + alloc[i][1], jobs[i].arrival, jobs[i].name),
    )
    nodes = [(used_cpu(m), m) for m in range(M)]
    heapq.heapify(nodes)
    out: dict[str, tuple[tuple[int, int, int], ...]] = {}
    for i in order:
        if not nodes:
            break  # an earlier job emptied the machine queue: the rest wait (as in the source)
        job = jobs[i]
        alpha, gamma = task_vectors(job, cluster.resources)
        al, ga = alpha.tolist(), gamma.tolist()
        w, p = alloc[i]
        cand: list[int] = []
        done = False
        need = [p * g + w * a for a, g in zip(al, ga)]
        scale = (w + p + 1) * TOL
        slack = [scale * max(1.0, x) for x in need]
        cand_free = [0.0] * len(need)
        while nodes:
            cand.append(_pop_near(nodes, cand, M))
            cand_free = [x + y for x, y in zip(cand_free, free[cand[-1]])]
            if any(x + s < y for x, s, y in zip(cand_free, slack, need)):
                continue  # these machines cannot hold the job even pooled: the attempt would fail
            got: list[tuple[int, str]] = []
            ok = True
            for kind, count, d in (("ps", p, ga), ("worker", w, al)):
                for t in range(count):
                    m = cand[t % len(cand)]  # evenly over the candidate machines
                    if not fits(m, d):
                        ok = False
                        break
                    take(m, d, 1.0)
                    got.append((m, kind))
                if not ok:
                    break
            if ok:
                out[job.name] = _tasks_of(got)
                for m in cand:
                    heapq.heappush(nodes, (used_cpu(m), m))
                done = True
                break
            for m, kind in got:  # undo, and try with one more machine
                take(m, ga if kind == "ps" else al, -1.0)
        if done:
            continue
        # Every machine tried: PS and worker alternately, each on the first machine it fits.
        got = []
        n_ps = n_w = 0
        want_ps = True
        for _ in range(w + p):
            d = ga if want_ps else al
            m_fit = next((m for m in range(M) if fits(m, d)), None)
            if m_fit is None:
                break
            take(m_fit, d, 1.0)
            got.append((m_fit, "ps" if want_ps else "worker"))
            n_ps += want_ps
            n_w += not want_ps
            want_ps = not want_ps
            if n_ps >= p:
                want_ps = False
            if n_w >= w:
                want_ps = True
        if n_ps > 0 and n_w > 0:
            out[job.name] = _tasks_of(got)
        else:
            for m, kind in got:
                take(m, ga if kind == "ps" else al, -1.0)
            # Departure (docs/baselines.md): the source's machines are identical, so a job that
            # fits at all fits this way; on unequal machines one that fits only with its PS
            # and worker on particular machines would never run. Place its (1, 1) by first fit,
            # trying both task orders.
            arr = np.array(free)
            tasks = first_fit_tasks(arr, 1, 1, alpha, gamma)
            if tasks:
                free = (arr - usage(tasks, alpha, gamma, M)).tolist()
                out[job.name] = tuple(tasks)
        # the machines popped for this job are not put back: later jobs find none
    return out


def _holds(free: list[float], d: list[float]) -> bool:
    """Whether ``free`` holds ``d`` in every resource, up to the shared tolerance (the array test's
    ``free + TOL * max(1, d) >= d``, element by element)."""
    return all(x + TOL * max(1.0, y) >= y for x, y in zip(free, d))


def _pop_near(nodes: list[tuple[float, int]], cand: list[int], machines: int) -> int:
    """The next candidate machine: least CPU used, within the rack of the job's first candidate
    when a rack layout is active and that rack has one left (``rack_preference``)."""
    near = rack_preference(machines, cand[:1])
    if near is not None:
        inside = [k for k, (_, m) in enumerate(nodes) if near[m]]
        if inside:
            k = min(inside, key=lambda k: nodes[k])
            pick = nodes[k]
            nodes[k] = nodes[-1]
            nodes.pop()
            heapq.heapify(nodes)
            return pick[1]
    return heapq.heappop(nodes)[1]


def _tasks_of(got: list[tuple[int, str]]) -> tuple[tuple[int, int, int], ...]:
    per: dict[int, list[int]] = {}
    for m, kind in got:
        c = per.setdefault(m, [0, 0])
        c[0 if kind == "worker" else 1] += 1
    return tuple((m, c[0], c[1]) for m, c in sorted(per.items()))
