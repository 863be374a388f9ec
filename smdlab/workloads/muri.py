"""Muri's trace CSV as an smdlab workload (``--workload muri:PATH``).

Muri (Zhao et al., SIGCOMM 2022; Rivendile/Muri, Apache-2.0, ``simulator/trace-data/*.csv``)
traces have one row per job: ``job_id, num_gpu, submit_time, iterations, model_name, batch_size,
duration, interval, iteration_time, resource_time_0..2, priority``. Times are in milliseconds;
its simulator reads them in seconds (``/ 1000``) and so does this reader. ``resource_time_0..2``
are the per-iteration stage times (data loading, GPU compute, network), ``iteration_time`` the
iteration measured with the job alone.

Each row becomes a GPU-only gang job (``Job.gpu_only``: ``num_gpu`` GPUs, no parameter server)
named by its ``job_id``, arriving at ``submit_time``, whose work is calibrated so that it runs
``iterations`` iterations of ``solo_iteration_time(stages, job_model, iteration_time,
solo_scale)`` (``smdlab.model.interleave``) when it holds its GPUs. The layered profile of the
bundled network in ``MURI_NETWORKS`` only sets the unit of work; the duration is the trace's.

The job model (``job_model``): ``measured`` (default; Muri's simulator, with ``solo_scale =
1.015`` as its jobs.py applies to every job), ``sequential`` (the three stages in sequence) or
``prefetch`` (data loading overlapped with the rest, smdlab's input pipeline).

Restart overheads: ``restart_overhead_s(model, num_gpu)`` is Muri's per-model table
(``RESTART_OVERHEAD_S``, seconds; Rivendile/Muri simulator/run_sim.py ``overhead_dict``).

Options that move a run from Muri's world towards smdlab's, one at a time (all off by default;
``smdlab.experiments.ablation`` measures each):

- ``load``: arrivals scaled (``workloads.base.scaled_to_load``) so that the offered load on the
  cluster is ``load`` (of ``load_resource``, default the bottleneck).
- ``ps_demand = "per_network"``: the jobs are gang PS jobs, not GPU-only ones: each worker
  brings one PS that reserves the CPU cores and memory smdlab's demand rule gives the PS of the
  job's network (``MURI_NETWORKS``, ``smdlab.model.demands.task_demands``); workers and PSs
  reserve ``PS_JOB_BW_GBPS`` of bandwidth (Muri's cluster never binds on the network). The
  work is calibrated as before, so a job alone still runs its trace's duration.
- ``stages = "smdlab"``: each job's stage times are smdlab's model of its network at its
  request (``smdlab_stage_times``: data stage = storage read + CPU preprocessing of the bundled
  input pipeline, GPU = forward + backward, network = the rest of the layered iteration, with
  the PS when there is one), scaled so that its solo iteration under ``job_model`` is the
  trace's; ``"trace"`` (default): the trace's ``resource_time_0..2``.
- ``restart_overheads = false``: jobs carry no restart overhead of their own and pay the
  simulation's ``restart_s``; true (default): Muri's per-model table.
"""

from __future__ import annotations

import csv
import math
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType

import numpy as np

from smdlab.errors import InvalidInput, check_bool, check_choice, check_int, check_positive
from smdlab.model.cluster import Cluster
from smdlab.model.interleave import JOB_MODELS, solo_iteration_time
from smdlab.model.job import Job
from smdlab.workloads.base import (
    Network,
    calibrated_jobs,
    network_demands,
    resolve_networks,
    scaled_to_load,
)

__all__ = [
    "COLUMNS",
    "MURI_NETWORKS",
    "MURI_SOLO_SCALE",
    "RESTART_OVERHEAD_S",
    "MuriTraceJob",
    "load_muri",
    "read_muri_trace",
    "restart_overhead_s",
    "smdlab_stage_times",
]

PS_DEMANDS = ("none", "per_network")
STAGE_SOURCES = ("trace", "smdlab")
PS_JOB_BW_GBPS = 0.001  # bandwidth a worker or PS of a PS job reserves (never binds)

COLUMNS = (
    "job_id",
    "num_gpu",
    "submit_time",
    "iterations",
    "model_name",
    "duration",
    "iteration_time",
    "resource_time_0",
    "resource_time_1",
    "resource_time_2",
)  # the columns this reader needs (batch_size, interval and priority are read by no policy)

# Muri's profiled models -> the bundled network whose layered profile carries the job's work
# (a unit of work only: a job's duration is its trace's, whatever the network).
MURI_NETWORKS: Mapping[str, str] = MappingProxyType(
    {
        "vgg16": "vgg16",
        "vgg19": "vgg16",
        "resnet18": "resnet50",
        "shufflenet_v2_x1_0": "mobilenet_v2",
        "bert": "bert_base",
        "gpt2": "gpt2_small",
        "a2c": "alexnet",
        "dqn": "alexnet",
    }
)
MURI_SOLO_SCALE = 1.015  # Muri's simulator scales every job's iteration time (jobs.py)

# Restart overhead (s) per (num_gpu, model): Rivendile/Muri simulator/run_sim.py, overhead_dict
# (Apache-2.0); its default for an unlisted model is 10 s.
_OVERHEAD_MODELS = (
    "vgg16",
    "vgg19",
    "resnet18",
    "shufflenet_v2_x1_0",
    "bert",
    "gpt2",
    "a2c",
    "dqn",
)
_OVERHEAD_ROWS = {
    1: (7, 7, 4, 4, 10, 10, 38, 5),
    2: (7, 7, 5, 4, 10, 10, 39, 5),
    4: (8, 8, 5, 5, 10, 10, 39, 6),
    8: (9, 9, 7, 5, 10, 10, 46, 6),
    16: (9, 10, 7, 7, 10, 10, 46, 8),
    32: (10, 10, 7, 8, 10, 10, 46, 8),
}
RESTART_OVERHEAD_S: Mapping[int, Mapping[str, float]] = MappingProxyType(
    {
        g: MappingProxyType(dict(zip(_OVERHEAD_MODELS, map(float, row))))
        for g, row in _OVERHEAD_ROWS.items()
    }
)


def restart_overhead_s(model: str, num_gpu: int) -> float:
    """Muri's restart overhead (s) of a ``model`` job on ``num_gpu`` GPUs.

    A GPU count between the table's rows takes the next row up (beyond 32: the 32 row).
    """
    model = check_choice("model", model, MURI_NETWORKS)
    num_gpu = check_int("num_gpu", num_gpu, 1)
    row = next((g for g in RESTART_OVERHEAD_S if g >= num_gpu), max(RESTART_OVERHEAD_S))
    return RESTART_OVERHEAD_S[row][model]


@dataclass(frozen=True)
class MuriTraceJob:
    """One row of a Muri trace, in seconds.

    stages_s: (resource_time_0, _1, _2) / 1000; iteration_s: iteration_time / 1000 (unscaled);
    duration_s: duration / 1000 (Muri-S's first sort key).
    """

    job_id: str
    num_gpu: int
    submit_s: float
    iterations: int
    model: str
    duration_s: float
    iteration_s: float
    stages_s: tuple[float, float, float]

    @property
    def restart_s(self) -> float:
        """Muri's restart overhead of this job (``restart_overhead_s``)."""
        return restart_overhead_s(self.model, self.num_gpu)


def _field(where: str, name: str, raw: str | None, rule: str) -> InvalidInput:
    return InvalidInput(f"{where}: field {name} must be {rule}, got {raw!r}")


def _number(where: str, name: str, raw: str | None, *, positive: bool = False) -> float:
    rule = "a finite number > 0" if positive else "a finite number >= 0"
    try:
        x = float(raw) if raw is not None and raw.strip() else math.nan
    except ValueError:
        raise _field(where, name, raw, rule) from None
    if not math.isfinite(x) or x < 0 or (positive and x == 0):
        raise _field(where, name, raw, rule)
    return x


def _integer(where: str, name: str, raw: str | None, lo: int, hi: int | None = None) -> int:
    rule = f"an integer in [{lo}, {hi}]" if hi is not None else f"an integer >= {lo}"
    try:
        x = float(raw) if raw is not None and raw.strip() else math.nan
    except ValueError:
        raise _field(where, name, raw, rule) from None
    if not x.is_integer() or x < lo or (hi is not None and x > hi):
        raise _field(where, name, raw, rule)
    return int(x)


def read_muri_trace(
    path: str | os.PathLike, *, max_gpus: int | None = None, first: int | None = None
) -> list[MuriTraceJob]:
    """The rows of a Muri trace CSV, checked, in submit order (stable, as its simulator).

    max_gpus: most GPUs a job may ask (the cluster's); first: read only the first N rows.
    Raises InvalidInput naming the line and field of the first bad row.
    """
    p = Path(path)
    if not p.is_file():
        raise InvalidInput(f"muri trace: no such file {str(p)!r}")
    if first is not None:
        first = check_int("jobs", first, 1)
    rows: list[MuriTraceJob] = []
    seen: set[str] = set()
    with p.open(newline="") as fh:
        reader = csv.DictReader(fh)
        missing = [c for c in COLUMNS if c not in (reader.fieldnames or ())]
        if missing:
            raise InvalidInput(
                f"{p.name}: missing column {missing[0]!r}; a Muri trace has {', '.join(COLUMNS)}"
            )
        for row in reader:
            if first is not None and len(rows) >= first:
                break
            job_id = (row["job_id"] or "").strip()
            where = f"{p.name} line {reader.line_num} (job_id {job_id!r})"
            if not job_id:
                raise _field(where, "job_id", row["job_id"], "a non-empty id")
            if job_id in seen:
                raise _field(where, "job_id", job_id, "unique")
            seen.add(job_id)
            model = (row["model_name"] or "").strip()
            if model not in MURI_NETWORKS:
                raise _field(
                    where,
                    "model_name",
                    row["model_name"],
                    f"a profiled model ({', '.join(MURI_NETWORKS)})",
                )
            rows.append(
                MuriTraceJob(
                    job_id,
                    _integer(where, "num_gpu", row["num_gpu"], 1, max_gpus),
                    _number(where, "submit_time", row["submit_time"]) / 1000.0,
                    _integer(where, "iterations", row["iterations"], 1),
                    model,
                    _number(where, "duration", row["duration"]) / 1000.0,
                    _number(where, "iteration_time", row["iteration_time"], positive=True) / 1000.0,
                    tuple(  # type: ignore[arg-type]
                        _number(where, f"resource_time_{k}", row[f"resource_time_{k}"]) / 1000.0
                        for k in range(3)
                    ),
                )
            )
    if not rows:
        raise InvalidInput(f"{p.name}: a Muri trace must have at least one job row, got none")
    order = sorted(range(len(rows)), key=lambda i: rows[i].submit_s)
    return [rows[i] for i in order]


def trace_iteration_s(row: MuriTraceJob, job_model: str, solo_scale: float) -> float:
    """The row's solo iteration time (s) under ``job_model`` (``solo_iteration_time``)."""
    return solo_iteration_time(row.stages_s, job_model, row.iteration_s, solo_scale)


def smdlab_stage_times(
    net: Network, workers: int, ps: bool, mode: str = "wfbp"
) -> tuple[float, ...]:
    """smdlab's (data, GPU, network) seconds per iteration of one worker of ``net`` at ``workers``.

    The network's per-network demands and bundled input pipeline; data = storage read + CPU
    preprocessing (Muri's data-loading stage holds both), with one PS per worker if ``ps``.
    """
    from smdlab.model.demands import task_demands
    from smdlab.model.input_pipeline import bundled_pipeline
    from smdlab.model.interleave import stage_times

    wd, pd_ = task_demands(net.profile)
    probe = Job(
        f"probe:{net.name}",
        net.profile,
        1.0,
        net.global_batch,
        wd,
        pd_ if ps else {},
        max_workers=workers,
        max_ps=workers if ps else 0,
        arch="ps" if ps else "allreduce",
        pipeline=bundled_pipeline(net.profile),
    )
    st = stage_times(probe, workers, workers if ps else 0, mode)
    return (st["storage"] + st["cpu"], st["gpu"], st["network"])


def _rescaled(
    stages: tuple[float, ...], like: tuple[float, ...], job_model: str
) -> tuple[float, ...]:
    """``stages`` scaled so that their solo iteration under ``job_model`` equals ``like``'s."""
    rule = "sequential" if job_model == "measured" else job_model
    k = solo_iteration_time(like, rule) / solo_iteration_time(stages, rule)
    return tuple(x * k for x in stages)


def load_muri(
    path: str | os.PathLike,
    *,
    cluster: Cluster | None = None,
    first: int | None = None,
    job_model: str = "measured",
    solo_scale: float = MURI_SOLO_SCALE,
    mode: str = "wfbp",
    load: float | None = None,
    load_resource: str | None = None,
    ps_demand: str = "none",
    stages: str = "trace",
    restart_overheads: bool = True,
) -> list[Job]:
    """Jobs of a Muri trace CSV (module docstring): GPU-only gangs named by ``job_id``.

    cluster: checks that no job asks more GPUs than it has (and sets ``load``). first: only the
    first N rows. The other options: the module docstring.
    """
    job_model = check_choice("workload.job_model", job_model, JOB_MODELS)
    solo_scale = check_positive("workload.solo_scale", solo_scale)
    ps_demand = check_choice("workload.ps_demand", ps_demand, PS_DEMANDS)
    stages = check_choice("workload.stages", stages, STAGE_SOURCES)
    restart_overheads = check_bool("workload.restart_overheads", restart_overheads)
    if load is not None and cluster is None:
        raise InvalidInput("workload.load needs a cluster (the offered load is relative to it)")
    max_gpus = None
    if cluster is not None and "gpu" in cluster.resources:
        max_gpus = round(float(cluster.capacity["gpu"]))
    rows = read_muri_trace(path, max_gpus=max_gpus, first=first)
    names = sorted({MURI_NETWORKS[r.model] for r in rows})
    nets = resolve_networks(names)
    index = {n: k for k, n in enumerate(names)}
    ps = ps_demand != "none"
    if ps:
        demands = []
        for _, pd_ in network_demands(nets, "per_network"):
            bw = {"bw_gbps": PS_JOB_BW_GBPS}
            demands.append(({"gpu": 1.0, **bw}, {"cpu": pd_["cpu"], "mem_gb": pd_["mem_gb"], **bw}))
    else:
        demands = network_demands(nets, "gpu_only")
    stage_of = {}
    for r in rows:
        key = (r.model, r.num_gpu)
        if key not in stage_of:
            net = nets[index[MURI_NETWORKS[r.model]]]
            stage_of[key] = (
                smdlab_stage_times(net, r.num_gpu, ps, mode) if stages == "smdlab" else None
            )
    st = [
        r.stages_s
        if stage_of[(r.model, r.num_gpu)] is None
        else _rescaled(stage_of[(r.model, r.num_gpu)], r.stages_s, job_model)  # type: ignore[arg-type]
        for r in rows
    ]
    iters = [trace_iteration_s(r, job_model, solo_scale) for r in rows]
    out = calibrated_jobs(
        [r.job_id for r in rows],
        np.array([r.submit_s for r in rows]),
        np.array([r.num_gpu for r in rows]),
        np.array([r.iterations * it for r, it in zip(rows, iters, strict=True)]),
        np.array([index[MURI_NETWORKS[r.model]] for r in rows]),
        nets,
        mode=mode,
        demands=demands,
        gpu_only=not ps,
        gang=True,
        fields=[
            {
                "restart_s": r.restart_s if restart_overheads else None,
                "stage_times_s": s,
                "iteration_s": it,
                "duration_s": r.duration_s,
            }
            for r, s, it in zip(rows, st, iters, strict=True)
        ],
    )
    if load is not None:
        assert cluster is not None
        out = scaled_to_load(out, cluster, load, resource=load_resource, mode=mode)
    return out
