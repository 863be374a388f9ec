"""The one exception family of smdlab: every error a user can cause is an ``SmdlabError``."""

from __future__ import annotations

import math
import numbers
from collections.abc import Iterable
from typing import Any


class SmdlabError(Exception):
    """Base class of every error smdlab raises on purpose."""


class InvalidInput(SmdlabError, ValueError):
    """A value given by the user is out of its allowed range or set."""


class Infeasible(SmdlabError):
    """The problem has no feasible solution (e.g. a job fits on no machine)."""


class SolverError(SmdlabError):
    """A solver failed and no fallback produced a usable answer."""


def check_positive(
    field: str, value: Any, *, allow_zero: bool = False, allow_inf: bool = False
) -> float:
    """Return ``value`` as float if it is a finite number > 0 (>= 0 with allow_zero), else raise."""
    try:
        x = float(value)
    except (TypeError, ValueError):
        raise InvalidInput(f"{field} must be a number, got {value!r}") from None
    if math.isnan(x) or (math.isinf(x) and not allow_inf) or x < 0 or (x == 0 and not allow_zero):
        bound = ">= 0" if allow_zero else "> 0"
        finite = "" if allow_inf else " and finite"
        raise InvalidInput(f"{field} must be {bound}{finite}, got {value!r}")
    return x


def check_int(field: str, value: Any, lo: int, hi: int | None = None) -> int:
    """Return ``value`` as int if it is an integer in [lo, hi], else raise naming the range."""
    integral = isinstance(value, numbers.Integral) or (
        isinstance(value, float) and value.is_integer()
    )
    if isinstance(value, bool) or not integral:
        raise InvalidInput(f"{field} must be an integer, got {value!r}")
    v = int(value)
    if v < lo or (hi is not None and v > hi):
        rng = f"[{lo}, {hi}]" if hi is not None else f">= {lo}"
        raise InvalidInput(f"{field} must be an integer in {rng}, got {value!r}")
    return v


def check_choice(field: str, value: Any, allowed: Iterable[str]) -> str:
    """Return ``value`` if it is one of ``allowed``, else raise listing the allowed set."""
    allowed = list(allowed)
    if value not in allowed:
        raise InvalidInput(f"{field} must be one of {', '.join(map(str, allowed))}; got {value!r}")
    return value
