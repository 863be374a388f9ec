"""A sweep's files on disk: rows streamed as they finish, a resumable record, a sorted final file.

``NAME.csv`` (the ``--out`` file) grows one row at a time while the sweep runs and is always a
valid CSV with a header; at the end the rows are sorted by the grid columns and the file is
replaced atomically. Beside it:

- ``NAME.sweep.json``: what the rows come from (the scenario, the grid, smdlab's version) and
  their hash, so that a resumed run continues only the sweep that wrote them;
- ``NAME.timings.csv``: the wall-clock columns, kept out of ``NAME.csv`` so that a resumed run
  writes the same bytes as an uninterrupted one;
- ``NAME.failures.csv``: the cells that raised, with their error.

Every value is written in one fixed text form (``format_value``), and the final file is built from
that text alone, so the final ``NAME.csv`` depends only on the set of rows, not on the order in
which they finished or on which run computed them.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import math
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from smdlab.errors import InvalidInput
from smdlab.sim.output import AppendedFile, check_replaceable, write_files

GRID_COLUMNS = ("policy", "load", "seed", "machines")
FORMAT = "smdlab-sweep/1"
FAILURE_COLUMNS = (*GRID_COLUMNS, "error")
Cell = tuple[str, float | None, int, int]
CellKey = tuple[str, str, str, str]


def format_value(v: Any) -> str:
    """One value's text in a sweep file (floats in their shortest exact form, None/NaN empty)."""
    if v is None:
        return ""
    if isinstance(v, (bool, np.bool_)):
        return str(bool(v))
    if isinstance(v, (int, np.integer)):
        return str(int(v))
    if isinstance(v, (float, np.floating)):
        f = float(v)
        return "" if math.isnan(f) else repr(f)
    return str(v)


def cell_key(cell: Sequence[Any]) -> CellKey:
    """A cell's coordinates as the text its row holds."""
    policy, load, seed, machines = cell
    return (str(policy), format_value(load), format_value(seed), format_value(machines))


def _sort_key(key: CellKey) -> tuple:
    policy, load, seed, machines = key
    # None (the scenario's load) first, as pandas' na_position="first" did
    return (policy, load != "", float(load) if load else 0.0, int(seed), int(machines))


def columns_of(rows: Iterable[Mapping[str, str]], first: Sequence[str] = GRID_COLUMNS) -> list[str]:
    """``first``, then every other column in order of appearance."""
    return list(dict.fromkeys([*first, *(k for r in rows for k in r)]))


def csv_lines(
    rows: Iterable[Mapping[str, str]], columns: Sequence[str], header: bool = True
) -> str:
    """Rows (column -> text) as CSV lines over ``columns`` (missing values empty)."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    if header:
        w.writerow(columns)
    for r in rows:
        w.writerow([r.get(c, "") for c in columns])
    return buf.getvalue()


def csv_text(rows: Iterable[Mapping[str, str]], first: Sequence[str] = GRID_COLUMNS) -> str:
    """Rows (column -> text) as a CSV file: ``first`` columns, then the others."""
    rows = list(rows)
    return csv_lines(rows, columns_of(rows, first))


def sorted_text(
    rows: Mapping[CellKey, Mapping[str, str]], first: Sequence[str] = GRID_COLUMNS
) -> str:
    """The final file: rows sorted by their grid coordinates."""
    return csv_text((rows[k] for k in sorted(rows, key=_sort_key)), first)


def sidecar(out: Path, kind: str) -> Path:
    """``NAME.<kind>`` beside ``NAME.csv`` (kind: sweep.json, timings.csv, failures.csv)."""
    return out.with_name(f"{out.stem}.{kind}")


def describe(base: Mapping[str, Any], cells: Sequence[Cell]) -> dict[str, Any]:
    """The record that ties a sweep file to its scenario and grid."""
    from smdlab.paths import package_version

    grid = {
        "policies": list(dict.fromkeys(c[0] for c in cells)),
        "loads": list(dict.fromkeys(c[1] for c in cells)),
        "seeds": list(dict.fromkeys(c[2] for c in cells)),
        "machines": list(dict.fromkeys(c[3] for c in cells)),
    }
    body = {"scenario": base, "grid": grid, "smdlab": package_version()}
    text = json.dumps(body, sort_keys=True, default=str)
    return {
        "format": FORMAT,
        "hash": hashlib.sha256(text.encode("utf-8")).hexdigest(),
        **json.loads(text),
    }


def _differences(old: Any, new: Any, where: str) -> list[str]:
    if isinstance(old, dict) and isinstance(new, dict):
        out = []
        for k in sorted(set(old) | set(new)):
            out += _differences(old.get(k), new.get(k), f"{where}.{k}" if where else k)
        return out
    return [] if old == new else [f"{where} ({old!r} in the file, {new!r} now)"]


def _read_rows(path: Path) -> list[dict[str, str]]:
    """The complete rows of a streamed CSV (a torn last line, from a run killed mid-append, dropped)."""
    text = path.read_text(encoding="utf-8")
    return list(csv.DictReader(io.StringIO(text[: text.rfind("\n") + 1])))


class SweepFiles:
    """The files of one sweep run into ``out``: streamed rows, timings, failures and the record."""

    def __init__(
        self,
        out: str | Path | None,
        record: dict[str, Any],
        *,
        resume: bool = False,
        force: bool = False,
    ) -> None:
        self.record = record
        self.rows: dict[CellKey, dict[str, str]] = {}
        self.timings: dict[CellKey, dict[str, str]] = {}
        self.failures: dict[CellKey, str] = {}
        self._main_columns: list[str] = []
        self._time_columns: list[str] = []
        self._main: AppendedFile | None = None
        self._time: AppendedFile | None = None
        if out is None:  # rows kept in memory only
            self.out = None
            return
        self.out = Path(out)
        paths = [
            self.out,
            *(sidecar(self.out, k) for k in ("sweep.json", "timings.csv", "failures.csv")),
        ]
        if resume:
            self._load_previous(self.out)
        else:
            for p in paths:  # fail before a long sweep, not after it
                check_replaceable(p, force=force)
            write_files(
                self.out.parent,
                {sidecar(self.out, "sweep.json").name: self._record_text()},
                force=force,
            )
        self._main = AppendedFile(self.out, force=force)
        self._time = AppendedFile(sidecar(self.out, "timings.csv"), force=force)
        # Both files whole at the start: a header from the first moment, and on a resume no torn
        # last line from a run killed mid-write.
        self._rewrite()

    def _record_text(self) -> str:
        return json.dumps(self.record, indent=1, sort_keys=True) + "\n"

    def _load_previous(self, out: Path) -> None:
        meta_path = sidecar(out, "sweep.json")
        if not out.is_file():
            raise InvalidInput(f"--resume: {str(out)!r} does not exist")
        try:
            meta = json.loads(meta_path.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError, UnicodeDecodeError):
            meta = None
        if not isinstance(meta, dict) or meta.get("format") != FORMAT:
            raise InvalidInput(
                f"--resume: {str(out)!r} is not a sweep's output (no readable {meta_path.name} beside it)"
            )
        if meta.get("hash") != self.record["hash"]:
            diff = _differences(
                {k: meta.get(k) for k in ("scenario", "grid", "smdlab")},
                {k: self.record[k] for k in ("scenario", "grid", "smdlab")},
                "",
            )
            raise InvalidInput(
                f"--resume: {str(out)!r} comes from another sweep: "
                + "; ".join(diff[:3] or ["its record's hash differs"])
                + (f"; and {len(diff) - 3} more" if len(diff) > 3 else "")
            )
        rows = _read_rows(out)
        if rows and not set(GRID_COLUMNS) <= set(rows[0]):
            raise InvalidInput(f"--resume: {str(out)!r} is not a sweep's output (no grid columns)")
        self.rows = {cell_key([r[c] for c in GRID_COLUMNS]): r for r in rows}
        t = sidecar(out, "timings.csv")
        if t.is_file():
            for r in _read_rows(t):
                k = cell_key([r.get(c, "") for c in GRID_COLUMNS])
                if k in self.rows:
                    self.timings[k] = r

    def done(self) -> set[CellKey]:
        """Cells whose row is on disk."""
        return set(self.rows)

    def _rewrite(self) -> None:
        self._main_columns = columns_of(self.rows.values())
        self._time_columns = columns_of(self.timings.values())
        if self._main is None or self._time is None:
            return
        self._main.replace(csv_lines(self.rows.values(), self._main_columns).encode("utf-8"))
        self._time.replace(csv_lines(self.timings.values(), self._time_columns).encode("utf-8"))

    def add(self, row: Mapping[str, Any], timing_keys: Iterable[str]) -> None:
        """Stream one finished cell's row (its timing columns to the timings file)."""
        timing = set(timing_keys)
        text = {k: format_value(v) for k, v in row.items()}
        key = cell_key([text[c] for c in GRID_COLUMNS])
        main = {k: v for k, v in text.items() if k not in timing}
        time = {c: text[c] for c in GRID_COLUMNS} | {k: v for k, v in text.items() if k in timing}
        self.rows[key] = main
        self.timings[key] = time
        self.failures.pop(key, None)
        if self._main is None or self._time is None:
            return
        if set(main) <= set(self._main_columns) and set(time) <= set(self._time_columns):
            self._main.append(csv_lines([main], self._main_columns, header=False).encode("utf-8"))
            self._time.append(csv_lines([time], self._time_columns, header=False).encode("utf-8"))
        else:  # a row with new columns: both files again, with the wider headers
            self._rewrite()

    def fail(self, cell: Sequence[Any], error: str) -> None:
        """Record a cell that raised."""
        self.failures[cell_key(cell)] = error

    def timings_text(self) -> str:
        """The timings file's final text."""
        return sorted_text(self.timings)

    def failures_frame(self) -> pd.DataFrame:
        """The failed cells and their errors, one row each."""
        return pd.DataFrame(
            [dict(zip(FAILURE_COLUMNS, (*k, e), strict=True)) for k, e in self._sorted_failures()],
            columns=list(FAILURE_COLUMNS),
        )

    def _sorted_failures(self) -> list[tuple[CellKey, str]]:
        return sorted(self.failures.items(), key=lambda kv: _sort_key(kv[0]))

    def finish(self) -> str:
        """Sort every file into its final form; returns the final ``NAME.csv`` text."""
        text = sorted_text(self.rows)
        if self.out is None:
            return text
        files = {
            self.out.name: text,
            sidecar(self.out, "timings.csv").name: sorted_text(self.timings),
        }
        failures = sidecar(self.out, "failures.csv")
        if self.failures or failures.exists():
            files[failures.name] = sorted_text(
                {
                    k: dict(zip(FAILURE_COLUMNS, (*k, e), strict=True))
                    for k, e in self.failures.items()
                },
                FAILURE_COLUMNS,
            )
        write_files(self.out.parent, files)
        return text


def failure_line(failures: pd.DataFrame, limit: int = 3) -> str:
    """One line naming the failed cells (a ``failures_frame``) and why."""
    parts = [
        f"{r['policy']} load={r['load'] or 'scenario'} seed={r['seed']} "
        f"machines={r['machines']}: {r['error']}"
        for r in failures.head(limit).to_dict("records")
    ]
    more = len(failures) - limit
    return "; ".join(parts) + (f"; and {more} more" if more > 0 else "")


def check_out_for_resume(out: str | None) -> Path:
    """The ``--out`` path a resume needs."""
    if not out:
        raise InvalidInput("--resume needs --out FILE: the sweep file to continue")
    return Path(out)
