"""The ``smdlab`` command line: ``simulate`` one scenario, ``sweep`` a grid of them.

Subcommands live in ``COMMANDS`` (name -> Command(help, add_arguments, run)); adding one is a
function that declares its arguments, a function that runs it and returns an exit status, and
one entry in that dict. Any ``SmdlabError`` becomes one line ``smdlab: error: ...`` on stderr
and exit status 2; other exceptions propagate (a traceback, exit status 1). Warnings (e.g. a
job skipped because it fits on no machine) are one line ``smdlab: warning: ...`` each.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import shlex
import signal
import sys
import warnings
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from smdlab.errors import InvalidInput, SmdlabError, check_int

# a tqdm bar on stderr for simulations of at least this many jobs (never with --json)
PROGRESS_MIN_JOBS = 5000

PROG = "smdlab"


class _Parser(argparse.ArgumentParser):
    """argparse that reports a usage error as one line (and exit status 2)."""

    def error(self, message: str) -> None:  # type: ignore[override]
        sys.stderr.write(f"{PROG}: error: {message} (see '{self.prog} --help')\n")
        raise SystemExit(2)


class _Former(argparse.Action):
    """A former flag (removed in 0.2): using it is a usage error naming its replacement."""

    def __init__(self, option_strings: Sequence[str], dest: str, *, use: str, **kw: Any) -> None:
        super().__init__(option_strings, dest, help=argparse.SUPPRESS, **kw)
        self.use = use

    def __call__(self, parser, namespace, values, option_string=None) -> None:
        parser.error(f"{option_string} is a former flag, removed in 0.2; use {self.use}")


@dataclass(frozen=True)
class Command:
    """One subcommand: its help line, its arguments, and what it runs (returns the exit status)."""

    help: str
    add_arguments: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace], int]


def _csv_list(kind: Callable[[str], Any]) -> Callable[[str], list]:
    def parse(text: str) -> list:
        items = [t.strip() for t in text.split(",") if t.strip()]
        if not items:
            raise argparse.ArgumentTypeError(f"expected a comma-separated list, got {text!r}")
        try:
            return [kind(t) for t in items]
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"expected a comma-separated list of {kind.__name__}, got {text!r}"
            ) from None

    return parse


def _add_scenario_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--scenario", metavar="FILE", help="scenario TOML (default: data/scenarios/default.toml)"
    )
    p.add_argument(
        "--workload",
        metavar="{synthetic,philly,omru-image,omru-action,PATH,KIND:PATH}",
        help="workload kind, a CSV file (a trace or a job table), or KIND:PATH for another "
        "simulator's input file (KIND: smdlab.workloads.scenario.INPUT_READERS)",
    )
    p.add_argument(
        "--jobs", type=int, metavar="N", help="number of jobs (synthetic) or the first N (trace)"
    )
    p.add_argument(
        "--start",
        metavar="INDEX|DATE",
        help="trace window: first job by index in time order (0-based) or by date-time",
    )
    p.add_argument(
        "--demands",
        metavar="{per_network,uniform,gpu_only}",
        help="per-task demands; gpu_only: each job one gang of its GPUs, no PS",
    )
    p.add_argument(
        "--policy",
        type=_csv_list(str),
        metavar="NAME[,NAME...]",
        help="policies to run: registered names, or module:Class for a policy in your own module",
    )
    p.add_argument("--mode", help="timing-model overlap mode (sequential, wfbp, wfbp_prefetch)")
    p.add_argument(
        "--execution",
        metavar="{natural,non_elastic,preemptive,elastic}",
        help="execution mode: each policy's own (natural, the default) or one for all",
    )
    p.add_argument(
        "--slot-s",
        type=float,
        dest="slot_s",
        metavar="SECONDS",
        help="seconds between periodic decision points (default: each policy's own slot)",
    )
    p.add_argument(
        "--restart-s",
        type=float,
        dest="restart_s",
        metavar="SECONDS",
        help="seconds without progress after a re-allocation or a resume (default 30)",
    )
    p.add_argument(
        "--sharing-degree",
        type=int,
        dest="sharing_degree",
        metavar="K",
        help="jobs a GPU may hold at once (default: each policy's own, else 1: no sharing)",
    )
    p.add_argument("--elastic", action=_Former, nargs=0, use="--execution elastic")
    p.add_argument("--delta", action=_Former, nargs="?", use="--slot-s SECONDS")
    p.add_argument(
        "--unfit",
        choices=("skip", "raise"),
        help="jobs that fit on no machine or in no GPU's memory: skip or raise",
    )


def _scenario_from(
    args: argparse.Namespace,
    *,
    load: float | None = None,
    machines: int | None = None,
    seed: int | None = None,
):
    """The scenario file (or the default) with the command-line overrides applied."""
    from smdlab.workloads.scenario import INPUT_READERS, WORKLOAD_KINDS, load_scenario

    scenario = load_scenario(args.scenario)
    workload: dict[str, Any] = {}
    if args.workload is not None:
        kind, sep, path = args.workload.partition(":")
        if sep and kind in INPUT_READERS:  # KIND:PATH, another simulator's input file
            workload.update(kind=kind, path=str(Path(path).resolve()))
        elif args.workload in WORKLOAD_KINDS and args.workload != "csv":
            workload["kind"] = args.workload
        else:
            workload.update(kind="csv", path=str(Path(args.workload).resolve()))
    if args.jobs is not None:
        workload["jobs"] = args.jobs
    if getattr(args, "start", None) is not None:
        start = args.start.strip()
        workload["start"] = int(start) if start.isdigit() else start
    if getattr(args, "demands", None) is not None:
        workload["demands"] = args.demands
    if load is not None:
        if not load > 0:
            raise InvalidInput(f"--load must be > 0 (the offered load), got {load!r}")
        workload["load"] = load
    simulation = {
        k: getattr(args, k)
        for k in (
            "mode",
            "execution",
            "slot_s",
            "restart_s",
            "unfit",
            "sharing_degree",
        )
        if getattr(args, k) is not None
    }
    fields: dict[str, Any] = {}
    if args.policy is not None:
        fields["policies"] = args.policy
    if seed is not None:
        fields["seed"] = seed
    out = scenario.with_changes(
        cluster={"machines": machines} if machines is not None else None,
        workload=workload,
        simulation=simulation,
        **fields,
    )
    _import_from_cwd(out.policies)
    return out


def _import_from_cwd(policies: Sequence[str]) -> None:
    """Let ``module:Class`` policies import modules of the working directory, as ``python -m``
    would (a console script's path starts at its own folder instead)."""
    from smdlab.policies.registry import is_spec

    cwd = os.getcwd()
    if any(is_spec(p) for p in policies) and cwd not in sys.path and "" not in sys.path:
        sys.path.insert(0, cwd)


@contextlib.contextmanager
def _stdout_to_stderr() -> Iterator[None]:
    """Send everything written to file descriptor 1 (Python or C code) to stderr meanwhile."""
    sys.stdout.flush()
    try:
        saved = os.dup(1)
    except OSError:  # no real stdout (embedded use): Python-level redirect only
        with contextlib.redirect_stdout(sys.stderr):
            yield
        return
    try:
        os.dup2(2, 1)
        with contextlib.redirect_stdout(sys.stderr):
            yield
    finally:
        sys.stdout.flush()
        os.dup2(saved, 1)
        os.close(saved)


def _fmt_table(results: dict) -> str:
    import pandas as pd

    rows = []
    for name, r in results.items():
        s = r.summary
        row = {
            "policy": name,
            "completed": s["jobs_completed"],
            "skipped": s["jobs_skipped"],
            "mean_jct_s": s["mean_jct"],
            "median_jct_s": s["median_jct"],
            "p95_jct_s": s["p95_jct"],
            "p99_jct_s": s["p99_jct"],
            "makespan_s": s["makespan"],
        }
        row.update({f"util_{k}": v for k, v in s["utilization"].items()})
        row["sched_s"] = s["scheduler_time_s"]
        rows.append(row)
    df = pd.DataFrame(rows).set_index("policy")
    return df.to_string(float_format=lambda x: f"{x:.4g}" if abs(x) < 1 else f"{x:,.1f}")


def _csv_text(df) -> str:
    buf = io.StringIO()
    df.to_csv(buf, index=False)
    return buf.getvalue()


# ---- simulate ------------------------------------------------------------------------------
def _simulate_arguments(p: argparse.ArgumentParser) -> None:
    _add_scenario_arguments(p)
    p.add_argument("--machines", type=int, metavar="N", help="number of machines")
    p.add_argument("--gpus-per-machine", type=int, metavar="G", help="GPUs of each machine")
    p.add_argument(
        "--cluster-file",
        metavar="FILE",
        help="TOML cluster of [[racks]] (name, machines, gpu_type, gpu, uplink_gbps, ...)",
    )
    p.add_argument(
        "--throughputs",
        metavar="FILE",
        help="CSV of measured throughputs in Gavel's format for GPU-type speeds (default: Gavel's)",
    )
    p.add_argument(
        "--arch-mix",
        type=float,
        metavar="X",
        help="synthetic: fraction of ring all-reduce jobs (0..1), the rest PS",
    )
    p.add_argument("--seed", type=int, metavar="S", help="workload seed")
    p.add_argument(
        "--engine",
        choices=("smdlab", "gavel"),
        help="gavel: the gavel_* policies in Gavel's mode on a gavel workload (default: the "
        "scenario's simulation.engine, else smdlab)",
    )
    p.add_argument(
        "--load", type=float, metavar="X", help="offered load (synthetic; rescales a trace)"
    )
    p.add_argument(
        "--json", action="store_true", help="print only JSON on stdout (keyed by policy)"
    )
    p.add_argument("--out", metavar="DIR", help="write per-job, history and utilisation CSVs here")
    p.add_argument(
        "--force", action="store_true", help="with --out: replace files smdlab did not write"
    )


def _workload_line(scenario: Any, jobs: Sequence[Any], cluster: Any, jobs_given: bool) -> str:
    """What ``simulate`` runs, in one line: jobs, arrival window, machines; for a trace, which part."""
    w = scenario.workload
    first = min(j.arrival for j in jobs)
    last = max(j.arrival for j in jobs)
    gpus = sum(float(m.capacity.get("gpu", 0)) for m in cluster.machines)
    line = (
        f"workload: {len(jobs):,} {w['kind']} jobs arriving in [{first:,.0f}, {last:,.0f}] s "
        f"on {len(cluster.machines)} machines ({gpus:,.0f} GPUs)"
    )
    if w["kind"] == "philly":
        from smdlab.workloads.trace import trace_size

        path = w.get("path")
        if path is not None and not Path(path).is_absolute() and scenario.base_dir is not None:
            path = scenario.base_dir / path
        total = trace_size(path, w.get("on_unsorted", "sort"))
        if len(jobs) < total:
            which = "--jobs" if jobs_given else "the scenario's workload.jobs"
            if w.get("jobs") is None:
                which = "the scenario's trace filters"
            filtered = any(w.get(k) is not None for k in ("start", "window_s", "vc"))
            whole = "every job the filters keep" if filtered else "the whole trace"
            line += (
                f"; {len(jobs):,} of the trace's {total:,} jobs ({which}; "
                f"--jobs {total} runs {whole})"
            )
    return line


def _simulate(args: argparse.Namespace) -> int:
    scenario = _scenario_from(args, load=args.load, machines=args.machines, seed=args.seed)
    if args.gpus_per_machine is not None:
        from smdlab.errors import check_int

        gpm = check_int("--gpus-per-machine", args.gpus_per_machine, 1, 1024)
        scenario = scenario.with_changes(cluster={"gpu": gpm})
    if args.arch_mix is not None:
        scenario = scenario.with_changes(workload={"arch_mix": args.arch_mix})
    if args.engine is not None:
        scenario = scenario.with_changes(simulation={"engine": args.engine})
    if getattr(args, "cluster_file", None) is not None:
        import dataclasses

        from smdlab.model.cluster import cluster_file_tables

        if args.machines is not None or args.gpus_per_machine is not None:
            raise InvalidInput(
                "--cluster-file sets the whole cluster; drop --machines/--gpus-per-machine"
            )
        tables = cluster_file_tables(args.cluster_file)
        scenario = dataclasses.replace(scenario, cluster=tables)
    redirect = _stdout_to_stderr() if args.json else contextlib.nullcontext()
    table: contextlib.AbstractContextManager[None] = contextlib.nullcontext()
    if getattr(args, "throughputs", None) is not None:
        from smdlab.model.gpu_types import use_throughputs

        table = use_throughputs(args.throughputs)
    with redirect, table:
        cluster = scenario.build_cluster()
        jobs = scenario.build_jobs(cluster)
        line = _workload_line(scenario, jobs, cluster, args.jobs is not None)
        if args.out:
            _check_out_folder(args.out, scenario.policies, args.force)
        from smdlab.sim.gavel_engine import run_engines

        results = run_engines(
            scenario,
            jobs,
            cluster,
            on_start=lambda note: print(f"{PROG}: {line}{note}", file=sys.stderr, flush=True),
            progress=not args.json and len(jobs) >= PROGRESS_MIN_JOBS,
        )
        if args.out:
            from smdlab.sim.output import write_files

            files = {}
            for name, r in results.items():
                files[f"jobs_{name}.csv"] = _csv_text(r.jobs)
                files[f"history_{name}.csv"] = _csv_text(r.history)
                files[f"utilization_{name}.csv"] = _csv_text(r.utilization)
            import pandas as pd

            from smdlab.sim.result import TIMING_KEYS

            # Wall-clock figures go to their own file, so that every other CSV is byte-identical
            # between two runs of the same scenario and seed.
            rows = [r.summary_row() for r in results.values()]
            files["summary.csv"] = _csv_text(
                pd.DataFrame(
                    [{k: v for k, v in row.items() if k not in TIMING_KEYS} for row in rows]
                )
            )
            files["timings.csv"] = _csv_text(
                pd.DataFrame(
                    [{"policy": row["policy"], **{k: row[k] for k in TIMING_KEYS}} for row in rows]
                )
            )
            write_files(args.out, files, force=args.force)
    if args.json:
        sys.stdout.write(
            json.dumps({name: r.to_dict() for name, r in results.items()}, indent=2) + "\n"
        )
    else:
        print(f"scenario {scenario.name!r}: {len(jobs)} jobs on {cluster!r}")
        print(_fmt_table(results))
        if args.out:
            print(f"wrote per-job tables to {args.out}")
    return 0


# ---- sweep ---------------------------------------------------------------------------------
def _sweep_arguments(p: argparse.ArgumentParser) -> None:
    _add_scenario_arguments(p)
    p.add_argument(
        "--loads",
        type=_csv_list(float),
        metavar="X[,X...]",
        help="offered loads (default: the scenario's)",
    )
    p.add_argument(
        "--seeds",
        type=_csv_list(int),
        metavar="S[,S...]",
        help="workload seeds (default: the scenario's)",
    )
    p.add_argument(
        "--machines",
        type=_csv_list(int),
        metavar="N[,N...]",
        help="cluster sizes (default: the scenario's)",
    )
    p.add_argument(
        "--scheduler",
        metavar="ADDRESS",
        help="address of a running Dask scheduler (default: a local cluster)",
    )
    p.add_argument(
        "--workers",
        type=int,
        default=2,
        metavar="N",
        help="worker processes of the local cluster (default 2)",
    )
    p.add_argument(
        "--serial",
        action="store_true",
        help="run the cells one after another in this process (no Dask)",
    )
    p.add_argument(
        "--out",
        metavar="FILE",
        help="tidy CSV of the results, written row by row as cells finish and sorted at the end, "
        "with NAME.sweep.json, NAME.timings.csv and NAME.failures.csv beside it "
        "(default: CSV on stdout, without the timing columns)",
    )
    p.add_argument(
        "--resume",
        action="store_true",
        help="continue the sweep whose rows are in --out: run only its missing cells",
    )
    p.add_argument(
        "--fail-fast",
        action="store_true",
        help="stop at the first cell that raises (default: list it and go on; exit status 1)",
    )
    p.add_argument(
        "--force", action="store_true", help="with --out: replace a file smdlab did not write"
    )
    p.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")


def _sweep(args: argparse.Namespace) -> int:
    from smdlab.sim.result import TIMING_KEYS
    from smdlab.sim.sweep import SweepInterrupted, run_sweep
    from smdlab.sim.sweep_file import check_out_for_resume, failure_line, sidecar

    if args.serial and args.scheduler:
        raise SmdlabError("give --serial or --scheduler, not both")
    if args.resume:
        check_out_for_resume(args.out)
    scenario = _scenario_from(args)
    try:
        with _stdout_to_stderr(), _sigterm_as_interrupt(), warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=r".* sweep cells failed")  # said below
            df = run_sweep(
                scenario,
                loads=args.loads or [None],
                seeds=args.seeds,
                machines=args.machines,
                scheduler=args.scheduler,
                workers=args.workers,
                serial=args.serial,
                progress=False if args.no_progress else None,
                out=None if args.resume else args.out,
                resume=args.out if args.resume else None,
                fail_fast=args.fail_fast,
                force=args.force,
            )
    except SweepInterrupted as stop:
        if stop.out is None:
            where = "not kept (no --out)"
            again = ""
        else:
            where = f"kept in {str(stop.out)!r}"
            argv = [a for a in args.argv if a != "--resume"] + ["--resume"]
            again = f"; resume with: {PROG} {shlex.join(argv)}"
        sys.stderr.write(
            f"{PROG}: interrupted: {stop.kept} rows {where}, {stop.missing} missing{again}\n"
        )
        return 130
    failures = df.attrs.get("failures")
    if args.out:
        print(f"wrote {len(df)} rows to {args.out}", file=sys.stderr)
    else:
        sys.stdout.write(_csv_text(df.drop(columns=[c for c in TIMING_KEYS if c in df.columns])))
    if failures is not None and len(failures):
        named = failure_line(failures)
        listed = f" (listed in {sidecar(Path(args.out), 'failures.csv')})" if args.out else ""
        sys.stderr.write(
            f"{PROG}: error: {len(failures)} of {len(df) + len(failures)} cells failed{listed}: {named}\n"
        )
        return 1
    return 0


@contextlib.contextmanager
def _sigterm_as_interrupt() -> Iterator[None]:
    """SIGTERM stops a sweep as Ctrl-C does (its finished rows are kept)."""

    def handler(signum, frame) -> None:
        raise KeyboardInterrupt

    try:
        old = signal.signal(signal.SIGTERM, handler)
    except ValueError:  # not the main thread: leave SIGTERM alone
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, old)


def _check_out_folder(folder: str, policies: Sequence[str], force: bool) -> None:
    """Fail before a run if ``simulate --out`` could not write its files there."""
    from smdlab.sim.output import check_replaceable

    out = Path(folder)
    if out.exists() and not out.is_dir():
        raise SmdlabError(f"output folder {str(out)!r} exists and is not a folder")
    if out.is_dir():
        names = [f"{k}_{p}.csv" for p in policies for k in ("jobs", "history", "utilization")]
        for name in [*names, "summary.csv", "timings.csv"]:
            check_replaceable(out / name, force=force)


# ---- reproduce (owned by smdlab.experiments.cli_reproduce) ----------------------------------
def _reproduce_arguments(p: argparse.ArgumentParser) -> None:
    from smdlab.experiments.cli_reproduce import add_arguments

    add_arguments(p)


def _reproduce(args: argparse.Namespace) -> int:
    from smdlab.experiments.cli_reproduce import run

    return run(args)


# ---- train (smdlab.rl.library; deeprm_env: smdlab.rl.deeprm_train) ---------------------------
def _train_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "agent",
        help="learned scheduler to train: dl2, deeprm, sched2 (MaskablePPO, sb3-contrib), "
        "deeprm_env (DeepRM's policy gradient in its own environment) or ppo (MaskablePPO, "
        "the control learner)",
    )
    p.add_argument(
        "--env",
        default="dl2_small",
        help="ppo: the workload it trains on: dl2_small, locality_small or philly (default "
        "dl2_small)",
    )
    p.add_argument(
        "--workload",
        metavar="TOML",
        help="scenario file whose cluster and workload it trains on (default: "
        "data/scenarios/dl2_small.toml for dl2, locality_small.toml for deeprm and sched2)",
    )
    p.add_argument(
        "--steps",
        type=int,
        required=True,
        metavar="N",
        help="environment steps of MaskablePPO (deeprm_env: iterations) in all (>= 1)",
    )
    p.add_argument("--out", required=True, metavar="DIR", help="folder for checkpoint and weights")
    p.add_argument("--seed", type=int, default=0, metavar="S", help="training seed (default 0)")
    p.add_argument(
        "--sizes",
        type=int,
        default=1,
        metavar="S",
        help="deeprm, sched2: worker counts each placement offers, the request halved 0..S-1 "
        "times (default 1: every job at its request)",
    )
    p.add_argument(
        "--warmup",
        type=int,
        metavar="N",
        help="dl2, deeprm, sched2: environment steps of a teacher imitated first (dl2: DRF; "
        "deeprm, sched2: a locality-aware first fit; default 0); deeprm_env: epochs imitating "
        "SJF (default 8)",
    )
    p.add_argument(
        "--warmup-lr", type=float, default=1e-3, help="learning rate of the warm-up (default 1e-3)"
    )
    p.add_argument(
        "--teacher",
        default="request",
        help="deeprm, sched2 with --sizes: the warm-up teacher, 'request' (every job at its "
        "request) or 'smaller' (starts a job below its request rather than wait); default request",
    )
    p.add_argument(
        "--lr",
        type=float,
        help="learning rate (default 3e-4, Adam; deeprm_env: 1e-3, RMSProp)",
    )
    p.add_argument("--entropy", type=float, default=0.01, help="entropy weight (default 0.01)")
    p.add_argument(
        "--episodes",
        type=int,
        metavar="N",
        help="deeprm_env: episodes per jobset, averaged by the baseline (default 10)",
    )
    p.add_argument("--gamma", type=float, default=0.99, help="discount per step (default 0.99)")
    p.add_argument(
        "--envs",
        type=int,
        default=8,
        metavar="N",
        help="environments stepped together (default 8); a rollout is N x --rollout steps",
    )
    p.add_argument(
        "--rollout",
        type=int,
        default=128,
        help="environment steps per environment per rollout (default 128)",
    )
    p.add_argument("--hidden", type=int, help="units per hidden layer (default 64; deeprm_env: 20)")
    p.add_argument("--depth", type=int, default=2, help="hidden layers (default 2)")
    p.add_argument(
        "--validate-every",
        type=int,
        default=0,
        metavar="N",
        help="deeprm_env: greedy validation every N iterations (default 10)",
    )
    p.add_argument(
        "--time-limit",
        type=float,
        metavar="S",
        help="dl2, deeprm, sched2, ppo: stop PPO at the first rollout starting after S seconds "
        "(train.json records the steps trained; --steps of that count repeats the run)",
    )
    p.add_argument("--force", action="store_true", help="write into a folder holding other files")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")


def _train(args: argparse.Namespace) -> int:
    """``smdlab train AGENT``: MaskablePPO for every agent but deeprm_env."""
    agents = ("dl2", "deeprm", "sched2", "deeprm_env", "ppo")
    if args.agent not in agents:
        raise InvalidInput(f"agent must be one of {', '.join(agents)}; got {args.agent!r}")
    if args.agent == "deeprm_env":
        return _train_deeprm_env(args)
    scenario = ""
    if args.workload is not None:
        path = Path(args.workload)
        if not path.is_file():
            raise InvalidInput(f"--workload must be a scenario TOML file, got {args.workload!r}")
        scenario = str(path.resolve())
    from smdlab.rl.library import PPOConfig, train

    cfg = PPOConfig(
        agent=args.agent,
        workload=args.env,
        scenario=scenario,
        sizes=args.sizes,
        timesteps=check_int("steps", args.steps, 1),
        seed=args.seed,
        n_envs=args.envs,
        n_steps=args.rollout,
        hidden=64 if args.hidden is None else args.hidden,
        depth=args.depth,
        lr=3e-4 if args.lr is None else args.lr,
        gamma=args.gamma,
        entropy=args.entropy,
        warmup=args.warmup or 0,
        warmup_lr=args.warmup_lr,
        teacher=args.teacher,
    )
    summary = train(args.out, cfg, force=args.force, time_limit=args.time_limit)
    where = f" on {args.env}" if args.agent == "ppo" else ""
    print(
        f"trained {args.agent}{where} for {summary['timesteps']} environment steps "
        f"(warm-up {summary['warmup_steps']}) in {summary['seconds']:.1f} s "
        f"({summary['cpu_seconds']:.1f} s of CPU); weights in "
        f"{Path(args.out) / 'weights.npz'}",
        file=sys.stderr,
    )
    return 0


def _train_deeprm_env(args: argparse.Namespace) -> int:
    """``smdlab train deeprm_env``: DeepRM's policy gradient in its own environment."""
    from smdlab.rl.deeprm_train import DeepRMTrainConfig, train_deeprm

    cfg = DeepRMTrainConfig(
        iterations=check_int("steps", args.steps, 1),
        seed=args.seed,
        episodes=10 if args.episodes is None else args.episodes,  # DeepRM's num_seq_per_batch
        warmup=8 if args.warmup is None else args.warmup,
        hidden=20 if args.hidden is None else args.hidden,
        lr=1e-3 if args.lr is None else args.lr,
        validate_every=args.validate_every or 10,
    )
    summary = train_deeprm(args.out, cfg, progress=not args.no_progress)
    print(
        f"trained deeprm_env for {summary['iterations']} iterations "
        f"({summary['environment_steps']} environment steps) in {summary['seconds']:.1f} s; "
        f"weights in {Path(args.out) / 'weights.npz'}",
        file=sys.stderr,
    )
    return 0


# ---- batch ---------------------------------------------------------------------------------
BATCH_QUEUE_CHOICES = ("fifo", "easy", "conservative")


def _batch_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--workload",
        default="philly",
        metavar="{philly,PATH}",
        help="background jobs: the bundled Philly trace or a Philly-format CSV (default philly)",
    )
    p.add_argument("--start", type=int, default=0, metavar="INDEX", help="first row (time order)")
    p.add_argument(
        "--jobs", type=int, metavar="N", help="the first N rows from --start (default all)"
    )
    p.add_argument(
        "--load",
        type=float,
        metavar="X",
        help="scale arrivals to this offered load (default: as is)",
    )
    p.add_argument("--gpus", type=int, default=256, metavar="G", help="GPUs of the pool (256)")
    p.add_argument(
        "--limit-h",
        type=float,
        default=48.0,
        dest="limit_h",
        metavar="H",
        help="wall-time limit in hours (48)",
    )
    p.add_argument(
        "--queue",
        choices=BATCH_QUEUE_CHOICES,
        default="easy",
        help="queue order and backfilling (default easy)",
    )
    p.add_argument(
        "--fair-share",
        action="store_true",
        dest="fair_share",
        help="order the queue by the accounts' decayed usage first",
    )
    p.add_argument(
        "--overestimate",
        type=float,
        default=3.0,
        metavar="F",
        help="requested time = duration x U[1, F], capped at the limit (default 3)",
    )
    p.add_argument(
        "--requested-column",
        dest="requested_column",
        metavar="NAME",
        help="read requested wall times (s) from this trace column instead",
    )
    p.add_argument("--seed", type=int, default=0, metavar="S", help="seed of draws (0)")
    p.add_argument(
        "--chains",
        type=int,
        default=0,
        metavar="N",
        help="chains arriving uniformly in the third quarter of the arrival span (default 0)",
    )
    p.add_argument(
        "--chain-length-h",
        type=float,
        dest="chain_length_h",
        metavar="H",
        help="service of each chain in hours (default four limits)",
    )
    p.add_argument(
        "--chain-gpus",
        type=_csv_list(int),
        default=[1, 2, 4, 8],
        dest="chain_gpus",
        metavar="G[,G...]",
        help="GPU counts drawn for the chains (default 1,2,4,8)",
    )
    p.add_argument(
        "--provisioner",
        default="reactive",
        metavar="{reactive,oracle,lead_<H>h}",
        help="when to submit a chain's next link (default reactive)",
    )
    p.add_argument(
        "--step-s",
        type=float,
        default=600.0,
        dest="step_s",
        metavar="SECONDS",
        help="seconds between the provisioner's decision points (600)",
    )
    p.add_argument("--out", metavar="DIR", help="write jobs.csv, chains.csv and summary.csv here")
    p.add_argument(
        "--force", action="store_true", help="with --out: replace files smdlab did not write"
    )


def _batch(args: argparse.Namespace) -> int:
    """``smdlab batch``: a batch-queue run of a trace's jobs (and chains), docs/batch.md."""
    from smdlab.errors import check_positive
    from smdlab.policies.batch import QueuePolicy, provisioner
    from smdlab.sim.batch import simulate_batch
    from smdlab.workloads.batch import batch_trace, make_chains, offered_load

    limit = check_positive("--limit-h", args.limit_h) * 3600
    gpus = check_int("--gpus", args.gpus, 1)
    chains_n = check_int("--chains", args.chains, 0)
    path = None if args.workload == "philly" else args.workload
    kw: dict[str, Any] = {
        "limit_s": limit,
        "overestimate": args.overestimate,
        "seed": args.seed,
        "start": args.start,
        "first": None if args.jobs is None else check_int("--jobs", args.jobs, 1),
        "requested_column": args.requested_column,
    }
    jobs = batch_trace(path, **kw)
    if args.load is not None:
        load = check_positive("--load", args.load)
        jobs = batch_trace(path, **kw, rate_scale=load / offered_load(jobs, gpus))
    backfill = "none" if args.queue == "fifo" else args.queue
    queue = QueuePolicy(backfill, fair_share=args.fair_share)
    chains = []
    if chains_n:
        span = max(j.arrival for j in jobs)
        length = 4 * limit if args.chain_length_h is None else args.chain_length_h * 3600
        chains = make_chains(
            chains_n,
            length_s=check_positive("--chain-length-h", length),
            gpus=args.chain_gpus,
            t0=span / 2,
            t1=3 * span / 4,
            seed=args.seed,
        )
    prov = provisioner(args.provisioner) if chains else None
    if args.out:
        from smdlab.sim.output import check_replaceable

        for name in ("jobs.csv", "chains.csv", "summary.csv"):
            check_replaceable(Path(args.out) / name, force=args.force)
    print(
        f"{PROG}: {len(jobs):,} batch jobs on {gpus} GPUs (offered load "
        f"{offered_load(jobs, gpus):.2f}), {queue.name}, limit {args.limit_h:g} h, "
        f"{len(chains)} chains",
        file=sys.stderr,
        flush=True,
    )
    res = simulate_batch(
        jobs, gpus, limit, queue, chains=chains, provisioner=prov, step_s=args.step_s
    )
    import pandas as pd

    summary = {"queue": queue.name, **res.summary, "cpu_s": res.cpu_s}
    if chains:
        summary["provisioner"] = prov.name if prov is not None else ""
    for k, v in summary.items():
        print(f"{k}: {v:.4g}" if isinstance(v, float) else f"{k}: {v}")
    if chains:
        print(res.chains.to_string(index=False, float_format=lambda x: f"{x:,.1f}"))
    if args.out:
        from smdlab.sim.output import write_files

        files = {
            "jobs.csv": _csv_text(res.jobs),
            "chains.csv": _csv_text(res.chains),
            "summary.csv": _csv_text(
                pd.DataFrame([{k: v for k, v in summary.items() if k != "cpu_s"}])
            ),
        }
        write_files(args.out, files, force=args.force)
        print(f"wrote jobs.csv, chains.csv and summary.csv to {args.out}")
    return 0


COMMANDS: dict[str, Command] = {
    "simulate": Command(
        "simulate policies on one scenario and print their summary", _simulate_arguments, _simulate
    ),
    "sweep": Command(
        "run a grid (policies x loads x seeds x cluster sizes) into one tidy CSV",
        _sweep_arguments,
        _sweep,
    ),
    "reproduce": Command(
        "regenerate the paper-style figures: PNG, SVG and the CSV of each figure's data",
        _reproduce_arguments,
        _reproduce,
    ),
    "train": Command(
        "train a learned scheduler (dl2, deeprm, sched2) into a folder: checkpoint, resume, weights",
        _train_arguments,
        _train,
    ),
    "batch": Command(
        "run a trace on a Slurm-like batch queue (wall-time limits, backfilling, job chains)",
        _batch_arguments,
        _batch,
    ),
}


def build_parser() -> argparse.ArgumentParser:
    """The argument parser with every subcommand of ``COMMANDS``."""
    parser = _Parser(
        prog=PROG, description="smdlab: scheduling DNN training jobs on shared clusters"
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    sub.required = True
    for name, cmd in COMMANDS.items():
        p = sub.add_parser(name, help=cmd.help, description=cmd.help)
        cmd.add_arguments(p)
        p.set_defaults(_run=cmd.run)
    return parser


def _show_warning(message, category, filename, lineno, file=None, line=None) -> None:
    """A warning as one line ``smdlab: warning: ...`` on stderr (not Python's two-line form)."""
    sys.stderr.write(f"{PROG}: warning: {' '.join(str(message).split())}\n")


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status."""
    argv = list(sys.argv[1:] if argv is None else argv)
    args = build_parser().parse_args(argv)
    args.argv = argv  # the command as given: an interrupted sweep prints how to resume it
    with warnings.catch_warnings():
        warnings.showwarning = _show_warning
        try:
            return int(args._run(args) or 0)
        except SmdlabError as exc:
            message = " ".join(str(exc).split())
            sys.stderr.write(f"{PROG}: error: {message}\n")
            return 2
        except BrokenPipeError:
            # the reader of stdout went away (`smdlab simulate --json | head`): not a bug to report;
            # point stdout at devnull so the interpreter's final flush does not raise again
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            return 1


if __name__ == "__main__":
    sys.exit(main())
