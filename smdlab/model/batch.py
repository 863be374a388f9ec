"""Batch-queue jobs and job chains: rigid GPU jobs with requested wall times (docs/batch.md).

A batch job asks for ``gpus`` GPUs and a wall time ``requested_s``; it runs ``duration_s`` (its
true length) or is killed when it reaches its requested time, whichever comes first. A chain is a
long-running service or training run of ``length_s`` seconds that runs as a sequence of batch
jobs (links), each at most the cluster's wall-time limit.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from smdlab.errors import InvalidInput, check_int, check_positive

# Mu'alem & Feitelson's "f-model" of user estimates (IEEE TPDS 12(6), 2001, Section 4.2): the
# requested time is the true run time times a factor drawn uniformly from [1, f].
DEFAULT_OVERESTIMATE = 3.0
# Most links a chain may use unless told otherwise (a guard against a runaway provisioner).
DEFAULT_MAX_LINKS = 64


@dataclass(frozen=True)
class BatchJob:
    """A rigid batch job: ``gpus`` GPUs for ``duration_s``, killed at ``requested_s``.

    name: unique within a workload. arrival: submission time (s). account: the fair-share
    account (a user or group; Philly's virtual cluster).
    """

    name: str
    arrival: float
    gpus: int
    duration_s: float
    requested_s: float
    account: str = ""

    def __post_init__(self) -> None:
        check_positive("arrival", self.arrival, allow_zero=True)
        check_int("gpus", self.gpus, 1)
        check_positive("duration_s", self.duration_s)
        check_requested(self.requested_s, self.name)

    @property
    def run_s(self) -> float:
        """Seconds the job holds its GPUs once started: its duration, cut at its wall time."""
        return min(self.duration_s, self.requested_s)


def check_requested(requested_s: float, name: str = "") -> float:
    """``requested_s`` as a float if it is a finite wall time > 0, else one InvalidInput line."""
    try:
        x = float(requested_s)
    except (TypeError, ValueError):
        x = math.nan
    if not math.isfinite(x) or x <= 0:
        who = f" of job {name!r}" if name else ""
        raise InvalidInput(
            f"requested_s{who} must be a wall time > 0 and finite (seconds), got {requested_s!r}"
        )
    return x


@dataclass(frozen=True)
class Chain:
    """A long job that runs as successive batch jobs (links) of at most the wall-time limit.

    length_s: seconds of service (or training) the chain needs in all. gpus: GPUs of every link.
    arrival: submission of its first link. min_run_s: the shortest run a link is useful for
    (start-up plus one checkpoint); the wall-time limit may not be below it. max_links: most
    links it may use.
    """

    name: str
    arrival: float
    gpus: int
    length_s: float
    min_run_s: float = 0.0
    max_links: int = DEFAULT_MAX_LINKS
    account: str = ""

    def __post_init__(self) -> None:
        check_positive("arrival", self.arrival, allow_zero=True)
        check_int("gpus", self.gpus, 1)
        check_positive("length_s", self.length_s)
        check_positive("min_run_s", self.min_run_s, allow_zero=True)
        check_int("max_links", self.max_links, 1)

    def check_limit(self, limit_s: float) -> None:
        """Raise one InvalidInput line if the chain cannot run under wall-time limit ``limit_s``."""
        if limit_s < self.min_run_s:
            raise InvalidInput(
                f"limit_s: the wall-time limit {limit_s:g} s is below chain {self.name!r}'s "
                f"minimum run {self.min_run_s:g} s (min_run_s); its links could never run"
            )
        links = math.ceil(self.length_s / limit_s - 1e-12)
        if links > self.max_links:
            raise InvalidInput(
                f"chain {self.name!r}: length_s {self.length_s:g} s needs {links} links of at most "
                f"{limit_s:g} s, over max_links {self.max_links}"
            )


def requested_wall_times(
    durations: np.ndarray, limit_s: float, rng: np.random.Generator, factor: float
) -> np.ndarray:
    """Requested wall times by the f-model: duration times U[1, factor], capped at ``limit_s``.

    A job whose duration exceeds the limit requests the limit and is killed at it.
    """
    limit_s = check_positive("limit_s", limit_s)
    factor = check_positive("overestimate", factor)
    if factor < 1:
        raise InvalidInput(
            f"overestimate must be >= 1 (a factor on the true duration), got {factor!r}"
        )
    d = np.asarray(durations, dtype=float)
    f = rng.uniform(1.0, factor, size=d.shape)
    return np.minimum(d * f, limit_s)
