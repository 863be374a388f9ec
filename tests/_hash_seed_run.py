"""Run policies on one small seeded workload and print a digest of each run (not a test module).

    python tests/_hash_seed_run.py [--default-scenario] POLICY ...

Used by tests/test_hash_seed.py under several PYTHONHASHSEED values: equal digests mean the run
does not depend on the order Python iterates sets of strings in.
"""

from __future__ import annotations

import hashlib
import json
import sys
import warnings

from smdlab import Cluster, Machine
from smdlab.policies.registry import get_policy
from smdlab.sim import simulate
from smdlab.workloads import synthetic
from smdlab.workloads.deadlines import with_deadlines


def world():
    """40 jobs at load 1.5 on 3 machines of 8 GPUs, half with deadlines (so SLO policies act)."""
    cap = {"gpu": 8, "cpu": 32, "mem_gb": 128, "bw_gbps": 100}
    cluster = Cluster(tuple(Machine(f"m{i}", dict(cap)) for i in range(3)), tuple(cap))
    jobs = synthetic(40, cluster, load=1.5, seed=3, duration_median_s=900)
    return cluster, with_deadlines(jobs, slack=(1.0, 3.0), fraction=0.5, seed=3)


def default_scenario():
    """The default scenario of ``smdlab simulate`` (its cluster, jobs and simulation options)."""
    from smdlab.sim.runner import simulation_options
    from smdlab.workloads.scenario import load_scenario

    sc = load_scenario(None)
    cluster = sc.build_cluster()
    return cluster, sc.build_jobs(cluster), simulation_options(sc)


def digest(name: str, cluster, jobs, options) -> str:
    """The run's history, per-job table and mean JCT, hashed (or the error it raised)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            r = simulate(jobs, cluster, get_policy(name), **options)
    except Exception as e:  # an error is a result too: it must not depend on the seed either
        return f"{type(e).__name__}: {e}"
    text = r.history.to_csv() + r.jobs.to_csv() + repr(r.summary["mean_jct"])
    return hashlib.sha256(text.encode()).hexdigest()


def main(argv: list[str]) -> None:
    """Print {policy: digest} as JSON."""
    if argv and argv[0] == "--default-scenario":
        cluster, jobs, options = default_scenario()
        argv = argv[1:]
    else:
        cluster, jobs = world()
        options = {"lower_bound": False}
    print(json.dumps({name: digest(name, cluster, jobs, options) for name in argv}))


if __name__ == "__main__":
    main(sys.argv[1:])
