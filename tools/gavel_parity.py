"""Run a Gavel trace in smdlab's Gavel mode under Gavel's policies and, given Gavel's own per-job
results, print the agreement per policy (docs/heterogeneity.md, EXPERIMENTS.md).

    python tools/gavel_parity.py TRACE [--reference PREFIX] [--cluster V:P:K] [--seed S]
        [--window A B] [--policies P ...] [--solver auto|ecos|highs] [--pair-throughputs JSON]
        [--engine]

PREFIX: Gavel's per-job CSVs ``PREFIX_<policy>.csv`` (columns ``job_id``, ``jct_s``), e.g.
``data/traces/gavel/reference/seed3_rate0.4_60jobs``. The window average is the mean completion
time of job ids A .. B-1 (Gavel's ``get_average_jct``); default: the middle 40% of the trace's
jobs (Gavel's sweeps measure after a warm-up, while jobs keep arriving). The last line prints the
heterogeneity-aware over agnostic ratio of window averages (max_min_fairness over
max_min_fairness_perf), smdlab's and, with a reference, Gavel's. ``--solver``: the LP solver
(default auto: ECOS, as Gavel, when the ``gavel`` extra is installed). ``--engine`` also runs the
registered ``gavel_*`` policies in smdlab's own simulator (the trace read by ``load_gavel``, 360 s
slots, no restart cost) and prints their window averages and ratio.
"""

from __future__ import annotations

import argparse
import csv
import time
from pathlib import Path

import numpy as np

from smdlab.model.cluster import Cluster
from smdlab.sim.gavel_mode import GAVEL_MODE_POLICIES, simulate_gavel_mode, window_average
from smdlab.sim.runner import run_policies
from smdlab.workloads.gavel import gavel_pair_throughputs, load_gavel, read_gavel_trace

UNPACKED = [p for p in GAVEL_MODE_POLICIES if p != "max_min_fairness_packed"]


def engine_averages(trace: str, spec: dict[str, int], window: range) -> dict[str, float]:
    """Window-average JCT (s) of the registered gavel_* policies in smdlab's own simulator."""
    cluster = Cluster.groups(
        [{"name": t, "machines": n, "gpu_type": t, "gpu": 1} for t, n in spec.items() if n > 0]
    )
    jobs = load_gavel(trace, cluster=cluster)
    names = [f"gavel_{p}" for p in UNPACKED]
    res = run_policies(jobs, cluster, names, slot_s=360.0, restart_s=0.0)
    ids = [str(i) for i in window]
    return {n: float(r.jobs.set_index("job").loc[ids, "jct"].mean()) for n, r in res.items()}


def main() -> None:
    """Parse the arguments, run each policy, print the table."""
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("trace")
    p.add_argument("--reference", default=None)
    p.add_argument("--cluster", default="36:36:36", help="V100:P100:K80 GPUs (Gavel's order)")
    p.add_argument("--seed", type=int, default=0, help="Gavel's scheduler seed")
    p.add_argument("--window", type=int, nargs=2, default=None)
    p.add_argument("--policies", nargs="+", default=list(UNPACKED), choices=GAVEL_MODE_POLICIES)
    p.add_argument(
        "--solver", default="auto", help="LP solver: auto (ECOS when installed), ecos, highs"
    )
    p.add_argument(
        "--pair-throughputs",
        default=None,
        help="max_min_fairness_packed: Gavel's simulation_throughputs.json (default: shipped pairs)",
    )
    p.add_argument("--engine", action="store_true", help="also run smdlab's own simulator")
    a = p.parse_args()
    jobs = read_gavel_trace(a.trace)
    v, pp, k = (int(x) for x in a.cluster.split(":"))
    n = len(jobs)
    window = range(*a.window) if a.window else range(int(0.4 * n), int(0.8 * n))
    print(f"trace {a.trace}: {n} jobs, cluster {a.cluster} (V100:P100:K80), window ids "
          f"{window.start}-{window.stop - 1}, seed {a.seed}")  # fmt: skip
    head = "| policy | smdlab window avg JCT (h) | rounds | recomputations | s per run |"
    if a.reference:
        head += (
            " Gavel window avg (h) | avg error | window jobs within 5% | all jobs within 5% |"
            " largest job error |"
        )
    print(head)
    print("|" + "---|" * (head.count("|") - 1))
    avgs: dict[str, tuple[float, float | None]] = {}
    pairs = gavel_pair_throughputs(a.pair_throughputs) if a.pair_throughputs else None
    for policy in a.policies:
        t0 = time.perf_counter()
        spec = {"k80": k, "p100": pp, "v100": v}
        res = simulate_gavel_mode(
            jobs, spec, policy, seed=a.seed, solver=a.solver, pair_rates=pairs
        )
        wall = time.perf_counter() - t0
        ours = window_average(res, window)
        row = f"| {policy} | {ours / 3600:.3f} | {res.rounds} | {res.recomputations} | {wall:.1f} |"
        ref_avg = None
        if a.reference:
            path = Path(f"{a.reference}_{policy}.csv")
            with path.open() as f:
                rows = list(csv.DictReader(f))
            ref = {int(r["job_id"]): float(r["jct_s"]) for r in rows if r["jct_s"]}
            ref_avg = float(np.mean([ref[i] for i in window if i in ref]))
            # a job dropped in one run and not the other counts as a disagreement
            rel = {i: abs(res.jct[i] / ref[i] - 1) if i in res.jct else 1.0 for i in ref}
            rel.update({i: 1.0 for i in res.jct if i not in ref})
            win = np.mean([rel[i] <= 0.05 for i in window if i in rel])
            every = np.mean([r <= 0.05 for r in rel.values()])
            row += f" {ref_avg / 3600:.3f} | {ours / ref_avg - 1:+.2%} | {win:.1%} | {every:.1%} |"
            row += f" {max(rel.values()):.1e} |"
        avgs[policy] = (ours, ref_avg)
        print(row)
    if {"max_min_fairness", "max_min_fairness_perf"} <= set(avgs):
        (ag, ag_ref), (aw, aw_ref) = avgs["max_min_fairness"], avgs["max_min_fairness_perf"]
        line = f"aware/agnostic (agnostic avg over aware avg): smdlab {ag / aw:.3f}"
        if ag_ref is not None and aw_ref is not None:
            line += f", Gavel {ag_ref / aw_ref:.3f}"
        print(line)
    if a.engine:
        eng = engine_averages(a.trace, {"k80": k, "p100": pp, "v100": v}, window)
        print("smdlab's simulator: " + ", ".join(f"{n} {x / 3600:.3f} h" for n, x in eng.items()))
        ratio = eng["gavel_max_min_fairness"] / eng["gavel_max_min_fairness_perf"]
        print(f"smdlab's simulator aware/agnostic: {ratio:.3f}")


if __name__ == "__main__":
    main()
