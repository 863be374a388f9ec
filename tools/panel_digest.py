"""Record every decision behind the explorer's schedule panel on many job mixes, to compare two checkouts.

For each job mix (variations of the default explorer scenario) it runs the panel's policies and
the interval-LP bound, and writes one JSON line per mix: every SMD solve's workers, PSs and
selection, every policy's mean JCT, a SHA-256 digest of every policy's decisions (their reprs,
placements included) and the bound (floats written exactly, as hex). Run it with
``PYTHONPATH`` set to each checkout and compare the two files (``--compare A B``): decisions and
mean JCTs must be equal; for the bound it prints the largest relative difference.

    PYTHONPATH=. python tools/panel_digest.py --out /tmp/this.jsonl
    PYTHONPATH=/path/to/main python tools/panel_digest.py --out /tmp/main.jsonl
    python tools/panel_digest.py --compare /tmp/main.jsonl /tmp/this.jsonl
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from typing import Any

# (machines, task NIC Gbps, jobs, seed): the default scenario's knobs, moved one or two at a time
MIXES: tuple[tuple[int, float, int, int], ...] = (
    (4, 25.0, 16, 0),
    (4, 21.1, 16, 0),
    (4, 17.8, 16, 0),
    (4, 14.1, 16, 0),
    (4, 10.0, 16, 0),
    (4, 6.0, 16, 0),
    (3, 25.0, 16, 0),
    (5, 25.0, 16, 0),
    (6, 17.8, 16, 0),
    (2, 21.1, 16, 0),
    (4, 25.0, 4, 0),
    (4, 25.0, 8, 0),
    (4, 21.1, 12, 0),
    (4, 25.0, 24, 0),
    (6, 14.1, 32, 0),
    (4, 25.0, 16, 1),
    (4, 17.8, 16, 2),
    (8, 10.0, 48, 3),
)


def _hex(x: float) -> str:
    return float(x).hex()


def digest(machines: int, gbps: float, n_jobs: int, seed: int) -> dict[str, Any]:
    """Every SMD solve's (workers, ps, selected), every policy's mean JCT and the bound, for one job mix."""
    import smdlab.solve.api as api
    import smdlab.widgets.sim_pool as pool
    from smdlab.caches import WORKLOAD_BOUNDS
    from smdlab.sim.bound import workload_bound
    from smdlab.widgets.explorer_panels import SCHEDULE_POLICIES
    from smdlab.widgets.scenario import build_cluster, build_jobs, default_settings
    from smdlab.widgets.sim_pool import simulate_policy

    solves: list[list[Any]] = []
    inner = api.smd_run
    stoppable = pool.stoppable_policy
    seen = hashlib.sha256()  # every decision's repr (placements included) of the running policy

    def hashing(policy: Any, still_wanted: Any) -> Any:
        run = stoppable(policy, still_wanted)
        decide = run.decide

        def recorded(state: Any) -> Any:
            d = decide(state)
            seen.update(repr(d).encode())
            return d

        run.decide = recorded
        return run

    def recording(*args: Any, **kw: Any) -> Any:
        r = inner(*args, **kw)
        solves.append([r.workers.tolist(), r.ps.tolist(), r.selected.tolist()])
        return r

    settings = default_settings().replace(
        machines=machines, bandwidth_gbps=gbps, n_jobs=n_jobs, seed=seed
    )
    jobs, cluster = build_jobs(settings), build_cluster(settings)
    out: dict[str, Any] = {"mix": [machines, gbps, n_jobs, seed]}
    api.smd_run = recording
    pool.stoppable_policy = hashing
    try:
        for policy in SCHEDULE_POLICIES:
            seen = hashlib.sha256()
            jct = simulate_policy(jobs, cluster, policy, settings.mode, lambda: True, False)
            out[policy] = _hex(jct)
            out[f"{policy} decisions"] = seen.hexdigest()
    finally:
        api.smd_run = inner
        pool.stoppable_policy = stoppable
    out["smd_solves"] = solves
    WORKLOAD_BOUNDS.clear()
    out["bound"] = _hex(workload_bound(jobs, cluster, settings.mode))
    return out


def compare(a: str, b: str) -> int:
    """Print each job mix whose record differs between files ``a`` and ``b``; 1 if any does."""
    with open(a) as fa, open(b) as fb:
        ra = [json.loads(line) for line in fa]
        rb = [json.loads(line) for line in fb]
    bad, worst = 0, 0.0
    for x, y in zip(ra, rb, strict=True):
        diff = [k for k in x if k != "bound" and x[k] != y.get(k)]
        if diff:
            bad += 1
            print(f"mix {x['mix']}: differs in {diff}")
        # the bound is an LP's optimum: another simplex path may round its last digits otherwise
        u, v = float.fromhex(x["bound"]), float.fromhex(y["bound"])
        worst = max(worst, abs(u - v) / abs(u))
        if abs(u - v) > 1e-12 * abs(u):
            print(f"mix {x['mix']}: bound {u!r} -> {v!r} ({(v - u) / u:+.1e} relative)")
    solves = sum(len(x["smd_solves"]) for x in ra)
    print(
        f"{len(ra)} job mixes, {solves} SMD solves, every policy's mean JCT and decisions: "
        f"{'all equal' if not bad else f'{bad} mixes differ'}; "
        f"interval-LP bound: largest relative difference {worst:.1e}"
    )
    return 1 if bad else 0


def main(argv: list[str] | None = None) -> int:
    """Write the digest of every job mix, or compare two digests."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", help="JSON-lines file to write")
    ap.add_argument("--compare", nargs=2, metavar=("A", "B"))
    args = ap.parse_args(argv)
    if args.compare:
        return compare(*args.compare)
    if not args.out:
        ap.error("--out or --compare is required")
    with open(args.out, "w") as f:
        for mix in MIXES:
            f.write(json.dumps(digest(*mix)) + "\n")
            f.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
