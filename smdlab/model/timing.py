"""The layered timing model of one PS training iteration (specification: docs/model.md).

Per-layer quantities for a job on (w workers, p PSs):
    compute scale  cs = M / w (global batch) or m (per-worker batch)
    forward  f_l(w) = f_l * cs,  backward b_l(w) = b_l * cs
    push/pull c_l  = s_l * max(1 / B_w, w / (p * B_ps)) + lat
    PS update u_l  = upd * s_l * w / p     (a PS aggregates every byte it receives)
Times are tracked, when asked, as coefficients over the basis (cs, w/p, 1): the "active piece".
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from smdlab.errors import check_choice
from smdlab.model.job import Job

MODES: tuple[str, ...] = ("sequential", "wfbp", "wfbp_prefetch")
_PREFETCH_MAX_ITER = 200
_PREFETCH_WINDOW = 12
_CHUNK_ELEMENTS = 2_000_000  # bound on jobs x grid points per vectorised pass (memory)
_CACHE: dict[tuple, np.ndarray] = {}
_CACHE_MAX = 8192


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

    def __init__(self, jobs: Sequence[Job], w: np.ndarray, p: np.ndarray, track: bool):
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
        bw = col([j.worker_bw_bytes for j in jobs])
        bps = col([j.ps_bw_bytes for j in jobs])
        upd = col([j.profile.update_s_per_byte for j in jobs])
        is_global = col([j.batch_mode == "global" for j in jobs]).astype(bool)
        batch = col([j.global_batch if j.batch_mode == "global" else j.per_worker_batch for j in jobs])
        self.cs = np.where(is_global, batch / w, batch)
        ratio = w / p
        worker_binds = 1.0 / bw >= ratio / bps
        kappa = np.where(worker_binds, 1.0 / bw, ratio / bps)
        zero = np.zeros_like(self.cs)
        if track:  # rows: value, coefficient of cs, of w/p, of 1
            self.comp = np.stack([self.cs, np.ones_like(zero), zero, zero])
            self.comm = np.stack([kappa, zero, np.where(worker_binds, 0, 1 / bps), np.where(worker_binds, 1 / bw, 0)])
            self.upd = np.stack([upd * ratio, zero, upd + zero, zero])
            self.one = np.stack([np.ones_like(zero), zero, zero, np.ones_like(zero)])
        else:
            self.comp, self.comm, self.upd, self.one = (x[None] for x in (self.cs, kappa, upd * ratio, np.ones_like(zero)))
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


def _wfbp_prefetch(t: _Batch) -> np.ndarray:
    n_layers = t.f.shape[1]
    links = [t.link(l) for l in range(n_layers)]
    updates = [t.term(t.s[:, l], t.upd) for l in range(n_layers)]
    fwd = [t.term(t.f[:, l], t.comp) for l in range(n_layers)]
    bwd = [t.term(t.b[:, l], t.comp) for l in range(n_layers)]
    pulls = [t.zero] * n_layers  # pull of layer l ended (previous iteration)
    gpu_free = push_free = pull_free = t.zero
    marks = []
    for k in range(_PREFETCH_MAX_ITER):
        fe = gpu_free
        for l in range(n_layers):
            fe = _tmax(fe, pulls[l]) + fwd[l]
        be, P, Q = fe, push_free, pull_free
        for l in range(n_layers - 1, -1, -1):
            be = be + bwd[l]
            P = _tmax(P, be) + links[l]
            Q = _tmax(Q, P + updates[l]) + links[l]
            pulls[l] = Q
        gpu_free, push_free, pull_free = be, P, Q
        marks.append(Q)
        if k >= 2:
            d1, d0 = marks[-1][0] - marks[-2][0], marks[-2][0] - marks[-3][0]
            if np.allclose(d1, d0, rtol=1e-12, atol=1e-15):
                return marks[-1] - marks[-2]
    c = _PREFETCH_WINDOW  # not settled to one period: average over the last window (cyclic regime)
    return (marks[-1] - marks[-1 - c]) / c


_KERNELS = {"sequential": _sequential, "wfbp": _wfbp, "wfbp_prefetch": _wfbp_prefetch}


def _evaluate(jobs: Sequence[Job], w: np.ndarray, p: np.ndarray, mode: str, track: bool) -> np.ndarray:
    check_choice("mode", mode, MODES)
    return _KERNELS[mode](_Batch(jobs, w, p, track))


def _key(job: Job, mode: str) -> tuple:
    return (
        job.profile, job.batch_mode, job.global_batch, job.per_worker_batch, job.worker_bw_bytes,
        job.ps_bw_bytes, job.latency_s, job.max_workers, job.max_ps, mode,
    )


def iteration_time_table(jobs: Sequence[Job], mode: str = "wfbp") -> list[np.ndarray]:
    """Per job, its (max_workers x max_ps) table of iteration times tau[w-1, p-1] (cached)."""
    check_choice("mode", mode, MODES)
    keys = [_key(j, mode) for j in jobs]
    missing = {}
    for k, j in zip(keys, jobs):
        if k not in _CACHE and k not in missing:
            missing[k] = j
    if missing:
        todo = list(missing.items())
        wmax = max(j.max_workers for _, j in todo)
        pmax = max(j.max_ps for _, j in todo)
        per_chunk = max(1, _CHUNK_ELEMENTS // (wmax * pmax * max(j.profile.layers for _, j in todo)))
        wg, pg = np.meshgrid(np.arange(1, wmax + 1), np.arange(1, pmax + 1), indexing="ij")
        wg, pg = wg.ravel()[None].astype(float), pg.ravel()[None].astype(float)
        for start in range(0, len(todo), per_chunk):
            chunk = todo[start : start + per_chunk]
            tau = _evaluate([j for _, j in chunk], wg, pg, mode, track=False)[0]
            for (k, j), row in zip(chunk, tau):
                table = row.reshape(wmax, pmax)[: j.max_workers, : j.max_ps].copy()
                table.setflags(write=False)
                if len(_CACHE) >= _CACHE_MAX:
                    _CACHE.pop(next(iter(_CACHE)))
                _CACHE[k] = table
    return [_CACHE[k] for k in keys]


def iteration_time_grid(jobs: Sequence[Job], mode: str = "wfbp") -> np.ndarray:
    """Iteration times of all jobs on a common grid (J x W x P); inf beyond a job's caps."""
    tables = iteration_time_table(jobs, mode)
    wmax = max(j.max_workers for j in jobs)
    pmax = max(j.max_ps for j in jobs)
    out = np.full((len(jobs), wmax, pmax), np.inf)
    for i, t in enumerate(tables):
        out[i, : t.shape[0], : t.shape[1]] = t
    return out


def _samples_per_iteration(job: Job, workers: np.ndarray | int) -> np.ndarray | float:
    return job.global_batch if job.batch_mode == "global" else np.asarray(workers) * job.per_worker_batch


def speed_table(job: Job, mode: str = "wfbp") -> np.ndarray:
    """Training speed (samples/s) on every (w, p) within the job's caps, as a W x P array."""
    tau = iteration_time_table([job], mode)[0]
    w = np.arange(1, job.max_workers + 1)[:, None]
    return _samples_per_iteration(job, w) / tau


def speed_grid(jobs: Sequence[Job], mode: str = "wfbp") -> np.ndarray:
    """Speeds of all jobs on a common grid (J x W x P); 0 beyond a job's caps."""
    tau = iteration_time_grid(jobs, mode)
    w = np.arange(1, tau.shape[1] + 1)[None, :, None]
    M = np.array([j.global_batch if j.batch_mode == "global" else 0 for j in jobs], dtype=float)
    m = np.array([j.per_worker_batch if j.batch_mode == "per_worker" else 0 for j in jobs], dtype=float)
    per_iter = M[:, None, None] + m[:, None, None] * w
    return per_iter / tau


def duration_grid(jobs: Sequence[Job], mode: str = "wfbp") -> np.ndarray:
    """Durations (s) of all jobs on a common grid (J x W x P); inf beyond a job's caps."""
    samples = np.array([j.samples for j in jobs])[:, None, None]
    with np.errstate(divide="ignore"):
        return samples / speed_grid(jobs, mode)


def iteration_time(job: Job, workers: int, ps: int, mode: str = "wfbp") -> float:
    """Time of one training iteration (s) of ``job`` on ``workers`` workers and ``ps`` PSs."""
    w, p = job.check_config(workers, ps)
    return float(iteration_time_table([job], mode)[0][w - 1, p - 1])


def speed(job: Job, workers: int, ps: int, mode: str = "wfbp") -> float:
    """Training speed in samples per second."""
    return float(_samples_per_iteration(job, workers)) / iteration_time(job, workers, ps, mode)


def duration(job: Job, workers: int, ps: int, mode: str = "wfbp") -> float:
    """Time (s) to process the job's remaining samples at this allocation."""
    return job.samples / speed(job, workers, ps, mode)


def active_piece(job: Job, workers: int, ps: int, mode: str = "wfbp") -> ActivePiece:
    """Coefficients of the critical path that sets tau at (workers, ps)."""
    w, p = job.check_config(workers, ps)
    t = _evaluate([job], np.array([[float(w)]]), np.array([[float(p)]]), mode, track=True)[:, 0, 0]
    cs = job.global_batch / w if job.batch_mode == "global" else float(job.per_worker_batch)
    return ActivePiece(compute=float(t[1]), ps_comm=float(t[2]), const=float(t[3]), compute_scale=cs, ratio=w / p)


def layer_timeline(job: Job, workers: int, ps: int, mode: str = "wfbp"):
    """Per-layer start/end of forward, backward, push and pull in one iteration (a DataFrame)."""
    import pandas as pd

    check_choice("mode", mode, ("sequential", "wfbp"))
    w, p = job.check_config(workers, ps)
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
    df = pd.DataFrame(rows, columns=["layer_index", "phase", "start", "end"])
    df["layer"] = [job.profile.names[i] for i in df["layer_index"]]
    return df
