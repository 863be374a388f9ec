"""Chronus' trace format as a workload (``--workload chronus:PATH``, or a bare PATH by its columns).

The format is the job CSV of the Chronus artifact (S-Lab-System-Group/ChronusArtifact, ``code/``,
read by ``main.py``'s ``parse_job_file``; MIT licence, Copyright (c) 2021 S-Lab System Group):
columns ``job_id, num_gpu, submit_time, duration, expect_time_list, expect_value_list,
job_type`` (others, e.g. ``user, iterations, model_name, interval, best_effort``, are optional).
Times are in minutes. ``expect_time_list`` and ``expect_value_list`` are ``-``-separated
deadlines (minutes after submission) and their values; ``job_type`` is ``strict`` (one
deadline), ``soft`` (several) or ``best`` (best-effort: the lists are ignored).

Each row becomes a job named by its ``job_id``:
- arrival = submit_time x 60 / rate_scale (seconds; the trace's clock, not shifted to 0, so the
  artifact's 20-minute lease boundaries fall where they do there);
- a GPU-only gang of ``num_gpu`` GPUs (``Job.gpu_only``), which runs ``duration`` minutes at that
  request (``calibrated_jobs``); its network is ``model_name`` where smdlab bundles that profile,
  else ``STAND_IN`` (the work is calibrated to the duration, so the network only names it);
- restart_s = 30 (1 + log2 num_gpu) s: the artifact's checkpoint (0.1 min) plus resume (0.4 min)
  overhead per resume, scaled by 1 + log2 of the GPU count (``time_aware_with_lease.py``);
- slo: ``SLO`` of its options (deadlines x 60 s, values as given), None for ``best``.
Rows with ``num_gpu`` 0 are skipped, as the artifact does, with one warning that counts them.
Rows are taken in submit order (stable); ``start`` skips that many, ``first`` keeps that many.
"""

from __future__ import annotations

import itertools
import math
import os
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from smdlab.errors import InvalidInput, check_int, check_positive
from smdlab.model.cluster import Cluster
from smdlab.model.job import Job
from smdlab.model.profiles import list_profiles
from smdlab.model.slo import JOB_TYPES, SLO
from smdlab.workloads.base import (
    MAX_CAP,
    calibrated_jobs,
    network_demands,
    resolve_networks,
)

__all__ = ["CHRONUS_COLUMNS", "STAND_IN", "chronus_restart_s", "load_chronus"]

CHRONUS_COLUMNS = (
    "job_id",
    "num_gpu",
    "submit_time",
    "duration",
    "expect_time_list",
    "expect_value_list",
    "job_type",
)
# Network of a row whose model_name smdlab has no profile for (e.g. resnet101).
STAND_IN = "resnet50"
# The artifact's checkpoint and resume overheads per resume, minutes (CHECKPOINT_OVER_HEAD,
# RESUME_OVER_HEAD in alg/scheduler/time_aware_with_lease.py).
CHECKPOINT_MIN = 0.1
RESUME_MIN = 0.4


def chronus_restart_s(gpus: int) -> float:
    """Seconds a resume costs a job of ``gpus`` GPUs in the artifact: 30 (1 + log2 gpus)."""
    return 60.0 * (CHECKPOINT_MIN + RESUME_MIN) * (1.0 + math.log2(gpus))


def _options(text: object, field: str, where: str) -> tuple[float, ...]:
    parts = str(text).strip().split("-")
    try:
        values = tuple(float(x) for x in parts)
    except ValueError:
        raise InvalidInput(
            f"{where}: {field} must be numbers separated by '-', got {text!r}"
        ) from None
    if not all(math.isfinite(v) for v in values):
        raise InvalidInput(f"{where}: {field} must be finite numbers, got {text!r}")
    return values


def _slo(row: Mapping[Any, Any], where: str, seen: dict[tuple[str, str, str], SLO]) -> SLO | None:
    kind = str(row["job_type"]).strip()
    if kind not in JOB_TYPES:
        raise InvalidInput(f"{where}: job_type must be one of {', '.join(JOB_TYPES)}, got {kind!r}")
    flag = str(row.get("best_effort", "")).strip()
    if flag not in ("", "nan") and (
        flag not in ("0", "1", "0.0", "1.0") or (float(flag) == 1) != (kind == "best")
    ):
        raise InvalidInput(
            f"{where}: best_effort must be 1 exactly for job_type 'best' (else 0), got {flag!r}"
        )
    if kind == "best":
        return None
    key = (kind, str(row["expect_time_list"]), str(row["expect_value_list"]))
    if key in seen:  # a trace repeats its option lists many times: build each SLO once
        return seen[key]
    deadlines = _options(row["expect_time_list"], "expect_time_list", where)
    values = _options(row["expect_value_list"], "expect_value_list", where)
    if len(deadlines) != len(values):
        raise InvalidInput(
            f"{where}: expect_time_list and expect_value_list must have the same length, "
            f"got {len(deadlines)} and {len(values)}"
        )
    if any(d <= 0 for d in deadlines):
        raise InvalidInput(
            f"{where}: expect_time_list must hold deadlines > 0 minutes, got {row['expect_time_list']!r}"
        )
    if any(b >= a for a, b in itertools.pairwise(values)):
        raise InvalidInput(
            f"{where}: expect_value_list must be strictly decreasing, got {row['expect_value_list']!r}"
        )
    if kind == "strict" and len(deadlines) != 1:
        raise InvalidInput(
            f"{where}: a strict job has one deadline, got {row['expect_time_list']!r}"
        )
    try:
        slo = SLO(tuple(60.0 * d for d in deadlines), values, kind)
    except InvalidInput as exc:
        raise InvalidInput(f"{where}: {exc}") from None
    seen[key] = slo
    return slo


def _read_path(path: object) -> Path:
    if not isinstance(path, (str, os.PathLike)):
        raise InvalidInput(f"path must be a file path, got {path!r}")
    p = Path(path)
    if not p.is_file():
        raise InvalidInput(f"workload file not found: {str(p)!r}")
    return p


def _read(p: Path) -> pd.DataFrame:
    """The trace as text columns, checked for the required columns and at least one row."""
    try:
        df = pd.read_csv(p, dtype=str, keep_default_na=False)
    except pd.errors.EmptyDataError:
        raise InvalidInput(f"{p}: the workload is empty (no header, no rows)") from None
    except (pd.errors.ParserError, UnicodeDecodeError, OSError) as exc:
        raise InvalidInput(f"{p}: not a readable CSV file ({exc})") from None
    missing = [c for c in CHRONUS_COLUMNS if c not in df.columns]
    if missing:
        raise InvalidInput(
            f"{p}: missing column(s) {', '.join(missing)}; the file has {', '.join(map(str, df.columns))}"
        )
    if df.empty:
        raise InvalidInput(f"{p}: the workload is empty (a header but no rows)")
    return df


def load_chronus(
    path: str | os.PathLike,
    *,
    cluster: Cluster | None = None,
    first: int | None = None,
    start: int | None = None,
    rate_scale: float = 1.0,
    mode: str = "wfbp",
    device: str = "v100",
) -> list[Job]:
    """Jobs of a Chronus-format trace (module docstring); raises InvalidInput naming row and field.

    cluster: unused (the reader's signature); a job larger than the cluster is the simulator's
    to skip. rate_scale: divide arrival times by this (2 = twice the arrival rate).
    """
    p = _read_path(path)
    df = _read(p)
    rate_scale = check_positive("rate_scale", rate_scale)
    gpus = pd.to_numeric(df["num_gpu"], errors="coerce").to_numpy(dtype=float)
    submit = pd.to_numeric(df["submit_time"], errors="coerce").to_numpy(dtype=float)
    duration = pd.to_numeric(df["duration"], errors="coerce").to_numpy(dtype=float)
    for name, col, rule, bad in (
        ("num_gpu", gpus, f"an integer in [0, {MAX_CAP}]", lambda v: ~np.isfinite(v) | (v < 0) | (v > MAX_CAP) | (v != np.round(v))),
        ("submit_time", submit, "a finite number of minutes >= 0", lambda v: ~np.isfinite(v) | (v < 0)),
    ):  # fmt: skip
        mask = bad(col)
        if mask.any():
            i = int(np.flatnonzero(mask)[0])
            raise InvalidInput(
                f"{p}: column {name!r} must be {rule}; line {i + 2} has {df[name].iloc[i]!r}"
            )
    zero = gpus == 0
    if zero.any():
        warnings.warn(
            f"{p}: skipped {int(zero.sum())} job(s) with num_gpu 0 (as the Chronus artifact does)",
            stacklevel=2,
        )
    keep = np.flatnonzero(~zero)
    bad_d = ~np.isfinite(duration[keep]) | (duration[keep] <= 0)
    if bad_d.any():
        i = int(keep[np.flatnonzero(bad_d)[0]])
        raise InvalidInput(
            f"{p}: column 'duration' must be > 0 minutes; line {i + 2} has {df['duration'].iloc[i]!r}"
        )
    order = keep[np.argsort(submit[keep], kind="stable")]
    if start is not None:
        order = order[check_int("start", start, 0, max(len(order) - 1, 0)) :]
    if first is not None:
        order = order[: check_int("first", first, 1)]
    if not len(order):
        raise InvalidInput(f"{p}: the trace holds no job with num_gpu >= 1")
    names = df["job_id"].astype(str).str.strip().to_numpy()[order].tolist()
    if len(set(names)) != len(names):
        raise InvalidInput(f"{p}: column 'job_id' must hold unique ids")
    cols = ["job_type", "expect_time_list", "expect_value_list"]
    cols += ["best_effort"] if "best_effort" in df.columns else []
    rows = df[cols].iloc[order].to_dict("records")
    seen: dict[tuple[str, str, str], SLO] = {}
    slos = [
        _slo(r, f"{p}: line {i + 2} (job_id {names[k]!r})", seen)
        for k, (i, r) in enumerate(zip(order, rows, strict=True))
    ]
    known = set(list_profiles())
    models = (
        df["model_name"].astype(str).str.strip().to_numpy()
        if "model_name" in df.columns
        else np.full(len(df), STAND_IN)
    )
    used = sorted({m if m in known else STAND_IN for m in models[order]})
    nets = resolve_networks(used, device)
    index = {n: k for k, n in enumerate(used)}
    net_index = np.array([index[m if m in known else STAND_IN] for m in models[order]])
    requests = gpus[order].astype(np.int64)
    jobs = calibrated_jobs(
        names,
        submit[order] * 60.0 / rate_scale,
        requests,
        duration[order] * 60.0,
        net_index,
        nets,
        mode=mode,
        demands=network_demands(nets, "gpu_only", None, None, 10.0),
        gpu_only=True,
    )
    return [
        j.replace(restart_s=chronus_restart_s(int(n)), slo=s)
        for j, n, s in zip(jobs, requests, slos, strict=True)
    ]
