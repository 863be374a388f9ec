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
"""

from __future__ import annotations

import csv
import os
from pathlib import Path

import numpy as np

from smdlab.errors import InvalidInput, check_positive
from smdlab.model.cluster import Cluster
from smdlab.model.job import Job
from smdlab.model.measured_speed import MeasuredThroughput, synergy_throughputs
from smdlab.model.profiles import LayerProfile

__all__ = ["REQUIRED", "read_synergy"]

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
    profiles: dict[str, MeasuredThroughput] | None = None,
) -> list[Job]:
    """The jobs of a Synergy job CSV (module docstring); the first ``first`` rows if given.

    Raises InvalidInput naming the row and field for a model without a profile, a missing or
    negative arrival, a missing or non-positive iteration count, or more GPUs than the cluster.
    """
    p = Path(path)
    profiles = synergy_throughputs() if profiles is None else profiles
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
                ps_demand={},
                arrival=arrival,
                max_workers=w,
                requested_workers=w,
                gang=True,
                arch="allreduce",
                gpus_per_machine=gpm,
                throughput=t,
                measured=measured == "1",
            )
        )
    if not jobs:
        raise InvalidInput(f"{p}: Synergy job file has no job rows")
    return jobs


def _number(where: str, field: str, value: str | None, allowed: str, low: float) -> float:
    """``value`` as a number >= ``low``; InvalidInput naming the row and field otherwise."""
    try:
        x = float(value) if value is not None and value.strip() else None
    except ValueError:
        x = None
    if x is None or x < low:
        raise InvalidInput(f"{where}: {field} must be {allowed}, got {value!r}")
    return check_positive(field, x, allow_zero=True)
