"""Synergy's jobs as a workload: a CSV of the jobs its simulator generated (``--workload synergy:PATH``).

Synergy's simulator (msr-fiddle/synergy, MIT) generates its jobs in memory; a dump of them is a
CSV with the columns ``job_id, model, arrival_s, iterations, gpus`` and optionally ``measured``
(1 for the jobs its simulator measures, 0 for those that only load the cluster; without the
column every job is measured). Other columns are ignored.

Each row becomes a job named by its ``job_id``, in Synergy's job model: no parameter server, and
its speed read from the model's profiled throughput against CPU and memory
(``smdlab.model.measured_speed``, profiles ``synergy_throughputs()``). It asks for ``gpus`` GPUs
as one gang, each worker for the model's best-case CPU and memory; it has ``iterations`` times
the model's batch samples to process.

Options that move a run from Synergy's world towards smdlab's, one at a time (all off by default;
``smdlab.experiments.ablation`` measures each):

- ``load``: arrivals scaled (``workloads.base.scaled_to_load``) so that the offered load on the
  cluster is ``load`` (of ``load_resource``, default the bottleneck).
- ``ps_demand = "per_network"``: each worker brings one PS (``arch = "ps"``) that reserves the
  CPU cores and memory smdlab's demand rule gives the PS of the model's network
  (``SYNERGY_NETWORKS``, ``smdlab.model.demands.task_demands``) and the workers' bandwidth;
  ``"none"`` (default): no PS. Under the measured job model a PS changes no iteration time; it
  takes its CPU and memory out of the same machines (and out of the GPU-proportional share).
- ``profiles = "smdlab"``: each model's table is smdlab's model of its network on the same grid
  (``smdlab.model.modelled_throughput.layered_throughput``: the layered model with the network's
  bundled input pipeline, with the PS when there is one); ``"synergy"`` (default): the
  authors' measured tables.
"""

from __future__ import annotations

import csv
import os
from pathlib import Path

import numpy as np

from smdlab.errors import InvalidInput, check_choice, check_positive
from smdlab.model.cluster import Cluster
from smdlab.model.job import Job
from smdlab.model.measured_speed import MeasuredThroughput, synergy_throughputs
from smdlab.model.modelled_throughput import layered_throughput
from smdlab.model.profiles import LayerProfile
from smdlab.workloads.base import scaled_to_load

# Each Synergy scenario variant -> the scheduler name in its authors' simulator's output files.
AUTHORS_SCHEDULERS: dict[str, str] = {
    "fifo_proportional": "FIFO_fair",
    "fifo_tune": "FIFO_tune",
    "srtf_proportional": "SRTF_fair",
    "srtf_tune": "SRTF_tune",
    "las_proportional": "LAS_fair",
    "las_tune": "LAS_tune",
}

__all__ = [
    "AUTHORS_SCHEDULERS",
    "PROFILE_SOURCES",
    "PS_DEMANDS",
    "REQUIRED",
    "SYNERGY_NETWORKS",
    "read_synergy",
]

PS_DEMANDS = ("none", "per_network")
PROFILE_SOURCES = ("synergy", "smdlab")
# Synergy's profile names -> the bundled network closest in kind (smdlab bundles no speech
# network: M5, a small 1-D CNN, takes MobileNetV2; DeepSpeech, convolutions then RNNs, the LSTM).
SYNERGY_NETWORKS = {
    "alexnet": "alexnet",
    "res18": "resnet50",
    "res50": "resnet50",
    "mobilenet": "mobilenet_v2",
    "shufflenet": "mobilenet_v2",
    "gnmt": "lstm_lm",
    "transformer": "bert_base",
    "lstm": "lstm_lm",
    "m5": "mobilenet_v2",
    "deepspeech": "lstm_lm",
}

REQUIRED = ("job_id", "model", "arrival_s", "iterations", "gpus")
# NIC bandwidth a worker reserves: Synergy's jobs never wait for the network (none binds).
WORKER_BW_GBPS = 0.001


def _profile(t: MeasuredThroughput) -> LayerProfile:
    """A one-layer stand-in profile (the measured model never reads its times)."""
    per_sample = t.iter_time_s / t.batch
    return LayerProfile(
        ("model",),
        np.array([per_sample / 3]),
        np.array([2 * per_sample / 3]),
        np.array([1.0]),
        network=t.model,
    )


def read_synergy(
    path: str | os.PathLike,
    *,
    cluster: Cluster,
    first: int | None = None,
    profiles: str | dict[str, MeasuredThroughput] | None = None,
    load: float | None = None,
    load_resource: str | None = None,
    ps_demand: str = "none",
    mode: str = "wfbp",
) -> list[Job]:
    """The jobs of a Synergy job CSV (module docstring); the first ``first`` rows if given.

    profiles: ``"synergy"`` (default), ``"smdlab"`` or a dict of profiles by model name.

    Raises InvalidInput naming the row and field for a model without a profile, a missing or
    negative arrival, a missing or non-positive iteration count, or more GPUs than the cluster.
    """
    p = Path(path)
    ps_demand = check_choice("workload.ps_demand", ps_demand, PS_DEMANDS)
    if profiles is None or isinstance(profiles, str):
        source = check_choice("workload.profiles", profiles or "synergy", PROFILE_SOURCES)
        profiles = synergy_throughputs()
        if source == "smdlab":
            profiles = _smdlab_profiles(profiles, ps_demand != "none", mode)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as exc:
        raise InvalidInput(
            f"{p}: cannot read the Synergy job file ({exc.strerror or exc})"
        ) from None
    reader = csv.DictReader(text.splitlines())
    cols = reader.fieldnames or []
    missing = [c for c in REQUIRED if c not in cols]
    if missing:
        raise InvalidInput(
            f"{p}: Synergy job file needs column {missing[0]!r} ({', '.join(REQUIRED)})"
        )
    total = int(sum(m.capacity.get("gpu", 0) for m in cluster.machines))
    gpm = max((int(m.capacity.get("gpu", 0)) for m in cluster.machines), default=1) or 1
    made: dict[str, tuple[LayerProfile, MeasuredThroughput]] = {}
    jobs: list[Job] = []
    for n, row in enumerate(reader, start=2):
        if first is not None and len(jobs) >= first:
            break
        where = f"{p}: row {n} (job_id {row.get('job_id')!r})"
        model = (row.get("model") or "").strip()
        if model not in profiles:
            raise InvalidInput(
                f"{where}: model {model!r} has no profile; known: {', '.join(sorted(profiles))}"
            )
        arrival = _number(where, "arrival_s", row.get("arrival_s"), "a number >= 0", 0.0)
        iters = _number(where, "iterations", row.get("iterations"), "an integer >= 1", 1.0)
        gpus = _number(where, "gpus", row.get("gpus"), f"an integer in [1, {total}]", 1.0)
        if gpus > total or gpus != int(gpus):
            raise InvalidInput(f"{where}: gpus must be an integer in [1, {total}], got {gpus:g}")
        measured = (row.get("measured") or "1").strip()
        if measured not in ("0", "1"):
            raise InvalidInput(f"{where}: measured must be 0 or 1, got {measured!r}")
        if model not in made:
            made[model] = (_profile(profiles[model]), profiles[model])
        prof, t = made[model]
        w = int(gpus)
        ps = _ps_demand(model) if ps_demand != "none" else {}
        jobs.append(
            Job(
                name=str(row["job_id"]).strip(),
                profile=prof,
                samples=iters * t.batch,
                global_batch=t.batch,
                worker_demand={
                    "gpu": 1,
                    "cpu": t.best_cpu,
                    "mem_gb": t.best_mem_gb,
                    "bw_gbps": WORKER_BW_GBPS,
                },
                ps_demand=ps,
                arrival=arrival,
                max_workers=w,
                max_ps=w if ps else 0,
                requested_workers=w,
                gang=True,
                arch="ps" if ps else "allreduce",
                gpus_per_machine=gpm,
                throughput=t,
                measured=measured == "1",
            )
        )
    if not jobs:
        raise InvalidInput(f"{p}: Synergy job file has no job rows")
    if load is not None:
        jobs = scaled_to_load(jobs, cluster, load, resource=load_resource, mode=mode)
    return jobs


def _network(model: str) -> LayerProfile:
    from smdlab.model.profiles import LayerProfile

    return LayerProfile.load(SYNERGY_NETWORKS[model])


def _ps_demand(model: str) -> dict[str, float]:
    """The PS demand smdlab's rule gives the model's network: CPU and memory, the workers' bandwidth."""
    from smdlab.model.demands import task_demands

    ps = task_demands(_network(model))[1]
    return {"cpu": ps["cpu"], "mem_gb": ps["mem_gb"], "bw_gbps": WORKER_BW_GBPS}


def _smdlab_profiles(
    like: dict[str, MeasuredThroughput], ps: bool, mode: str
) -> dict[str, MeasuredThroughput]:
    """Each profile replaced by smdlab's model of its network (``layered_throughput``)."""
    from smdlab.model.profiles import profile_info

    out = {}
    for model, t in like.items():
        if model not in SYNERGY_NETWORKS:
            out[model] = t
            continue
        net = _network(model)
        batch = int(profile_info(SYNERGY_NETWORKS[model])["default_global_batch"])
        out[model] = layered_throughput(t, net, batch, ps=ps, mode=mode)
    return out


def _number(where: str, field: str, value: str | None, allowed: str, low: float) -> float:
    """``value`` as a number >= ``low``; InvalidInput naming the row and field otherwise."""
    try:
        x = float(value) if value is not None and value.strip() else None
    except ValueError:
        x = None
    if x is None or x < low:
        raise InvalidInput(f"{where}: {field} must be {allowed}, got {value!r}")
    return check_positive(field, x, allow_zero=True)
