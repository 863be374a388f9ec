"""smdlab's ``chronus`` policy beside the Chronus artifact's own output on the same trace and cluster.

The artifact (S-Lab-System-Group/ChronusArtifact, MIT licence, Copyright (c) 2021 S-Lab System
Group) was run outside the project on a trace in its format; its per-job output (columns
``job_id, end_time, best_effort, gt_miss_ddl, miss_ddl, submit_time``, minutes) is compared with
a run of ``Chronus`` on ``nodes`` machines of 8 GPUs (``solver="milp"`` for the artifact's MILP
runs, ``"greedy"`` for its greedy fall-back). docs/deadlines.md lists the differences that remain.
"""

from __future__ import annotations

import os
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from smdlab.errors import InvalidInput, check_choice, check_int, check_positive
from smdlab.model.cluster import Cluster
from smdlab.sim import simulate
from smdlab.workloads.chronus import load_chronus

LEASE_MIN = 20.0


def artifact_metrics(ref: pd.DataFrame) -> dict[str, float]:
    """Hard and value-weighted miss rates over SLO jobs and best-effort mean JCT (minutes) of an artifact output."""
    slo = ref[ref["best_effort"] == 0]
    best = ref[ref["best_effort"] == 1]
    return {
        "hard_miss_rate": float(slo["gt_miss_ddl"].mean()) if len(slo) else float("nan"),
        "weighted_miss_rate": float(slo["miss_ddl"].mean()) if len(slo) else float("nan"),
        "best_effort_mean_jct_min": float((best["end_time"] - best["submit_time"]).mean())
        if len(best)
        else float("nan"),
    }


def chronus_parity(
    trace: str | os.PathLike,
    reference: str | os.PathLike,
    *,
    nodes: int,
    gpus_per_node: int = 8,
    solver: str = "milp",
    restart_scale: float = 1.0,
) -> dict[str, Any]:
    """Run ``chronus`` on ``trace`` and compare with the artifact's per-job ``reference`` output.

    Returns the three metrics of both runs, the share of jobs whose end times agree within one
    lease (20 min) and within one minute, and the per-job table (``jobs``: job_id, end_time,
    ours_end, diff, minutes). restart_scale: multiply every job's restart cost (1: the artifact's
    30 (1 + log2 g) s; 0: restarts cost nothing, an ablation of the overhead rule).
    """
    restart_scale = check_positive("restart_scale", restart_scale, allow_zero=True)
    nodes = check_int("nodes", nodes, 1)
    gpus_per_node = check_int("gpus_per_node", gpus_per_node, 1)
    check_choice("solver", solver, ("milp", "greedy"))
    from smdlab.policies.deadline.chronus import Chronus

    ref = pd.read_csv(reference)
    missing = [
        c for c in ("job_id", "end_time", "best_effort", "gt_miss_ddl", "miss_ddl", "submit_time")
        if c not in ref.columns
    ]  # fmt: skip
    if missing:
        raise InvalidInput(f"{reference}: missing column(s) {', '.join(missing)}")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the num_gpu 0 rows: the artifact skips them too
        jobs = load_chronus(trace)
    if restart_scale != 1.0:
        jobs = [j.replace(restart_s=(j.restart_s or 0.0) * restart_scale) for j in jobs]
    cluster = Cluster.homogeneous(nodes, gpu=gpus_per_node, cpu=128, mem_gb=256, bw_gbps=100)
    policy = Chronus(solver=solver)
    res = simulate(jobs, cluster, policy, record_history=False)
    ours = res.jobs.set_index("job")
    names = ref["job_id"].astype(str)
    if not set(names) <= set(ours.index):
        raise InvalidInput(f"{reference}: job ids not in {trace}")
    table = pd.DataFrame(
        {
            "job_id": names,
            "end_time": ref["end_time"],
            "ours_end": ours["finish"].reindex(names.to_numpy()).to_numpy() / 60.0,
        }
    )
    for col in ("resume", "preempt"):  # how each job started in the artifact (drift_by_starts)
        if col in ref.columns:
            table[col] = ref[col].to_numpy()
    table["diff"] = table["ours_end"] - table["end_time"]
    s = res.summary
    mine = {
        "hard_miss_rate": s["hard_miss_rate"],
        "weighted_miss_rate": s["weighted_miss_rate"],
        "best_effort_mean_jct_min": s["best_effort_mean_jct"] / 60.0,
    }
    theirs = artifact_metrics(ref)
    d = table["diff"].abs().to_numpy()
    return {
        "jobs": len(table),
        "within_lease": float(np.mean(d <= LEASE_MIN)),
        "within_minute": float(np.mean(d <= 1.0)),
        "artifact": theirs,
        "smdlab": mine,
        "lease_solves": len(policy.lease_solves),
        "lease_solve_max_s": max((x[3] for x in policy.lease_solves), default=0.0),
        "jobs_table": table,
    }


def drift_by_starts(result: dict[str, Any]) -> dict[str, float]:
    """How smdlab's end times drift from the artifact's with the ways each job started there.

    Least squares of diff (smdlab end - artifact end, minutes) on two counts from the artifact's
    output: ``resume`` (starts at a lease boundary or a 5-minute pass, each charged a resume
    overhead there) and fill starts (``preempt`` + 1 - ``resume``: odd-minute fills, charged
    nothing and credited progress from the job's last check; docs/deadlines.md). Returns
    ``const``, ``per_resume`` and ``per_fill`` (minutes), and ``later`` (share of jobs ending later
    in smdlab).
    """
    table = result["jobs_table"]
    if not {"resume", "preempt"} <= set(table.columns):
        raise InvalidInput("the reference output has no resume and preempt columns")
    resume = table["resume"].to_numpy(dtype=float)
    fill = np.clip(table["preempt"].to_numpy(dtype=float) + 1 - resume, 0, None)
    y = table["diff"].to_numpy(dtype=float)
    ok = np.isfinite(resume) & np.isfinite(fill) & np.isfinite(y)
    x = np.c_[np.ones(int(ok.sum())), resume[ok], fill[ok]]
    coef = np.linalg.lstsq(x, y[ok], rcond=None)[0]
    return {
        "const": float(coef[0]),
        "per_resume": float(coef[1]),
        "per_fill": float(coef[2]),
        "later": float(np.mean(y[ok] > 0)),
    }


def parity_row(name: str, result: dict[str, Any]) -> dict[str, Any]:
    """One flat row of ``chronus_parity``'s result (for a table)."""
    row: dict[str, Any] = {"run": name, "jobs": result["jobs"]}
    row["within_lease"] = result["within_lease"]
    row["within_minute"] = result["within_minute"]
    for side in ("artifact", "smdlab"):
        for k, v in result[side].items():
            row[f"{side}_{k}"] = v
    return row


def fixture_runs(folder: str | os.PathLike) -> list[tuple[str, Path, Path, int, str]]:
    """(name, trace, reference, nodes, solver) of every ``runs/<trace>_n<N>_<mode>.csv`` in a fixture folder."""
    root = Path(folder)
    out = []
    for ref in sorted((root / "runs").glob("*_n*_*.csv")):
        stem, _, rest = ref.stem.rpartition("_n")
        nodes, _, mode = rest.partition("_")
        trace = root / "inputs" / f"{stem}.csv"
        if trace.is_file() and nodes.isdigit() and mode in ("mip", "greedy"):
            out.append((ref.stem, trace, ref, int(nodes), "milp" if mode == "mip" else "greedy"))
    return out
