"""Synthetic workloads: Poisson arrivals at a given offered load, a documented job mix.

Distribution (every draw from one ``numpy.random.Generator`` seeded with ``seed``):
- network: drawn from ``networks`` (default: every bundled profile) with ``mix`` weights
  (default uniform);
- request n (GPUs = workers = PSs at the reference allocation, used for the load; the job's
  ``requested_workers``): drawn from ``gpu_mix``, default ``DEFAULT_GPU_MIX``, then clipped to
  the most bundles an empty cluster holds;
- reference duration d (seconds at (n, n)): log-normal with median ``duration_median_s``
  (default 1,800 s) and shape ``duration_sigma`` (default 1.2, so a mean of about 3,700 s),
  clipped to ``duration_range_s`` (default 60 s .. 2 days); the job's samples are d times its
  speed at (n, n), so on an idle cluster with n bundles it takes exactly d;
- lengths: ``lengths="drawn"`` (default) draws d per job as above, independently of the network;
  ``lengths="per_network"`` follows DL2's simulator (pengyanghua/DL2, ``trace.py`` with
  ``FIX_JOB_LEN``: every job of a type gets that type's fixed epoch count,
  ``num_epochs[type]``): each network k gets one reference duration D_k, drawn from the same
  log-normal (median, shape, range) by a generator seeded with ``PER_NETWORK_LENGTH_SEED`` (the
  same table for every workload seed, as DL2's table is a constant), and every job on k has the
  samples D_k * speed_k(1, 1), its work at one worker and one PS; its d (for the load) is then
  those samples over its speed at (n, n). The per-job draw of d is still made (and unused), so
  the other draws equal those of ``lengths="drawn"`` with the same seed;
- per-task demands: ``demands="per_network"`` (default): each job its network's
  (``smdlab.model.demands.task_demands``); ``"uniform"``: one bundle for every job (``base``
  module docstring); the request is clipped per network, to the bundles of that network an
  empty cluster holds, and each job's load counts its own demands;
- input pipeline: ``pipeline=True`` (default) gives every job on a bundled network its data
  stage (``smdlab.model.pipeline.bundled_pipeline``), so CPU and memory per worker set how fast
  data arrives: at the default 8 cores per GPU the fast image networks (GoogLeNet,
  MobileNetV2, DenseNet-121) are input-bound with fewer cores than their demand;
  ``pipeline=False`` leaves the layered model alone (the calibration to ``d`` holds either way);
- arrivals: a Poisson process whose rate gives the requested offered load (``base`` module
  docstring: the bottleneck resource's offered demand over its pooled capacity); the first job
  arrives at 0 and the arrival times are scaled so that the realised rate (N - 1) / span is the
  target rate exactly (so ``offered_load`` of the result returns ``load``). With
  ``arrival_slot_s`` = s > 0, each arrival is then moved up to the next multiple of s, as in
  DL2's simulator (pengyanghua/DL2, ``trace.py``: a job's arrival is the index of its time slot);
  the span grows by less than s, so the offered load falls slightly below ``load``.
- architecture: with ``arch_mix`` = x > 0, each job is, with probability x (drawn after every
  other draw), a ring all-reduce job (``arch="allreduce"``, no PS, ``gpus_per_machine`` the
  cluster's largest machine) with the same duration at its request; the arrival rate is set from
  the PS form of every job, so all-reduce jobs offer no PS demand and the realised load of the
  resources PSs use is below ``load``.
The default GPU mix has more multi-GPU jobs than Philly (where 93% use one GPU), so that the
choice of workers and PSs matters; pass ``gpu_mix`` to change it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal, get_args

import numpy as np

from smdlab.errors import InvalidInput, check_choice, check_int, check_positive
from smdlab.model.cluster import Cluster
from smdlab.model.job import Job
from smdlab.model.pipeline import bundled_pipeline
from smdlab.model.profiles import LayerProfile
from smdlab.workloads.base import (
    DEFAULT_TASK_BW_GBPS,
    MAX_CAP,
    bundle_limits,
    bundle_vectors,
    calibrated_jobs,
    demand_seconds,
    demand_vectors,
    mix_probabilities,
    network_demands,
    rate_for_load,
    resolve_networks,
    seconds_pair,
)

DEFAULT_GPU_MIX: Mapping[int, float] = {1: 0.5, 2: 0.15, 4: 0.15, 8: 0.12, 16: 0.06, 32: 0.02}
LengthRule = Literal["drawn", "per_network"]
LENGTH_RULES: tuple[LengthRule, ...] = get_args(LengthRule)
PER_NETWORK_LENGTH_SEED = 0  # seeds the per-network duration table of lengths="per_network"
MAX_JOBS = (
    1_000_000  # a bound on generated workloads (far beyond what a simulation of them can run)
)


def cluster_bundle_limit(
    cluster: Cluster,
    worker_demand: Mapping[str, float] | None = None,
    ps_demand: Mapping[str, float] | None = None,
) -> int:
    """Most whole worker+PS bundles (on one machine each) an empty ``cluster`` holds (default: the uniform bundle)."""
    return int(
        bundle_limits(cluster, bundle_vectors(cluster, [demand_vectors(worker_demand, ps_demand)]))[
            0
        ]
    )


def _gpu_mix(gpu_mix: Mapping[int, float] | None) -> tuple[np.ndarray, np.ndarray]:
    if gpu_mix is not None and not isinstance(gpu_mix, Mapping):
        raise InvalidInput(f"gpu_mix must map GPU counts to weights, got {gpu_mix!r}")
    mix = dict(DEFAULT_GPU_MIX if gpu_mix is None else gpu_mix)
    if not mix:
        raise InvalidInput("gpu_mix must give at least one GPU count")
    sizes = np.array(
        [check_int("gpu_mix GPU count", int(k) if str(k).isdigit() else k, 1, MAX_CAP) for k in mix]
    )
    w = np.array([check_positive(f"gpu_mix[{k}]", v, allow_zero=True) for k, v in mix.items()])
    if w.sum() <= 0:
        raise InvalidInput(f"gpu_mix must give some GPU count a positive weight, got {mix}")
    return sizes, w / w.sum()


def synthetic(
    n_jobs: int,
    cluster: Cluster,
    *,
    load: float = 0.8,
    seed: int = 0,
    networks: Sequence[str | LayerProfile] | None = None,
    mix: Mapping[str, float] | None = None,
    gpu_mix: Mapping[int, float] | None = None,
    duration_median_s: float = 1800.0,
    duration_sigma: float = 1.2,
    duration_range_s: tuple[float, float] = (60.0, 2 * 86400.0),
    cap_factor: float = 1.0,
    load_resource: str | None = None,
    mode: str = "wfbp",
    device: str = "v100",
    demands: str = "per_network",
    task_bw_gbps: float = DEFAULT_TASK_BW_GBPS,
    worker_demand: Mapping[str, float] | None = None,
    ps_demand: Mapping[str, float] | None = None,
    pipeline: bool = True,
    arch_mix: float = 0.0,
    lengths: str = "drawn",
    arrival_slot_s: float = 0.0,
) -> list[Job]:
    """``n_jobs`` jobs with Poisson arrivals offering ``load`` to ``cluster`` (module docstring)."""
    n = check_int("n_jobs", n_jobs, 1, MAX_JOBS)
    arch_mix = check_positive("arch_mix", arch_mix, allow_zero=True)
    if arch_mix > 1:
        raise InvalidInput(
            f"arch_mix must be in [0, 1] (the all-reduce fraction), got {arch_mix!r}"
        )
    if not isinstance(cluster, Cluster):
        raise InvalidInput(f"cluster must be a Cluster, got {type(cluster).__name__}")
    load = check_positive("load", load)
    seed = check_int("seed", seed, 0)
    # The checked floats from here on: numpy cannot take the log of a huge Python int.
    duration_median_s = check_positive("duration_median_s", duration_median_s)
    duration_sigma = check_positive("duration_sigma", duration_sigma, allow_zero=True)
    duration_range_s = seconds_pair("duration_range_s", duration_range_s)
    lo, hi = (
        check_positive("duration_range_s[0]", duration_range_s[0]),
        check_positive("duration_range_s[1]", duration_range_s[1]),
    )
    if lo > hi:
        raise InvalidInput(
            f"duration_range_s must be (low, high) with low <= high, got {duration_range_s!r}"
        )
    check_choice("lengths", lengths, LENGTH_RULES)
    arrival_slot_s = check_positive("arrival_slot_s", arrival_slot_s, allow_zero=True)
    nets = resolve_networks(networks, device)
    probs = mix_probabilities(nets, mix)
    sizes, size_p = _gpu_mix(gpu_mix)
    pairs = network_demands(nets, demands, worker_demand, ps_demand, task_bw_gbps)
    bundles = bundle_vectors(cluster, pairs)
    limits = bundle_limits(cluster, bundles)
    for k in np.flatnonzero((limits < 1) & (probs > 0)):
        wd, pd_ = pairs[k]
        raise InvalidInput(
            f"cluster cannot hold even one worker+PS bundle of network {nets[k].name!r} "
            f"(demands={demands!r}: worker {wd}, PS {pd_}) on one machine: {cluster!r}"
        )
    rng = np.random.default_rng(seed)
    net_index = rng.choice(len(nets), size=n, p=probs)
    requests = np.minimum(rng.choice(sizes, size=n, p=size_p), limits[net_index])
    durations = np.clip(rng.lognormal(np.log(duration_median_s), duration_sigma, size=n), lo, hi)
    width = len(str(n - 1))
    names = [f"j{i:0{width}d}" for i in range(n)]
    pipes = [bundled_pipeline(net.profile) if pipeline else None for net in nets]
    work = None
    if lengths == "per_network":
        durations, work = _per_network_durations(
            names, requests, net_index, nets, pairs, pipes, cap_factor, mode, demands,
            (duration_median_s, duration_sigma, lo, hi),
        )  # fmt: skip
    demand = demand_seconds(requests, durations, bundles[net_index])
    rate = rate_for_load(load, demand, cluster, load_resource)
    gaps = rng.exponential(1.0 / rate, size=n)
    arrivals = np.cumsum(gaps) - gaps[0]
    if n >= 2 and arrivals[-1] > 0:
        arrivals *= (
            (n - 1) / rate / arrivals[-1]
        )  # realised rate (N-1)/span equals the target exactly
    if arrival_slot_s > 0:  # DL2's trace: jobs arrive at slot boundaries
        arrivals = np.ceil(arrivals / arrival_slot_s - 1e-9) * arrival_slot_s
    jobs = calibrated_jobs(
        names,
        arrivals,
        requests,
        durations,
        net_index,
        nets,
        cap_factor=cap_factor,
        mode=mode,
        demands=pairs,
        gpu_only=demands == "gpu_only",
        pipelines=pipes,
    )
    if work is not None:  # exactly the network's samples (d * speed / speed may round)
        jobs = [j.replace(samples=float(w)) for j, w in zip(jobs, work)]
    if arch_mix > 0:  # drawn last, so that arch_mix = 0 leaves every earlier draw as it was
        chosen = rng.random(n) < arch_mix
        jobs = [
            as_allreduce_job(j, float(d), cluster, mode) if c else j
            for j, d, c in zip(jobs, durations, chosen)
        ]
    return jobs


def _per_network_durations(
    names: Sequence[str],
    requests: np.ndarray,
    net_index: np.ndarray,
    nets: Sequence,
    pairs: Sequence,
    pipes: Sequence,
    cap_factor: float,
    mode: str,
    demands: str,
    dist: tuple[float, float, float, float],
) -> tuple[np.ndarray, np.ndarray]:
    """(each job's duration at its request, its samples) when its samples are its network's
    (``lengths="per_network"``)."""
    median, sigma, lo, hi = dist
    table = np.random.default_rng(PER_NETWORK_LENGTH_SEED)
    ref = np.clip(table.lognormal(np.log(median), sigma, size=len(nets)), lo, hi)
    k = np.arange(len(nets))
    common: dict[str, Any] = dict(
        cap_factor=cap_factor, mode=mode, demands=pairs, gpu_only=demands == "gpu_only"
    )
    # Unit durations: each job's samples are then its speed at (n, n), or at (1, 1).
    at_request = calibrated_jobs(
        names, np.zeros(len(names)), requests, np.ones(len(names)), net_index, nets,
        pipelines=pipes, **common,
    )  # fmt: skip
    at_one = calibrated_jobs(
        [f"k{i}" for i in k], np.zeros(len(k)), np.ones(len(k), dtype=np.int64), np.ones(len(k)),
        k, nets, pipelines=pipes, **common,
    )  # fmt: skip
    work = (ref * np.array([j.samples for j in at_one]))[net_index]
    return work / np.array([j.samples for j in at_request]), work


def as_allreduce_job(job: Job, duration_s: float, cluster: Cluster, mode: str = "wfbp") -> Job:
    """The all-reduce form of a synthetic job: no PS, the same duration at its request."""
    from smdlab.model.timing import speed_table

    gpu = [float(m.capacity.get("gpu", 0)) for m in cluster.machines] or [8.0]
    gpm = max(1, round(max(gpu)))
    ar = job.replace(arch="allreduce", ps_demand={}, max_ps=None, gpus_per_machine=gpm)
    n = ar.requested_workers or 1
    return ar.replace(samples=duration_s * float(speed_table(ar, mode)[n - 1, 0]))
