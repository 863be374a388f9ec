"""Shared pieces of the workload generators: networks, per-job demands, duration calibration, offered load.

Per-task demands (``demands``, every generator and loader): ``"per_network"`` (default) gives
each job its network's demands by ``smdlab.model.demands.task_demands`` (CPU and memory differ
by network family and parameter size); ``"uniform"`` gives every job the one bundle
``DEFAULT_WORKER_DEMAND`` / ``DEFAULT_PS_DEMAND`` (worker 1 GPU, 4 CPU, 16 GB; PS 4 CPU, 16 GB).
Both use ``task_bw_gbps`` (default 10) as the NIC bandwidth of every task. An explicit
``worker_demand`` or ``ps_demand`` overrides the rule for every job. ``"gpu_only"`` makes every
job a GPU-only gang (``Job.gpu_only``, ``Job.gang``): each worker reserves one GPU and nothing
else, there is no PS (one nominal PS entry that reserves nothing), and the job starts only on all
of its request's GPUs; its work is calibrated at (n workers, 1 PS), so it runs exactly its
reference duration when it holds its GPUs.

Offered load (the definition every generator and loader uses). Each job i has a *request*: n_i
bundles (n_i workers and n_i PSs; n_i is the GPU count of the trace or of the synthetic draw) and
a *reference duration* d_i, its duration at (n_i, n_i) under the layered model. Its demand over
time is D_i = d_i * n_i * (alpha_i + gamma_i) (resource-seconds per resource, alpha_i and gamma_i
job i's own worker and PS demands). With arrival rate lambda (jobs per second) and pooled
capacity C, the offered load of resource r is rho_r = lambda * mean_i(D_ir) / C_r, and *the load*
is the bottleneck's, max_r rho_r (or rho of one named resource). A finite list of N >= 2 jobs
estimates lambda as (N - 1) / (last arrival - first arrival).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, get_args

import numpy as np

from smdlab.errors import InvalidInput, check_bool, check_choice, check_positive
from smdlab.model.cluster import Cluster
from smdlab.model.demands import task_demands
from smdlab.model.job import DEFAULT_PS_DEMAND, DEFAULT_WORKER_DEMAND, Job
from smdlab.model.pipeline import InputPipeline
from smdlab.model.profiles import LayerProfile, list_profiles, profile_info
from smdlab.model.timing import MODES, speed_table

DEFAULT_CUSTOM_BATCH = 128  # global batch of a hand-built profile (bundled ones carry their own)
MAX_CAP = 1024  # Job's largest max_workers / max_ps
DemandRule = Literal["per_network", "uniform", "gpu_only"]
DEMAND_RULES: tuple[DemandRule, ...] = get_args(DemandRule)
GPU_ONLY_WORKER_DEMAND: Mapping[str, float] = {"gpu": 1.0}  # a GPU-only task reserves one GPU only
DEFAULT_TASK_BW_GBPS = 10.0

Demands = tuple[dict[str, float], dict[str, float]]


@dataclass(frozen=True)
class Network:
    """A network jobs can train: its name, profile and global batch."""

    name: str
    profile: LayerProfile
    global_batch: int


def resolve_networks(
    networks: Sequence[str | LayerProfile] | None, device: str = "v100"
) -> list[Network]:
    """Networks from bundled names and/or hand-built profiles (None: every bundled profile)."""
    items: list[str | LayerProfile]
    if networks is None:
        items = list(list_profiles())
    elif isinstance(networks, (str, LayerProfile)):
        items = [networks]
    else:
        try:
            items = list(networks)
        except TypeError:
            raise InvalidInput(
                f"networks must be a network name or a list of names/profiles, got {networks!r}"
            ) from None
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
    """The uniform per-task demands (``demands="uniform"``), unless given explicitly."""
    return dict(worker_demand or DEFAULT_WORKER_DEMAND), dict(ps_demand or DEFAULT_PS_DEMAND)


def network_demands(
    nets: Sequence[Network],
    demands: str = "per_network",
    worker_demand: Mapping[str, float] | None = None,
    ps_demand: Mapping[str, float] | None = None,
    task_bw_gbps: float = DEFAULT_TASK_BW_GBPS,
) -> list[Demands]:
    """(worker, PS) demands of a job on each network, by ``demands`` (module docstring)."""
    check_choice("demands", demands, DEMAND_RULES)
    bw = check_positive("task_bw_gbps", task_bw_gbps)
    out = []
    if demands == "gpu_only":
        if worker_demand or ps_demand:
            raise InvalidInput(
                "demands='gpu_only' fixes the demands (1 GPU per worker, no PS); "
                "do not give worker_demand or ps_demand with it"
            )
        return [(dict(GPU_ONLY_WORKER_DEMAND), {}) for _ in nets]
    for net in nets:
        if demands == "per_network":
            wd, pd_ = task_demands(net.profile, bw_gbps=bw)
        else:
            wd, pd_ = {**DEFAULT_WORKER_DEMAND, "bw_gbps": bw}, {**DEFAULT_PS_DEMAND, "bw_gbps": bw}
        out.append(
            (dict(worker_demand) if worker_demand else wd, dict(ps_demand) if ps_demand else pd_)
        )
    return out


def bundle_vectors(cluster: Cluster, pairs: Sequence[Demands]) -> np.ndarray:
    """Demand of one worker plus one PS per (worker, PS) pair, (pairs x resources) in cluster order."""
    return np.stack(
        [
            cluster.vector(wd, "worker_demand") + cluster.vector(pd_, "ps_demand")
            for wd, pd_ in pairs
        ]
    )


def bundle_limits(cluster: Cluster, bundles: np.ndarray) -> np.ndarray:
    """Most whole bundles (worker and PS on one machine) an empty ``cluster`` holds, per bundle row."""
    caps = cluster.machine_matrix if cluster.has_machines else cluster.capacity_vector[None, :]
    bundles = np.atleast_2d(np.asarray(bundles, float))
    with np.errstate(divide="ignore", invalid="ignore"):
        fit = np.where(
            bundles[:, None, :] > 0, np.floor(caps[None, :, :] / bundles[:, None, :] + 1e-9), np.inf
        )
    per_machine = fit.min(axis=2)  # (bundles, machines)
    return np.minimum(per_machine.sum(axis=1), MAX_CAP).astype(np.int64)


# The Job fields calibrated_jobs sets itself (its ``fields`` argument may not name them).
_CALIBRATED_FIELDS = frozenset(
    {
        "name",
        "profile",
        "samples",
        "global_batch",
        "worker_demand",
        "ps_demand",
        "arrival",
        "max_workers",
        "max_ps",
        "requested_workers",
        "gang",
        "gpu_only",
        "pipeline",
    }
)


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
    demands: Sequence[Demands],
    gpu_only: bool = False,
    gang: bool | None = None,
    pipelines: Sequence[InputPipeline | None] | None = None,
    fields: Sequence[Mapping[str, Any]] | None = None,
) -> list[Job]:
    """Jobs whose duration at (n workers, n PSs) equals the given duration (n = request).

    samples_i = duration_i * speed_i(n_i, n_i); caps max_workers = max_ps = ceil(n_i * cap_factor);
    requested_workers = n_i (the request, which the caps always admit); a job on ``nets[k]``
    reserves ``demands[k]`` (worker, PS) per task and has the input pipeline ``pipelines[k]``
    (None: no data stage). gpu_only: GPU-only jobs (``Job.gpu_only``, no data stage), calibrated
    at (n_i, 1) with max_ps = 1. gang: all-or-nothing jobs (default: gpu_only). fields: per job,
    more ``Job`` fields (e.g. a trace's measured times) set in the job's one construction; they
    may not name a field set here.
    """
    gpu_only = check_bool("gpu_only", gpu_only)
    gang = gpu_only if gang is None else check_bool("gang", gang)
    check_choice("mode", mode, MODES)
    cap_factor = check_positive(
        "cap_factor", cap_factor
    )  # a float: a huge int would overflow numpy
    if cap_factor < 1:
        raise InvalidInput(
            f"cap_factor must be >= 1 (a job may always use its request), got {cap_factor!r}"
        )
    requests = np.asarray(requests, dtype=np.int64)
    if requests.size and (requests.min() < 1 or requests.max() > MAX_CAP):
        raise InvalidInput(
            f"GPU counts must be integers in [1, {MAX_CAP}], got {int(requests.min())}..{int(requests.max())}"
        )
    caps = np.minimum(np.ceil(requests * cap_factor), MAX_CAP).astype(
        np.int64
    )  # clip before the cast
    if fields is not None and len(fields) != len(names):
        raise InvalidInput(f"fields must have one entry per job ({len(names)}), got {len(fields)}")
    extra = fields if fields is not None else [{}] * len(names)
    speeds: dict[tuple[int, int, int], float] = {}
    jobs = []
    for name, a, n, cap, d, k, more in zip(
        names, arrivals, requests, caps, durations, net_index, extra
    ):
        clash = sorted(set(more) & _CALIBRATED_FIELDS)
        if clash:
            raise InvalidInput(f"fields may not set {clash[0]!r}: calibrated_jobs sets it")
        net = nets[int(k)]
        wd, pd_ = demands[int(k)]
        pipe = None if pipelines is None or gpu_only else pipelines[int(k)]
        key = (int(k), int(n), int(cap))
        ps_cap = 1 if gpu_only else int(cap)
        if key not in speeds:
            probe = Job(
                "probe",
                net.profile,
                1.0,
                net.global_batch,
                wd,
                pd_,
                max_workers=int(cap),
                max_ps=ps_cap,
                gpu_only=gpu_only,
                pipeline=pipe,
            )
            speeds[key] = float(speed_table(probe, mode)[n - 1, min(n, ps_cap) - 1])
        samples = float(d) * speeds[key]
        if not 0 < samples < np.inf:
            raise InvalidInput(
                f"job {str(name)!r}: duration {float(d)!r} s at {int(n)} GPUs gives {samples!r} samples; "
                "a duration must give a finite, positive amount of work"
            )
        jobs.append(
            Job(
                str(name),
                net.profile,
                samples,
                net.global_batch,
                wd,
                pd_,
                arrival=float(a),
                max_workers=int(cap),
                max_ps=ps_cap,
                requested_workers=int(min(n, cap)),
                gang=gang,
                gpu_only=gpu_only,
                pipeline=pipe,
                **more,
            )
        )
    return jobs


def demand_seconds(requests: np.ndarray, durations: np.ndarray, bundles: np.ndarray) -> np.ndarray:
    """Resource-seconds each job asks at its request, (jobs x resources): d_i * n_i * (alpha_i + gamma_i).

    bundles: each job's worker+PS demand vector (jobs x resources), or one vector for every job.
    """
    scale = np.asarray(durations, float) * np.asarray(requests, float)
    return scale[:, None] * np.atleast_2d(np.asarray(bundles, float))


def load_from_rate(
    rate: float, demand: np.ndarray, cluster: Cluster, resource: str | None = None
) -> float:
    """Offered load of jobs with per-job demand-seconds ``demand`` arriving at ``rate`` per second."""
    rho = rate * demand.mean(axis=0) / _capacity(cluster)
    if resource is None:
        return float(np.nanmax(rho))
    return float(
        rho[cluster.resources.index(check_choice("load_resource", resource, cluster.resources))]
    )


def rate_for_load(
    load: float, demand: np.ndarray, cluster: Cluster, resource: str | None = None
) -> float:
    """Arrival rate (jobs per second) at which jobs with ``demand`` offer ``load``."""
    check_positive("load", load)
    unit = load_from_rate(1.0, demand, cluster, resource)
    if not unit > 0:
        raise InvalidInput(
            "the jobs demand none of the load resource, so no arrival rate gives that load"
        )
    rate = load / unit
    if not 0 < rate < np.inf:
        raise InvalidInput(
            f"load {load!r} needs an arrival rate of {rate!r} jobs/s for these job sizes; "
            "job durations or the load are out of range"
        )
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
    """Offered load of a job list (module docstring); requests default to min(max_workers, max_ps).

    A gang job's request is its gang allocation (a GPU-only job: n workers, no PS).
    """
    if len(jobs) < 2:
        raise InvalidInput(f"offered load needs at least 2 jobs, got {len(jobs)}")
    n = np.array(
        requests
        if requests is not None
        else [j.gang_allocation[0] if j.gang else min(j.max_workers, j.max_ps) for j in jobs],
        dtype=np.int64,
    )
    d = np.array(
        [
            j.samples / float(speed_table(j, mode)[k - 1, min(k, j.max_ps) - 1])
            for j, k in zip(jobs, n)
        ]
    )
    demand = np.stack(
        [
            d_i
            * k
            * (
                cluster.vector(j.worker_demand, "worker_demand")
                + cluster.vector(j.ps_demand, "ps_demand")
            )
            for j, k, d_i in zip(jobs, n, d)
        ]
    )
    rate = empirical_rate(np.array([j.arrival for j in jobs]))
    if per_resource:
        rho = rate * demand.mean(axis=0) / _capacity(cluster)
        return {r: float(v) for r, v in zip(cluster.resources, rho)}
    return load_from_rate(rate, demand, cluster, resource)


def scaled_to_load(
    jobs: Sequence[Job],
    cluster: Cluster,
    load: float,
    *,
    resource: str | None = None,
    mode: str = "wfbp",
) -> list[Job]:
    """``jobs`` with arrival times scaled so that their offered load on ``cluster`` is ``load``.

    Every arrival is multiplied by one factor (the natural load over ``load``), so the jobs, their
    order and their relative spacing stay; only the arrival rate changes. resource: the load of
    that resource (None: the bottleneck's, as ``offered_load``).
    """
    load = check_positive("workload.load", load)
    natural = offered_load(jobs, cluster, mode=mode, resource=resource)
    assert isinstance(natural, float)
    if not natural > 0:
        raise InvalidInput(
            f"workload.load needs jobs that offer a load on {resource or 'some resource'}, "
            f"got {natural!r}"
        )
    factor = natural / load
    return [j.replace(arrival=j.arrival * factor) for j in jobs]
