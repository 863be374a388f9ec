"""The whole Philly trace (82,247 jobs) as GPU-only gangs on a Philly-sized cluster, per policy.

Usage: python benchmarks/bench_trace.py [--policies fifo,srtf,tiresias] [--machines 550]
                                         [--jobs N] [--step 10000] [--markdown]
                                         [--demands gpu_only|per_network] [--progress 60]

Cluster: 550 machines of 8 GPUs (4,400 GPUs): about the size of Philly, every machine of the
default shape; the jobs reserve GPUs only. Each policy runs
in its own process with ``restart_s=0`` (trace parity) and ``record_history=False``. Printed per
policy: wall and CPU time of ``simulate`` (loading excluded; targets FIFO 60 s, SRTF and Tiresias
300 s), the CPU time per 1,000 jobs in each stretch of ``--step`` arrivals (how the cost grows
with the trace: the clock is read at every decision, the stretch of a decision is the number of
jobs arrived by then), peak resident memory of the process (ru_maxrss) and mean JCT. ``--demands per_network`` gives
each job its network's worker and PS demands instead (SMD's world: ``--policies smd --demands
per_network``, target 900 s). ``--progress S`` prints a line to stderr every S CPU seconds (jobs
arrived and decisions so far), so a run stopped by a timeout still says how far it got.
"""

from __future__ import annotations

import argparse
import bisect
import multiprocessing as mp
import platform
import resource
import sys
import time

TARGETS_S = {"fifo": 60.0, "srtf": 300.0, "tiresias": 300.0, "smd": 900.0}


class _Clock:
    """Wraps a policy; records (wall clock, simulated time) at every decision."""

    def __init__(self, policy, arrivals=(), progress_s: float = 0.0):
        self.policy = policy
        self.arrivals = arrivals
        self.progress_s = progress_s
        self.next_report = time.process_time() + progress_s
        self.name = policy.name
        self.execution = getattr(policy, "execution", "non_elastic")
        self.executions = getattr(policy, "executions", None)
        self.marks: list[tuple[float, float]] = []

    def reset(self) -> None:
        if hasattr(self.policy, "reset"):
            self.policy.reset()

    def decide(self, state):
        c = time.process_time()
        self.marks.append((c, state.time))
        if self.progress_s and c >= self.next_report:
            self.next_report = c + self.progress_s
            arrived = bisect.bisect_right(self.arrivals, state.time)
            print(
                f"progress: cpu {c:.0f} s, sim time {state.time / 3600:.1f} h, "
                f"{arrived} jobs arrived, {len(self.marks)} decisions",
                file=sys.stderr,
                flush=True,
            )
        return self.policy.decide(state)


def _run(
    policy: str,
    machines: int,
    jobs_n: int | None,
    step: int,
    queue,
    demands: str = "gpu_only",
    progress_s: float = 0.0,
) -> None:
    from smdlab import Cluster
    from smdlab.policies.registry import get_policy
    from smdlab.sim import simulate
    from smdlab.workloads import load_philly

    jobs = load_philly(first=jobs_n, demands=demands)
    cluster = Cluster.homogeneous(machines)
    arrivals = sorted(j.arrival for j in jobs)
    clock = _Clock(get_policy(policy), arrivals, progress_s)
    t0, c0 = time.perf_counter(), time.process_time()
    res = simulate(jobs, cluster, clock, restart_s=0, record_history=False)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    per_k = []
    prev, edge = c0, step
    for c, t in clock.marks:
        if bisect.bisect_right(arrivals, t) >= edge:
            per_k.append(round((c - prev) / (step / 1000), 3))
            prev, edge = c, edge + step
    done = edge - step
    if len(jobs) > done:  # the last, partial stretch (to the end of the run)
        per_k.append(round((c0 + cpu - prev) / ((len(jobs) - done) / 1000), 3))
    queue.put(
        {
            "policy": policy,
            "demands": demands,
            "jobs": len(jobs),
            "wall_s": round(wall, 1),
            "cpu_s": round(cpu, 1),
            "target_s": TARGETS_S.get(policy),
            "s_per_1000_by_stretch": per_k,
            "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 0),
            "decisions": res.summary["decisions"],
            "preemptions": res.summary["preemptions"],
            "mean_jct_h": round(res.summary["mean_jct"] / 3600, 3),
        }
    )


def main(argv: list[str] | None = None) -> int:
    """Run each policy in a fresh process and print its timings."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--policies", default="fifo,srtf,tiresias")
    ap.add_argument("--machines", type=int, default=550)
    ap.add_argument("--jobs", type=int, default=None, help="first N jobs (default: all)")
    ap.add_argument("--step", type=int, default=10000, help="jobs per stretch of the scaling row")
    ap.add_argument("--markdown", action="store_true")
    ap.add_argument("--demands", default="gpu_only", choices=["gpu_only", "per_network"])
    ap.add_argument("--progress", type=float, default=0.0, help="stderr line every S CPU seconds")
    args = ap.parse_args(argv)
    print(f"# {platform.python_version()} on {platform.machine()}, {mp.cpu_count()} CPUs")
    ctx = mp.get_context("spawn")
    rows = []
    for policy in args.policies.split(","):
        q = ctx.Queue()
        p = ctx.Process(
            target=_run,
            args=(
                policy,
                args.machines,
                args.jobs,
                args.step,
                q,
                args.demands,
                args.progress,
            ),
        )
        p.start()
        row = q.get()
        p.join()
        rows.append(row)
        print(row, flush=True)
    if args.markdown:
        print(
            "| policy | jobs | wall s | CPU s | target s | CPU s per 1,000 jobs by stretch | peak RSS MB |"
        )
        print("|---|---|---|---|---|---|---|")
        for r in rows:
            stretch = ", ".join(f"{x:g}" for x in r["s_per_1000_by_stretch"])
            label = r["policy"] if r["demands"] == "gpu_only" else f"{r['policy']} ({r['demands']})"
            print(
                f"| {label} | {r['jobs']:,} | {r['wall_s']} | {r['cpu_s']} | {r['target_s']} "
                f"| {stretch} | {r['peak_rss_mb']:g} |"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
