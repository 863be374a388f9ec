"""smdlab's run of Muri's trace3 against the authors' simulator on the same machine, one session.

Usage: python benchmarks/bench_muri_trace.py [--authors SIMDIR --python PY] [--policies ...]
[--repeat N]

Times (CPU seconds: the machine is shared) smdlab's run of each policy on ``data/muri/trace3.csv`` in the ``muri_n8g8`` scenario:
reading the trace into jobs and simulating, after a warm-up run on the trace's first rows (so
that imports are done) and with every cache cleared. With ``--authors`` (the ``simulator/``
folder of Rivendile/Muri, run outside this repository with interpreter ``--python``), also
times its own run of the same policy on the same trace with the flags of its ``sim_fig9.sh``
(``--scheme=yarn --multi_resource 4``, ``cluster_spec/n8g8.csv``), likewise from after its
imports: its ``run_sim.main()`` (reading the trace and simulating), in a fresh process per run.
Prints authors' seconds / smdlab's seconds (the target is >= 5). Runs go one after the other,
never in parallel; with ``--repeat N`` each side runs N times, alternating, and its fewest CPU
seconds count (the machine is shared: one run can be slowed by its neighbours, none sped up).

``--parts``: instead, where smdlab's run of each policy goes (CPU seconds, the fewest of
``--repeat`` runs per part): reading the trace; the first use of each job's model tables (speed
table, demand rows, gang request), done before the run so that the parts below exclude it; the
policy's decisions (with the running jobs' views they read, built on first use); applying them;
the every-event restart charge; the states handed to the policy; building the result; the event
loop, the rest. Each part is timed by a wrapper around its
function (which adds about a microsecond per call to the loop's share). Any registered policy
runs with ``--parts`` (e.g. ``fifo``, the least a policy can do: the floor the engine sets).
Both modes end with the load average.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parents[1]
TRACE = REPO / "data" / "muri" / "trace3.csv"
TARGET = 5.0
AUTHORS = {
    "srtf": "shortest",
    "muri_s": "multi-resource-blossom-same-gpu",
    "tiresias": "dlas-gpu",
    "muri_l": "multi-resource-blossom-same-gpu-unaware",
}


# Run by the authors' interpreter in their simulator folder: import, then time main() alone.
_AUTHORS_TIMER = """
import contextlib, os, sys, time
sys.argv = ["run_sim.py"] + sys.argv[1:]
sys.path.insert(0, os.getcwd())
import run_sim
with open(os.devnull, "w") as out, contextlib.redirect_stdout(out):
    t0 = time.process_time()
    run_sim.main()
    spent = time.process_time() - t0
print(spent)
"""


def _authors_seconds(simdir: Path, python: str, schedule: str) -> float:
    """CPU seconds of the authors' simulator's ``main()`` on trace3 (its output discarded)."""
    with tempfile.TemporaryDirectory() as log:
        cmd = [
            python,
            "-c",
            _AUTHORS_TIMER,
            "--cluster_spec=cluster_spec/n8g8.csv",
            "--print",
            "--scheme=yarn",
            f"--trace_file={TRACE}",
            f"--schedule={schedule}",
            f"--log_path={log}",
            "--multi_resource",
            "4",
        ]
        out = subprocess.run(cmd, cwd=simdir, check=True, capture_output=True, text=True)
        return float(out.stdout.strip().splitlines()[-1])


def _smdlab_seconds(name: str) -> float:
    """CPU seconds of smdlab reading trace3 and running policy ``name`` on it (caches cleared)."""
    from smdlab.caches import clear_caches
    from smdlab.experiments.muri_parity import muri_scenario
    from smdlab.sim.runner import run_policies, simulation_options

    sc = muri_scenario(TRACE)
    clear_caches()
    t0 = time.process_time()
    cluster = sc.build_cluster()
    jobs = sc.build_jobs(cluster)
    run_policies(jobs, cluster, [name], policy_options=sc.policy_options, **simulation_options(sc))
    return time.process_time() - t0


@contextlib.contextmanager
def _timed(spent: dict[str, float], where: list[tuple[Any, str, str]]) -> Iterator[None]:
    """Within the block, add each (owner, attribute)'s CPU seconds to ``spent[part]``."""
    saved = [(owner, attr, getattr(owner, attr)) for owner, attr, _ in where]

    def timer(f: Callable, part: str) -> Callable:
        def run(*args: Any, **kwargs: Any) -> Any:
            t0 = time.process_time()
            try:
                return f(*args, **kwargs)
            finally:
                spent[part] += time.process_time() - t0

        return run

    for (owner, attr, f), (_, _, part) in zip(saved, where, strict=True):
        setattr(owner, attr, timer(f, part))
    try:
        yield
    finally:
        for owner, attr, f in saved:
            setattr(owner, attr, f)


PARTS = (
    "reading the trace",
    "first use of the jobs' tables",
    "decisions",
    "applying decisions",
    "every-event charge",
    "states for the policy",
    "result",
    "event loop, the rest",
)


# policy -> (decisions, decisions that start or preempt, history rows) of its last --parts run
COUNTS: dict[str, tuple[int, int, int]] = {}


def _smdlab_parts(name: str) -> dict[str, float]:
    """CPU seconds of each part of smdlab's run of ``name`` on trace3 (``PARTS``)."""
    from smdlab.caches import clear_caches
    from smdlab.experiments.muri_parity import muri_scenario
    from smdlab.model.timing import job_speeds
    from smdlab.policies.registry import policy_class
    from smdlab.policies.toolkit import gang_placement
    from smdlab.sim import simulator
    from smdlab.sim.engine import Engine
    from smdlab.sim.runner import run_policies, simulation_options
    from smdlab.solve.instance import task_vectors

    sc = muri_scenario(TRACE)
    clear_caches()
    spent = dict.fromkeys(PARTS, 0.0)
    t0 = time.process_time()
    cluster = sc.build_cluster()
    jobs = sc.build_jobs(cluster)
    t1 = time.process_time()
    spent["reading the trace"] = t1 - t0
    empty = np.zeros((1, len(cluster.resources)))
    for j in jobs:  # each job's tables, as its first decision and start would build them
        job_speeds(j, simulation_options(sc)["mode"])
        task_vectors(j, cluster.resources)
        gang_placement(j, empty, cluster.resources)
    t2 = time.process_time()
    spent["first use of the jobs' tables"] = t2 - t1
    where = [
        (policy_class(name), "decide", "decisions"),
        (simulator, "apply_decision", "applying decisions"),
        (Engine, "charge_event", "every-event charge"),
        (simulator._Simulator, "_state", "states for the policy"),
        (simulator, "build_result", "result"),
    ]
    with _timed(spent, where):
        res = run_policies(
            jobs, cluster, [name], policy_options=sc.policy_options, **simulation_options(sc)
        )[name]
    spent["event loop, the rest"] = time.process_time() - t2 - sum(spent[p] for p in PARTS[2:-1])
    d = res.decisions
    COUNTS[name] = (len(d), int((d["started"] + d["preempted"] > 0).sum()), len(res.history))
    return spent


def _warm_up(policies: list[str]) -> None:
    """Run every policy on the trace's first rows once, so that the timed runs import nothing."""
    from smdlab.experiments.muri_parity import muri_scenario
    from smdlab.sim.runner import run_policies, simulation_options

    with tempfile.TemporaryDirectory() as tmp:
        head = Path(tmp) / "head.csv"
        head.write_text("".join(TRACE.read_text().splitlines(keepends=True)[:41]))
        sc = muri_scenario(head)
        cluster = sc.build_cluster()
        jobs = sc.build_jobs(cluster)
        run_policies(
            jobs, cluster, policies, policy_options=sc.policy_options, **simulation_options(sc)
        )


def main() -> None:
    """Time both simulators per policy and print one Markdown row each."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--authors", type=Path, help="Rivendile/Muri simulator/ folder")
    ap.add_argument("--python", default="python3", help="interpreter for the authors' simulator")
    ap.add_argument("--policies", default="srtf,muri_s,tiresias,muri_l")
    ap.add_argument("--repeat", type=int, default=1, help="runs per side; the fewest seconds count")
    ap.add_argument("--parts", action="store_true", help="where smdlab's run goes, by part")
    args = ap.parse_args()
    if args.repeat < 1:
        ap.error(f"--repeat must be >= 1, got {args.repeat}")
    policies = args.policies.split(",")
    if args.authors is not None and not args.parts:
        unknown = [p for p in policies if p not in AUTHORS]
        if unknown:
            ap.error(
                f"--authors: the authors' simulator has no counterpart of {', '.join(unknown)} "
                f"(allowed: {', '.join(AUTHORS)})"
            )
    _warm_up(policies)
    if args.parts:
        print("| part | " + " | ".join(f"{p} (CPU s)" for p in policies) + " |")
        print("|---|" + "---|" * len(policies))
        runs = {p: [_smdlab_parts(p) for _ in range(args.repeat)] for p in policies}
        for part in (*PARTS, "total"):
            cells = []
            for p in policies:
                if part == "total":
                    cells.append(min(sum(r.values()) for r in runs[p]))
                else:
                    cells.append(min(r[part] for r in runs[p]))
            print(f"| {part} | " + " | ".join(f"{c:.3f}" for c in cells) + " |")
        for p in policies:
            n, changed, rows = COUNTS[p]
            print(f"{p}: {n:,} decisions ({changed:,} start or preempt), {rows:,} history rows")
        _print_load()
        return
    print("| policy | smdlab (CPU s) | authors' simulator (CPU s) | authors / smdlab | target |")
    print("|---|---|---|---|---|")
    for name in policies:
        ours = theirs = float("inf")
        for _ in range(args.repeat):
            ours = min(ours, _smdlab_seconds(name))
            if args.authors is not None:
                theirs = min(theirs, _authors_seconds(args.authors, args.python, AUTHORS[name]))
        if args.authors is None:
            print(f"| {name} | {ours:.2f} | - | - | >= {TARGET:g}x |")
            continue
        print(f"| {name} | {ours:.2f} | {theirs:.2f} | {theirs / ours:.2f}x | >= {TARGET:g}x |")
    _print_load()


def _print_load() -> None:
    """Print the machine's load average (the runs share its cores)."""
    print("load average (1, 5, 15 min): " + ", ".join(f"{x:.2f}" for x in os.getloadavg()))


if __name__ == "__main__":
    main()
