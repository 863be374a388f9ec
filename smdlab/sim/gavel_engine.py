"""``simulation.engine = "gavel"``: Gavel's policies in Gavel's mode behind ``smdlab simulate``.

A scenario with ``engine = "gavel"`` and a ``gavel`` workload (``--workload gavel:PATH``) runs
each ``gavel_*`` policy of ``GAVEL_ENGINE_POLICIES`` in Gavel's mode
(``smdlab.sim.gavel_mode.simulate_gavel_mode``: its rounds, arrivals at round boundaries, its
priorities and round-robin over the allocation matrix) on the trace as Gavel reads it; every other
policy runs in smdlab's simulator on the same trace (``smdlab.workloads.gavel.load_gavel``).
``gavel_mode_sim_result`` turns a Gavel-mode run into the ``SimResult`` every other run returns,
so tables, ``--json`` and ``--out`` treat both alike. Details: docs/heterogeneity.md.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping, Sequence
from itertools import pairwise
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from smdlab.errors import InvalidInput
from smdlab.model.cluster import Cluster
from smdlab.sim.gavel_mode import GavelModeResult, simulate_gavel_mode
from smdlab.sim.result import DECISION_COLUMNS, HISTORY_COLUMNS, JOB_COLUMNS, SimResult, summarize
from smdlab.workloads.gavel import (
    FAMILY_NETWORKS,
    GAVEL_TYPES,
    GavelTraceJob,
    gavel_pair_throughputs,
    read_gavel_trace,
)

__all__ = [
    "GAVEL_ENGINE_POLICIES",
    "check_gavel_engine",
    "cluster_spec",
    "gavel_engine_policies",
    "gavel_mode_sim_result",
    "run_engines",
    "run_gavel_engine",
]

# registered name -> Gavel's policy name (the policies Gavel's mode runs)
GAVEL_ENGINE_POLICIES = {
    "gavel_max_min_fairness": "max_min_fairness",
    "gavel_max_min_fairness_perf": "max_min_fairness_perf",
    "gavel_fifo_perf": "fifo_perf",
    "gavel_max_sum_throughput_perf": "max_sum_throughput_perf",
    "gavel_max_min_fairness_packed": "max_min_fairness_packed",
}


def gavel_engine_policies(
    policies: Sequence[str], variants: Mapping[str, Mapping[str, Any]] | None = None
) -> list[str]:
    """The names among ``policies`` that Gavel's mode runs (variants run smdlab's simulator)."""
    return [p for p in policies if p in GAVEL_ENGINE_POLICIES and p not in (variants or {})]


def cluster_spec(cluster: Cluster) -> dict[str, int]:
    """GPUs per Gavel type (k80, p100, v100) of a typed cluster; other types are refused."""
    spec = dict.fromkeys(GAVEL_TYPES, 0)
    for m in cluster.machines:
        gpus = m.capacity.get("gpu", 0)
        if gpus and m.gpu_type not in spec:
            raise InvalidInput(
                f"simulation.engine 'gavel': machine {m.name} has GPU type {m.gpu_type!r}; "
                f"allowed: {', '.join(GAVEL_TYPES)}"
            )
        if gpus:
            spec[m.gpu_type] += round(gpus)
    if not any(spec.values()):
        raise InvalidInput("simulation.engine 'gavel': the cluster has no GPUs")
    return spec


def check_gavel_engine(scenario: Any, cluster: Cluster) -> dict[str, int]:
    """Refuse a scenario Gavel's mode cannot run (not a gavel workload, GPU types Gavel lacks);
    return the cluster's GPUs per Gavel type."""
    kind = scenario.workload.get("kind")
    if kind != "gavel":
        raise InvalidInput(
            "simulation.engine 'gavel' runs Gavel traces (workload kind gavel, --workload "
            f"gavel:PATH); got workload kind {kind!r}"
        )
    if cluster.fabric is not None:
        raise InvalidInput(
            "simulation.engine 'gavel' has no network model; drop the cluster's [fabric] table"
        )
    if getattr(scenario, "storage", None) is not None:  # its micro-tasks run at fixed rates
        raise InvalidInput(
            "simulation.engine 'gavel' has no storage model (its rounds run micro-tasks at "
            "Gavel's fixed throughputs); drop the [storage] table or use engine 'smdlab'"
        )
    return cluster_spec(cluster)


def _utilization(res: GavelModeResult, spec: dict[str, int]) -> pd.DataFrame:
    """GPU use over time (all GPUs and each type), running and queued jobs, from the micro-tasks."""
    total = float(sum(spec.values()))
    events: list[tuple[float, int, int, str, int]] = []  # (time, order, round, type, +-gpus)
    per_round = np.bincount([t[1] for t in res.tasks], minlength=res.rounds)
    for r, start in enumerate(res.round_start):
        events.append((start, 1, r, "", 0))
    for _, r, start, end, t, _, gpus in res.tasks:
        events.append((start, 2, r, t, gpus))
        events.append((end, 0, r, t, -gpus))
    events.sort(key=lambda e: (e[0], e[1]))
    used = dict.fromkeys(GAVEL_TYPES, 0)
    running = queued = 0
    rows = []
    for when, kind, r, t, d in events:
        if kind == 1:
            running, queued = 0, int(res.round_active[r] - per_round[r])
        elif kind:
            used[t] += d
            running += 1
        else:
            used[t] += d
            running -= 1
        rows.append(
            (
                when,
                sum(used.values()) / total,
                *(used[k] / spec[k] if spec[k] else math.nan for k in GAVEL_TYPES),
                running,
                queued,
            )
        )
    cols = ["time", "gpu", *(f"gpu_{k}" for k in GAVEL_TYPES), "running", "queued"]
    return pd.DataFrame(rows, columns=cols).drop_duplicates("time", keep="last")


def _sharing(res: GavelModeResult, by_id: dict[int, GavelTraceJob]) -> float:
    """Time-weighted jobs per busy GPU (1.0 without pairs; NaN: nothing ran)."""
    held = sum((t[3] - t[2]) * by_id[t[0]].scale_factor for t in res.tasks)
    busy = sum((t[3] - t[2]) * t[6] for t in res.tasks)
    return held / busy if busy > 0 else math.nan


def gavel_mode_sim_result(
    res: GavelModeResult,
    trace: Sequence[GavelTraceJob],
    spec: dict[str, int],
    *,
    name: str,
    round_s: float,
    wall: float,
) -> SimResult:
    """A Gavel-mode run as a ``SimResult`` (samples are Gavel's steps; one row per micro-task)."""
    by_id = {j.job_id: j for j in trace}
    tasks: dict[int, list[tuple[int, int, float, float, str, int, int]]] = {}
    for task in res.tasks:
        tasks.setdefault(task[0], []).append(task)
    rows = []
    for j in trace:
        mine = tasks.get(j.job_id, [])
        run = float(sum(t[3] - t[2] for t in mine))
        # a resume after a round without the job, or a change of GPU type, is a restart
        gaps = sum(b[1] != a[1] + 1 for a, b in pairwise(mine))
        moves = sum(b[1] == a[1] + 1 and b[4] != a[4] for a, b in pairwise(mine))
        done = j.job_id in res.jct
        jct = res.jct[j.job_id] if done else math.nan
        rows.append(
            (
                str(j.job_id),
                FAMILY_NETWORKS[j.job_type.split(" (")[0]],
                j.arrival,
                mine[0][2] if mine else math.nan,
                res.finish[j.job_id] if done else math.nan,
                jct,
                jct - run if done else math.nan,
                run if done else math.nan,
                j.scale_factor,
                0,
                float(j.scale_factor) if mine else math.nan,
                0.0 if mine else math.nan,
                float(j.total_steps),
                float(sum(t[5] for t in mine)),
                j.priority_weight,
                gaps,
                0,
                gaps + moves,
                "completed" if done else "unfinished",
            )
        )
    jobs = pd.DataFrame(rows, columns=list(JOB_COLUMNS))
    history = pd.DataFrame(
        [
            (str(jid), s, e, by_id[jid].scale_factor, 0, steps / (e - s) if e > s else 0.0, steps)
            for jid, _, s, e, _, steps, _ in res.tasks
        ],
        columns=list(HISTORY_COLUMNS),
    )
    util = _utilization(res, spec)
    ran: list[set[int]] = [set() for _ in range(res.rounds)]
    for jid, r, *_ in res.tasks:
        ran[r].add(jid)
    decisions = pd.DataFrame(
        [
            (
                res.round_start[r],
                res.round_wall_s[r],
                len(ran[r] - ran[r - 1]) if r else len(ran[r]),
                len({i for i in ran[r - 1] - ran[r] if res.finish.get(i, math.inf) > t0})
                if r
                else 0,
                0,
                res.round_active[r] - len(ran[r]),
                len(ran[r]),
            )
            for r, t0 in enumerate(res.round_start)
        ],
        columns=list(DECISION_COLUMNS),
    )
    resources = ["gpu", *(f"gpu_{k}" for k in GAVEL_TYPES)]
    summary = summarize(jobs, util, decisions, resources)
    summary.update(
        mean_jct_lower_bound=math.nan,
        execution="gavel_mode",
        slot_s=float(round_s),
        restart_s=0.0,
        sim_wall_s=wall,
        gpu_sharing=_sharing(res, by_id),
        engine="gavel",
        jobs_dropped=len(res.dropped),
        rounds=res.rounds,
        recomputations=res.recomputations,
        solver=res.solver,
    )
    return SimResult(name, jobs, history, util, decisions, summary, ())


def run_gavel_engine(
    scenario: Any,
    cluster: Cluster,
    policies: Sequence[str],
    *,
    policy_options: Mapping[str, Mapping[str, Any]] | None = None,
) -> dict[str, SimResult]:
    """Run ``policies`` (keys of ``GAVEL_ENGINE_POLICIES``) in Gavel's mode on the scenario's trace.

    Gavel's scheduler seed is the scenario's seed; a round lasts ``simulation.slot_s`` (else the
    policy's ``round_s``); the LP solver is the policy's ``solver`` option, the pair throughputs
    of ``gavel_max_min_fairness_packed`` its ``pair_throughputs`` (relative to the scenario file).
    """
    from smdlab.sim.runner import policy_instance

    spec = check_gavel_engine(scenario, cluster)
    w = scenario.workload
    path = Path(w["path"])
    if not path.is_absolute() and scenario.base_dir is not None:
        path = scenario.base_dir / path
    trace = read_gavel_trace(path, max_gpus=sum(spec.values()), first=w.get("jobs"))
    out = {}
    for name in policies:
        if name not in GAVEL_ENGINE_POLICIES:
            raise InvalidInput(
                f"policy {name!r} has no Gavel mode; allowed: {', '.join(GAVEL_ENGINE_POLICIES)}"
            )
        policy = policy_instance(name, policy_options)
        round_s = float(scenario.simulation.get("slot_s") or policy.round_s)
        t0 = time.perf_counter()
        pairs = getattr(policy, "pair_throughputs", None)
        if pairs is not None and not Path(pairs).is_absolute() and scenario.base_dir is not None:
            pairs = scenario.base_dir / pairs
        res = simulate_gavel_mode(
            trace,
            spec,
            GAVEL_ENGINE_POLICIES[name],
            seed=int(scenario.seed),
            solver=getattr(policy, "solver", "auto"),
            pair_rates=gavel_pair_throughputs(pairs) if pairs is not None else None,
            round_s=round_s,
        )
        wall = time.perf_counter() - t0
        out[name] = gavel_mode_sim_result(res, trace, spec, name=name, round_s=round_s, wall=wall)
    return out


def run_engines(
    scenario: Any,
    jobs: Sequence[Any],
    cluster: Cluster,
    *,
    on_start: Callable[[str], None] | None = None,
    progress: bool = False,
) -> dict[str, SimResult]:
    """Every policy of the scenario, keyed in its order: with ``simulation.engine = "gavel"`` the
    ``gavel_*`` ones in Gavel's mode, the others in smdlab's simulator on ``jobs``.

    on_start(note): called once the policies are checked, before the first run; ``note`` says
    which simulator runs which policies ("" with smdlab's engine alone).
    """
    from smdlab.sim.runner import run_policies, simulation_options

    gavel: list[str] = []
    note = ""
    if scenario.simulation.get("engine", "smdlab") == "gavel":
        gavel = gavel_engine_policies(scenario.policies, scenario.variants)
        if gavel:
            check_gavel_engine(scenario, cluster)
        others = ", ".join(p for p in scenario.policies if p not in gavel) or "none"
        note = f"; Gavel's mode: {', '.join(gavel) or 'none'}; smdlab's simulator: {others}"
    rest = [p for p in scenario.policies if p not in gavel]
    results: dict[str, SimResult] = {}
    if rest:
        results = run_policies(
            jobs,
            cluster,
            rest,
            policy_options=scenario.policy_options,
            variants=scenario.variants,
            on_start=None if on_start is None else lambda: on_start(note),
            progress=progress,
            **simulation_options(scenario),
        )
    elif on_start is not None:
        on_start(note)
    if gavel:
        results.update(
            run_gavel_engine(scenario, cluster, gavel, policy_options=scenario.policy_options)
        )
    return {p: results[p] for p in scenario.policies}
