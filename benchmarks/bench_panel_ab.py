"""Each schedule-panel task's CPU time, another checkout's code against this one, alternated in one process.

The functions and class methods of the modules named in ``MODULES`` are loaded from the other
checkout (``--base``, default ``/work/main``) and swapped in for its runs, then swapped back;
everything else is this checkout's. Runs alternate base / this checkout ``--repeat`` times on
each job mix (notebook 03's default scenario at the given task NIC bandwidths); each task's
least CPU time per job mix is summed over the mixes. Optimus' shared loss-curve fits are kept
(a worker keeps them between changes); the interval-LP bound's and the hull caches (segments,
vertex hints) are cleared before each run (a repeated job mix would find them filled).

With ``--breakdown`` it then times SMD's parts in this checkout (selection LP, the second
candidate selection, Jong's iteration, the defer search; each inclusive of what it calls).

    python benchmarks/bench_panel_ab.py --base /work/main --gbps 21.1,17.8,14.1 --repeat 4 [--breakdown]
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys
import time
import types
from typing import Any

MODULES = (
    "smdlab.solve.local_search",
    "smdlab.solve.smd",
    "smdlab.solve.knapsack_hull",
    "smdlab.solve.backends",
    "smdlab.solve.schedule_bound",
    "smdlab.policies.ps.optimus",
)


def _load(base: str, name: str) -> types.ModuleType:
    """Module ``name`` of the checkout at ``base``, under a private name (its imports are this checkout's)."""
    path = os.path.join(base, *name.split(".")) + ".py"
    spec = importlib.util.spec_from_file_location("_base_" + name.replace(".", "_"), path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


def _swaps(base: str) -> list[tuple[Any, str, Any, Any]]:
    """(owner, attribute, this checkout's value, base's value) for every function and method to swap."""
    import importlib

    pairs: dict[Any, Any] = {}  # this checkout's function -> the base's
    methods: list[tuple[Any, str, Any, Any]] = []
    loaded = []
    for name in MODULES:
        live = importlib.import_module(name)
        other = _load(base, name)
        loaded.append(other)
        for attr, val in vars(other).items():
            mine = getattr(live, attr, None)
            if isinstance(val, types.FunctionType) and isinstance(mine, types.FunctionType):
                if mine.__module__ == name:
                    pairs[mine] = val
            elif isinstance(val, type) and isinstance(mine, type) and mine.__module__ == name:
                for m_name, m_val in vars(val).items():
                    kinds = (types.FunctionType, classmethod, staticmethod)
                    if isinstance(m_val, kinds) and type(vars(mine).get(m_name)) is type(m_val):
                        methods.append((mine, m_name, vars(mine)[m_name], m_val))
    # the base's modules imported some of these functions by name from this checkout's modules:
    # point them at the base's own, so a base run calls base code throughout
    for other in loaded:
        for attr, val in list(vars(other).items()):
            if isinstance(val, types.FunctionType) and val in pairs:
                setattr(other, attr, pairs[val])
    out = list(methods)
    for mod in list(sys.modules.values()):
        if getattr(mod, "__name__", "").startswith("smdlab"):
            for attr, val in list(vars(mod).items()):
                if isinstance(val, types.FunctionType) and val in pairs:
                    out.append((mod, attr, val, pairs[val]))
    return out


def _use(swaps: list[tuple[Any, str, Any, Any]], base: bool) -> None:
    for owner, attr, mine, theirs in swaps:
        setattr(owner, attr, theirs if base else mine)


# SMD's parts, timed inclusively where smdlab.solve.smd calls them (``--breakdown``)
PARTS = ("select_jobs", "_unit_selection", "sum_of_ratios", "defer_search")


def breakdown(gbps: list[float], repeat: int) -> None:
    """Print where SMD's simulation spends its CPU (this checkout), summed over the job mixes (least of ``repeat``)."""
    import smdlab.solve.smd as smd_mod
    from smdlab.caches import HULL_CHAINS, HULL_SEGMENTS
    from smdlab.widgets.scenario import build_cluster, build_jobs, default_settings
    from smdlab.widgets.sim_pool import simulate_policy

    spent: dict[str, float] = {}
    originals = {name: getattr(smd_mod, name) for name in PARTS}

    def timed(name: str, fn: Any) -> Any:
        def run(*a: Any, **k: Any) -> Any:
            c0 = time.process_time()
            try:
                return fn(*a, **k)
            finally:
                spent[name] = spent.get(name, 0.0) + time.process_time() - c0

        return run

    total: dict[str, float] = {}
    try:
        for name, fn in originals.items():
            setattr(smd_mod, name, timed(name, fn))
        for g in gbps:
            settings = default_settings().replace(bandwidth_gbps=g)
            jobs, cluster = build_jobs(settings), build_cluster(settings)
            best: dict[str, float] | None = None
            for _ in range(repeat):
                HULL_SEGMENTS.clear()
                HULL_CHAINS.clear()
                spent.clear()
                c0 = time.process_time()
                simulate_policy(jobs, cluster, "smd", settings.mode, lambda: True, False)
                run = {**spent, "whole simulation": time.process_time() - c0}
                if best is None or run["whole simulation"] < best["whole simulation"]:
                    best = run
            assert best is not None
            for key, sec in best.items():
                total[key] = total.get(key, 0.0) + sec
    finally:
        for name, fn in originals.items():
            setattr(smd_mod, name, fn)
    whole = total["whole simulation"]
    print("\n| SMD's simulation, this checkout (CPU ms) | ms | share |\n|---|---:|---:|")
    for name in PARTS:
        print(f"| {name} | {total.get(name, 0.0) * 1e3:.0f} | {total.get(name, 0.0) / whole:.0%} |")
    rest = whole - sum(total.get(name, 0.0) for name in PARTS)
    print(
        f"| the rest (instances, the policy's view, placement, simulator) | {rest * 1e3:.0f} | {rest / whole:.0%} |"
    )
    print(f"| whole simulation | {whole * 1e3:.0f} | 100% |")


def main(argv: list[str] | None = None) -> int:
    """Print each task's CPU ms (base, this checkout, ratio), summed over the job mixes."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--base", default="/work/main")
    ap.add_argument("--gbps", default="21.1,17.8,14.1")
    ap.add_argument("--repeat", type=int, default=4)
    ap.add_argument(
        "--breakdown", action="store_true", help="also time SMD's parts (this checkout)"
    )
    args = ap.parse_args(argv)
    from smdlab.caches import HULL_CHAINS, HULL_SEGMENTS, WORKLOAD_BOUNDS
    from smdlab.sim.bound import workload_bound
    from smdlab.widgets.explorer_panels import SCHEDULE_POLICIES
    from smdlab.widgets.scenario import build_cluster, build_jobs, default_settings
    from smdlab.widgets.sim_pool import BOUND_TASK, simulate_policy

    swaps = _swaps(args.base)
    tasks = (*SCHEDULE_POLICIES, BOUND_TASK)
    total = {(t, side): 0.0 for t in tasks for side in ("base", "this")}
    load0 = os.getloadavg()
    for gbps in (float(x) for x in args.gbps.split(",")):
        settings = default_settings().replace(bandwidth_gbps=gbps)
        jobs, cluster = build_jobs(settings), build_cluster(settings)
        least: dict[tuple[str, str], float] = {}
        for _ in range(args.repeat):
            for side in ("base", "this"):
                _use(swaps, side == "base")
                for task in tasks:
                    WORKLOAD_BOUNDS.clear()
                    HULL_SEGMENTS.clear()  # a new job mix: its speed tables' hulls not seen yet
                    HULL_CHAINS.clear()  # nor its hull vertices (hints)
                    c0 = time.process_time()
                    if task == BOUND_TASK:
                        workload_bound(jobs, cluster, settings.mode)
                    else:
                        simulate_policy(jobs, cluster, task, settings.mode, lambda: True, False)
                    ms = (time.process_time() - c0) * 1e3
                    least[task, side] = min(least.get((task, side), ms), ms)
        _use(swaps, False)
        for key, ms in least.items():
            total[key] += ms
    load1 = os.getloadavg()
    print(
        f"{len(swaps)} functions swapped; load average {load0[0]:.2f} -> {load1[0]:.2f}; "
        f"least of {args.repeat} per job mix, summed over task NIC {args.gbps} Gbps\n"
    )
    print("| task (CPU ms) | base | this checkout | base / this |\n|---|---:|---:|---:|")
    for t in tasks:
        b, m = total[t, "base"], total[t, "this"]
        print(f"| {t} | {b:.0f} | {m:.0f} | {b / m:.2f} |")
    b = sum(total[t, "base"] for t in tasks)
    m = sum(total[t, "this"] for t in tasks)
    print(f"| all seven tasks | {b:.0f} | {m:.0f} | {b / m:.2f} |")
    if args.breakdown:
        breakdown([float(x) for x in args.gbps.split(",")], args.repeat)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
