"""Trace loaders: the Philly trace (or any trace in its format) and plain job tables.

Philly format: columns ``timestamp`` (date-time, or seconds as a number; date-times with a UTC
offset are converted to UTC, those without are read as UTC), ``duration`` (s, > 0) and
``num_gpus`` (integer >= 1); other columns are kept only for filtering (``cluster``, Philly's
virtual cluster id). Each job gets:
- arrival: its timestamp minus the first selected job's timestamp, divided by ``rate_scale``
  (or rescaled so that the offered load on ``cluster`` equals ``load``);
- request n = num_gpus (the job's ``requested_workers``, within its caps): n workers and, by
  the PS count rule, n PSs (one PS per worker: the bundle of the classic baselines, so a bundle
  policy on an idle cluster gives the job exactly its trace allocation);
- a network drawn from ``networks`` with ``mix`` weights, one draw per trace row in file order
  (seeded), so a job keeps its network whatever window or prefix is selected;
- samples = duration * speed(n, n) under the layered model: at its trace allocation the job
  takes its trace duration;
- caps max_workers = max_ps = ceil(n * cap_factor) (default: the request);
- per-task demands by ``demands`` (default ``"per_network"``: its network's; ``"uniform"``: one
  bundle for every job; ``base`` module docstring); the load counts each job's own demands.
Rows are sorted by timestamp (stable) unless ``on_unsorted="raise"``; the shipped Philly file is
not in time order.

Job-table format: columns ``network``, ``arrival`` (s), ``samples``; optional ``name``,
``max_workers`` (default 16), ``max_ps`` (default max_workers), ``weight`` (default 1),
``global_batch`` (default: the network's); per-task demands by ``demands`` as for traces.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Literal, get_args

import numpy as np
import pandas as pd

from smdlab.caches import TRACES, memoize
from smdlab.errors import InvalidInput, check_choice, check_int, check_positive
from smdlab.model.cluster import Cluster
from smdlab.model.job import Job
from smdlab.model.profiles import LayerProfile, list_profiles
from smdlab.paths import data_dir
from smdlab.workloads.base import (
    DEFAULT_TASK_BW_GBPS,
    MAX_CAP,
    bundle_vectors,
    calibrated_jobs,
    demand_seconds,
    empirical_rate,
    load_from_rate,
    mix_probabilities,
    network_demands,
    resolve_networks,
    seconds_pair,
)

TRACE_COLUMNS = ("timestamp", "duration", "num_gpus")
JOB_TABLE_COLUMNS = ("network", "arrival", "samples")
OnUnsorted = Literal["sort", "raise"]
UNSORTED: tuple[OnUnsorted, ...] = get_args(OnUnsorted)


def philly_path() -> Path:
    """The bundled Philly trace (``data/traces/philly.csv``)."""
    return data_dir() / "traces" / "philly.csv"


def _as_path(path: str | os.PathLike, field: str = "path") -> Path:
    """``path`` as an existing file's Path, or InvalidInput."""
    if not isinstance(path, (str, os.PathLike)):
        raise InvalidInput(f"{field} must be a file path, got {path!r}")
    p = Path(path)
    if p.is_dir():
        raise InvalidInput(f"workload path is a folder, not a file: {str(p)!r}")
    if not p.is_file():
        raise InvalidInput(f"workload file not found: {str(p)!r}")
    return p


def _read_csv(path: str | os.PathLike) -> pd.DataFrame:
    p = _as_path(path)
    try:
        df = pd.read_csv(p)
    except pd.errors.EmptyDataError:
        raise InvalidInput(f"{p}: the workload is empty (no header, no rows)") from None
    except (pd.errors.ParserError, UnicodeDecodeError) as exc:
        raise InvalidInput(f"{p}: not a readable CSV file ({exc})") from None
    except OSError as exc:
        raise InvalidInput(f"{p}: cannot read the workload file ({exc.strerror or exc})") from None
    if df.empty:
        raise InvalidInput(f"{p}: the workload is empty (a header but no rows)")
    return df


def _require(df: pd.DataFrame, columns: Sequence[str], path: Path) -> None:
    missing = [c for c in columns if c not in df.columns]
    if missing:
        raise InvalidInput(
            f"{path}: missing column(s) {', '.join(missing)}; the file has {', '.join(map(str, df.columns))}"
        )


def _bad_row(path: Path, df: pd.DataFrame, mask: np.ndarray, column: str, rule: str) -> None:
    if mask.any():
        i = int(np.flatnonzero(mask)[0])
        value = df[column].iloc[i]
        value = value.item() if isinstance(value, np.generic) else value  # 1.5, not np.float64(1.5)
        raise InvalidInput(f"{path}: column {column!r} must be {rule}; line {i + 2} has {value!r}")


def _numeric(df: pd.DataFrame, column: str, path: Path) -> np.ndarray:
    values = pd.to_numeric(df[column], errors="coerce").to_numpy(dtype=float)
    _bad_row(path, df, ~np.isfinite(values), column, "a finite number")
    return values


def _integers(df: pd.DataFrame, column: str, path: Path, lo: int, hi: int) -> np.ndarray:
    values = _numeric(df, column, path)
    _bad_row(
        path,
        df,
        (values != np.round(values)) | (values < lo) | (values > hi),
        column,
        f"an integer in [{lo}, {hi}]",
    )
    return values.astype(np.int64)


def _seconds(df: pd.DataFrame, path: Path) -> np.ndarray:
    col = df["timestamp"]
    numeric = pd.to_numeric(col, errors="coerce")
    if numeric.notna().all():
        t = numeric.to_numpy(dtype=float)
        with np.errstate(invalid="ignore", over="ignore"):
            span = ~np.isfinite(t - t.min())
        _bad_row(path, df, span, "timestamp", "a finite number of seconds (spanning a finite time)")
        return t
    # utc=True: date-times with different offsets (or none) are put on one clock instead of refused by pandas.
    stamps = pd.to_datetime(col, errors="coerce", format="mixed", utc=True)
    _bad_row(
        path,
        df,
        (stamps.isna() & numeric.isna()).to_numpy(),
        "timestamp",
        "a date-time or a number of seconds",
    )
    _bad_row(
        path,
        df,
        stamps.isna().to_numpy(),
        "timestamp",
        "a date-time like the other rows (not a mix with plain numbers)",
    )
    when = stamps.dt.tz_localize(
        None
    ).to_numpy()  # in pandas' own unit: no silent overflow of far dates
    return (when - when.min()) / np.timedelta64(1, "s")


def _order(t: np.ndarray, path: Path, on_unsorted: str) -> np.ndarray:
    check_choice("on_unsorted", on_unsorted, UNSORTED)
    back = np.flatnonzero(np.diff(t) < 0)
    if back.size and on_unsorted == "raise":
        i = int(back[0]) + 1
        raise InvalidInput(
            f"{path}: rows must be in time order (on_unsorted='raise'); line {i + 2} is earlier than line {i + 1}"
        )
    return np.argsort(t, kind="stable")


@memoize(TRACES)
def _parsed_trace(path: str, mtime_ns: int, size: int, on_unsorted: str) -> pd.DataFrame:
    """The validated trace, sorted by time: row (file order), t (s from the earliest), duration, gpus, vc."""
    p = Path(path)
    df = _read_csv(p)
    _require(df, TRACE_COLUMNS, p)
    t = _seconds(df, p)
    duration = _numeric(df, "duration", p)
    _bad_row(p, df, duration <= 0, "duration", "> 0 seconds")
    gpus = _integers(df, "num_gpus", p, 1, MAX_CAP)
    order = _order(t, p, on_unsorted)
    vc = df["cluster"].astype(str).to_numpy() if "cluster" in df.columns else np.full(len(df), "")
    out = pd.DataFrame(
        {"row": np.arange(len(df)), "t": t - t.min(), "duration": duration, "gpus": gpus, "vc": vc}
    )
    out = out.iloc[order].reset_index(drop=True)
    # the earliest date-time (None for plain seconds): what a ``start`` date is measured from
    numeric = pd.to_numeric(df["timestamp"], errors="coerce").notna().all()
    out.attrs["origin"] = (
        None
        if numeric
        else pd.to_datetime(df["timestamp"], format="mixed", utc=True).min().tz_localize(None)
    )
    return out


def _start_index(trace: pd.DataFrame, start: int | str, path: Path) -> int:
    """Index (in time order) of the first job at or after ``start`` (an index, or a date-time)."""
    if isinstance(start, (int, np.integer)) and not isinstance(start, bool):
        return check_int("start", start, 0, len(trace) - 1)
    if not isinstance(start, str):
        raise InvalidInput(
            f"start must be a job index (0-based, time order) or a date-time string, got {start!r}"
        )
    text = start.strip()
    if text.isdigit():
        return check_int("start", int(text), 0, len(trace) - 1)
    origin = trace.attrs.get("origin")
    if origin is None:
        raise InvalidInput(
            f"start must be a job index for {path}, whose timestamps are plain seconds; got {start!r}"
        )
    when = pd.to_datetime(text, errors="coerce", utc=True)
    if pd.isna(when):
        raise InvalidInput(
            f"start must be a job index or a date-time like '2017-11-01 08:00', got {start!r}"
        )
    offset = (when.tz_localize(None) - origin) / pd.Timedelta(seconds=1)
    i = int(np.searchsorted(trace["t"].to_numpy(), offset, side="left"))
    if i >= len(trace):
        raise InvalidInput(
            f"{path}: start {start!r} is after the last job of the trace: the window holds no job"
        )
    return i


def trace_size(path: str | os.PathLike | None = None, on_unsorted: str = "sort") -> int:
    """How many jobs a Philly-format trace holds (default: the bundled Philly trace)."""
    p = _as_path(path) if path is not None else philly_path()
    st = p.stat()
    on_unsorted = check_choice("on_unsorted", on_unsorted, UNSORTED)
    return len(_parsed_trace(str(p.resolve()), st.st_mtime_ns, st.st_size, on_unsorted))


def load_philly(
    path: str | os.PathLike | None = None,
    *,
    first: int | None = None,
    window_s: tuple[float, float] | None = None,
    vc: str | Sequence[str] | None = None,
    rate_scale: float = 1.0,
    load: float | None = None,
    cluster: Cluster | None = None,
    load_resource: str | None = None,
    networks: Sequence[str | LayerProfile] | None = None,
    mix: Mapping[str, float] | None = None,
    seed: int = 0,
    cap_factor: float = 1.0,
    mode: str = "wfbp",
    device: str = "v100",
    on_unsorted: str = "sort",
    demands: str = "per_network",
    task_bw_gbps: float = DEFAULT_TASK_BW_GBPS,
    worker_demand: Mapping[str, float] | None = None,
    ps_demand: Mapping[str, float] | None = None,
    gang: bool | None = None,
    start: int | str | None = None,
) -> list[Job]:
    """Jobs from a Philly-format trace (module docstring); default: the bundled Philly trace.

    start: the first job of the window, by index in time order (0-based) or by date-time (the
    first job submitted at or after it; date-time traces only); applied before the other filters.
    first: keep the first N jobs (after the other filters). window_s: keep jobs whose timestamp,
    in seconds after the trace's earliest, lies in [start, end). vc: keep these virtual clusters.
    rate_scale: divide inter-arrival times by this (2 = twice the arrival rate). load: instead,
    scale arrivals so that the offered load on ``cluster`` is ``load``.
    """
    p = _as_path(path) if path is not None else philly_path()
    st = p.stat()
    # Keyed by modification time and size: a file rewritten in place is parsed again.
    on_unsorted = check_choice("on_unsorted", on_unsorted, UNSORTED)
    trace = _parsed_trace(str(p.resolve()), st.st_mtime_ns, st.st_size, on_unsorted)
    seed = check_int("seed", seed, 0)
    nets = resolve_networks(networks, device)
    pairs = network_demands(nets, demands, worker_demand, ps_demand, task_bw_gbps)
    # One draw per file row, so a job keeps its network whatever subset is selected.
    net_of_row = np.random.default_rng(seed).choice(
        len(nets), size=len(trace), p=mix_probabilities(nets, mix)
    )
    sel = trace
    if start is not None:
        sel = sel.iloc[_start_index(trace, start, p) :]
    if vc is not None:
        wanted = (
            [vc] if isinstance(vc, str) else list(vc) if isinstance(vc, (list, tuple)) else None
        )
        if wanted is None or not all(isinstance(v, str) for v in wanted):
            raise InvalidInput(f"vc must be a virtual-cluster name or a list of names, got {vc!r}")
        sel = sel[sel["vc"].isin(wanted)]
        if sel.empty:
            raise InvalidInput(
                f"vc must name virtual clusters of the trace; none of {wanted} has jobs"
            )
    if window_s is not None:
        window_s = seconds_pair("window_s", window_s)
        w0 = check_positive("window_s[0]", window_s[0], allow_zero=True)
        w1 = check_positive("window_s[1]", window_s[1], allow_inf=True)
        if w1 <= w0:
            raise InvalidInput(f"window_s must have start < end, got {window_s!r}")
        sel = sel[(sel["t"] >= w0) & (sel["t"] < w1)]
    if first is not None:
        sel = sel.iloc[: check_int("first", first, 1)]
    if sel.empty:
        raise InvalidInput(
            f"{p}: the selection (start={start!r}, window_s={window_s!r}, vc={vc!r}) holds no job: "
            "the workload is empty"
        )
    t = sel["t"].to_numpy()
    arrivals = t - t[0]
    requests = sel["gpus"].to_numpy()
    durations = sel["duration"].to_numpy()
    net_index = net_of_row[sel["row"].to_numpy()]
    if load is not None:
        if rate_scale != 1.0:
            raise InvalidInput(
                f"give rate_scale or load, not both (got rate_scale={rate_scale!r}, load={load!r})"
            )
        if cluster is None:
            raise InvalidInput(
                "load needs a cluster (the offered load is relative to its capacity)"
            )
        if isinstance(load, (int, float)) and not isinstance(load, bool) and load <= 0:
            raise InvalidInput(f"load must be > 0 (the offered load), got {load!r}")
        check_positive("load", load)
        bundles = bundle_vectors(cluster, pairs)[net_index]  # each job's own worker+PS demand
        natural = load_from_rate(
            empirical_rate(arrivals),
            demand_seconds(requests, durations, bundles),
            cluster,
            load_resource,
        )
        rate_scale = load / natural
    arrivals = arrivals / check_positive("rate_scale", rate_scale)
    names = [f"philly{r:05d}" for r in sel["row"]]
    return calibrated_jobs(
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
        gang=gang,
    )


def load_job_table(
    path: str | os.PathLike,
    *,
    first: int | None = None,
    device: str = "v100",
    on_unsorted: str = "sort",
    demands: str = "per_network",
    task_bw_gbps: float = DEFAULT_TASK_BW_GBPS,
    worker_demand: Mapping[str, float] | None = None,
    ps_demand: Mapping[str, float] | None = None,
) -> list[Job]:
    """Jobs from a CSV with columns network, arrival, samples (+ optional name, caps, weight, batch).

    first: keep the N earliest jobs.
    """
    p = _as_path(path)
    df = _read_csv(p)
    _require(df, JOB_TABLE_COLUMNS, p)
    arrival = _numeric(df, "arrival", p)
    _bad_row(p, df, arrival < 0, "arrival", ">= 0 seconds")
    samples = _numeric(df, "samples", p)
    _bad_row(p, df, samples <= 0, "samples", "> 0")
    max_w = (
        _integers(df, "max_workers", p, 1, MAX_CAP)
        if "max_workers" in df.columns
        else np.full(len(df), 16)
    )
    max_p = _integers(df, "max_ps", p, 1, MAX_CAP) if "max_ps" in df.columns else max_w
    weight = _numeric(df, "weight", p) if "weight" in df.columns else np.ones(len(df))
    _bad_row(p, df, weight <= 0, "weight", "> 0")
    batch = _integers(df, "global_batch", p, 1, 2**31) if "global_batch" in df.columns else None
    names = (
        df["name"].astype(str).to_numpy()
        if "name" in df.columns
        else np.array([f"j{i}" for i in range(len(df))])
    )
    network = (
        df["network"].map(lambda v: v.strip() if isinstance(v, str) else "").to_numpy(dtype=object)
    )
    _bad_row(
        p, df, ~np.isin(network, list_profiles()), "network", f"one of {', '.join(list_profiles())}"
    )
    used = resolve_networks(sorted(set(network)), device)
    nets = {n.name: n for n in used}
    pairs = dict(zip(nets, network_demands(used, demands, worker_demand, ps_demand, task_bw_gbps)))
    order = _order(arrival, p, on_unsorted)
    gpu_only = demands == "gpu_only"  # a GPU-only gang of max_workers GPUs, no PS
    jobs = []
    for i in order:
        net = nets[network[i]]
        wd, pd_ = pairs[net.name]
        jobs.append(
            Job(
                str(names[i]),
                net.profile,
                float(samples[i]),
                int(batch[i]) if batch is not None else net.global_batch,
                wd,
                pd_,
                arrival=float(arrival[i]),
                weight=float(weight[i]),
                max_workers=int(max_w[i]),
                max_ps=1 if gpu_only else int(max_p[i]),
                requested_workers=int(max_w[i]) if gpu_only else None,
                gang=gpu_only,
                gpu_only=gpu_only,
            )
        )
    if len({j.name for j in jobs}) != len(jobs):
        raise InvalidInput(f"{p}: column 'name' must hold unique job names")
    return jobs if first is None else jobs[: check_int("first", first, 1)]


def load_csv(path: str | os.PathLike, **options) -> list[Job]:
    """Jobs from a CSV in either format, told apart by its columns (module docstring)."""
    p = _as_path(path)
    try:
        header = pd.read_csv(p, nrows=0).columns
    except (pd.errors.EmptyDataError, pd.errors.ParserError, UnicodeDecodeError, OSError):
        header = _read_csv(p).columns  # raises the precise error
    from smdlab.workloads.chronus import CHRONUS_COLUMNS, load_chronus

    if all(c in header for c in CHRONUS_COLUMNS):
        allowed = {"first", "start", "rate_scale", "mode", "device", "cluster"}
        # a scenario's job-shape keys carried over to any file: the trace fixes the job shape
        carried = {"seed", "demands", "task_bw_gbps", "cap_factor"}
        extra = sorted(
            k for k, v in options.items() if k not in allowed | carried and v is not None
        )
        if extra:
            raise InvalidInput(
                f"{p}: option(s) {', '.join(extra)} do not apply to a Chronus-format trace"
            )
        return load_chronus(p, **{k: v for k, v in options.items() if k in allowed})
    if all(c in header for c in TRACE_COLUMNS):
        return load_philly(p, **options)
    if all(c in header for c in JOB_TABLE_COLUMNS):
        allowed = {
            "first",
            "device",
            "on_unsorted",
            "demands",
            "task_bw_gbps",
            "worker_demand",
            "ps_demand",
        }
        context = {
            "seed",
            "mode",
            "cluster",
            "networks",
            "mix",
            "cap_factor",
        }  # meaningless for a job table
        extra = sorted(
            k for k, v in options.items() if k not in allowed | context and v is not None
        )
        if extra:
            raise InvalidInput(
                f"{p}: option(s) {', '.join(extra)} apply to traces only, not to a job table"
            )
        return load_job_table(p, **{k: v for k, v in options.items() if k in allowed})
    raise InvalidInput(
        f"{p}: columns must include either {', '.join(TRACE_COLUMNS)} (a trace), "
        f"{', '.join(JOB_TABLE_COLUMNS)} (a job table) or {', '.join(CHRONUS_COLUMNS)} "
        f"(a Chronus trace); the file has {', '.join(map(str, header))}"
    )
