"""What a simulation returns: per-job table, allocation history, utilisation over time, summary."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

JOB_COLUMNS = (
    "job",
    "network",
    "arrival",
    "start",
    "finish",
    "jct",
    "queueing_delay",
    "run_time",
    "workers",
    "ps",
    "mean_workers",
    "mean_ps",
    "samples",
    "samples_done",
    "weight",
    "preemptions",
    "resizes",
    "restarts",
    "status",
)
HISTORY_COLUMNS = ("job", "start", "end", "workers", "ps", "speed", "samples")
DECISION_COLUMNS = ("time", "scheduler_s", "started", "preempted", "resized", "queued", "running")
# Summary entries every consumer (CLI --json, sweeps) can rely on.
SUMMARY_KEYS = (
    "jobs",
    "jobs_completed",
    "jobs_skipped",
    "mean_jct",
    "mean_jct_lower_bound",
    "median_jct",
    "p95_jct",
    "p99_jct",
    "weighted_jct_total",
    "mean_queueing_delay",
    "makespan",
    "utilization",
    "scheduler_time_s",
    "scheduler_time_per_decision_s",
    "scheduler_time_max_s",
    "decisions",
    "preemptions",
    "resizes",
    "restarts",
    "execution",
    "slot_s",
    "restart_s",
    "sim_wall_s",
    "gpu_sharing",
)
# Per-job columns and summary entries a run adds when any of its jobs has an SLO (``Job.slo``);
# a run without SLO jobs keeps exactly the columns and keys above.
SLO_JOB_COLUMNS = ("job_class", "deadline", "deadline_met", "value", "max_value", "lateness")
SLO_SUMMARY_KEYS = (
    "slo_jobs",
    "best_effort_jobs",
    "hard_miss_rate",
    "weighted_miss_rate",
    "value_earned",
    "best_effort_mean_jct",
    "slo_goodput",
)
# Summary entries that are wall-clock measurements: they differ between two runs of the same input.
TIMING_KEYS = (
    "scheduler_time_s",
    "scheduler_time_per_decision_s",
    "scheduler_time_max_s",
    "sim_wall_s",
)


@dataclass(frozen=True, eq=False)
class SimResult:
    """Outcome of one simulation run.

    policy: name of the policy.
    jobs: one row per job (columns ``JOB_COLUMNS``); times in seconds; ``workers``/``ps`` are the
        first allocation, ``mean_workers``/``mean_ps`` the time-weighted means while running;
        ``queueing_delay`` is the time spent waiting (JCT minus running time); ``status`` is
        ``completed`` or ``skipped``.
    history: one row per constant-allocation segment (job, start, end, workers, ps, speed, samples).
    utilization: step function over time: from ``time`` to the next row, the fraction of the
        pooled capacity in use per resource, and the numbers of running and queued jobs.
    decisions: one row per call of the policy (time, scheduler seconds, started, preempted, resized,
        queued and running after the decision).
    summary: aggregate metrics (keys ``SUMMARY_KEYS``; ``utilization`` maps resource -> mean fraction;
        ``restarts`` counts checkpoint-restarts: re-allocations of running jobs and resumptions of
        preempted ones; ``execution``, ``slot_s`` (NaN: none) and ``restart_s`` say how the run
        was executed).
    skipped: names of jobs that fit on no machine (``unfit="skip"``).
    """

    policy: str
    jobs: pd.DataFrame
    history: pd.DataFrame
    utilization: pd.DataFrame
    decisions: pd.DataFrame
    summary: Mapping[str, Any]
    skipped: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        """The summary as plain JSON-ready Python values (NaN -> None)."""
        return _jsonable(dict(self.summary))

    def summary_row(self) -> dict[str, Any]:
        """The summary flattened to one row (``utilization`` -> ``util_<resource>`` columns)."""
        row = {k: v for k, v in self.summary.items() if k != "utilization"}
        row.update({f"util_{r}": v for r, v in self.summary["utilization"].items()})
        return {"policy": self.policy, **row}


def _jsonable(x: Any) -> Any:
    if isinstance(x, Mapping):
        return {str(k): _jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_jsonable(v) for v in x]
    if isinstance(x, (np.integer,)):
        return int(x)
    if isinstance(x, (float, np.floating)):
        return None if not math.isfinite(float(x)) else float(x)
    return x


def _percentile(values: np.ndarray, q: float) -> float:
    return float(np.percentile(values, q)) if values.size else math.nan


def _add_type_utilization(sim, util: pd.DataFrame, jobs: pd.DataFrame, summary: dict) -> None:
    """On a cluster with GPU types: ``gpu_<type>`` utilisation columns and summary entries."""
    types = sim.machine_types
    rows = sim.log.type_rows
    if types is None or sim.gpu_index is None or len(rows) != len(util) or not len(util):
        return
    kinds = list(dict.fromkeys(types))
    gpus = sim.capacity[:, sim.gpu_index]
    held = np.array([r[1:] for r in rows], dtype=float)
    for k, kind in enumerate(kinds):
        cap = float(sum(g for g, t in zip(gpus, types, strict=True) if t == kind))
        util[f"gpu_{kind}"] = held[:, k] / cap if cap > 0 else math.nan
    done = jobs[jobs["status"] == "completed"]
    part = {f"gpu_{kind}": math.nan for kind in kinds}
    if len(done):  # time-weighted means over the same window as ``summarize``
        t0 = float(jobs.loc[jobs["status"] != "skipped", "arrival"].min())
        t_end = float(done["finish"].max())
        if t_end > t0:
            times = util["time"].to_numpy(dtype=float)
            widths = np.diff(np.append(np.clip(times, t0, t_end), t_end))
            for c in part:
                part[c] = float(np.nansum(util[c].to_numpy(dtype=float) * widths) / (t_end - t0))
    summary["utilization"] = {**summary["utilization"], **part}


def build_result(sim, wall: float) -> SimResult:
    """Assemble a SimResult from a finished simulator's bookkeeping (``sim.log``)."""
    jobs = sim.jobs
    log = sim.log
    rows = []
    for j, rec in zip(jobs, log.records):
        done = rec.status == "completed"
        jct = rec.finish - j.arrival if done else math.nan
        rows.append(
            (
                j.name,
                j.profile.network,
                j.arrival,
                rec.first_start,
                rec.finish,
                jct,
                jct - rec.run_time if done else math.nan,
                rec.run_time if done else math.nan,
                rec.workers,
                rec.ps,
                rec.worker_time / rec.run_time if rec.run_time > 0 else math.nan,
                rec.ps_time / rec.run_time if rec.run_time > 0 else math.nan,
                j.samples,
                rec.samples_done,
                j.weight,
                rec.preemptions,
                rec.resizes,
                rec.restarts,
                rec.status if rec.status in ("completed", "skipped") else "unfinished",
            )
        )
    job_df = pd.DataFrame(rows, columns=list(JOB_COLUMNS))
    has_slo = any(j.slo is not None for j in jobs)
    if has_slo:
        add_slo_columns(job_df, jobs)
    history = pd.DataFrame(log.history, columns=list(HISTORY_COLUMNS))
    resources = list(sim.resources)
    util = pd.DataFrame(log.util_rows, columns=["time", *resources, "running", "queued"])
    cap = sim.pooled_capacity
    with np.errstate(divide="ignore", invalid="ignore"):
        for k, r in enumerate(resources):
            util[r] = util[r] / cap[k] if cap[k] > 0 else math.nan
    decisions = pd.DataFrame(log.decisions, columns=list(DECISION_COLUMNS))
    measured = np.array([j.measured for j in jobs], dtype=bool)
    # An input that measures only some jobs (the others load the cluster): figures over those.
    summary = summarize(job_df if measured.all() else job_df[measured], util, decisions, resources)
    if not measured.all():
        summary["jobs_measured"] = int(measured.sum())
    if has_slo:
        summary.update(slo_summary(job_df if measured.all() else job_df[measured]))
    _add_type_utilization(sim, util, job_df, summary)
    if sim.rack_of is not None:  # racked clusters only: flat summaries unchanged
        summary["cross_rack_gb"] = float(log.cross_rack_bytes) / 1e9
    summary["execution"] = sim.execution
    summary["slot_s"] = math.nan if sim.delta is None else float(sim.delta)
    summary["restart_s"] = float(sim.restart_s)
    summary["sim_wall_s"] = wall
    summary["gpu_sharing"] = log.gpu_sharing()
    if getattr(sim, "storage_run", None) is not None:  # runs with storage only
        summary.update(sim.storage_run.summary())
    from smdlab.sim.bound import run_bound

    summary["mean_jct_lower_bound"] = run_bound(sim, job_df)
    return SimResult(sim.policy_name, job_df, history, util, decisions, summary, tuple(sim.skipped))


def summarize(
    jobs: pd.DataFrame, util: pd.DataFrame, decisions: pd.DataFrame, resources: list[str]
) -> dict[str, Any]:
    """Aggregate metrics of one run (see ``SimResult.summary``)."""
    done = jobs[jobs["status"] == "completed"]
    jct = done["jct"].to_numpy(dtype=float)
    if len(done):
        t0 = float(jobs.loc[jobs["status"] != "skipped", "arrival"].min())
        t_end = float(done["finish"].max())
        makespan = t_end - t0
    else:
        t0 = t_end = makespan = math.nan
    utilization = {}
    if len(done) and makespan > 0 and len(util):
        times = util["time"].to_numpy(dtype=float)
        widths = np.diff(np.append(np.clip(times, t0, t_end), t_end))
        for r in resources:
            utilization[r] = float(np.nansum(util[r].to_numpy(dtype=float) * widths) / makespan)
    else:
        utilization = {r: math.nan for r in resources}
    spent = decisions["scheduler_s"].to_numpy(dtype=float)
    return {
        "jobs": len(jobs),
        "jobs_completed": len(done),
        "jobs_skipped": int((jobs["status"] == "skipped").sum()),
        "mean_jct": float(jct.mean()) if jct.size else math.nan,
        "median_jct": _percentile(jct, 50),
        "p95_jct": _percentile(jct, 95),
        "p99_jct": _percentile(jct, 99),
        "weighted_jct_total": float((done["weight"] * done["jct"]).sum()),
        "mean_queueing_delay": float(done["queueing_delay"].mean()) if len(done) else math.nan,
        "makespan": makespan,
        "utilization": utilization,
        "scheduler_time_s": float(spent.sum()),
        "scheduler_time_per_decision_s": float(spent.mean()) if spent.size else 0.0,
        "scheduler_time_max_s": float(spent.max()) if spent.size else 0.0,
        "decisions": int(spent.size),
        "preemptions": int(jobs["preemptions"].sum()),
        "resizes": int(jobs["resizes"].sum()),
        "restarts": int(jobs["restarts"].sum()) if "restarts" in jobs else 0,
    }


def add_slo_columns(job_df: pd.DataFrame, jobs) -> None:
    """Add ``SLO_JOB_COLUMNS`` to a per-job table (``smdlab.model.slo``; NaN for best-effort jobs).

    deadline: absolute time of the first deadline; deadline_met: finished by it; value: what the
    job earned (0 unless completed in time); lateness: finish - deadline (negative: early).
    """
    finish = job_df["finish"].to_numpy(dtype=float)
    done = (job_df["status"] == "completed").to_numpy()
    cls, deadline, met, value, top, late = [], [], [], [], [], []
    for k, j in enumerate(jobs):
        cls.append(j.job_class)
        if j.slo is None:
            deadline.append(math.nan)
            met.append(math.nan)
            value.append(math.nan)
            top.append(math.nan)
            late.append(math.nan)
            continue
        d = j.arrival + j.slo.first_deadline_s
        f = finish[k] if done[k] else math.inf
        deadline.append(d)
        earned = j.slo.earned(j.arrival, f)
        met.append(float(earned == j.slo.max_value))
        value.append(earned)
        top.append(j.slo.max_value)
        late.append(f - d if done[k] else math.nan)
    job_df["job_class"] = cls
    job_df["deadline"] = deadline
    job_df["deadline_met"] = met
    job_df["value"] = value
    job_df["max_value"] = top
    job_df["lateness"] = late


def slo_summary(jobs: pd.DataFrame) -> dict[str, Any]:
    """``SLO_SUMMARY_KEYS`` of a per-job table with SLO columns (skipped jobs left out).

    hard_miss_rate: fraction of SLO jobs that missed their first deadline (unfinished ones miss);
    weighted_miss_rate: mean of 1 - value / first option's value over SLO jobs (Chronus' metric);
    value_earned: total value; best_effort_mean_jct: mean JCT of completed best-effort jobs;
    slo_goodput: of the worker-seconds SLO jobs ran (run time x mean workers), the fraction spent
        on jobs that earned a value.
    """
    live = jobs[jobs["status"] != "skipped"]
    slo = live[live["job_class"] == "slo"]
    best = live[(live["job_class"] == "best_effort") & (live["status"] == "completed")]
    n = len(slo)
    met = slo["deadline_met"].to_numpy(dtype=float)
    frac = (slo["value"] / slo["max_value"]).to_numpy(dtype=float)
    run = (slo["run_time"] * slo["mean_workers"]).fillna(0.0).to_numpy(dtype=float)
    earned_any = slo["value"].to_numpy(dtype=float) > 0
    return {
        "slo_jobs": n,
        "best_effort_jobs": int((live["job_class"] == "best_effort").sum()),
        "hard_miss_rate": float(1.0 - met.mean()) if n else math.nan,
        "weighted_miss_rate": float(1.0 - frac.mean()) if n else math.nan,
        "value_earned": float(slo["value"].sum()),
        "best_effort_mean_jct": float(best["jct"].mean()) if len(best) else math.nan,
        "slo_goodput": float(run[earned_any].sum() / run.sum()) if run.sum() > 0 else math.nan,
    }
