"""Job classes: an SLO job's deadline options, and what a finished job earned against them.

A job with ``Job.slo = None`` is best-effort (every workload without deadlines). An SLO job has
one or more options (deadline, value): deadlines in seconds after its arrival, strictly
increasing, and values strictly decreasing. ``strict`` jobs have one option; ``soft`` jobs several
(Chronus' traces: deadlines 159-189-229-289 min worth 10-8-5-2). A job finishing by an option's
deadline earns that option's value (the first option it meets); later than the last, nothing.

Metrics (Chronus' ``schedule_summary``, S-Lab-System-Group/ChronusArtifact, MIT licence,
Copyright (c) 2021 S-Lab System Group):
- hard miss: the job finished after its first deadline;
- value-weighted miss: 1 - value earned / the first option's value (Chronus: 1 - value/10);
- lateness: finish - (arrival + first deadline), negative when early.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, get_args

from smdlab.errors import InvalidInput, check_choice, check_positive

SloKind = Literal["strict", "soft"]
SLO_KINDS: tuple[SloKind, ...] = get_args(SloKind)
# Job types of Chronus' traces: ``best`` is best-effort (no SLO).
JOB_TYPES = ("strict", "soft", "best")


@dataclass(frozen=True)
class SLO:
    """An SLO job's deadline options: ``deadlines_s`` (after arrival) worth ``values``; ``kind``."""

    deadlines_s: tuple[float, ...]
    values: tuple[float, ...]
    kind: str = "strict"

    def __post_init__(self) -> None:
        d = _numbers("deadlines_s", self.deadlines_s)
        v = _numbers("values", self.values)
        if not d:
            raise InvalidInput("deadlines_s must list at least one deadline, got none")
        if len(d) != len(v):
            raise InvalidInput(
                f"deadlines_s and values must have the same length, got {len(d)} and {len(v)}"
            )
        for i, x in enumerate(d):
            check_positive(f"deadlines_s[{i}]", x)
        for i, x in enumerate(v):
            check_positive(f"values[{i}]", x)
        if any(b <= a for a, b in itertools.pairwise(d)):
            raise InvalidInput(f"deadlines_s must be strictly increasing, got {list(d)}")
        if any(b >= a for a, b in itertools.pairwise(v)):
            raise InvalidInput(f"values must be strictly decreasing, got {list(v)}")
        check_choice("kind", self.kind, SLO_KINDS)
        object.__setattr__(self, "deadlines_s", d)
        object.__setattr__(self, "values", v)

    @property
    def first_deadline_s(self) -> float:
        """The first (hard) deadline, seconds after arrival."""
        return self.deadlines_s[0]

    @property
    def max_value(self) -> float:
        """The value of meeting the first deadline."""
        return self.values[0]

    def earned(self, arrival: float, finish: float) -> float:
        """Value earned by a job arriving at ``arrival`` and finishing at ``finish`` (0 if late)."""
        if not math.isfinite(finish):
            return 0.0
        for d, v in zip(self.deadlines_s, self.values, strict=True):
            if finish <= arrival + d + 1e-9 * max(1.0, abs(arrival + d)):
                return v
        return 0.0


def _numbers(field: str, value: object) -> tuple[float, ...]:
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
        raise InvalidInput(f"{field} must be a list of numbers, got {value!r}")
    out = []
    for i, x in enumerate(value):
        if isinstance(x, bool) or not isinstance(x, (int, float)) or not math.isfinite(x):
            raise InvalidInput(f"{field}[{i}] must be a finite number, got {x!r}")
        out.append(float(x))
    return tuple(out)


def make_slo(
    job_type: str, deadlines_s: Sequence[float], values: Sequence[float] | None = None
) -> SLO | None:
    """The SLO of a Chronus-style job type (``strict``, ``soft``; ``best``: None, best-effort).

    values: None gives each deadline value 1 (a strict job's usual single option).
    """
    check_choice("job_type", job_type, JOB_TYPES)
    if job_type == "best":
        return None
    vals = values if values is not None else [1.0] * len(deadlines_s)
    slo = SLO(tuple(deadlines_s), tuple(vals), job_type)
    if job_type == "strict" and len(slo.deadlines_s) != 1:
        raise InvalidInput(f"a strict job has exactly one deadline, got {len(slo.deadlines_s)}")
    return slo


def check_slo(value: object) -> SLO | None:
    """``value`` as a Job's ``slo`` field: an SLO or None; raises InvalidInput."""
    if value is None or isinstance(value, SLO):
        return value
    raise InvalidInput(f"slo must be an SLO or None (best-effort), got {type(value).__name__}")
