"""Space sharing on one Gavel trace: Gavel's packed policy in Gavel's mode beside smdlab's sharing
policies in smdlab's simulator (docs/performance.md, EXPERIMENTS.md).

    python tools/gavel_sharing.py TRACE [--cluster V:P:K] [--seed S] [--window A B]
        [--pair-throughputs JSON] [--degree K] [--solver auto|ecos|highs]

Gavel's mode: ``gavel_max_min_fairness_packed`` (pairs chosen by its LP from Gavel's measured
pair throughputs: the shipped table, or ``--pair-throughputs`` Gavel's own JSON) and, without
sharing, ``gavel_max_min_fairness_perf``. smdlab's simulator (the trace read by ``load_gavel``,
360 s slots, no restart cost): Gandiva, Horus, SJF-BSBF and SJF-FFS at sharing degree K
(default 2), and SJF-FFS at degree 1 (no sharing). Prints, per policy, the window-average JCT
(job ids A .. B-1; default the middle 40%), the mean JCT of all jobs and the mean jobs per busy
GPU; then the load Gavel's mode saw: the GPUs the jobs present ask for over the cluster's GPUs,
per round.
"""

from __future__ import annotations

import argparse

import numpy as np

from smdlab.model.cluster import Cluster
from smdlab.sim.gavel_engine import gavel_mode_sim_result
from smdlab.sim.gavel_mode import simulate_gavel_mode, window_average
from smdlab.sim.runner import run_policies
from smdlab.workloads.gavel import gavel_pair_throughputs, load_gavel, read_gavel_trace

SHARING = ["gandiva", "horus", "sjf_bsbf", "sjf_ffs"]


def main() -> None:
    """Parse the arguments, run every policy, print the table."""
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("trace")
    p.add_argument("--cluster", default="36:36:36", help="V100:P100:K80 GPUs (Gavel's order)")
    p.add_argument("--seed", type=int, default=0, help="Gavel's scheduler seed")
    p.add_argument("--window", type=int, nargs=2, default=None)
    p.add_argument("--pair-throughputs", default=None, help="Gavel's simulation_throughputs.json")
    p.add_argument("--degree", type=int, default=2, help="sharing degree of smdlab's policies")
    p.add_argument("--solver", default="auto")
    a = p.parse_args()
    v, pp, k = (int(x) for x in a.cluster.split(":"))
    spec = {"k80": k, "p100": pp, "v100": v}
    trace = read_gavel_trace(a.trace)
    n = len(trace)
    window = range(*a.window) if a.window else range(int(0.4 * n), int(0.8 * n))
    ids = [str(i) for i in window]
    pairs = gavel_pair_throughputs(a.pair_throughputs) if a.pair_throughputs else None
    print(f"trace {a.trace}: {n} jobs, cluster {a.cluster} (V100:P100:K80), window ids "
          f"{window.start}-{window.stop - 1}, seed {a.seed}")  # fmt: skip
    print(
        "| policy | engine | sharing degree | window avg JCT (h) | all-job mean JCT (h) | jobs per busy GPU |"
    )
    print("|---|---|---|---|---|---|")
    load: list[str] = []
    for policy in ("max_min_fairness_packed", "max_min_fairness_perf"):
        res = simulate_gavel_mode(
            trace, spec, policy, seed=a.seed, solver=a.solver, pair_rates=pairs
        )
        r = gavel_mode_sim_result(res, trace, spec, name=policy, round_s=360.0, wall=0.0)
        demand = np.array(res.round_demand) / sum(spec.values())
        load.append(
            f"{policy}: GPUs asked for by the jobs present over the cluster's GPUs, mean "
            f"{demand.mean():.2f}, rounds above 1: {np.mean(demand > 1):.1%}"
        )
        print(f"| gavel_{policy} | Gavel's mode | {2 if 'packed' in policy else 1} | "
              f"{window_average(res, window) / 3600:.3f} | {np.mean(list(res.jct.values())) / 3600:.3f} "
              f"| {r.summary['gpu_sharing']:.3f} |")  # fmt: skip
    cluster = Cluster.groups(
        [{"name": t, "machines": c, "gpu_type": t, "gpu": 1} for t, c in spec.items() if c > 0]
    )
    jobs = load_gavel(a.trace, cluster=cluster)
    runs = [(SHARING, a.degree), (["sjf_ffs"], 1)]
    for names, degree in runs:
        res_by = run_policies(
            jobs, cluster, names, slot_s=360.0, restart_s=0.0, sharing_degree=degree
        )
        for name, r in res_by.items():
            df = r.jobs.set_index("job")
            print(f"| {name} | smdlab | {degree} | {df.loc[ids, 'jct'].mean() / 3600:.3f} | "
                  f"{r.summary['mean_jct'] / 3600:.3f} | {r.summary['gpu_sharing']:.3f} |")  # fmt: skip
    print("\n".join(load))


if __name__ == "__main__":
    main()
