"""Figures and tables as the notebooks show them: one helper for every notebook.

``show(fig)`` draws a figure at the width of the notebook's output area: the builders give their
figures a fixed width for the exported PNGs (``smdlab reproduce``), which in a notebook cuts
off the right-hand panels of a wide figure. ``axis_problems(fig)`` lists the axes whose explicit
ticks are not values of the data drawn on them (a tick overwritten by another column's values).
``table(df, ...)`` is the one table style: units in the headers (the caller's names), a precision
chosen per column from its magnitude, ``-0.00`` printed as ``0.00``, and a one-line summary as
the caption of any table longer than ``MAX_ROWS``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from functools import partial
from typing import Any

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from smdlab.errors import InvalidInput

# A table longer than this needs a summary line (its caption).
MAX_ROWS = 10
# The config every notebook figure is shown with: resize with the output area, no logo.
SHOW_CONFIG: dict[str, Any] = {"responsive": True, "displaylogo": False}


def fit_width(fig: go.Figure) -> go.Figure:
    """A copy of ``fig`` without a fixed width: it fills the output area (height kept)."""
    out = go.Figure(fig)
    out.layout.width = None
    out.layout.autosize = True
    return out


def show(fig: go.Figure) -> None:
    """Display ``fig`` at the width of the output area; raise if an axis disagrees with its data."""
    problems = axis_problems(fig)
    if problems:
        raise InvalidInput("fig: " + "; ".join(problems))
    fit_width(fig).show(config=SHOW_CONFIG)


def _axis_name(ref: str) -> str:
    """Layout key of an axis reference: ``x`` -> ``xaxis``, ``y2`` -> ``yaxis2``."""
    return f"{ref[0]}axis{ref[1:]}"


def _values(trace: Any, letter: str) -> list[Any]:
    """The data values a trace draws along its ``letter`` (x or y) axis."""
    data = getattr(trace, letter, None)
    if data is None:
        return []
    flat: list[Any] = []
    for v in np.asarray(data, dtype=object).ravel():
        if isinstance(v, list | tuple | np.ndarray):  # multicategory axes: one level per entry
            flat.extend(v)
        elif v is not None:
            flat.append(v)
    return flat


def axis_data(fig: go.Figure) -> dict[str, list[Any]]:
    """Every axis of ``fig`` (layout key) mapped to the data values its traces draw along it."""
    out: dict[str, list[Any]] = {}
    for trace in fig.data:
        for letter in ("x", "y"):
            if f"{letter}axis" not in trace:
                continue  # pies, tables, maps: no cartesian axes
            ref = trace[f"{letter}axis"] or letter
            out.setdefault(_axis_name(ref), []).extend(_values(trace, letter))
    return out


def _numeric(values: Sequence[Any]) -> np.ndarray | None:
    """``values`` as floats, or None when any of them is not a number (a category axis)."""
    try:
        return np.array([float(v) for v in values], dtype=float)
    except (TypeError, ValueError):
        return None


def axis_problems(fig: go.Figure) -> list[str]:
    """One line per axis whose explicit ``tickvals`` do not label its own data.

    A category axis may tick only its categories; on a numeric axis each end of the data must
    lie within one tick interval (on the axis's scale, log or linear) of a tick.
    Axes with automatic ticks are left alone: plotly places those from the data.
    """
    problems = []
    for key, values in sorted(axis_data(fig).items()):
        if key not in fig.layout:  # plotly's Layout has no .get
            continue
        axis = fig.layout[key]
        ticks = axis.tickvals
        if ticks is None or not values:
            continue
        data, at = _numeric(values), _numeric(ticks)
        if data is None or at is None:
            categories = {str(v) for v in values}
            strange = [t for t in ticks if str(t) not in categories]
            if strange:
                shown = ", ".join(str(t) for t in strange[:5])
                problems.append(f"{key} has ticks at {shown}, which are not categories of its data")
            continue
        log = axis.type == "log"
        data = data[np.isfinite(data) & ((data > 0) if log else True)]
        if len(np.unique(data)) < 2:
            continue
        scale = np.log10 if log else (lambda v: v)
        lo, hi = float(scale(data.min())), float(scale(data.max()))
        pos = np.sort(np.array([scale(t) for t in at if not log or t > 0], dtype=float))
        step = float(np.diff(pos).max()) if len(pos) > 1 else 0.0
        if not (
            np.any(np.abs(pos - lo) <= 1.01 * step) and np.any(np.abs(pos - hi) <= 1.01 * step)
        ):
            problems.append(
                f"{key} ticks ({', '.join(f'{t:g}' for t in at[:6])}) do not reach both ends of "
                f"its data ({data.min():g} to {data.max():g})"
            )
    return problems


def _decimals(values: pd.Series) -> int:
    """Decimals that show a column at about three significant digits of its typical value."""
    finite = pd.to_numeric(values, errors="coerce").abs()
    finite = finite[np.isfinite(finite) & (finite > 0)]
    if finite.empty:
        return 0
    typical = float(finite.median())
    if typical >= 100:
        return 0
    return min(4, max(0, 2 - math.floor(math.log10(typical))))


def number(x: Any, decimals: int, *, thousands: bool = True) -> str:
    """``x`` with ``decimals`` decimals (a thousands separator unless asked not); NaN as "-", never -0."""
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "-"
    if isinstance(x, bool | np.bool_):
        return "yes" if x else "no"
    try:
        v = float(x)
    except (TypeError, ValueError):
        return str(x)
    if math.isinf(v):
        return "∞" if v > 0 else "-∞"
    v = round(v, decimals) + 0.0  # + 0.0 turns -0.0 into 0.0
    return f"{v:,.{decimals}f}" if thousands else f"{v:.{decimals}f}"


def percent(x: Any, decimals: int = 1) -> str:
    """A share (0.123) as a percentage ("12.3%"); NaN as "-", never -0.0%."""
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "-"
    return number(100 * float(x), decimals) + "%"


def _text(v: Any) -> str:
    """A non-numeric cell: itself, or "-" when missing."""
    return "-" if v is None or (isinstance(v, float) and math.isnan(v)) else str(v)


def table(
    df: pd.DataFrame,
    *,
    percent_cols: Iterable[str] = (),
    decimals: Mapping[str, int] | None = None,
    formats: Mapping[str, Callable[[Any], str]] | None = None,
    summary: str | None = None,
    index: bool | None = None,
) -> Any:
    """``df`` in the one table style (a pandas Styler): per-column precision, shares as percent.

    percent_cols: columns holding shares (0-1), shown as percentages with one decimal.
    decimals: fixed decimals for some numeric columns (others: from their magnitude).
    formats: a formatter per column, overriding the rest.
    summary: one line on what the table shows; required when it has over ``MAX_ROWS`` rows.
    index: show the index (default: unless it is a plain 0..n-1 range).
    """
    if len(df) > MAX_ROWS and not summary:
        raise InvalidInput(
            f"summary: a table of {len(df)} rows (over {MAX_ROWS}) needs a one-line summary"
        )
    shares = set(percent_cols)
    missing = (shares | set(decimals or {}) | set(formats or {})) - set(df.columns)
    if missing:
        raise InvalidInput(f"columns: {sorted(missing)} are not columns of the table")
    fmt: dict[Any, Any] = {}
    for col in df.columns:
        series = df[col]
        if formats and col in formats:
            fmt[col] = formats[col]
        elif col in shares:
            fmt[col] = percent
        elif pd.api.types.is_bool_dtype(series) or pd.api.types.is_integer_dtype(series):
            fmt[col] = partial(number, decimals=0)
        elif pd.api.types.is_float_dtype(series):
            fmt[col] = partial(number, decimals=(decimals or {}).get(col, _decimals(series)))
        else:
            fmt[col] = _text
    styler = df.style.format(fmt)
    show_index = index if index is not None else not isinstance(df.index, pd.RangeIndex)
    if not show_index:
        styler = styler.hide(axis="index")
    elif pd.api.types.is_float_dtype(df.index):  # sweep points: 2.5, 10, not 2.500000
        styler = styler.format_index(lambda v: f"{v:g}", axis="index")
    if summary:
        styler = styler.set_caption(summary)
    return styler


def summarise(
    df: pd.DataFrame,
    by: str,
    columns: Sequence[str],
    *,
    how: Sequence[str] = ("min", "median", "max"),
) -> pd.DataFrame:
    """One row per value of ``by``: the ``how`` statistics of each of ``columns`` (a long table's summary)."""
    missing = ({by} | set(columns)) - set(df.columns)
    if missing:
        raise InvalidInput(f"columns: {sorted(missing)} are not columns of the table")
    out = df.groupby(by, sort=False)[list(columns)].agg(list(how))
    out.columns = [f"{pair[0]} ({pair[1]})" for pair in out.columns]
    return out
