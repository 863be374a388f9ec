"""The layered timing model of one ring all-reduce training iteration (specification: docs/model.md).

A job on g workers (GPUs), no PS. Per layer l = 1..L, compute scale cs = M / g (global batch) or
m (per-worker batch): forward f_l * cs, backward b_l * cs. Gradients go into buckets in backward
order (layers L..1; a bucket closes once it holds at least ``bucket_mb`` MB, as PyTorch DDP's
``bucket_cap_mb``); bucket k of S_k bytes is ready when the backward pass of its lowest layer
ends, and its ring all-reduce takes

    r_k = 2 (g - 1) / g * S_k / B + 2 (g - 1) * alpha

(reduce-scatter then all-gather, each g - 1 steps of S_k / g bytes; alpha = the job's
``latency_s`` per step). Buckets are reduced one after another on one ring:

    sequential: tau = F + B + sum_k r_k
    wfbp:       A_k = max(A_{k-1}, ready_k) + r_k,  A_0 = 0;  tau = max(F + B, A_K)

``wfbp_prefetch`` equals ``wfbp`` here: the optimizer step needs every reduced bucket, so the
next forward pass cannot start before the last bucket is done. B is the slowest link on the ring:
the intra-machine link (``Job.intra_bw_bytes``: NVLink or PCIe of the device) when the ring
sits on one machine, otherwise min(intra link, NIC share / rings sharing that NIC), where the
NIC share is the worker demand's ``bw_gbps``. The timing tables assume a packed ring: it spans
ceil(g / gpus_per_machine) machines and shares its NICs with no other ring.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from smdlab.errors import InvalidInput, check_choice, check_int, check_positive
from smdlab.model.job import Job
from smdlab.model.profiles import LayerProfile

MB = 1e6


def bucket_layout(param_bytes: np.ndarray, bucket_bytes: float) -> tuple[np.ndarray, np.ndarray]:
    """(bytes, lowest layer) of each gradient bucket, in backward order (layers L..1).

    A bucket takes layers from the output side until it holds at least ``bucket_bytes``;
    layers without parameters join no bucket.
    """
    sizes, lowest = [], []
    acc, low = 0.0, -1
    for layer in range(len(param_bytes) - 1, -1, -1):
        s = float(param_bytes[layer])
        if s <= 0:
            continue
        acc += s
        low = layer
        if acc >= bucket_bytes:
            sizes.append(acc)
            lowest.append(low)
            acc = 0.0
    if acc > 0:
        sizes.append(acc)
        lowest.append(low)
    return np.array(sizes, dtype=float), np.array(lowest, dtype=np.int64)


def ring_times(sizes: np.ndarray, g: np.ndarray, bandwidth: np.ndarray, alpha: float) -> np.ndarray:
    """Ring all-reduce time of each bucket at each point: (points x buckets), 0 where g = 1."""
    g = np.asarray(g, dtype=float)[:, None]
    bw = np.asarray(bandwidth, dtype=float)[:, None]
    return 2 * (g - 1) / g * sizes[None, :] / bw + 2 * (g - 1) * alpha


def ring_tau(
    forward_s: np.ndarray,
    backward_s: np.ndarray,
    param_bytes: np.ndarray,
    bucket_bytes: float,
    cs: np.ndarray,
    g: np.ndarray,
    bandwidth: np.ndarray,
    alpha: float,
    mode: str,
) -> np.ndarray:
    """Iteration time at each point (cs, g, bandwidth in bytes/s), per the module docstring."""
    sizes, lowest = bucket_layout(param_bytes, bucket_bytes)
    cs = np.asarray(cs, dtype=float)
    F = cs * float(np.sum(forward_s))
    B = cs * float(np.sum(backward_s))
    if sizes.size == 0:
        return F + B
    r = ring_times(sizes, g, bandwidth, alpha)
    if mode == "sequential":
        return F + B + r.sum(axis=1)
    b_suffix = np.cumsum(np.asarray(backward_s, dtype=float)[::-1])[::-1]
    ready = F[:, None] + cs[:, None] * b_suffix[lowest][None, :]
    A = np.zeros_like(F)
    for k in range(sizes.size):
        A = np.maximum(A, ready[:, k]) + r[:, k]
    return np.maximum(F + B, A)


def ring_bandwidth(
    job: Job, machines: int, sharing: int = 1, link_bw_bytes: float | None = None
) -> float:
    """B in bytes/s of a ring of ``job`` over ``machines`` machines whose NICs carry ``sharing`` rings.

    link_bw_bytes: a slower link between machines than the NIC share (a rack uplink's share).
    """
    machines = check_int("machines", machines, 1)
    sharing = check_int("sharing", sharing, 1)
    if machines == 1:
        return job.intra_bw_bytes
    bw = min(job.intra_bw_bytes, job.worker_bw_bytes / sharing)
    if link_bw_bytes is not None:
        bw = min(bw, check_positive("link_bw_bytes", link_bw_bytes))
    return bw


def _compute_scale(job: Job, g: np.ndarray) -> np.ndarray:
    if job.batch_mode == "global":
        return job.global_batch / g
    return np.full_like(g, float(job.per_worker_batch or 0))


def packed_machines(job: Job, workers: np.ndarray | int) -> np.ndarray:
    """Machines a packed ring of ``workers`` spans: ceil(workers / gpus_per_machine)."""
    return np.ceil(np.asarray(workers, dtype=float) / job.gpus_per_machine)


def allreduce_table(job: Job, mode: str = "wfbp") -> np.ndarray:
    """Iteration times at g = 1..max_workers of a packed ring, as a (max_workers x 1) array."""
    g = np.arange(1, job.max_workers + 1, dtype=float)
    bw = np.where(
        packed_machines(job, g) <= 1,
        job.intra_bw_bytes,
        min(job.intra_bw_bytes, job.worker_bw_bytes),
    )
    p = job.profile
    tau = ring_tau(
        p.forward_s,
        p.backward_s,
        p.param_bytes,
        job.bucket_mb * MB,
        _compute_scale(job, g),
        g,
        bw,
        job.latency_s,
        mode,
    )
    return tau[:, None]


def allreduce_iteration_time(
    job: Job,
    workers: int,
    *,
    machines: int | None = None,
    sharing: int = 1,
    mode: str = "wfbp",
    link_bw_bytes: float | None = None,
) -> float:
    """Iteration time (s) of an all-reduce job on ``workers`` GPUs over ``machines`` machines.

    machines: machines the ring spans (None: packed, ceil(workers / gpus_per_machine)).
    sharing: rings that share the busiest NIC of this ring (1: none besides it).
    link_bw_bytes: the slowest link between machines when slower than the NIC share (uplinks).
    """
    _check(job)
    check_choice("mode", mode, ("sequential", "wfbp", "wfbp_prefetch"))
    w = check_int("workers", workers, 1, job.max_workers)
    m = int(packed_machines(job, w)) if machines is None else check_int("machines", machines, 1, w)
    bw = ring_bandwidth(job, m, sharing, link_bw_bytes)
    p = job.profile
    g = np.array([float(w)])
    return float(
        ring_tau(
            p.forward_s,
            p.backward_s,
            p.param_bytes,
            job.bucket_mb * MB,
            _compute_scale(job, g),
            g,
            np.array([bw]),
            job.latency_s,
            mode,
        )[0]
    )


def allreduce_timeline(
    job: Job, workers: int, mode: str = "wfbp", machines: int | None = None, sharing: int = 1
) -> pd.DataFrame:
    """Start/end of every forward, backward and bucket all-reduce of one iteration (a DataFrame).

    Columns: layer_index, phase (``forward``, ``backward``, ``allreduce``), start, end, layer,
    bucket (the bucket's index in backward order; -1 for compute rows), bytes (bucket bytes).
    An all-reduce row's layer is the bucket's lowest layer (its backward pass makes it ready).
    """
    _check(job)
    check_choice("mode", mode, ("sequential", "wfbp"))
    w = check_int("workers", workers, 1, job.max_workers)
    m = int(packed_machines(job, w)) if machines is None else check_int("machines", machines, 1, w)
    bw = ring_bandwidth(job, m, sharing)
    prof = job.profile
    cs = float(_compute_scale(job, np.array([float(w)]))[0])
    f = prof.forward_s * cs
    b = prof.backward_s * cs
    L = prof.layers
    fe = np.cumsum(f)
    rows = [(layer, "forward", fe[layer] - f[layer], fe[layer], -1, 0.0) for layer in range(L)]
    be = fe[-1] + np.cumsum(b[::-1])[::-1]
    rows += [(layer, "backward", be[layer] - b[layer], be[layer], -1, 0.0) for layer in range(L)]
    sizes, lowest = bucket_layout(prof.param_bytes, job.bucket_mb * MB)
    r = ring_times(sizes, np.array([float(w)]), np.array([bw]), job.latency_s)[0]
    clock = be[0] if mode == "sequential" else 0.0
    for k in range(sizes.size):
        start = clock if mode == "sequential" else max(clock, be[lowest[k]])
        clock = start + r[k]
        rows.append((int(lowest[k]), "allreduce", start, clock, k, float(sizes[k])))
    df = pd.DataFrame(rows, columns=["layer_index", "phase", "start", "end", "bucket", "bytes"])
    df["layer"] = [prof.names[i] for i in df["layer_index"]]
    return df


def _check(job: Job) -> None:
    if not isinstance(job, Job):
        raise InvalidInput(f"job must be a Job, got {type(job).__name__}")
    if job.arch != "allreduce":
        raise InvalidInput(f"job {job.name!r} must have arch='allreduce', got {job.arch!r}")


def uniform_profile(
    layers: int, compute_s: float, param_bytes: float, name: str = "uniform"
) -> LayerProfile:
    """``layers`` equal layers: total forward+backward ``compute_s`` per sample (backward twice forward)."""
    n = check_int("layers", layers, 1, 10_000)
    check_positive("compute_s", compute_s)
    check_positive("param_bytes", param_bytes, allow_zero=True)
    fwd = np.full(n, compute_s / (3 * n))
    return LayerProfile(
        tuple(f"layer{i}" for i in range(n)),
        fwd,
        2 * fwd,
        np.full(n, param_bytes / n),
        network=name,
    )


def closed_form_uniform(
    n: int, F: float, B: float, S: float, g: int, bw: float, alpha: float, mode: str
) -> float:
    """tau of n uniform layers, one bucket per layer (F, B, S totals): the closed form of a test.

    wfbp: the ring keeps up with the backward pass when r <= B/n, else it is the bottleneck:
    tau = F + B/n + n*r if r >= B/n, else F + B + r.
    """
    r = 0.0 if g == 1 else 2 * (g - 1) / g * (S / n) / bw + 2 * (g - 1) * alpha
    if mode == "sequential":
        return F + B + n * r
    return F + B / n + n * r if r >= B / n else F + B + r


__all__ = [
    "allreduce_iteration_time",
    "allreduce_table",
    "allreduce_timeline",
    "bucket_layout",
    "closed_form_uniform",
    "packed_machines",
    "ring_bandwidth",
    "ring_tau",
    "ring_times",
    "uniform_profile",
]
