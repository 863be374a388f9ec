"""Per-job parity with the Chronus artifact: smdlab's ``chronus`` on the artifact's traces.

Usage::

    python tools/chronus_parity.py FIXTURES [--solver milp|greedy] [--only NAME ...] [--out CSV]

FIXTURES: a folder holding ``inputs/<trace>.csv`` (traces in the artifact's format) and
``runs/<trace>_n<N>_<mode>.csv`` (the artifact's per-job output on N machines of 8 GPUs, mode
``mip`` or ``greedy``; columns job_id, end_time, best_effort, gt_miss_ddl, miss_ddl,
submit_time). Each run is repeated with ``chronus`` (``solver="milp"`` for ``mip``, ``"greedy"``
for ``greedy``) and printed as one row: the share of jobs ending within one lease (20 min) and
one minute of the artifact, both runs' hard and value-weighted miss rates and best-effort mean
JCT (min), smdlab's wall time and its slowest lease solve. ``--by-resume`` adds how smdlab's
end times drift with how each job started in the artifact (``drift_by_starts``: least-squares
minutes per resume and per fill start, the constant, and the share of jobs ending later).
``--restart-scale X`` multiplies every job's restart cost (0: restarts free, an ablation).
"""

from __future__ import annotations

import argparse
import time

import pandas as pd

from smdlab.experiments.chronus_parity import (
    chronus_parity,
    drift_by_starts,
    fixture_runs,
    parity_row,
)


def main() -> None:
    """Run the parity table (module docstring)."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("fixtures")
    ap.add_argument("--solver", choices=("milp", "greedy"))
    ap.add_argument("--only", nargs="*")
    ap.add_argument("--out")
    ap.add_argument("--by-resume", action="store_true")
    ap.add_argument("--restart-scale", type=float, default=1.0)
    args = ap.parse_args()
    rows = []
    for name, trace, ref, nodes, solver in fixture_runs(args.fixtures):
        if (args.solver and solver != args.solver) or (args.only and name not in args.only):
            continue
        t0 = time.perf_counter()
        res = chronus_parity(
            trace, ref, nodes=nodes, solver=solver, restart_scale=args.restart_scale
        )
        row = parity_row(name, res)
        row["wall_s"] = round(time.perf_counter() - t0, 1)
        row["lease_solve_max_s"] = round(res["lease_solve_max_s"], 3)
        if args.by_resume:
            row.update({f"drift_{k}": round(v, 3) for k, v in drift_by_starts(res).items()})
        rows.append(row)
        print(pd.DataFrame([row]).to_string(index=False, header=len(rows) == 1), flush=True)
    if args.out:
        pd.DataFrame(rows).to_csv(args.out, index=False)


if __name__ == "__main__":
    main()
