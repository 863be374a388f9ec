"""The placement-aware problem: SMD followed by placement beside the exact placement MILP, in one run.

Instances: ``smdlab.solve.placement_milp.placement_instance(kind, n, machines)``: ``flat``
(identical servers), ``typed`` (half K80, half V100; uplinks never bind) and ``racked`` (two
racks of V100 servers whose uplinks carry half of their NICs). Each instance's speed tables are
computed before any clock. Then, on the same instance: SMD (``bound=False``) followed by
smdlab's placement (``smd_placed``, the fastest of ``--repeat`` runs), and the exact model
(``solve_placed``, HiGHS, ``--time-limit`` T) in a child process that is stopped if
its call has not returned within 1.1 T + 5 s. Both are priced by the simulator's speed on the
placement each returns (``evaluate``).

Reported per size: the exact model's status, wall and CPU time, its best objective and proven
bound; SMD's wall and CPU time, its objective above the exact model's bound and above its
incumbent; exact / SMD time. Target on the sizes where the exact model needs more than 10 s: SMD
+ placement within 2% of the exact model's best bound and at least 100x faster (CPU time: on a
shared machine wall time counts the other processes' share).

Run:  .venv/bin/python benchmarks/bench_placement_exact.py            (every size; ~10 minutes)
      .venv/bin/python benchmarks/bench_placement_exact.py --quick    (one size per kind, T = 20 s)
      .venv/bin/python benchmarks/bench_placement_exact.py --kinds typed,racked   (those kinds only)
"""

from __future__ import annotations

import argparse
import math
import multiprocessing as mp
import os
import platform
import queue
import time

import numpy as np

from smdlab.solve import build_instance
from smdlab.solve.placement_milp import placement_instance, smd_placed, solve_placed

SIZES = {
    "flat": [(16, 4), (32, 8), (64, 16), (128, 32)],
    "typed": [(16, 4), (32, 8), (64, 16)],
    "racked": [(8, 4), (16, 8), (32, 16)],
}
QUICK = {"flat": [(32, 8)], "typed": [(32, 8)], "racked": [(8, 4)]}


def traits(cluster, placements) -> tuple[int, int, int]:
    """(jobs started, jobs whose tasks span two or more racks, jobs with a worker on a K80)."""
    rack = cluster.rack_of
    types = [m.gpu_type for m in cluster.machines]
    cross = sum(len({rack[m] for m, _, _ in pl.tasks}) > 1 for pl in placements)
    slow = sum(any(w and types[m] == "k80" for m, w, _ in pl.tasks) for pl in placements)
    return sum(bool(pl.tasks) for pl in placements), int(cross), int(slow)


def _exact_child(kind: str, n: int, machines: int, limit: float, out) -> None:
    jobs, cluster = placement_instance(kind, n, machines)
    build_instance(jobs, cluster, cluster.capacity_vector)  # the speed tables, before the clock
    out.put("ready")
    r = solve_placed(jobs, cluster, time_limit=limit)
    t = traits(cluster, r.placements)
    out.put((r.objective, r.bound, r.status, r.wall_time_s, r.cpu_time_s, r.patterns, *t))


def exact_run(kind: str, n: int, machines: int, limit: float) -> tuple:
    """(objective, bound, status, wall s, CPU s, patterns, jobs started, crossing jobs, jobs on a
    K80) of the exact model in a child process.

    Stopped once its call has run 1.1 T + 5 s without returning (reported as ``no return``,
    with that time and nan elsewhere).
    """
    ctx = mp.get_context("spawn")
    out = ctx.Queue()
    child = ctx.Process(target=_exact_child, args=(kind, n, machines, limit, out))
    child.start()
    grace = 1.1 * limit + 5
    try:
        out.get(timeout=900)  # "ready": the speed tables are built, the call starts now
        try:
            return out.get(timeout=grace)
        except queue.Empty:  # the call missed its limit: report the grace as its time
            return math.nan, math.nan, "no return", grace, math.nan, 0, -1, -1, -1
    finally:
        if child.is_alive():
            child.terminate()  # this benchmark's own child, by its handle
        child.join()


def one_size(kind: str, n: int, machines: int, repeat: int, limit: float) -> dict:
    """One row: SMD + placement and the exact model on the same instance."""
    jobs, cluster = placement_instance(kind, n, machines)
    build_instance(jobs, cluster, cluster.capacity_vector)  # the speed tables, once
    runs = [smd_placed(jobs, cluster) for _ in range(repeat)]
    smd = min(runs, key=lambda r: r.wall_time_s)
    smd_cpu = min(r.cpu_time_s for r in runs)
    obj, bound, status, wall, cpu, patterns, *x = exact_run(kind, n, machines, limit)
    started, s_cross, s_slow = traits(cluster, smd.placements)
    return dict(
        started=started,
        exact_started=x[0],
        smd_cross=s_cross,
        smd_slow=s_slow,
        exact_cross=x[1],
        exact_slow=x[2],
        kind=kind,
        n=n,
        machines=machines,
        patterns=patterns,
        status=status,
        exact_wall=wall,
        exact_cpu=cpu,
        exact_obj=obj,
        bound=bound,
        proven_gap=(obj - bound) / obj if obj > 0 else math.nan,
        smd_wall=smd.wall_time_s,
        smd_cpu=smd_cpu,
        smd_obj=smd.objective,
        smd_planned=smd.model_objective,
        above_bound=(smd.objective - bound) / bound if bound > 0 else math.nan,
        above_exact=(smd.objective - obj) / obj,
        limit=limit,
    )


def _x(a: float, b: float) -> str:
    return "n/a" if math.isnan(a) else f"{a / b:.0f}x"


def _pct(x: float) -> str:
    return "n/a" if math.isnan(x) else f"{x:.2%}"


def table(rows: list[dict]) -> str:
    """The results as a markdown table."""
    lines = [
        "| kind | jobs | machines | patterns | exact status | exact wall / CPU s | proven gap "
        "| SMD + placement wall / CPU s | exact / SMD wall | exact / SMD CPU "
        "| SMD above exact bound | SMD above exact incumbent |",
        "|---|---:|---:|---:|---|---|---:|---|---:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r['kind']} | {r['n']} | {r['machines']} | {r['patterns']:,} | {r['status']} "
            f"| {r['exact_wall']:.2f} / {r['exact_cpu']:.2f} | {_pct(r['proven_gap'])} "
            f"| {r['smd_wall']:.3f} / {r['smd_cpu']:.3f} | {_x(r['exact_wall'], r['smd_wall'])} "
            f"| {_x(r['exact_cpu'], r['smd_cpu'])} | {_pct(r['above_bound'])} "
            f"| {_pct(r['above_exact'])} |"
        )
    return "\n".join(lines)


def diagnosis(rows: list[dict]) -> str:
    """Where the placements differ: jobs across racks (racked) and jobs on K80s (typed)."""
    lines = [
        "| kind | jobs | SMD: jobs started / across racks / on a K80 "
        "| exact: jobs started / across racks / on a K80 "
        "| SMD on pools before placement, above exact bound |",
        "|---|---:|---|---|---:|",
    ]
    for r in rows:
        if r["kind"] != "flat":
            planned = (r["smd_planned"] - r["bound"]) / r["bound"] if r["bound"] > 0 else math.nan
            lines.append(
                f"| {r['kind']} | {r['n']} | {r['started']} / {r['smd_cross']} / {r['smd_slow']} "
                f"| {r['exact_started']} / {r['exact_cross']} / {r['exact_slow']} "
                f"| {_pct(planned)} |"
            )
    return "\n".join(lines)


def verdicts(rows: list[dict]) -> list[str]:
    """One line per size where the exact model needs more than 10 s: the target met or missed."""
    out = []
    for r in rows:
        if not r["exact_wall"] > 10:
            continue
        cpu = r["exact_cpu"] if not math.isnan(r["exact_cpu"]) else r["exact_wall"]
        ratio = cpu / r["smd_cpu"]
        ok_gap, ok_time = r["above_bound"] <= 0.02, ratio >= 100
        why = []
        if not ok_gap:
            why.append(f"{_pct(r['above_bound'])} above the bound")
        if not ok_time:
            why.append(f"only {ratio:.0f}x faster in CPU time")
        out.append(
            f"{r['kind']} {r['n']} jobs / {r['machines']} machines: exact {r['status']} after "
            f"{r['exact_wall']:.1f} s; SMD {_pct(r['above_bound'])} above its bound, {ratio:.0f}x "
            f"faster (CPU) -> {'met' if ok_gap and ok_time else 'MISSED: ' + ', '.join(why)}"
        )
    return out


def main() -> None:
    """Run the sizes and print the table and the verdicts."""
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--time-limit", type=float, default=None)
    ap.add_argument("--kinds", default=",".join(SIZES), help="comma-separated kinds to run")
    args = ap.parse_args()
    t0 = time.perf_counter()
    sizes = QUICK if args.quick else SIZES
    limit = args.time_limit or (20.0 if args.quick else 60.0)
    load0 = os.getloadavg()[0]
    rows = []
    kinds = args.kinds.split(",")
    for kind, pairs in sizes.items():
        if kind not in kinds:
            continue
        for n, m in pairs:
            rows.append(one_size(kind, n, m, args.repeat, limit))
            print(table(rows[-1:]).splitlines()[-1], flush=True)
    print()
    print(
        f"Machine: {platform.machine()}, {os.cpu_count()} CPUs, load average {load0:.2f} at the "
        f"start, {os.getloadavg()[0]:.2f} at the end; numpy {np.__version__}; exact time limit "
        f"{limit:.0f} s"
    )
    print()
    print(table(rows))
    print()
    print(diagnosis(rows))
    print()
    print("\n".join(verdicts(rows)) or "no size where the exact model needed more than 10 s")
    print(f"total {time.perf_counter() - t0:.0f} s")


if __name__ == "__main__":
    main()
