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

from smdlab.errors import InvalidInput, check_choice, check_int, check_positive
from smdlab.model.cluster import Cluster
from smdlab.model.interleave import JOB_MODELS, solo_iteration_time
from smdlab.model.job import Job
from smdlab.workloads.base import calibrated_jobs, network_demands, resolve_networks

__all__ = [
    "COLUMNS",
    "MURI_NETWORKS",
    "MURI_SOLO_SCALE",
    "RESTART_OVERHEAD_S",
    "MuriTraceJob",
    "load_muri",
    "read_muri_trace",
    "restart_overhead_s",
]

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


def load_muri(
    path: str | os.PathLike,
    *,
    cluster: Cluster | None = None,
    first: int | None = None,
    job_model: str = "measured",
    solo_scale: float = MURI_SOLO_SCALE,
    mode: str = "wfbp",
) -> list[Job]:
    """Jobs of a Muri trace CSV (module docstring): GPU-only gangs named by ``job_id``.

    cluster: checks that no job asks more GPUs than it has. first: only the first N rows.
    """
    job_model = check_choice("workload.job_model", job_model, JOB_MODELS)
    solo_scale = check_positive("workload.solo_scale", solo_scale)
    max_gpus = None
    if cluster is not None and "gpu" in cluster.resources:
        max_gpus = round(float(cluster.capacity["gpu"]))
    rows = read_muri_trace(path, max_gpus=max_gpus, first=first)
    names = sorted({MURI_NETWORKS[r.model] for r in rows})
    nets = resolve_networks(names)
    index = {n: k for k, n in enumerate(names)}
    jobs = calibrated_jobs(
        [r.job_id for r in rows],
        np.array([r.submit_s for r in rows]),
        np.array([r.num_gpu for r in rows]),
        np.array([r.iterations * trace_iteration_s(r, job_model, solo_scale) for r in rows]),
        np.array([index[MURI_NETWORKS[r.model]] for r in rows]),
        nets,
        mode=mode,
        demands=network_demands(nets, "gpu_only"),
        gpu_only=True,
    )
    return [
        j.replace(
            restart_s=r.restart_s,
            stage_times_s=r.stages_s,
            iteration_s=trace_iteration_s(r, job_model, solo_scale),
            duration_s=r.duration_s,
        )
        for j, r in zip(jobs, rows, strict=True)
    ]
