"""Simulator throughput: every registered policy on the first N Philly jobs (default 2,000, 64 machines).

Usage: python benchmarks/bench_sim.py [--jobs N] [--machines N] [--policies a,b] [--timeout S] [--markdown]

Each policy runs in its own process (so a slow one can be stopped at --timeout and none warms a
cache for another), on the same jobs. Printed per policy: wall time of ``simulate`` (building the
workload excluded), the target where there is one (FIFO 10 s, SMD 60 s) and time/target,
decisions, scheduler time, jobs completed and mean JCT. CPU time (process time of the
simulating process) is printed beside wall time: on a shared machine it is the steadier number. Policies whose module is not present are
listed as missing.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import platform
import sys
import time

TARGETS_S = {"fifo": 10.0, "smd": 60.0}


def _run(policy: str, jobs_n: int, machines: int, queue) -> None:
    from smdlab import Cluster
    from smdlab.sim import simulate
    from smdlab.workloads import load_philly

    t0 = time.perf_counter()
    jobs = load_philly(first=jobs_n, seed=1)
    build = time.perf_counter() - t0
    cluster = Cluster.homogeneous(machines)
    t0, c0 = time.perf_counter(), time.process_time()
    res = simulate(jobs, cluster, policy)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    s = res.summary
    queue.put(
        {
            "policy": policy,
            "wall_s": wall,
            "cpu_s": cpu,
            "build_s": build,
            "decisions": s["decisions"],
            "sched_s": s["scheduler_time_s"],
            "completed": s["jobs_completed"],
            "mean_jct_s": s["mean_jct"],
        }
    )


def main(argv=None) -> int:
    from smdlab.policies.registry import available_policies, list_policies

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, default=2000)
    ap.add_argument("--machines", type=int, default=64)
    ap.add_argument(
        "--policies",
        default=None,
        help="comma-separated (default: every registered policy present)",
    )
    ap.add_argument(
        "--timeout", type=float, default=180.0, help="seconds per policy before it is stopped"
    )
    ap.add_argument("--markdown", action="store_true", help="print a Markdown table")
    args = ap.parse_args(argv)
    present = available_policies()
    wanted = args.policies.split(",") if args.policies else list_policies()
    missing = [p for p in wanted if p not in present]
    ctx = mp.get_context("spawn")
    rows = []
    for policy in (p for p in wanted if p in present):
        q = ctx.Queue()
        proc = ctx.Process(target=_run, args=(policy, args.jobs, args.machines, q))
        t0 = time.perf_counter()
        proc.start()
        proc.join(args.timeout)
        if proc.is_alive():
            proc.terminate()
            proc.join()
            rows.append(
                {"policy": policy, "wall_s": None, "note": f"stopped after {args.timeout:g} s"}
            )
        elif proc.exitcode != 0 or q.empty():
            rows.append(
                {"policy": policy, "wall_s": None, "note": f"failed (exit {proc.exitcode})"}
            )
        else:
            rows.append({**q.get(), "note": ""})
        print(f"  {policy}: {time.perf_counter() - t0:.1f} s including start-up", file=sys.stderr)
    cmd = "python benchmarks/bench_sim.py " + " ".join(argv if argv is not None else sys.argv[1:])
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(
        f"# {cmd.strip()}\n# {args.jobs} Philly jobs, {args.machines} machines; {platform.machine()}, "
        f"{os.cpu_count()} CPUs, load average {load:.1f} at the end; Python {platform.python_version()}"
    )
    header = [
        "policy",
        "simulate (s)",
        "CPU (s)",
        "target (s)",
        "time/target",
        "decisions",
        "scheduler (s)",
        "completed",
        "mean JCT (s)",
        "note",
    ]
    lines = []
    for r in rows:
        target = TARGETS_S.get(r["policy"])
        wall = r.get("wall_s")
        lines.append(
            [
                r["policy"],
                f"{wall:.2f}" if wall is not None else "-",
                f"{r['cpu_s']:.2f}" if "cpu_s" in r else "-",
                f"{target:g}" if target else "-",
                f"{wall / target:.3f}" if (wall is not None and target) else "-",
                str(r.get("decisions", "-")),
                f"{r['sched_s']:.2f}" if "sched_s" in r else "-",
                str(r.get("completed", "-")),
                f"{r['mean_jct_s']:,.0f}" if "mean_jct_s" in r else "-",
                r["note"],
            ]
        )
    if args.markdown:
        print("| " + " | ".join(header) + " |")
        print("|" + "---|" * len(header))
        for line in lines:
            print("| " + " | ".join(line) + " |")
    else:
        widths = [
            max(len(h), *(len(x[i]) for x in lines)) if lines else len(h)
            for i, h in enumerate(header)
        ]
        print("  ".join(h.ljust(w) for h, w in zip(header, widths)))
        for line in lines:
            print("  ".join(x.ljust(w) for x, w in zip(line, widths)))
    if missing:
        print(f"# registered but not present here: {', '.join(missing)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
