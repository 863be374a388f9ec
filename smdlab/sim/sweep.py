"""Grids of simulations (policies x loads x seeds x cluster sizes), run in parallel with Dask.

Each cell builds its own workload from the base scenario with the cell's load, seed and machine
count, simulates one policy and returns one tidy row: the cell's coordinates and the summary
(``SimResult.summary_row``). Without a scheduler address, a local Dask cluster of worker
processes is started for the sweep and closed after it.
"""

from __future__ import annotations

import io
import itertools
import logging
import os
import sys
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from smdlab.errors import InvalidInput, check_int, check_positive
from smdlab.sim.result import TIMING_KEYS
from smdlab.sim.sweep_file import GRID_COLUMNS, Cell, SweepFiles, cell_key, describe, failure_line
from smdlab.workloads.scenario import Scenario


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


class SweepInterrupted(KeyboardInterrupt):
    """A sweep stopped by Ctrl-C or SIGTERM; every finished row is on disk (with ``out``)."""

    def __init__(self, kept: int, missing: int, out: Path | None) -> None:
        super().__init__(f"sweep interrupted: {kept} rows kept, {missing} missing")
        self.kept = kept
        self.missing = missing
        self.out = out


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
    out: str | os.PathLike | None = None,
    resume: str | os.PathLike | None = None,
    fail_fast: bool = False,
    force: bool = False,
) -> pd.DataFrame:
    """Run the grid; one row per cell, sorted by (policy, load, seed, machines).

    loads: offered loads (None keeps the scenario's). scheduler: address of a running Dask
    scheduler; else a local cluster of ``workers`` processes (or, with ``serial``, no Dask).
    progress: tqdm bar on stderr (None: only when stderr is a terminal).
    out: CSV file the rows stream into as they finish, sorted at the end (``smdlab.sim.sweep_file``).
    resume: such a file from an earlier run of the same sweep; only its missing cells run.
    fail_fast: the first cell that raises ends the sweep; else it is listed in
    ``df.attrs["failures"]`` (and ``NAME.failures.csv``) and the others go on.
    force: with ``out``, replace files smdlab did not write.
    Ctrl-C or SIGTERM raises ``SweepInterrupted`` after the finished rows are saved.
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
    if resume is not None and out is not None and Path(resume) != Path(out):
        raise InvalidInput("resume: give the file to continue as resume, or as out, not two files")
    chosen = resume if resume is not None else out
    target = None if chosen is None else Path(chosen)
    files = SweepFiles(target, describe(base, cells), resume=resume is not None, force=force)
    done = files.done()
    todo = [c for c in cells if cell_key(c) not in done]
    from tqdm import tqdm

    bar = tqdm(
        total=len(cells),
        initial=len(cells) - len(todo),
        file=sys.stderr,
        disable=None if progress is None else not progress,
        desc="sweep",
        unit="run",
    )

    def collect(row: dict[str, Any]) -> None:
        files.add(row, TIMING_KEYS)
        bar.update(1)
        if on_row is not None:
            on_row(row)

    def fail(cell: Cell, exc: BaseException) -> None:
        if fail_fast:
            raise exc
        files.fail(cell, f"{type(exc).__name__}: {' '.join(str(exc).split())}")
        bar.update(1)
        bar.set_postfix(failed=len(files.failures))

    try:
        if serial:
            for c in todo:
                try:
                    row = _cell(base, *c)
                except Exception as exc:  # one failing cell is a row of the failures file
                    fail(c, exc)
                else:
                    collect(row)
        elif todo:
            workers = check_int("workers", workers, 1)
            _run_dask(base, todo, scheduler, workers, collect, fail, registered)
    except KeyboardInterrupt:
        bar.close()
        kept = len(files.rows)  # already on disk, as a valid (unsorted) CSV: --resume continues it
        raise SweepInterrupted(kept, len(cells) - kept, target) from None
    finally:
        bar.close()
    text = files.finish()
    df = pd.read_csv(io.StringIO(text))
    timing = pd.read_csv(io.StringIO(files.timings_text()))
    if len(timing.columns) > len(GRID_COLUMNS) and len(df):
        df = df.merge(timing, on=list(GRID_COLUMNS), how="left")
    failures = files.failures_frame()
    df.attrs["failures"] = failures
    if len(failures):
        warnings.warn(
            f"{len(failures)} of {len(cells)} sweep cells failed: " + failure_line(failures),
            stacklevel=2,
        )
    return df


def _run_dask(base, cells, scheduler, workers, collect, fail, registered) -> None:
    # Each failure reaches the user once, through ``fail``; Dask's own log lines (a gather
    # refused while a stopped sweep tears down, say) would only repeat or garble it.
    log = logging.getLogger("distributed")
    level = log.level
    log.setLevel(logging.CRITICAL)
    try:
        _run_dask_quietly(base, cells, scheduler, workers, collect, fail, registered)
    finally:
        log.setLevel(level)


def _run_dask_quietly(base, cells, scheduler, workers, collect, fail, registered) -> None:
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
            silence_logs=logging.CRITICAL,
        )
        client = Client(cluster)
    futures = {}
    try:
        futures = {
            client.submit(
                _cell, base, *c, {k: v for k, v in registered.items() if k == c[0]}, pure=False
            ): c
            for c in cells
        }
        # A worker lost mid-cell: the scheduler runs the cell again elsewhere, and its future
        # completes once, so the row is neither lost nor doubled.
        for fut in as_completed(futures):
            try:
                row = fut.result()
            except Exception as exc:  # the cell raised (or killed workers too often)
                fail(futures[fut], exc)
            else:
                collect(row)
    except KeyboardInterrupt:
        client.cancel(list(futures))  # stop the work not yet done
        raise
    finally:
        client.close()
        if cluster is not None:
            cluster.close()
