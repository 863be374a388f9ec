"""Chronus' lease packing: which future leases each accepted SLO job holds, and which option it takes.

An option row is one (job, deadline option): the job needs ``req`` leases of ``res`` GPUs, all
before its option's deadline, i.e. among the first ``maxl`` leases counted from the packing's
first lease (column 0). ``free[l]`` is the GPUs lease l still has. Three solvers, each read from
the artifact (S-Lab-System-Group/ChronusArtifact, ``code/alg/scheduler/solver.py``, MIT licence,
Copyright (c) 2021 S-Lab System Group) and written anew:

- ``packable``: the greedy admission check (``batch_fast_check_if_packable``): rows by most GPUs,
  then least slack (maxl - req), then latest deadline; each job once (its first row in that
  order); each takes the latest leases with room, from its deadline backwards.
- ``greedy_selection``: the greedy fall-back (``batch_fast_job_selection``): rows by highest
  value first, then as above; a job takes the first of its rows that fits, latest leases first.
- ``milp_selection``: the lease MILP (``MIPSolver.job_selection``): x[r, l] = row r holds lease
  l, s[r] = row r is the job's option; sum_l x[r, l] = req_r s[r] (l < maxl_r), each job exactly
  one option, per lease GPUs <= free[l]; maximise sum value_r s[r] + sign x sum_r res_r x[r, 0] /
  max(free) (sign +1: use GPUs now; -1 when unaccepted SLO jobs wait, to leave room for them).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from smdlab.solve.binary_program import solve_binary

# Relative gap at which the MILP stops: python-mip's default max_mip_gap, which the artifact keeps.
MIP_GAP = 1e-4


@dataclass(frozen=True)
class Row:
    """One (job, deadline option): leases needed, GPUs per lease, last lease + 1, value, option."""

    job: str
    vid: int
    res: int
    req: int
    maxl: int
    value: float


def _columns(free: Sequence[float], n: int, total: float) -> list[float]:
    out = list(free[:n])
    return out + [total] * (n - len(out))


def _take_latest(free: list[float], row: Row) -> list[int] | None:
    """Leases (latest first, from the row's deadline back) the row takes from ``free`` (updated)."""
    got: list[int] = []
    for col in range(min(row.maxl, len(free)) - 1, -1, -1):
        if len(got) == row.req:
            break
        if free[col] >= row.res:
            free[col] -= row.res
            got.append(col)
    if len(got) == row.req:
        return got
    for col in got:
        free[col] += row.res
    return None


def packable(rows: Sequence[Row], free: Sequence[float], total: float) -> bool:
    """Whether the greedy check packs one row per job of ``rows`` into ``free`` (module docstring)."""
    if not rows:
        return True
    cols = _columns(free, max(r.maxl for r in rows), total)
    seen: set[str] = set()
    for r in sorted(rows, key=lambda r: (-r.res, r.maxl - r.req, -r.maxl)):
        if r.job in seen:
            continue
        seen.add(r.job)
        if r.req > r.maxl or _take_latest(cols, r) is None:
            return False
    return True


def greedy_selection(
    rows: Sequence[Row], free: Sequence[float], total: float
) -> dict[str, tuple[int, list[int]]]:
    """Job -> (option, leases) of the greedy fall-back; a job with no row that fits is left out."""
    if not rows:
        return {}
    cols = _columns(free, max(r.maxl for r in rows), total)
    out: dict[str, tuple[int, list[int]]] = {}
    for r in sorted(rows, key=lambda r: (-r.value, -r.res, r.maxl - r.req, -r.maxl)):
        if r.job in out:
            continue
        got = _take_latest(cols, r)
        if got is not None:
            out[r.job] = (r.vid, got)
    return out


def milp_selection(
    rows: Sequence[Row],
    free: Sequence[float],
    total: float,
    *,
    use_now: int = 1,
    time_limit: float | None = 5.0,
    backend: str = "highs",
    mip_gap: float | None = MIP_GAP,
    start: dict[str, tuple[int, list[int]]] | None = None,
) -> tuple[dict[str, tuple[int, list[int]]] | None, str]:
    """Job -> (option, leases) of the lease MILP (module docstring), or None without a solution.

    use_now: +1 or -1, the sign of the term for GPUs used in lease 0. start: a plan offered as
    the first incumbent (job -> option and leases, as returned). Returns the solver status too.
    """
    if not rows:
        return {}, "optimal"
    by_job: dict[str, list[Row]] = {}
    for r in rows:
        by_job.setdefault(r.job, []).append(r)
    if any(all(r.req > r.maxl for r in rs) for rs in by_job.values()):
        return None, "infeasible"  # a job fits none of its options: no solution
    width = max(r.maxl for r in rows)
    cols = np.array(_columns(free, width, total), dtype=float)
    if sum(max(r.res for r in rs) for rs in by_job.values()) <= cols.min():
        # Every job fits every lease at once: no lease binds, and the MILP's optimum is each
        # job's most valuable option it has leases for, holding lease 0 iff the sign is +1.
        out: dict[str, tuple[int, list[int]]] = {}
        for name, rs in by_job.items():
            best = max((r for r in rs if r.req <= r.maxl), key=lambda r: (r.value, -r.vid))
            first = 0 if use_now > 0 else best.maxl - best.req
            out[name] = (best.vid, list(range(first, first + best.req)))
        return out, "optimal"
    # A plan never needs a lease past the jobs' total lease count (+1): a later lease could move
    # into an empty earlier one (at most that many leases hold anything).
    cap = sum(max(r.req for r in rs) for rs in by_job.values()) + 1
    rows = [Row(r.job, r.vid, r.res, r.req, min(r.maxl, cap), r.value) for r in rows]
    n = len(rows)
    width = max(r.maxl for r in rows)
    cols = cols[:width]
    top = float(max(cols.max(), 1.0))
    # variables: x[r, l] for l < maxl_r (flattened), then s[r]
    starts = np.cumsum([0] + [r.maxl for r in rows])
    nx = int(starts[-1])
    nvar = nx + n
    c = np.zeros(nvar)
    c[nx:] = [r.value for r in rows]
    for k, r in enumerate(rows):
        if r.maxl > 0:
            c[starts[k]] += use_now * r.res / top
    data, ri, ci = [], [], []
    lo, hi = [], []
    row = 0
    for k, r in enumerate(rows):  # sum_l x = req * s
        idx = range(int(starts[k]), int(starts[k + 1]))
        data += [1.0] * len(idx) + [-float(r.req)]
        ri += [row] * (len(idx) + 1)
        ci += [*idx, nx + k]
        lo.append(0.0)
        hi.append(0.0)
        row += 1
    jobs: dict[str, list[int]] = {}
    for k, r in enumerate(rows):
        jobs.setdefault(r.job, []).append(k)
    for ks in jobs.values():  # exactly one option per job
        data += [1.0] * len(ks)
        ri += [row] * len(ks)
        ci += [nx + k for k in ks]
        lo.append(1.0)
        hi.append(1.0)
        row += 1
    for col in range(width):  # GPUs per lease
        members = [k for k, r in enumerate(rows) if r.maxl > col]
        if not members:
            continue
        data += [float(rows[k].res) for k in members]
        ri += [row] * len(members)
        ci += [int(starts[k]) + col for k in members]
        lo.append(-np.inf)
        hi.append(cols[col])
        row += 1
    a = sp.csr_matrix((data, (ri, ci)), shape=(row, nvar))
    x0 = None
    if start:
        x0 = np.zeros(nvar)
        for k, r in enumerate(rows):
            plan = start.get(r.job)
            if plan is not None and plan[0] == r.vid and all(col < r.maxl for col in plan[1]):
                x0[nx + k] = 1.0
                x0[[int(starts[k]) + col for col in plan[1]]] = 1.0
    res = solve_binary(
        c, a, np.array(lo), np.array(hi), time_limit=time_limit, backend=backend,
        start=x0, mip_gap=mip_gap,
    )  # fmt: skip
    if res.x is None:
        return None, res.status
    chosen: dict[str, tuple[int, list[int]]] = {}
    for k, r in enumerate(rows):
        if res.x[nx + k] > 0.5:
            x = res.x[int(starts[k]) : int(starts[k + 1])]
            chosen[r.job] = (r.vid, [int(i) for i in np.flatnonzero(x > 0.5)])
    return chosen, res.status
