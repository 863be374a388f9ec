"""Grids of simulations (policies x loads x seeds x cluster sizes), run in parallel with Dask.

Each cell builds its own workload from the base scenario with the cell's load, seed and machine
count, simulates one policy and returns one tidy row: the cell's coordinates and the summary
(``SimResult.summary_row``). Without a scheduler address, a local Dask cluster of worker
processes is started for the sweep and closed after it.
"""

from __future__ import annotations

import itertools
import logging
import sys
from collections.abc import Callable, Sequence
from typing import Any

import pandas as pd

from smdlab.errors import InvalidInput, check_int, check_positive
from smdlab.workloads.scenario import Scenario

GRID_COLUMNS = ("policy", "load", "seed", "machines")


def _cell(
    base: dict[str, Any],
    policy: str,
    load: float | None,
    seed: int,
    machines: int,
    registered: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """One grid cell: simulate ``policy`` on the base scenario changed to (load, seed, machines).

    registered: the caller's ``register_policy`` entries this cell needs (a worker process has
    not seen them); a ``module:Class`` policy is imported by the worker itself.
    """
    from smdlab.policies.registry import register_policy
    from smdlab.sim.runner import run_policies, simulation_options

    for name, target in (registered or {}).items():
        register_policy(name, target)

    scenario = Scenario(**base).with_changes(
        seed=seed, cluster={"machines": machines}, workload={} if load is None else {"load": load}
    )
    cluster = scenario.build_cluster()
    jobs = scenario.build_jobs(cluster)
    res = run_policies(
        jobs,
        cluster,
        [policy],
        policy_options=scenario.policy_options,
        variants=scenario.variants,
        **simulation_options(scenario),
    )[policy]
    row = res.summary_row()
    row.pop("policy")
    return {"policy": policy, "load": load, "seed": seed, "machines": machines, **row}


def grid(
    policies: Sequence[str],
    loads: Sequence[float | None],
    seeds: Sequence[int],
    machines: Sequence[int],
) -> list[tuple[str, float | None, int, int]]:
    """Every (policy, load, seed, machines) combination, validated."""
    for name, values in (
        ("policies", policies),
        ("loads", loads),
        ("seeds", seeds),
        ("machines", machines),
    ):
        if not values:
            raise InvalidInput(f"{name} must list at least one value")
    loads = [None if x is None else check_positive("load", x) for x in loads]
    seeds = [check_int("seed", s, 0) for s in seeds]
    machines = [check_int("machines", m, 1) for m in machines]
    return list(itertools.product(policies, loads, seeds, machines))


def run_sweep(
    scenario: Scenario,
    *,
    policies: Sequence[str] | None = None,
    loads: Sequence[float | None] = (None,),
    seeds: Sequence[int] | None = None,
    machines: Sequence[int] | None = None,
    scheduler: str | None = None,
    workers: int = 2,
    serial: bool = False,
    progress: bool | None = None,
    on_row: Callable[[dict[str, Any]], None] | None = None,
) -> pd.DataFrame:
    """Run the grid; one row per cell, sorted by (policy, load, seed, machines).

    loads: offered loads (None keeps the scenario's). scheduler: address of a running Dask
    scheduler; else a local cluster of ``workers`` processes (or, with ``serial``, no Dask).
    progress: tqdm bar on stderr (None: only when stderr is a terminal).
    """
    from smdlab.policies.registry import policy_class, registrations

    policies = list(policies or scenario.policies)
    for p in policies:
        policy_class(p)  # unknown names fail before anything starts
    registered = registrations(policies)
    cells = grid(
        policies,
        list(loads),
        list(seeds or [scenario.seed]),
        list(machines or [scenario.cluster["machines"]]),
    )
    base = scenario.to_dict()
    from tqdm import tqdm

    bar = tqdm(
        total=len(cells),
        file=sys.stderr,
        disable=None if progress is None else not progress,
        desc="sweep",
        unit="run",
    )
    rows = []

    def collect(row: dict[str, Any]) -> None:
        rows.append(row)
        bar.update(1)
        if on_row is not None:
            on_row(row)

    try:
        if serial:
            for c in cells:
                collect(_cell(base, *c))
        else:
            workers = check_int("workers", workers, 1)
            _run_dask(base, cells, scheduler, workers, collect, registered)
    finally:
        bar.close()
    df = pd.DataFrame(rows)
    return df.sort_values(list(GRID_COLUMNS), na_position="first", kind="stable").reset_index(
        drop=True
    )


def _run_dask(base, cells, scheduler, workers, collect, registered) -> None:
    from dask.distributed import Client, LocalCluster, as_completed

    if scheduler:
        try:
            client = Client(scheduler, timeout="10s")
        except (OSError, TimeoutError) as exc:
            raise InvalidInput(
                f"scheduler: cannot reach a Dask scheduler at {scheduler!r} ({exc})"
            ) from None
        cluster = None
    else:
        cluster = LocalCluster(
            n_workers=workers,
            threads_per_worker=1,
            processes=True,
            dashboard_address=None,
            silence_logs=logging.ERROR,
        )
        client = Client(cluster)
    try:
        futures = [
            client.submit(
                _cell, base, *c, {k: v for k, v in registered.items() if k == c[0]}, pure=False
            )
            for c in cells
        ]
        for fut in as_completed(futures):
            collect(fut.result())
    finally:
        client.close()
        if cluster is not None:
            cluster.close()
