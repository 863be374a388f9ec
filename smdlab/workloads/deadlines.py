"""Deadlines for any workload: deadline = slack factor x the job's isolated duration.

A job's isolated duration is its run time alone on an idle cluster at its request (its
``gang_allocation``: requested workers, else max_workers, and as many PSs up to max_ps) under the
layered timing model. Each SLO job draws its slack factor from ``distribution`` over ``slack``
(``uniform``: uniform on [lo, hi]; ``lognormal``: exp(N(log lo, hi)) clipped below at 1, lo the
median and hi the sigma; ``fixed``: lo for every job). ``fraction`` of the jobs (drawn) get an
SLO, the others stay best-effort. ``soft`` adds later options: deadline x each factor of
``soft_factors`` worth the matching ``soft_values`` (the first option is worth ``value``).
Seeded: the same seed gives the same deadlines, and the draws per job do not depend on which
other jobs are kept.

The default slack range [1.5, 3] is ours, not a published distribution; Chronus' traces carry
their own deadlines (``smdlab.workloads.chronus``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal, get_args

import numpy as np

from smdlab.errors import InvalidInput, check_choice, check_int, check_positive
from smdlab.model.job import Job
from smdlab.model.slo import SLO
from smdlab.model.timing import MODES, job_speeds

__all__ = ["SLACK_DISTRIBUTIONS", "isolated_duration", "with_deadlines"]

SlackDistribution = Literal["uniform", "lognormal", "fixed"]
SLACK_DISTRIBUTIONS: tuple[SlackDistribution, ...] = get_args(SlackDistribution)


def isolated_duration(job: Job, mode: str = "wfbp") -> float:
    """Seconds ``job`` runs alone at its gang allocation (requested workers and PSs) from its samples."""
    w, p = job.gang_allocation
    table = job_speeds(job, check_choice("mode", mode, MODES))
    return float(job.samples / table[w - 1, max(p, 1) - 1])


def with_deadlines(
    jobs: Sequence[Job],
    *,
    slack: float | tuple[float, float] = (1.5, 3.0),
    distribution: str = "uniform",
    fraction: float = 1.0,
    value: float = 10.0,
    soft_factors: Sequence[float] = (),
    soft_values: Sequence[float] = (),
    seed: int = 0,
    mode: str = "wfbp",
) -> list[Job]:
    """``jobs`` with SLOs drawn as the module docstring says (jobs already with an SLO keep it)."""
    check_choice("distribution", distribution, SLACK_DISTRIBUTIONS)
    lo, hi = (slack, slack) if isinstance(slack, (int, float)) else tuple(slack)
    lo = check_positive("slack[0]", lo)
    hi = check_positive("slack[1]", hi)
    if distribution == "uniform" and not 1.0 <= lo <= hi:
        raise InvalidInput(f"slack must be [lo, hi] with 1 <= lo <= hi for uniform, got {slack!r}")
    if distribution == "fixed" and lo < 1:
        raise InvalidInput(f"slack must be >= 1 (a deadline no shorter than the job), got {lo!r}")
    fraction = check_positive("fraction", fraction, allow_zero=True)
    if fraction > 1:
        raise InvalidInput(f"fraction must be in [0, 1], got {fraction!r}")
    value = check_positive("value", value)
    factors = tuple(check_positive(f"soft_factors[{i}]", f) for i, f in enumerate(soft_factors))
    values = tuple(check_positive(f"soft_values[{i}]", v) for i, v in enumerate(soft_values))
    if len(factors) != len(values):
        raise InvalidInput(
            f"soft_factors and soft_values must have the same length, got {len(factors)} and {len(values)}"
        )
    seed = check_int("seed", seed, 0)
    rng = np.random.default_rng(seed)
    n = len(jobs)
    pick = rng.random(n) < fraction
    u = rng.random(n)
    z = rng.standard_normal(n)
    out = []
    for k, job in enumerate(jobs):
        if job.slo is not None or not pick[k]:
            out.append(job)
            continue
        if distribution == "uniform":
            s = lo + (hi - lo) * u[k]
        elif distribution == "lognormal":
            s = max(1.0, float(np.exp(np.log(lo) + hi * z[k])))
        else:
            s = lo
        d = s * isolated_duration(job, mode)
        slo = SLO((d, *(d * f for f in factors)), (value, *values), "soft" if factors else "strict")
        out.append(job.replace(slo=slo))
    return out
