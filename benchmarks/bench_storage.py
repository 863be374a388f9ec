"""Speed target: one AutoCBA decision over 500 queued jobs under 1 s; also its time at 200 jobs
and, at 200 and 500 jobs, the greedy's welfare gap certified by the LP relaxation of its 0/1
program (``autocba_bound``) beside the program itself (HiGHS, ``--exact-limit`` seconds).
Prints Markdown tables (decision time: best of ``--repeat``).

    python benchmarks/bench_storage.py [--repeat N] [--exact-limit SECONDS]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from smdlab.model.cluster import Cluster
from smdlab.model.storage import StorageAllocation, StorageView
from smdlab.policies.base import ClusterState, QueuedJob
from smdlab.policies.storage.autocba import AutoCBA
from smdlab.solve.placement import capacity_matrix
from smdlab.solve.storage import autocba_bound, autocba_exact, autocba_solve
from smdlab.workloads import synthetic
from smdlab.workloads.storage import storage_for


def state_of(n: int, machines: int) -> tuple[ClusterState, AutoCBA]:
    """An idle cluster of ``machines`` 8-GPU machines with ``n`` queued jobs and storage."""
    cluster = Cluster.homogeneous(machines)
    jobs = synthetic(n, cluster, load=1.0, seed=0)
    storage = storage_for(jobs, cache_gb=400.0, remote_gbps=4.0, cache_price=0.01, remote_price=2.0)
    view = StorageView(storage, StorageAllocation(), {}, {}, lambda *a: 1.0)
    queued = tuple(QueuedJob(j, j.samples) for j in jobs)
    state = ClusterState(
        0.0, cluster, queued, (), capacity_matrix(cluster), execution="elastic", storage=view
    )
    return state, AutoCBA(budget=machines * 8 * 0.75 + 10.0)


def bench_decision(n: int, machines: int, repeat: int) -> tuple[float, float, float]:
    """(best decision wall seconds, its CPU seconds, solver wall seconds of that decision)."""
    state, policy = state_of(n, machines)
    best, cpu, solver = np.inf, np.inf, np.inf
    for _ in range(repeat):
        t0, c0 = time.perf_counter(), time.process_time()
        policy.decide(state)
        spent = time.perf_counter() - t0
        if spent < best:
            best, cpu, solver = spent, time.process_time() - c0, policy.last_seconds
    return best, cpu, solver


def bench_gap(n: int, machines: int, limit: float) -> tuple[float, float, float, float, str]:
    """(greedy welfare, LP bound, LP CPU seconds, exact welfare, exact status) at ``n`` jobs."""
    state, policy = state_of(n, machines)
    problem, _ = policy.problem(state)
    greedy = autocba_solve(problem, refine_jobs=0)
    c0 = time.process_time()
    bound = autocba_bound(problem)
    lp_cpu = time.process_time() - c0
    exact = autocba_exact(problem, time_limit=limit)
    return greedy.welfare, bound, lp_cpu, exact.welfare, exact.method


def main() -> None:
    """Run the benchmarks and print the table."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--exact-limit", type=float, default=30.0)
    args = ap.parse_args()
    rows = []
    for n, machines in ((200, 32), (500, 64)):
        rows.append((n, machines, *bench_decision(n, machines, args.repeat)))
    print("| jobs | machines | AutoCBA decision wall (s) | CPU (s) | of which solver wall (s) |")
    print("|---:|---:|---:|---:|---:|")
    for n, m, best, cpu, solver in rows:
        print(f"| {n} | {m} | {best:.3f} | {cpu:.3f} | {solver:.3f} |")
    print()
    print(
        "| jobs | greedy welfare | LP bound | certified gap | LP CPU (s) | 0/1 program welfare "
        f"({args.exact_limit:g} s limit) | its status |"
    )
    print("|---:|---:|---:|---:|---:|---:|---|")
    for n, machines in ((200, 32), (500, 64)):
        g, ub, lp, e, status = bench_gap(n, machines, args.exact_limit)
        print(f"| {n} | {g:.4f} | {ub:.4f} | {(ub - g) / ub:.3%} | {lp:.3f} | {e:.4f} | {status} |")
    ratio = rows[-1][2] / 1.0
    print()
    print(f"500-job decision / 1 s target = {ratio:.2f} ({'met' if ratio < 1 else 'MISSED'})")


if __name__ == "__main__":
    main()
