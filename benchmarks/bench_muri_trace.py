"""smdlab's run of Muri's trace3 against the authors' simulator on the same machine, one session.

Usage: python benchmarks/bench_muri_trace.py [--authors SIMDIR --python PY] [--policies ...]

Times smdlab's whole run of each policy on ``data/muri/trace3.csv`` in the ``muri_n8g8``
scenario (jobs built once, outside the timing). With ``--authors`` (the ``simulator/`` folder of
Rivendile/Muri, run outside this repository with interpreter ``--python``), also times its own
run of the same policy on the same trace with the flags of its ``sim_fig9.sh`` (``--scheme=yarn
--multi_resource 4``, ``cluster_spec/n8g8.csv``), and prints authors' seconds / smdlab's seconds
(the target is >= 5). Policies run one after the other, never in parallel.
"""

from __future__ import annotations

import argparse
import subprocess
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TRACE = REPO / "data" / "muri" / "trace3.csv"
TARGET = 5.0
AUTHORS = {
    "srtf": "shortest",
    "muri_s": "multi-resource-blossom-same-gpu",
    "tiresias": "dlas-gpu",
    "muri_l": "multi-resource-blossom-same-gpu-unaware",
}


def _authors_seconds(simdir: Path, python: str, schedule: str) -> float:
    """Wall seconds of one run of the authors' simulator (its output discarded)."""
    with tempfile.TemporaryDirectory() as log:
        cmd = [
            python,
            "run_sim.py",
            "--cluster_spec=cluster_spec/n8g8.csv",
            "--print",
            "--scheme=yarn",
            f"--trace_file={TRACE}",
            f"--schedule={schedule}",
            f"--log_path={log}",
            "--multi_resource",
            "4",
        ]
        t0 = time.perf_counter()
        subprocess.run(cmd, cwd=simdir, check=True, stdout=subprocess.DEVNULL)
        return time.perf_counter() - t0


def main() -> None:
    """Time both simulators per policy and print one Markdown row each."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--authors", type=Path, help="Rivendile/Muri simulator/ folder")
    ap.add_argument("--python", default="python3", help="interpreter for the authors' simulator")
    ap.add_argument("--policies", default="srtf,muri_s,tiresias,muri_l")
    args = ap.parse_args()
    from smdlab.experiments.muri_parity import muri_scenario
    from smdlab.sim.runner import run_policies, simulation_options

    sc = muri_scenario(TRACE)
    cluster = sc.build_cluster()
    jobs = sc.build_jobs(cluster)
    print("| policy | smdlab (s) | authors' simulator (s) | authors / smdlab | target |")
    print("|---|---|---|---|---|")
    for name in args.policies.split(","):
        t0 = time.perf_counter()
        run_policies(
            jobs, cluster, [name], policy_options=sc.policy_options, **simulation_options(sc)
        )
        ours = time.perf_counter() - t0
        if args.authors is None:
            print(f"| {name} | {ours:.1f} | - | - | >= {TARGET:g}x |")
            continue
        theirs = _authors_seconds(args.authors, args.python, AUTHORS[name])
        print(f"| {name} | {ours:.1f} | {theirs:.1f} | {theirs / ours:.2f}x | >= {TARGET:g}x |")


if __name__ == "__main__":
    main()
