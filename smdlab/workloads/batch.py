"""Batch-queue workloads: background jobs from a trace (Philly by default) and job chains.

Each trace row becomes a ``BatchJob``: arrival (s from the first selected row, divided by
``rate_scale``), ``gpus`` = num_gpus, ``duration_s`` = duration, ``account`` = the virtual
cluster, and a requested wall time from a trace column (``requested_column``, capped at the
limit) or, by default, the f-model (``smdlab.model.batch.requested_wall_times``): the duration
times a factor drawn uniformly from [1, ``overestimate``] (seeded, one draw per row in time
order), capped at the wall-time limit.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

import numpy as np
import pandas as pd

from smdlab.errors import InvalidInput, check_int, check_positive
from smdlab.model.batch import (
    DEFAULT_MAX_LINKS,
    DEFAULT_OVERESTIMATE,
    BatchJob,
    Chain,
    requested_wall_times,
)
from smdlab.workloads.trace import _as_path, _numeric, _parsed_trace, philly_path


def batch_trace(
    path: str | os.PathLike | None = None,
    *,
    limit_s: float,
    overestimate: float = DEFAULT_OVERESTIMATE,
    seed: int = 0,
    start: int = 0,
    first: int | None = None,
    rate_scale: float = 1.0,
    requested_column: str | None = None,
) -> list[BatchJob]:
    """Background batch jobs of rows ``start .. start + first`` (time order) of a Philly-format
    trace (default the bundled Philly trace), arrivals divided by ``rate_scale``."""
    p = _as_path(philly_path() if path is None else path)
    st = p.stat()
    df = _parsed_trace(str(p.resolve()), st.st_mtime_ns, st.st_size, "sort")
    start = check_int("start", start, 0, len(df) - 1)
    stop = len(df) if first is None else start + check_int("first", first, 1)
    rate_scale = check_positive("rate_scale", rate_scale)
    rows = df.iloc[start:stop]
    dur = rows["duration"].to_numpy(dtype=float)
    if requested_column is None:
        rng = np.random.default_rng(seed)
        req_all = requested_wall_times(df["duration"].to_numpy(), limit_s, rng, overestimate)
        req = req_all[start:stop]
    else:
        raw = pd.read_csv(p)
        if requested_column not in raw.columns:
            raise InvalidInput(f"{p}: no column {requested_column!r} (requested_column)")
        col = _numeric(raw, requested_column, p)[rows["row"].to_numpy()]
        if (col <= 0).any():
            raise InvalidInput(
                f"{p}: column {requested_column!r} must hold wall times > 0 (requested_s)"
            )
        req = np.minimum(col, check_positive("limit_s", limit_s))
    t = rows["t"].to_numpy(dtype=float)
    t = (t - t[0]) / rate_scale
    return [
        BatchJob(f"j{r}", float(a), int(g), float(d), float(q), str(vc))
        for r, a, g, d, q, vc in zip(
            rows["row"], t, rows["gpus"], dur, req, rows["vc"], strict=True
        )
    ]


def easy_example() -> list[BatchJob]:
    """The hand-worked EASY example of docs/batch.md (10 GPUs): A holds 6 from t=0 (asks 10 s);
    at t=1, in order, J1 (8 GPUs, asks 20 s), J2 (3, 15), J3 (2, 15), J4 (2, 8)."""
    return [
        BatchJob("A", 0, 6, 10, 10),
        BatchJob("J1", 1, 8, 20, 20),
        BatchJob("J2", 1, 3, 3, 15),
        BatchJob("J3", 1, 2, 12, 15),
        BatchJob("J4", 1, 2, 5, 8),
    ]


def offered_load(jobs: Sequence[BatchJob], gpus: int) -> float:
    """GPU-seconds the jobs hold (duration cut at the request) over ``gpus`` x their span."""
    if not jobs:
        return 0.0
    arr = np.array([j.arrival for j in jobs])
    span = float(arr.max() - arr.min())
    work = sum(j.gpus * j.run_s for j in jobs)
    return work / (gpus * span) if span > 0 else float("inf")


def make_chains(
    n: int,
    *,
    length_s: float,
    gpus: Sequence[int],
    t0: float,
    t1: float,
    seed: int = 0,
    max_links: int = DEFAULT_MAX_LINKS,
) -> list[Chain]:
    """``n`` chains of ``length_s`` seconds, arrivals uniform on [t0, t1), GPUs drawn from
    ``gpus`` (seeded)."""
    n = check_int("n", n, 1)
    if not gpus:
        raise InvalidInput("gpus must list at least one GPU count for the chains")
    rng = np.random.default_rng(seed)
    arrivals = np.sort(rng.uniform(t0, t1, size=n))
    sizes = rng.choice(np.asarray(gpus, dtype=int), size=n)
    return [
        Chain(f"c{k}", float(a), int(g), length_s, max_links=max_links)
        for k, (a, g) in enumerate(zip(arrivals, sizes, strict=True))
    ]
