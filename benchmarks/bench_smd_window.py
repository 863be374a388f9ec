"""SMD's decisions on a Philly window with the slack rule at every size and for large instances only.

Runs the SMD policy (elastic, PS demands) on the first ``--jobs`` Philly jobs on 550 machines of
8 GPUs, once with ``SLACK_JOBS`` as shipped and once with ``--old`` (the earlier 100: the rule for
instances above 100 jobs only), each in its own process; prints the CPU seconds of ``simulate``,
the number of decisions, the mean JCT and a SHA-256 digest of every decision's repr. Equal digests:
the same decisions.

Run:  .venv/bin/python benchmarks/bench_smd_window.py --jobs 3000
"""

from __future__ import annotations

import argparse
import hashlib
import multiprocessing as mp
import time


def _run(jobs_n: int, slack_jobs: int | None, out) -> None:
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

    jobs = load_philly(first=jobs_n, demands="per_network")
    c0 = time.process_time()
    res = simulate(jobs, Cluster.homogeneous(550), Recorder(), restart_s=0, record_history=False)
    out.put(
        (
            time.process_time() - c0,
            res.summary["decisions"],
            res.summary["mean_jct"],
            digest.hexdigest()[:16],
        )
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, default=3000)
    ap.add_argument("--old", type=int, default=100, help="SLACK_JOBS of the earlier rule")
    args = ap.parse_args()
    ctx = mp.get_context("spawn")
    for label, slack in (("as shipped", None), (f"SLACK_JOBS={args.old}", args.old)):
        q = ctx.Queue()
        p = ctx.Process(target=_run, args=(args.jobs, slack, q))
        p.start()
        cpu, decisions, jct, digest = q.get()
        p.join()
        print(
            f"{label}: {args.jobs} jobs, {cpu:.2f} CPU s, {decisions} decisions, mean JCT {jct:.3f} s, digest {digest}"
        )


if __name__ == "__main__":
    main()
