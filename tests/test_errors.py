"""The argument checks' shortcuts against the rules they replace."""

from __future__ import annotations

import numbers

import numpy as np
import pytest

from smdlab.errors import InvalidInput, check_choice, check_int


def _int_rule(field, value, lo, hi=None):
    # check_int without its exact-int shortcut
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


def _outcome(f, *args):
    try:
        out = f(*args)
    except InvalidInput as exc:
        return ("raised", str(exc))
    return (type(out), out)


VALUES = [0, 1, 7, 8, 9, -3, 2**70, True, False, 3.0, 3.5, np.int64(4), np.int32(9), "4", None]


@pytest.mark.parametrize("lo, hi", [(1, None), (1, 8), (0, 0), (-5, 5)])
def test_check_int_equals_its_rule(lo, hi):
    for v in VALUES:
        assert _outcome(check_int, "n", v, lo, hi) == _outcome(_int_rule, "n", v, lo, hi), v


def test_check_choice_on_a_tuple_equals_the_list_rule():
    allowed = ("wfbp", "sequential", 1, 2.0)
    for v in ["wfbp", "other", 1, 1.0, 2, True, [1], None, np.float64(2.0)]:
        fast = _outcome(check_choice, "mode", v, allowed)
        assert fast == _outcome(check_choice, "mode", v, list(allowed)), v
        assert fast == _outcome(check_choice, "mode", v, iter(allowed)), v
