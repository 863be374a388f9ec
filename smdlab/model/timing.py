"""The layered timing model of one PS training iteration (specification: docs/model.md).

All-reduce jobs (``arch="allreduce"``) are dispatched to ``smdlab.model.allreduce``.

Per-layer quantities for a job on (w workers, p PSs):
    compute scale  cs = M / w (global batch) or m (per-worker batch)
    forward  f_l(w) = f_l * cs,  backward b_l(w) = b_l * cs
    push/pull c_l  = s_l * max(1 / B_w, w / (p * B_ps)) + lat
    PS update u_l  = upd * s_l * w / p     (a PS aggregates every byte it receives)
Times are tracked, when asked, as coefficients over the basis (cs, w/p, 1): the "active piece".
wfbp_prefetch: forward l of the next iteration waits only for pull l and forward l-1; the pull link
serves the lowest pending layer first, preemptively (P3 / ByteScheduler slicing). Every iteration
repeats one schedule D (pull ends, from its backward start), so the exact period is
tau = max_l (D_l + f_l + ... + f_L).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, get_args

import numpy as np

from smdlab.caches import DATA_STAGE_TABLES, ITERATION_TABLES, LINK_SPEEDS, SPEED_TABLES
from smdlab.errors import InvalidInput, check_choice, check_items, check_positive
from smdlab.model.allreduce import allreduce_iteration_time, allreduce_table, allreduce_timeline
from smdlab.model.job import Job, job_memo
from smdlab.model.measured_speed import measured_iteration_time
from smdlab.model.pipeline import (
    apply_data_stage,
    data_stage_times,
    samples_per_worker,
    with_worker_resources,
)

Mode = Literal["sequential", "wfbp", "wfbp_prefetch"]
MODES: tuple[Mode, ...] = get_args(Mode)
# Preemptive priority pulls (P3-style slicing) keep tau monotone in sizes, bandwidths and p; the
# non-preemptive variant does not (counterexamples in tests/test_model_prefetch.py).
_PREFETCH_PREEMPTIVE = True
_CHUNK_ELEMENTS = 2_000_000  # bound on jobs x grid points per vectorised pass (memory)


@dataclass(frozen=True)
class ActivePiece:
    """Critical-path coefficients at one (w, p): tau = compute*cs + ps_comm*(w/p) + const.

    compute: seconds per unit of compute scale (sum of f_l + b_l on the critical path).
    ps_comm: seconds per unit of w/p (PS-NIC-bound transfers and PS updates on the path).
    const: seconds independent of (w, p) on this piece (worker-NIC-bound transfers, latencies).
    compute_scale: cs at this point (M / w, or m in per-worker mode).
    ratio: w / p at this point.
    """

    compute: float
    ps_comm: float
    const: float
    compute_scale: float
    ratio: float

    @property
    def tau(self) -> float:
        """Iteration time this piece gives at its own (w, p)."""
        return self.compute * self.compute_scale + self.ps_comm * self.ratio + self.const


class _Batch:
    """Padded per-layer arrays of several jobs, evaluated on a grid of (w, p) per job."""

    def __init__(
        self,
        jobs: Sequence[Job],
        w: np.ndarray,
        p: np.ndarray,
        track: bool,
        links: tuple[float, float] | None = None,
    ):
        n_layers = max(j.profile.layers for j in jobs)
        n = len(jobs)
        self.f = np.zeros((n, n_layers))
        self.b = np.zeros((n, n_layers))
        self.s = np.zeros((n, n_layers))
        self.lat = np.zeros((n, n_layers))
        for i, j in enumerate(jobs):
            L = j.profile.layers
            self.f[i, :L] = j.profile.forward_s
            self.b[i, :L] = j.profile.backward_s
            self.s[i, :L] = j.profile.param_bytes
            self.lat[i, :L] = j.latency_s
        col = lambda xs: np.array(xs, dtype=float)[:, None]  # noqa: E731
        if links is None:
            bw = col([j.worker_bw_bytes for j in jobs])
            bps = col([j.ps_bw_bytes for j in jobs])
        else:  # one job on other links than its NIC shares (uplinks, ``link_speed``)
            bw, bps = col([links[0]] * n), col([links[1]] * n)
        upd = col([j.profile.update_s_per_byte for j in jobs])
        is_global = col([j.batch_mode == "global" for j in jobs]).astype(bool)
        batch = col(
            [j.global_batch if j.batch_mode == "global" else j.per_worker_batch for j in jobs]
        )
        self.cs = np.where(is_global, batch / w, batch)
        ratio = w / p
        worker_binds = 1.0 / bw >= ratio / bps
        kappa = np.where(worker_binds, 1.0 / bw, ratio / bps)
        zero = np.zeros_like(self.cs)
        if track:  # rows: value, coefficient of cs, of w/p, of 1
            self.comp = np.stack([self.cs, np.ones_like(zero), zero, zero])
            self.comm = np.stack(
                [kappa, zero, np.where(worker_binds, 0, 1 / bps), np.where(worker_binds, 1 / bw, 0)]
            )
            self.upd = np.stack([upd * ratio, zero, upd + zero, zero])
            self.one = np.stack([np.ones_like(zero), zero, zero, np.ones_like(zero)])
        else:
            self.comp, self.comm, self.upd, self.one = (
                x[None] for x in (self.cs, kappa, upd * ratio, np.ones_like(zero))
            )
        self.zero = np.zeros_like(self.comp)

    def term(self, coef: np.ndarray, unit: np.ndarray) -> np.ndarray:
        return coef[None, :, None] * unit

    def link(self, l: int) -> np.ndarray:
        """One push (or pull) of layer l."""
        return self.term(self.s[:, l], self.comm) + self.term(self.lat[:, l], self.one)


def _tmax(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    return np.where(x[0] >= y[0], x, y)


def _sequential(t: _Batch) -> np.ndarray:
    total_comm = 2 * (t.term(t.s.sum(1), t.comm) + t.term(t.lat.sum(1), t.one))
    return t.term(t.f.sum(1) + t.b.sum(1), t.comp) + total_comm + t.term(t.s.sum(1), t.upd)


def _wfbp(t: _Batch) -> np.ndarray:
    F = t.term(t.f.sum(1), t.comp)
    b_suffix = np.cumsum(t.b[:, ::-1], axis=1)[:, ::-1]
    P = Q = t.zero
    for l in range(t.f.shape[1] - 1, -1, -1):
        c = t.link(l)
        P = _tmax(P, F + t.term(b_suffix[:, l], t.comp)) + c
        Q = _tmax(Q, P + t.term(t.s[:, l], t.upd)) + c
    return Q


def _per_layer(coef: np.ndarray, unit: np.ndarray) -> np.ndarray:
    """Per-layer terms coef[j, l] * unit[k, j, g], flattened to (K, J*G, L)."""
    K, J, G = unit.shape
    return (unit[..., None] * coef[None, :, None, :]).reshape(K, J * G, coef.shape[1])


def _lowest_bit(words: np.ndarray) -> np.ndarray:
    """Index of the lowest set bit of each multi-word bitset (words: nw x N uint64); >= 64*(nw-1) if empty."""
    one = np.uint64(1)
    top: np.ndarray | None = None
    for k in range(words.shape[0] - 1, -1, -1):  # the lowest non-empty word wins
        x = words[k]
        trailing = np.bitwise_count((x & (~x + one)) - one).astype(np.int64)  # 64 when x == 0
        top = 64 * k + trailing if top is None else np.where(x != 0, 64 * k + trailing, top)
    assert top is not None  # words has at least one row
    return top


def _priority_pulls(ready: np.ndarray, c: np.ndarray, preemptive: bool) -> np.ndarray:
    """End times (K, N, L) of L pulls on one link that serves the lowest-index pending pull first.

    ready, c: (K, N, L) release and service times at N points (row 0: values, rows 1..: coefficients).
    An exact event simulation with 2L events per point: each step either admits the next pull in
    order of release or completes the pending pull with the lowest index (kept in a bitset, so any
    release order works; with u_l = 0 releases come in the order L..1 and it acts as a LIFO stack).
    Non-preemptive: the next pull is admitted if it is released by the time the link frees, so it
    competes for the link then. Preemptive: it is admitted if it is released before the served pull
    ends (a tie: that pull ends first); from then on the lowest index is served and an interrupted
    pull keeps the service it still owes.
    """
    K, N, L = ready.shape
    r0 = ready[0]
    order = None if np.all(r0[:, :-1] >= r0[:, 1:]) else np.argsort(r0, axis=1, kind="stable")
    base = np.arange(N, dtype=np.int64) * L
    rows = np.arange(N)
    ready_f = ready.reshape(K, N * L)
    left = c.reshape(K, N * L).copy()  # service still owed to each pull
    done = np.zeros((K, N * L + 1))  # last column: sink for points that complete nothing in a step
    words = np.zeros(((L + 63) // 64, N), dtype=np.uint64)
    admitted = np.zeros(N, dtype=np.int64)
    queued = np.zeros(N, dtype=np.int64)
    # non-preemptive: when the link next picks a pull; preemptive: time of the last event
    now = np.zeros((K, N))
    one, low6 = np.uint64(1), np.uint64(63)
    for _ in range(2 * L):
        nxt = np.minimum(admitted, L - 1)
        lay = L - 1 - nxt if order is None else order[rows, nxt]
        r_next = ready_f[:, base + lay]
        top = np.minimum(_lowest_bit(words), L - 1)
        top_left = left[:, base + top]
        if preemptive:  # released strictly before the served pull ends (a tie: it ends first)
            admit = (admitted < L) & ((queued == 0) | (r_next[0] < now[0] + top_left[0]))
            left[:, base + top] = np.where(
                admit & (queued > 0), top_left - (r_next - now), top_left
            )
        else:
            admit = (admitted < L) & ((queued == 0) | (r_next[0] <= now[0]))
        now = np.where(admit, _tmax(now, r_next), now)  # an idle link waits for the release
        serve = ~admit
        now = np.where(serve, now + top_left, now)
        done[:, np.where(serve, base + top, N * L)] = now
        bit = np.where(admit, one << (lay.astype(np.uint64) & low6), np.uint64(0))  # not yet set
        clear = np.where(serve, one << (top.astype(np.uint64) & low6), np.uint64(0))  # set
        if words.shape[0] == 1:
            words[0] ^= bit | clear
        else:
            for k in range(words.shape[0]):
                words[k] ^= np.where(lay >> 6 == k, bit, 0) | np.where(top >> 6 == k, clear, 0)
        admitted += admit
        queued += admit.astype(np.int64) - serve
    return done[:, : N * L].reshape(K, N, L)


def _wfbp_prefetch(t: _Batch, preemptive: bool = _PREFETCH_PREEMPTIVE) -> np.ndarray:
    # Steady state, exactly. Time 0 = start of an iteration's backward pass. Every pull of the previous
    # iteration ended before the forward pass that precedes it, so the GPU and both links are idle at
    # 0 and backward, pushes and pulls follow one fixed schedule D (pull of layer l ends at D_l). The
    # next forward pass ends, and the next backward starts, at max_l (D_l + f_l + ... + f_L): that is
    # the period from the first iteration on, so no simulation to a fixed point is needed.
    # Bounds: D_1 >= B gives tau >= F + B; with FIFO pulls (L..1) D_1 = max_l D_l and this is wfbp's
    # F + D_1. Preemptive lowest-index-first is preemptive Jackson's rule for min max_l (D_l + q_l),
    # q_l = f_l + ... + f_L non-increasing in l, so tau is the optimum over all preemptive pull
    # schedules: <= wfbp, and non-decreasing in every release time and c_l, hence monotone in s_l,
    # B_w, B_ps and p. The non-preemptive rule is work-conserving (makespan <= FIFO's, so tau <=
    # wfbp) but can make layer 1 wait behind a pull it would have overtaken: not monotone.
    J, L = t.f.shape
    K, _, G = t.comp.shape
    suffix = lambda x: np.cumsum(x[:, ::-1], axis=1)[:, ::-1]  # noqa: E731
    back_end = _per_layer(suffix(t.b), t.comp)
    fwd_from = _per_layer(suffix(t.f), t.comp)
    c = _per_layer(t.s, t.comm) + _per_layer(t.lat, t.one)
    u = _per_layer(t.s, t.upd)
    ready = np.empty_like(c)
    P = np.zeros((K, J * G))
    for l in range(L - 1, -1, -1):  # pushes leave L..1 over one link, as in wfbp
        P = _tmax(P, back_end[..., l]) + c[..., l]
        ready[..., l] = P + u[..., l]
    total = _priority_pulls(ready, c, preemptive) + fwd_from
    best = np.argmax(total[0], axis=1)
    return np.take_along_axis(total, best[None, :, None], axis=2)[..., 0].reshape(K, J, G)


_KERNELS = {"sequential": _sequential, "wfbp": _wfbp, "wfbp_prefetch": _wfbp_prefetch}


def _evaluate(
    jobs: Sequence[Job],
    w: np.ndarray,
    p: np.ndarray,
    mode: str,
    track: bool,
    links: tuple[float, float] | None = None,
) -> np.ndarray:
    check_choice("mode", mode, MODES)
    return _KERNELS[mode](_Batch(jobs, w, p, track, links))


def _check_jobs(jobs: Sequence[Job]) -> list[Job]:
    """``jobs`` as a list, every item a Job, or InvalidInput."""
    return list(check_items("jobs", jobs, Job))


def _check_job(job: Job) -> Job:
    if not isinstance(job, Job):
        raise InvalidInput(f"job must be a Job, got {type(job).__name__}")
    return job


def _key(job: Job, mode: str) -> tuple:
    """Every input of the job's layered table, by value (``caches.ITERATION_TABLES``)."""
    if job.arch == "allreduce":
        return (
            "allreduce",
            job.profile.fingerprint,
            job.batch_mode,
            job.global_batch,
            job.per_worker_batch,
            job.worker_bw_bytes,
            job.intra_bw_bytes,
            job.bucket_mb,
            job.gpus_per_machine,
            job.latency_s,
            job.max_workers,
            mode,
        )
    return (
        job.profile.fingerprint,
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


def iteration_time_table(jobs: Sequence[Job], mode: str = "wfbp") -> list[np.ndarray]:
    """Per job, its (max_workers x max_ps) table of iteration times tau[w-1, p-1] (cached).

    A job with an input pipeline is bounded below by its data stage at its worker demand
    (``smdlab.model.pipeline``); without one, the layered model's table. An all-reduce job's
    table is (max_workers x 1): its one column is p = 0 (``smdlab.model.allreduce``, a packed
    ring), so ``tau[w-1, p-1]`` with p = 0 reads it too.
    """
    jobs = _check_jobs(jobs)
    measured = {i: _measured_table(j) for i, j in enumerate(jobs) if j.throughput is not None}
    if len(measured) == len(jobs):
        return [measured[i] for i in range(len(jobs))]
    layered = iter(_layered_tables([j for j in jobs if j.throughput is None], mode))
    out = []
    for i, j in enumerate(jobs):
        if i in measured:
            out.append(measured[i])
            continue
        t = next(layered)
        out.append(t if j.pipeline is None else _with_data(j, t, mode))
    return out


def _measured_table(job: Job) -> np.ndarray:
    """A measured-throughput job's table: one iteration time at its worker CPU and memory."""
    assert job.throughput is not None
    tau = measured_iteration_time(
        job.throughput, job.worker_demand.get("cpu", 0.0), job.worker_demand.get("mem_gb", 0.0)
    )
    table = np.full((job.max_workers, job.ps_slots), tau)  # PSs change nothing here
    table.setflags(write=False)
    return table


def _with_data(job: Job, layered: np.ndarray, mode: str) -> np.ndarray:
    key = (
        _key(job, mode),
        job.pipeline,
        job.worker_demand.get("cpu", 0.0),
        job.worker_demand.get("mem_gb", 0.0),
    )
    hit = DATA_STAGE_TABLES.get(key)
    if hit is not None:
        return hit
    table = apply_data_stage(job, layered)
    table.setflags(write=False)
    return DATA_STAGE_TABLES.put(key, table)


def _layered_tables(jobs: Sequence[Job], mode: str = "wfbp") -> list[np.ndarray]:
    """Per job, the layered model's table (compute and communication only; cached)."""
    check_choice("mode", mode, MODES)
    jobs = _check_jobs(jobs)
    keys = [_key(j, mode) for j in jobs]
    found: dict[tuple, np.ndarray] = {}
    missing: dict[tuple, Job] = {}
    for k, j in zip(keys, jobs):
        if k in found or k in missing:
            continue
        hit = ITERATION_TABLES.get(k)
        if hit is None:
            missing[k] = j
        else:
            found[k] = hit
    for k in [k for k, j in missing.items() if j.arch == "allreduce"]:
        table = allreduce_table(missing.pop(k), mode)
        table.setflags(write=False)
        found[k] = ITERATION_TABLES.put(k, table)
    if missing:
        todo = list(missing.items())
        wmax = max(j.max_workers for _, j in todo)
        pmax = max(j.max_ps for _, j in todo)
        per_chunk = max(
            1, _CHUNK_ELEMENTS // (wmax * pmax * max(j.profile.layers for _, j in todo))
        )
        wg, pg = np.meshgrid(np.arange(1, wmax + 1), np.arange(1, pmax + 1), indexing="ij")
        wg, pg = wg.ravel()[None].astype(float), pg.ravel()[None].astype(float)
        for start in range(0, len(todo), per_chunk):
            chunk = todo[start : start + per_chunk]
            tau = _evaluate([j for _, j in chunk], wg, pg, mode, track=False)[0]
            for (k, j), row in zip(chunk, tau):
                table = row.reshape(wmax, pmax)[: j.max_workers, : j.max_ps].copy()
                table.setflags(write=False)
                found[k] = table
        for k in missing:
            ITERATION_TABLES.put(k, found[k])
    return [found[k] for k in keys]


def iteration_time_grid(jobs: Sequence[Job], mode: str = "wfbp") -> np.ndarray:
    """Iteration times of all jobs on a common grid (J x W x P); inf beyond a job's caps."""
    jobs = _check_jobs(jobs)
    if not jobs:
        raise InvalidInput("jobs must list at least one job, got 0")
    tables = iteration_time_table(jobs, mode)
    wmax = max(j.max_workers for j in jobs)
    pmax = max(j.ps_slots for j in jobs)
    out = np.full((len(jobs), wmax, pmax), np.inf)
    for i, t in enumerate(tables):
        out[i, : t.shape[0], : t.shape[1]] = t
    return out


def speed_table(job: Job, mode: str = "wfbp") -> np.ndarray:
    """Training speed (samples/s) on every (w, p) within the job's caps, as a W x P array."""
    tau = iteration_time_table([_check_job(job)], mode)[0]
    w = np.arange(1, job.max_workers + 1)[:, None]
    return job.samples_per_iteration(w) / tau


def job_speeds(job: Job, mode: str = "wfbp") -> np.ndarray:
    """The job's speed table (samples/s, max_workers x max_ps, read-only), cached by the job's model inputs and mode."""
    memo = job_memo(job)
    hit = memo.get(("speeds", mode))
    if hit is not None:
        return hit
    key = (mode, job.model_key)
    hit = SPEED_TABLES.get(key)
    if hit is None:
        table = speed_table(job, check_choice("mode", mode, MODES))
        table.setflags(write=False)
        hit = SPEED_TABLES.put(key, table)
    memo[("speeds", mode)] = hit
    return hit


def speed_grid(jobs: Sequence[Job], mode: str = "wfbp") -> np.ndarray:
    """Speeds of all jobs on a common grid (J x W x P); 0 beyond a job's caps."""
    jobs = _check_jobs(jobs)
    tau = iteration_time_grid(jobs, mode)
    w = np.arange(1, tau.shape[1] + 1)
    per_iter = np.array([np.broadcast_to(j.samples_per_iteration(w), w.shape) for j in jobs])
    return per_iter.astype(float)[:, :, None] / tau


def duration_grid(jobs: Sequence[Job], mode: str = "wfbp") -> np.ndarray:
    """Durations (s) of all jobs on a common grid (J x W x P); inf beyond a job's caps."""
    jobs = _check_jobs(jobs)
    samples = np.array([j.samples for j in jobs])[:, None, None]
    with np.errstate(divide="ignore"):
        return samples / speed_grid(jobs, mode)


def iteration_time(
    job: Job,
    workers: int,
    ps: int,
    mode: str = "wfbp",
    cpu: float | None = None,
    mem_gb: float | None = None,
) -> float:
    """Time of one training iteration (s) of ``job`` on ``workers`` workers and ``ps`` PSs.

    cpu, mem_gb: CPU cores and memory (GB) per worker; None means the job's worker demand. They
    matter only for a job with an input pipeline (``Job.pipeline``).
    """
    w, p = _check_job(job).check_config(workers, ps)
    job = with_worker_resources(job, cpu, mem_gb)
    return float(iteration_time_table([job], mode)[0][w - 1, p - 1])


def layered_iteration_time(job: Job, workers: int, ps: int, mode: str = "wfbp") -> float:
    """The layered model's iteration time (compute and communication, no data stage)."""
    w, p = _check_job(job).check_config(workers, ps)
    return float(_layered_tables([job], mode)[0][w - 1, p - 1])


def saturation_cpu(job: Job, workers: int, ps: int, mode: str = "wfbp") -> float:
    """Fewest cores per worker at which CPU preprocessing no longer bounds the iteration (0: never does)."""
    p = job.pipeline
    if p is None or p.cpu_s_per_sample == 0:
        return 0.0
    tau = layered_iteration_time(job, workers, ps, mode)
    n = float(samples_per_worker(job, np.asarray(workers)))
    return n * p.cpu_s_per_sample / tau


def speed(
    job: Job,
    workers: int,
    ps: int,
    mode: str = "wfbp",
    cpu: float | None = None,
    mem_gb: float | None = None,
) -> float:
    """Training speed in samples per second (cpu, mem_gb per worker; None: the job's demand)."""
    tau = iteration_time(job, workers, ps, mode, cpu, mem_gb)  # validates everything first
    return float(job.samples_per_iteration(workers)) / tau


def duration(
    job: Job,
    workers: int,
    ps: int,
    mode: str = "wfbp",
    cpu: float | None = None,
    mem_gb: float | None = None,
) -> float:
    """Time (s) to process the job's remaining samples at this allocation."""
    v = speed(job, workers, ps, mode, cpu, mem_gb)
    return job.samples / v


def active_piece(job: Job, workers: int, ps: int, mode: str = "wfbp") -> ActivePiece:
    """Coefficients of the critical path that sets tau at (workers, ps) (PS jobs only)."""
    if _check_job(job).arch == "allreduce":
        raise InvalidInput(
            f"job {job.name!r}: active_piece is defined for PS jobs (the basis cs, w/p, 1); "
            "this job is all-reduce"
        )
    w, p = job.check_config(workers, ps)
    t = _evaluate([job], np.array([[float(w)]]), np.array([[float(p)]]), mode, track=True)[:, 0, 0]
    cs = job.global_batch / w if job.batch_mode == "global" else float(job.batch)
    return ActivePiece(
        compute=float(t[1]), ps_comm=float(t[2]), const=float(t[3]), compute_scale=cs, ratio=w / p
    )


def layer_timeline(
    job: Job,
    workers: int,
    ps: int,
    mode: str = "wfbp",
    cpu: float | None = None,
    mem_gb: float | None = None,
):
    """Per-layer start/end of forward, backward, push and pull in one iteration (a DataFrame).

    A job with an input pipeline adds two rows on the ``input`` layer (index -1): ``read`` and
    ``preprocess``, the prefetch of the next batch that runs alongside this iteration; when the
    data stage binds, the iteration ends with it. An all-reduce job (ps = 0) has ``allreduce``
    rows, one per bucket, instead of push and pull (``smdlab.model.allreduce.allreduce_timeline``).
    """
    import pandas as pd

    check_choice("mode", mode, ("sequential", "wfbp"))
    if _check_job(job).arch == "allreduce":
        job.check_config(workers, ps)
        return allreduce_timeline(job, workers, mode)
    w, p = _check_job(job).check_config(workers, ps)
    job = with_worker_resources(job, cpu, mem_gb)
    t = _Batch([job], np.array([[float(w)]]), np.array([[float(p)]]), track=False)
    L = job.profile.layers
    f = job.profile.forward_s * t.cs[0, 0]
    b = job.profile.backward_s * t.cs[0, 0]
    c = np.array([t.link(l)[0, 0, 0] for l in range(L)])
    u = np.array([t.term(t.s[:, l], t.upd)[0, 0, 0] for l in range(L)])
    rows = []
    fe = np.cumsum(f)
    for l in range(L):
        rows.append((l, "forward", fe[l] - f[l], fe[l]))
    be = fe[-1] + np.cumsum(b[::-1])[::-1]  # be[l]: end of backward of layer l
    for l in range(L):
        rows.append((l, "backward", be[l] - b[l], be[l]))
    if mode == "sequential":
        clock = be[0]
        for l in range(L - 1, -1, -1):
            rows.append((l, "push", clock, clock + c[l]))
            clock += c[l] + u[l]
            rows.append((l, "pull", clock, clock + c[l]))
            clock += c[l]
    else:
        P = Q = 0.0
        for l in range(L - 1, -1, -1):
            start = max(P, be[l])
            P = start + c[l]
            rows.append((l, "push", start, P))
            qs = max(Q, P + u[l])
            Q = qs + c[l]
            rows.append((l, "pull", qs, Q))
    if job.pipeline is not None:
        io, c = data_stage_times(job, w)
        rows.append((-1, "read", 0.0, float(io)))
        rows.append((-1, "preprocess", 0.0, float(c)))
    df = pd.DataFrame(rows, columns=["layer_index", "phase", "start", "end"])
    df["layer"] = [job.profile.names[i] if i >= 0 else "input" for i in df["layer_index"]]
    return df


def link_speed(
    job: Job,
    workers: int,
    ps: int,
    worker_divisor: float,
    ps_divisor: float = 1.0,
    mode: str = "wfbp",
    machines: int | None = None,
) -> float:
    """Speed (samples/s) when the job's links run slower than its NIC shares (cached).

    PS job: the layered model with B_w / worker_divisor and B_ps / ps_divisor. All-reduce job:
    the ring over ``machines`` machines (None: packed) with its inter-machine bandwidth divided
    by ``worker_divisor``. A job with an input pipeline stays bounded below by its data stage.
    Divisors (>= 1) come from ``smdlab.model.traffic.Uplinks.divisors``.
    """
    w, p = _check_job(job).check_config(workers, ps)
    dw = check_positive("worker_divisor", worker_divisor)
    dp = check_positive("ps_divisor", ps_divisor)
    check_choice("mode", mode, MODES)
    key = ("link_speed", job.model_key, mode, w, p, dw, dp, machines)
    return LINK_SPEEDS.get_or_compute(key, lambda: _link_speed(job, w, p, dw, dp, mode, machines))


def _link_speed(
    job: Job, w: int, p: int, dw: float, dp: float, mode: str, machines: int | None
) -> float:
    if job.arch == "allreduce":
        tau = allreduce_iteration_time(
            job, w, machines=machines, mode=mode, link_bw_bytes=job.worker_bw_bytes / dw
        )
    else:
        links = (job.worker_bw_bytes / dw, job.ps_bw_bytes / dp)
        grid = np.array([[float(w)]]), np.array([[float(p)]])
        tau = float(_evaluate([job], *grid, mode, track=False, links=links)[0, 0, 0])
    if job.pipeline is not None:
        io, cpu = data_stage_times(job, w)
        tau = max(tau, float(io), float(cpu))
    return float(job.samples_per_iteration(w)) / tau
