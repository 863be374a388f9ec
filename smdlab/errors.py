"""The one exception family of smdlab: every error a user can cause is an ``SmdlabError``."""

from __future__ import annotations

import math
import numbers
from collections.abc import Iterable, Mapping
from typing import Any, Literal, TypeVar, cast, overload

import numpy as np

T = TypeVar("T")
S = TypeVar("S", bound=str)


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
    if type(value) is int and value >= lo and (hi is None or value <= hi):
        return value  # the common case, without the abstract Integral check (same result)
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


def check_choice(field: str, value: Any, allowed: Iterable[S]) -> S:
    """Return ``value`` if it is one of ``allowed``, else raise listing the allowed set.

    With ``allowed = typing.get_args(SomeLiteral)`` the result has the Literal type.
    """
    if type(allowed) is tuple and value in allowed:
        return cast(S, value)  # the common case, without copying the choices (same result)
    choices = list(allowed)
    if value not in choices:
        raise InvalidInput(f"{field} must be one of {', '.join(map(str, choices))}; got {value!r}")
    return cast(S, value)


@overload
def check_bool(field: str, value: Any, *, allow_none: Literal[False] = False) -> bool: ...
@overload
def check_bool(field: str, value: Any, *, allow_none: bool) -> bool | None: ...
def check_bool(field: str, value: Any, *, allow_none: bool = False) -> bool | None:
    """``value`` as a bool if it is True or False (numpy's too; None with allow_none), else raise."""
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if allow_none and value is None:
        return None
    allowed = "True, False or None" if allow_none else "True or False"
    raise InvalidInput(f"{field} must be {allowed}, got {value!r}")


def check_unique_names(field: str, names: Iterable[str]) -> None:
    """Raise naming the first name of ``names`` that appears more than once."""
    seen: set[str] = set()
    for name in names:
        if name in seen:
            raise InvalidInput(f"{field} must be unique; {name!r} appears more than once")
        seen.add(name)


def check_items(field: str, value: Any, kind: type[T], *, what: str = "") -> tuple[T, ...]:
    """``value`` as a tuple if it is a sequence of ``kind`` objects (at least one with ``what``).

    what: the noun of one item (``job``), when the sequence must not be empty.
    """
    name = kind.__name__
    if isinstance(value, (kind, str, bytes)) or not isinstance(value, Iterable):
        raise InvalidInput(f"{field} must be a sequence of {name} objects, got {value!r:.80}")
    items = tuple(value)
    if what and not items:
        raise InvalidInput(f"{field} must list at least one {what}, got 0")
    for item in items:
        if not isinstance(item, kind):
            raise InvalidInput(
                f"{field} must be {name} objects, got {type(item).__name__} {item!r:.80}"
            )
    return items


# The ``variant`` option of DRF, Optimus and Tetris (removed in 0.2: smdlab's earlier ports).
FORMER_VARIANT: Mapping[str, str] = {
    "variant": "use the default: the policy as its source defines it "
    "(variant='smdlab', smdlab's earlier port, is gone)"
}


def reject_former(where: str, given: Mapping[str, Any], former: Mapping[str, str]) -> None:
    """Raise for the first keyword of ``given``: InvalidInput naming its replacement when it is a
    former name (a key of ``former``), else TypeError as Python does for an unknown keyword."""
    for key in given:
        if key in former:
            raise InvalidInput(f"{where}: {key} is a former option, removed in 0.2; {former[key]}")
        raise TypeError(f"{where}() got an unexpected keyword argument {key!r}")
