"""Shared pieces of the workload generators: networks, duration calibration, offered load.

Offered load (the definition every generator and loader uses). Each job i has a *request*: n_i
bundles (n_i workers and n_i PSs; n_i is the GPU count of the trace or of the synthetic draw) and
a *reference duration* d_i, its duration at (n_i, n_i) under the layered model. Its demand over
time is D_i = d_i * n_i * (alpha_i + gamma_i) (resource-seconds per resource, alpha and gamma
the worker and PS demands). With arrival rate lambda (jobs per second) and pooled capacity C,
the offered load of resource r is rho_r = lambda * mean_i(D_ir) / C_r, and *the load* is the
bottleneck's, max_r rho_r (or rho of one named resource). A finite list of N >= 2 jobs estimates
lambda as (N - 1) / (last arrival - first arrival).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from smdlab.errors import InvalidInput, check_choice, check_positive
from smdlab.model.cluster import Cluster
from smdlab.model.job import DEFAULT_PS_DEMAND, DEFAULT_WORKER_DEMAND, Job
from smdlab.model.profiles import LayerProfile, list_profiles, profile_info
from smdlab.model.timing import MODES, speed_table

DEFAULT_CUSTOM_BATCH = 128  # global batch of a hand-built profile (bundled ones carry their own)
MAX_CAP = 1024  # Job's largest max_workers / max_ps


@dataclass(frozen=True)
class Network:
    """A network jobs can train: its name, profile and global batch."""

    name: str
    profile: LayerProfile
    global_batch: int


def resolve_networks(networks: Sequence[str | LayerProfile] | None, device: str = "v100") -> list[Network]:
    """Networks from bundled names and/or hand-built profiles (None: every bundled profile)."""
    if networks is None:
        items = list_profiles()
    elif isinstance(networks, (str, LayerProfile)):
        items = [networks]
    else:
        try:
            items = list(networks)
        except TypeError:
            raise InvalidInput(f"networks must be a network name or a list of names/profiles, got {networks!r}") from None
    if not items:
        raise InvalidInput("networks must name at least one network, got none")
    out = []
    for item in items:
        if isinstance(item, LayerProfile):
            out.append(Network(item.network, item, DEFAULT_CUSTOM_BATCH))
        else:
            name = check_choice("network", item, list_profiles())
            batch = int(profile_info(name)["default_global_batch"])
            out.append(Network(name, LayerProfile.load(name, device), batch))
    names = [n.name for n in out]
    if len(set(names)) != len(names):
        raise InvalidInput(f"networks must have distinct names, got {names}")
    return out


def seconds_pair(field: str, value: Any) -> tuple[Any, Any]:
    """``value`` as a 2-tuple (start, end), or InvalidInput (the values are checked by the caller)."""
    if isinstance(value, (str, bytes, Mapping)) or not hasattr(value, "__len__") or len(value) != 2:
        raise InvalidInput(f"{field} must be a pair (start, end) in seconds, got {value!r}")
    return tuple(value)


def mix_probabilities(nets: Sequence[Network], mix: Mapping[str, float] | None) -> np.ndarray:
    """Probabilities of drawing each network: ``mix`` weights (normalised), or uniform."""
    if mix is None:
        return np.full(len(nets), 1.0 / len(nets))
    if not isinstance(mix, Mapping):
        raise InvalidInput(f"mix must map network names to weights, got {mix!r}")
    names = [n.name for n in nets]
    unknown = [k for k in mix if k not in names]
    if unknown:
        raise InvalidInput(f"mix names network {unknown[0]!r}; allowed: {', '.join(names)}")
    w = np.array([check_positive(f"mix[{n!r}]", mix.get(n, 0.0), allow_zero=True) for n in names])
    if w.sum() <= 0:
        raise InvalidInput(f"mix must give some network a positive weight, got {dict(mix)}")
    return w / w.sum()


def demand_vectors(
    worker_demand: Mapping[str, float] | None, ps_demand: Mapping[str, float] | None
) -> tuple[dict[str, float], dict[str, float]]:
    """Per-task demands, defaulting to the model's typical ones."""
    return dict(worker_demand or DEFAULT_WORKER_DEMAND), dict(ps_demand or DEFAULT_PS_DEMAND)


def calibrated_jobs(
    names: Sequence[str],
    arrivals: np.ndarray,
    requests: np.ndarray,
    durations: np.ndarray,
    net_index: np.ndarray,
    nets: Sequence[Network],
    *,
    cap_factor: float = 1.0,
    mode: str = "wfbp",
    worker_demand: Mapping[str, float] | None = None,
    ps_demand: Mapping[str, float] | None = None,
) -> list[Job]:
    """Jobs whose duration at (n workers, n PSs) equals the given duration (n = request).

    samples_i = duration_i * speed_i(n_i, n_i); caps max_workers = max_ps = ceil(n_i * cap_factor);
    requested_workers = n_i (the request, which the caps always admit).
    """
    check_choice("mode", mode, MODES)
    cap_factor = check_positive("cap_factor", cap_factor)  # a float: a huge int would overflow numpy
    if cap_factor < 1:
        raise InvalidInput(f"cap_factor must be >= 1 (a job may always use its request), got {cap_factor!r}")
    wd, pd_ = demand_vectors(worker_demand, ps_demand)
    requests = np.asarray(requests, dtype=np.int64)
    if requests.size and (requests.min() < 1 or requests.max() > MAX_CAP):
        raise InvalidInput(f"GPU counts must be integers in [1, {MAX_CAP}], got {int(requests.min())}..{int(requests.max())}")
    caps = np.minimum(np.ceil(requests * cap_factor), MAX_CAP).astype(np.int64)  # clip before the cast
    speeds: dict[tuple[int, int, int], float] = {}
    jobs = []
    for name, a, n, cap, d, k in zip(names, arrivals, requests, caps, durations, net_index):
        net = nets[int(k)]
        key = (int(k), int(n), int(cap))
        if key not in speeds:
            probe = Job("probe", net.profile, 1.0, net.global_batch, wd, pd_, max_workers=int(cap), max_ps=int(cap))
            speeds[key] = float(speed_table(probe, mode)[n - 1, n - 1])
        samples = float(d) * speeds[key]
        if not 0 < samples < np.inf:
            raise InvalidInput(f"job {str(name)!r}: duration {float(d)!r} s at {int(n)} GPUs gives {samples!r} samples; "
                               "a duration must give a finite, positive amount of work")
        jobs.append(Job(str(name), net.profile, samples, net.global_batch, wd, pd_,
                        arrival=float(a), max_workers=int(cap), max_ps=int(cap), requested_workers=int(min(n, cap))))
    return jobs


def demand_seconds(requests: np.ndarray, durations: np.ndarray, cluster: Cluster,
                   worker_demand: Mapping[str, float] | None = None,
                   ps_demand: Mapping[str, float] | None = None) -> np.ndarray:
    """Resource-seconds each job asks at its request, (jobs x resources): d_i * n_i * (alpha + gamma)."""
    wd, pd_ = demand_vectors(worker_demand, ps_demand)
    bundle = cluster.vector(wd, "worker_demand") + cluster.vector(pd_, "ps_demand")
    return (np.asarray(durations, float) * np.asarray(requests, float))[:, None] * bundle[None, :]


def load_from_rate(rate: float, demand: np.ndarray, cluster: Cluster, resource: str | None = None) -> float:
    """Offered load of jobs with per-job demand-seconds ``demand`` arriving at ``rate`` per second."""
    rho = rate * demand.mean(axis=0) / _capacity(cluster)
    if resource is None:
        return float(np.nanmax(rho))
    return float(rho[cluster.resources.index(check_choice("load_resource", resource, cluster.resources))])


def rate_for_load(load: float, demand: np.ndarray, cluster: Cluster, resource: str | None = None) -> float:
    """Arrival rate (jobs per second) at which jobs with ``demand`` offer ``load``."""
    check_positive("load", load)
    unit = load_from_rate(1.0, demand, cluster, resource)
    if not unit > 0:
        raise InvalidInput("the jobs demand none of the load resource, so no arrival rate gives that load")
    rate = load / unit
    if not 0 < rate < np.inf:
        raise InvalidInput(f"load {load!r} needs an arrival rate of {rate!r} jobs/s for these job sizes; "
                           "job durations or the load are out of range")
    return rate


def empirical_rate(arrivals: np.ndarray) -> float:
    """(N - 1) / (last - first arrival); inf when every job arrives at once."""
    a = np.asarray(arrivals, float)
    if a.size < 2:
        raise InvalidInput(f"an arrival rate needs at least 2 jobs, got {a.size}")
    span = float(a.max() - a.min())
    return np.inf if span == 0 else (a.size - 1) / span


def _capacity(cluster: Cluster) -> np.ndarray:
    cap = cluster.capacity_vector.astype(float)
    with np.errstate(divide="ignore"):
        return np.where(cap > 0, cap, np.nan)


def offered_load(
    jobs: Sequence[Job],
    cluster: Cluster,
    *,
    requests: Sequence[int] | None = None,
    mode: str = "wfbp",
    resource: str | None = None,
    per_resource: bool = False,
) -> float | dict[str, float]:
    """Offered load of a job list (module docstring); requests default to min(max_workers, max_ps)."""
    if len(jobs) < 2:
        raise InvalidInput(f"offered load needs at least 2 jobs, got {len(jobs)}")
    n = np.array(requests if requests is not None else [min(j.max_workers, j.max_ps) for j in jobs], dtype=np.int64)
    d = np.array([j.samples / float(speed_table(j, mode)[k - 1, k - 1]) for j, k in zip(jobs, n)])
    demand = np.stack([
        d_i * k * (cluster.vector(j.worker_demand, "worker_demand") + cluster.vector(j.ps_demand, "ps_demand"))
        for j, k, d_i in zip(jobs, n, d)
    ])
    rate = empirical_rate(np.array([j.arrival for j in jobs]))
    if per_resource:
        rho = rate * demand.mean(axis=0) / _capacity(cluster)
        return {r: float(v) for r, v in zip(cluster.resources, rho)}
    return load_from_rate(rate, demand, cluster, resource)
