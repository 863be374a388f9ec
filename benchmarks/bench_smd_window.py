"""SMD's decisions on a window of the Philly trace, side by side: two rules or two code trees.

Runs the SMD policy (elastic, PS demands) on ``--jobs`` Philly jobs from job ``--start`` on 550
machines of 8 GPUs, each run in its own process, and prints the CPU seconds of ``simulate``, the
number of decisions, the mean JCT and a SHA-256 digest of every decision's repr (equal digests:
the same decisions).

- Default: the slack rule as shipped beside ``--old`` (``SLACK_JOBS`` of the earlier rule, 100).
- ``--trees A,B``: the shipped rule of each code tree (a checkout's root, e.g. ``/work/main``),
  alternated ``--repeat`` times, each tree's process importing smdlab from it.

Run:  .venv/bin/python benchmarks/bench_smd_window.py --jobs 3000
      .venv/bin/python benchmarks/bench_smd_window.py --start 10000 --jobs 2000 --trees /work/main,.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import multiprocessing as mp
import os
import subprocess
import sys
import time
from pathlib import Path


def _run(start: int, jobs_n: int, slack_jobs: int | None) -> tuple[float, int, float, str]:
    """(CPU s of simulate, decisions, mean JCT, digest) of one run in this process."""
    import smdlab.solve.api  # noqa: F401  (imported before the clock starts, as a long run has it)
    import smdlab.solve.smd as smd_module
    from smdlab import Cluster
    from smdlab.policies.ps.smd import SMD
    from smdlab.sim import simulate
    from smdlab.workloads import load_philly

    if slack_jobs is not None:
        smd_module.SLACK_JOBS = slack_jobs
    digest = hashlib.sha256()

    class Recorder(SMD):
        def decide(self, state):
            d = super().decide(state)
            digest.update(repr(d).encode())
            return d

    jobs = load_philly(start=start, first=jobs_n, demands="per_network")
    policy = Recorder()
    c0 = time.process_time()
    res = simulate(
        jobs, Cluster.homogeneous(550), policy, restart_s=0, record_history=False, lower_bound=False
    )
    return (
        time.process_time() - c0,
        res.summary["decisions"],
        res.summary["mean_jct"],
        digest.hexdigest()[:16],
    )


def _in_process(start: int, jobs_n: int, slack_jobs: int | None, out) -> None:
    out.put(_run(start, jobs_n, slack_jobs))


def _line(label: str, start: int, jobs_n: int, result) -> str:
    cpu, decisions, jct, digest = result
    return (
        f"{label}: jobs {start}..{start + jobs_n - 1}, {cpu:.2f} CPU s, {decisions} decisions, "
        f"mean JCT {jct:.3f} s, digest {digest}"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, default=3000)
    ap.add_argument("--start", type=int, default=0, help="index of the window's first job")
    ap.add_argument("--old", type=int, default=100, help="SLACK_JOBS of the earlier rule")
    ap.add_argument("--trees", default="", help="comma-separated code trees to compare")
    ap.add_argument("--repeat", type=int, default=1, help="runs per tree (--trees)")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:  # one run in a tree's process: a JSON line
        print(json.dumps(_run(args.start, args.jobs, None)))
        return
    if args.trees:
        trees = [str(Path(t).resolve()) for t in args.trees.split(",")]
        for _ in range(args.repeat):
            for tree in trees:
                env = dict(os.environ, PYTHONPATH=tree)
                cmd = [sys.executable, __file__, "--worker", "--start", str(args.start)]
                got = subprocess.run(
                    [*cmd, "--jobs", str(args.jobs)], env=env, cwd=tree, check=True,
                    capture_output=True, text=True,
                )  # fmt: skip
                print(_line(tree, args.start, args.jobs, json.loads(got.stdout.splitlines()[-1])))
        return
    ctx = mp.get_context("spawn")
    for label, slack in (("as shipped", None), (f"SLACK_JOBS={args.old}", args.old)):
        q = ctx.Queue()
        p = ctx.Process(target=_in_process, args=(args.start, args.jobs, slack, q))
        p.start()
        result = q.get()
        p.join()
        print(_line(label, args.start, args.jobs, result))


if __name__ == "__main__":
    main()
