"""Gavel's mode: Gavel's round-based simulation of a Gavel trace, rule by rule.

Source: stanford-futuredata/gavel (MIT licence, Copyright (c) 2020 Stanford Future Data Systems),
``scheduler/scheduler.py`` (``simulate``, ``_update_priorities``, ``_reset_time_run_so_far``,
``_schedule_jobs_on_workers_helper``) and ``scheduler/policies``; Narayanan et al.,
"Heterogeneity-Aware Cluster Scheduling Policies for Deep Learning Workloads", OSDI 2020.
docs/heterogeneity.md lists the rules and every remaining difference from Gavel's simulator.

In short: the clock jumps from round end to round end (a round lasts as long as its longest
micro-task, at most ``round_s``); arrivals join at a round boundary; the allocation X[job, type]
is recomputed only when a job arrived or completed since the last recomputation and at least
``reset_s`` (Gavel: 1920 s) have passed since it (or while every recomputation so far was at
t = 0); each round, every type's list of jobs is sorted by priority (X over the fraction of the
type's time the job received since the recomputation), then deficit, then X, and jobs are taken
greedily while GPUs of the type remain; a chosen job absent from X (it arrived after the
recomputation) does not run. A micro-task runs ``min(int(throughput * round_s), remaining)``
steps. A job's completion time is its last micro-task's end minus its arrival.

The allocations are ``smdlab.solve.gavel_lp``'s ``gavel_*`` functions (LPs solved with HiGHS;
Gavel: cvxpy with ECOS).
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from smdlab.errors import InvalidInput, check_choice, check_positive
from smdlab.solve.gavel_lp import (
    gavel_fifo,
    gavel_max_min_fairness,
    gavel_max_min_fairness_packed,
    gavel_max_sum_throughput,
    gavel_solver,
)
from smdlab.workloads.gavel import (
    GAVEL_TYPES,
    GavelTraceJob,
    PairRates,
    gavel_pair_throughputs,
)

__all__ = [
    "GAVEL_MODE_POLICIES",
    "RESET_S",
    "ROUND_S",
    "GavelModeResult",
    "gavel_allocation",
    "simulate_gavel_mode",
    "window_average",
]

ROUND_S = 360.0  # Gavel's time_per_iteration in its simulation drivers
RESET_S = 1920.0  # Gavel's minimum_time_between_allocation_resets (Scheduler default)
MAX_FAILURES = 5  # Gavel's MAX_FAILED_ATTEMPTS: failed micro-tasks in a row before a job is dropped
# Gavel's policy name -> (LP objective or "fifo", heterogeneity-aware)
GAVEL_MODE_POLICIES: dict[str, tuple[str, bool]] = {
    "max_min_fairness": ("max_min", False),
    "max_min_fairness_perf": ("max_min", True),
    "max_sum_throughput_perf": ("max_sum", True),
    "fifo_perf": ("fifo", True),
    "max_min_fairness_packed": ("packed", True),
}
_ORDER = ("v100", "p100", "k80")  # Gavel's per-round type order (shuffled for agnostic policies)
_COL = {t: k for k, t in enumerate(GAVEL_TYPES)}


@dataclass
class GavelModeResult:
    """Per-job completion times and round statistics of one Gavel-mode run."""

    policy: str
    jct: dict[int, float]  # job id -> completion time - arrival (s)
    finish: dict[int, float]
    dropped: set[int] = field(default_factory=set)  # jobs dropped after MAX_FAILURES failures
    solver: str = ""  # the LP solver used: "ecos", "highs", or "none" (fifo_perf solves no LP)
    rounds: int = 0
    recomputations: int = 0
    round_wall_s: list[float] = field(default_factory=list)  # scheduling time per round
    round_recomputed: list[bool] = field(default_factory=list)  # the round recomputed X
    round_start: list[float] = field(default_factory=list)  # each round's start (s)
    round_active: list[int] = field(default_factory=list)  # jobs present in each round
    round_demand: list[int] = field(default_factory=list)  # their GPUs (scale factors) summed
    # micro-tasks: (job, round index, start, end, type, steps (0: failed), GPUs it holds; a
    # pair's second member holds none of its own)
    tasks: list[tuple[int, int, float, float, str, int, int]] = field(default_factory=list)


Combo = int | tuple[int, int]  # a job alone, or a pair (lower id, higher id) sharing its GPUs


def gavel_allocation(
    jobs: Sequence[GavelTraceJob],
    cap: np.ndarray,
    policy: str,
    solver: str = "auto",
    pairs: Sequence[tuple[int, int]] = (),
    pair_throughput: np.ndarray | None = None,
) -> np.ndarray:
    """X[job, type] (types k80, p100, v100) of a Gavel policy over the jobs, in id order.

    solver: the LP solver (``smdlab.solve.gavel_lp.gavel_solver``; fifo_perf solves no LP).
    max_min_fairness_packed: rows are the jobs, then ``pairs`` (indices into ``jobs``, sorted),
    whose members' steps/s are ``pair_throughput[p, member, type]``.
    """
    objective, aware = GAVEL_MODE_POLICIES[check_choice("policy", policy, GAVEL_MODE_POLICIES)]
    if not jobs:
        return np.zeros((0, len(GAVEL_TYPES)))
    T = np.array([j.throughput for j in jobs])
    g = np.array([float(j.scale_factor) for j in jobs])
    cap = np.asarray(cap, dtype=float)
    if objective == "fifo":
        return gavel_fifo(T, g, cap)
    if objective == "max_sum":
        return gavel_max_sum_throughput(T, g, cap, solver=solver)
    w = np.array([j.priority_weight for j in jobs])
    if objective == "packed":
        P = np.zeros((0, 2, len(GAVEL_TYPES))) if pair_throughput is None else pair_throughput
        return gavel_max_min_fairness_packed(T, g, cap, pairs, P, w, solver=solver)
    return gavel_max_min_fairness(T, g, cap, w, aware=aware, solver=solver)


def _rates(
    combo: Combo, by_id: dict[int, GavelTraceJob], pair_rates: PairRates, c: int
) -> tuple[float, ...]:
    """Steps/s of each member of a combination on type column c."""
    if isinstance(combo, int):
        return (by_id[combo].throughput[c],)
    a, b = by_id[combo[0]], by_id[combo[1]]
    if a.scale_factor != 1:  # Gavel measured no sharing above one GPU
        return (0.0, 0.0)
    return pair_rates.get((GAVEL_TYPES[c], a.job_type, b.job_type), (0.0, 0.0))


def _members(combo: Combo) -> tuple[int, ...]:
    return (combo,) if isinstance(combo, int) else combo


def simulate_gavel_mode(
    jobs: Sequence[GavelTraceJob],
    cluster_spec: dict[str, int],
    policy: str,
    *,
    seed: int = 0,
    solver: str = "auto",
    pair_rates: PairRates | None = None,
    round_s: float = ROUND_S,
    reset_s: float = RESET_S,
    clock: Callable[[], float] = time.perf_counter,
    max_rounds: int | None = None,
) -> GavelModeResult:
    """Run a Gavel trace under one of Gavel's policies in Gavel's mode (module docstring).

    cluster_spec: GPUs per type (``k80``, ``p100``, ``v100``); seed: Gavel's scheduler seed (the
    agnostic policy shuffles the type order with ``random.Random(seed + 5)`` each round);
    solver: the LP solver (``gavel_allocation``; "auto": ECOS, as Gavel, when installed);
    pair_rates: max_min_fairness_packed's co-located throughputs (``gavel_pair_throughputs``;
    default: the shipped table); max_rounds: stop after that many rounds (a benchmark's partial
    run; jobs left out of ``jct``).
    """
    check_choice("policy", policy, GAVEL_MODE_POLICIES)
    round_s = check_positive("round_s", round_s)
    reset_s = check_positive("reset_s", reset_s, allow_zero=True)
    bad = [t for t in cluster_spec if t not in GAVEL_TYPES]
    if bad:
        raise InvalidInput(f"cluster_spec type {bad[0]!r}; allowed: {', '.join(GAVEL_TYPES)}")
    cap = np.array([float(cluster_spec.get(t, 0)) for t in GAVEL_TYPES])
    if not jobs:
        raise InvalidInput("simulate_gavel_mode needs at least one job")
    too_big = [j for j in jobs if j.scale_factor > cap.max()]
    if too_big:
        j = too_big[0]
        raise InvalidInput(
            f"job {j.job_id}: scale factor {j.scale_factor} exceeds every type's GPUs "
            f"({', '.join(f'{t} {int(c)}' for t, c in zip(GAVEL_TYPES, cap))})"
        )
    types = [t for t in _ORDER if cluster_spec.get(t, 0) > 0]
    fifo = GAVEL_MODE_POLICIES[policy][0] == "fifo"
    packing = GAVEL_MODE_POLICIES[policy][0] == "packed"
    rates_of = (
        (pair_rates if pair_rates is not None else gavel_pair_throughputs()) if packing else {}
    )
    shuffle = not GAVEL_MODE_POLICIES[policy][1]
    solver = "none" if fifo else gavel_solver(solver)  # "auto" resolved (and noted) once
    shuffler = random.Random(seed + 5)
    by_id = {j.job_id: j for j in jobs}
    half = round_s / 2.0

    # Active combinations in Gavel's insertion order (a job, then its new pairs), each with its
    # time received per type since the last recomputation.
    job_time: dict[Combo, dict[str, float]] = {}
    rates: dict[Combo, tuple[tuple[float, ...], ...]] = {}  # per type column, each member's rate
    worker_time = dict.fromkeys(GAVEL_TYPES, 0.0)
    deficit: dict[str, dict[Combo, float]] = {t: {} for t in GAVEL_TYPES}
    steps_run: dict[int, int] = {}
    failures: dict[int, int] = {}
    alloc: dict[Combo, np.ndarray] = {}
    last_reset, need_update = 0.0, False
    out = GavelModeResult(policy, {}, {}, solver=solver)

    def remove(jid: int) -> None:
        for combo in [c for c in job_time if jid in _members(c)]:
            del job_time[combo]

    qi, remaining = 0, len(jobs)
    now = jobs[0].arrival
    round_start, round_end = 0.0, None
    # (finish, combination, type, steps per member)
    running: list[tuple[float, Combo, str, tuple[int, ...]]] = []
    next_arrival: float | None
    while remaining and (max_rounds is None or out.rounds < max_rounds):
        if qi < len(jobs):
            next_arrival = jobs[qi].arrival
        else:
            next_arrival = None
            if not running:
                last_reset = 0.0
        if running:
            latest = max(r[0] for r in running)
            if round_end is not None:
                round_start = round_end
            round_end = latest
            now = latest
        elif next_arrival is not None:
            now = next_arrival
        # Completions: every micro-task ends by now.
        for finish, combo, t, steps in running:
            spent = finish - round_start
            members = _members(combo)
            for jid in members:
                out.finish[jid] = finish
            if len(members) == 1:
                jid = members[0]
                if steps[0] < by_id[jid].scale_factor:  # a worker's share (steps // sf) is 0
                    failures[jid] = failures.get(jid, 0) + 1
                    need_update = True
                    if failures[jid] >= MAX_FAILURES:  # dropped, no completion time
                        out.dropped.add(jid)
                        remove(jid)
                        remaining -= 1
                    continue
                failures[jid] = 0
            done = []
            for jid, n in zip(members, steps):
                steps_run[jid] += n
                if by_id[jid].total_steps - steps_run[jid] <= 0:
                    out.jct[jid] = finish - by_id[jid].arrival
                    done.append(jid)
            job_time[combo][t] += spent  # a pair's time is the pair's, not its members'
            worker_time[t] += spent
            for jid in done:
                remove(jid)
                need_update = True
                remaining -= 1
        running = []
        # Arrivals join at the round boundary (with packing: and pair with every active job of
        # their scale factor, each pair starting at 0 received time).
        while qi < len(jobs) and jobs[qi].arrival <= now:
            j = jobs[qi]
            active = [c for c in job_time if isinstance(c, int)]
            job_time[j.job_id] = dict.fromkeys(GAVEL_TYPES, half)
            rates[j.job_id] = tuple(_rates(j.job_id, by_id, rates_of, c) for c in range(3))
            steps_run[j.job_id] = 0
            new: list[Combo] = [j.job_id]
            if packing:
                for other in active:
                    if by_id[other].scale_factor == j.scale_factor:
                        pair = (other, j.job_id)
                        job_time[pair] = dict.fromkeys(GAVEL_TYPES, 0.0)
                        rates[pair] = tuple(_rates(pair, by_id, rates_of, c) for c in range(3))
                        new.append(pair)
            for t in GAVEL_TYPES:
                for combo in new:
                    deficit[t][combo] = 0.0
            need_update = True
            qi += 1
        tic = clock()
        recomputed = False
        # Recompute the allocation (and restart the received-time counters) when due.
        if need_update and (now - last_reset >= reset_s or last_reset == 0):
            elapsed = now - last_reset
            for t in GAVEL_TYPES:
                worker_time[t] = 0.0
                c = _COL[t]
                for combo, got in job_time.items():
                    owed = alloc[combo][c] * elapsed if combo in alloc else 0.0
                    deficit[t][combo] += owed - (got[t] - half)
                    got[t] = half
                    worker_time[t] += half
            last_reset = now
            singles = sorted(c for c in job_time if isinstance(c, int))
            pairs = sorted(c for c in job_time if not isinstance(c, int))
            row = {jid: i for i, jid in enumerate(singles)}
            x = gavel_allocation(
                [by_id[jid] for jid in singles],
                cap,
                policy,
                solver,
                [(row[a], row[b]) for a, b in pairs],
                np.array([[[rates[p][c][m] for c in range(3)] for m in (0, 1)] for p in pairs])
                if pairs
                else None,
            )
            combos: list[Combo] = [*singles, *pairs]
            alloc = {combo: x[i] for i, combo in enumerate(combos)}
            need_update = False
            out.recomputations += 1
            recomputed = True
        # Priorities, then the greedy pass over each type's sorted list.
        order = list(types)
        if shuffle:
            shuffler.shuffle(order)
        left = {t: cap[_COL[t]] for t in GAVEL_TYPES}
        chosen: set[int] = set()
        for t in order:
            c = _COL[t]
            wt = worker_time[t]
            entries = []
            for combo, got in job_time.items():
                a = alloc[combo][c] if combo in alloc else 0.0
                if combo not in alloc or a == 0.0 or min(rates[combo][c]) == 0:
                    prio = 0.0
                elif wt != 0.0 and got[t] / wt > 0.0:
                    prio = a / (got[t] / wt)
                else:
                    prio = a * 1e9
                entries.append((prio, deficit[t][combo], a, combo))
            entries.sort(key=lambda e: (e[0], e[1], e[2]), reverse=True)
            for prio, _, _, combo in entries:
                if left[t] == 0:
                    break
                members = _members(combo)
                if any(m in chosen for m in members) or min(rates[combo][c]) <= 0:
                    continue
                if fifo and prio <= 0.0:
                    continue
                sf = by_id[members[0]].scale_factor
                if sf > left[t]:
                    continue
                left[t] -= sf
                chosen.update(members)
                if combo not in alloc:  # arrived after the recomputation: holds GPUs, runs not
                    continue
                steps = tuple(
                    min(int(r * round_s), by_id[m].total_steps - steps_run[m])
                    for m, r in zip(members, rates[combo][c])
                )
                finish = max([now, *(now + n / r for n, r in zip(steps, rates[combo][c]))])
                running.append((finish, combo, t, steps))
                for k, (m, n) in enumerate(zip(members, steps)):
                    ok = n if n >= sf else 0
                    out.tasks.append((m, out.rounds, now, finish, t, ok, 0 if k else sf))
        out.round_wall_s.append(clock() - tic)
        out.round_recomputed.append(recomputed)
        out.round_start.append(now)
        present = [c for c in job_time if isinstance(c, int)]
        out.round_active.append(len(present))
        out.round_demand.append(sum(by_id[c].scale_factor for c in present))
        out.rounds += 1
    return out


def window_average(result: GavelModeResult, window: range) -> float:
    """Mean completion time (s) of the window's job ids, as Gavel's get_average_jct (which skips
    dropped jobs)."""
    missing = [i for i in window if i not in result.jct and i not in result.dropped]
    if missing:
        raise InvalidInput(f"window job {missing[0]} did not complete in this run")
    return float(np.mean([result.jct[i] for i in window if i in result.jct]))
