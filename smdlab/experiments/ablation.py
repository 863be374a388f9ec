"""``multiresource_ablation``: Synergy's and Muri's gains from their authors' settings to smdlab's.

Each system starts in its authors' setting (``data/scenarios/synergy_16x8.toml``,
``data/scenarios/muri_n8g8.toml``) and changes one thing at a time towards smdlab's default
world, cumulatively, in ``STEPS`` order; after each step the same jobs run under each pair of
policies and the row holds both mean JCTs (the measured jobs where the input names them) and
their ratio (the gain). Every step is a scenario option, none a special case:

- ``load``: ``workload.load`` with ``load_resource = "gpu"``: arrivals scaled so that the
  offered GPU load equals that of smdlab's multi-resource figures (``world_gpu_load``: the
  ``jct_vs_cpu_per_gpu`` workload of the configuration's seeds, ``workloads.base.offered_load``);
- ``ps``: ``workload.ps_demand = "per_network"``: one PS per worker with smdlab's PS demand;
- ``prefetch``: Muri ``workload.job_model = "prefetch"`` (the data stage overlaps the rest) in
  place of its measured iteration; Synergy's tables are measurements with no stages, so nothing
  changes there (its row repeats the previous configuration; smdlab's prefetching comes with
  smdlab's profiles);
- ``profiles``: Synergy ``workload.profiles = "smdlab"``, Muri ``workload.stages = "smdlab"``;
- ``restart``: ``simulation.restart_s`` = the configuration's (Muri also ``restart_rule =
  "on_restart"`` and ``workload.restart_overheads = false``);
- ``cluster``: ``cluster.machines`` = the configuration's (same servers; the load stays).

Inputs (``ExperimentConfig.ablation_inputs``, ``INPUTS``): ``authors`` runs the Figure-8 jobs at
9 jobs/h (the first 6,925 rows of ``data/traces/synergy/jobs_seed42_load9.csv``, the jobs its
FIFO runs generated) and all of Muri's trace3 (its Synergy
steps with PSs take over 45 minutes each, so no configuration uses it; call
``multiresource_ablation("full", ...)`` with it by hand). ``trace3`` (the full configuration) runs
all of trace3 beside the Synergy fixture below. ``subset``
(``--quick``) and ``small`` (tests) run in seconds: the measured jobs of the authors' 4 x
8-GPU Synergy fixture that take at most 4 h at the proportional share
(``jobs_seed7_load2.25_short.csv``; ``small``: its first 10) and the first 40 (24) rows of
trace3. Their ratios show the data's shape, not the published gains (the ``input`` column says
which input a row ran).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd

from smdlab.errors import check_choice
from smdlab.experiments.config import ExperimentConfig, get_config
from smdlab.experiments.jct import run_tasks
from smdlab.paths import data_dir

__all__ = [
    "INPUTS",
    "MURI_PAIRS",
    "STEPS",
    "SYNERGY_PAIRS",
    "AblationInputs",
    "ablation_frame",
    "ablation_plan",
    "ablation_run",
    "ablation_steps",
    "multiresource_ablation",
    "world_gpu_load",
]

STEPS = ("authors", "load", "ps", "prefetch", "profiles", "restart", "cluster")
STEP_LABELS = {
    "authors": "authors' setting",
    "load": "+ smdlab's load",
    "ps": "+ PS jobs",
    "prefetch": "+ prefetching",
    "profiles": "+ smdlab's profiles",
    "restart": "+ restart cost",
    "cluster": "+ cluster size",
}
SYSTEMS = ("synergy", "muri")
SYNERGY_PAIRS = (("fifo_proportional", "fifo_tune"),)
MURI_PAIRS = (("srtf", "muri_s"), ("tiresias", "muri_l"))
COLUMNS = [
    "system",
    "step_index",
    "step",
    "label",
    "change",
    "baseline",
    "policy",
    "mean_jct_baseline_s",
    "mean_jct_policy_s",
    "ratio",
    "jobs_measured",
    "machines",
    "input",
]


@dataclass(frozen=True)
class AblationInputs:
    """The inputs of one size: Synergy's job file (under ``data/``), its servers, job counts.

    synergy_jobs, muri_jobs: the first N rows of the Synergy file and of trace3 (None: all).
    """

    synergy_path: str
    synergy_machines: int
    synergy_jobs: int | None
    muri_jobs: int | None


INPUTS: Mapping[str, AblationInputs] = {
    # the jobs the authors' FIFO runs generated (the file goes on to its LAS and SRTF runs' end)
    "authors": AblationInputs("traces/synergy/jobs_seed42_load9.csv", 16, 6925, None),
    # Muri's whole trace3 beside the 4 x 8 Synergy fixture: Synergy's Figure-8 jobs with PSs take
    # over 45 minutes a run on the general placement path, too long for `make reproduce`
    "trace3": AblationInputs("traces/synergy/jobs_seed7_load2.25_short.csv", 4, None, None),
    "subset": AblationInputs("traces/synergy/jobs_seed7_load2.25_short.csv", 4, None, 40),
    "small": AblationInputs("traces/synergy/jobs_seed7_load2.25_short.csv", 4, 10, 24),
}


def world_gpu_load(config: str | ExperimentConfig = "quick") -> float:
    """Offered GPU load of smdlab's multi-resource figures: the ``jct_vs_cpu_per_gpu`` workload.

    Mean over the configuration's seeds of ``offered_load(..., resource="gpu")`` of the online
    jobs that figure draws (load 1.0 on servers of 8 cores per GPU).
    """
    from smdlab.experiments.multiresource import REFERENCE_CPU_PER_GPU, cpu_cluster, online_jobs
    from smdlab.workloads.base import offered_load

    cfg = get_config(config)
    cluster = cpu_cluster(cfg, REFERENCE_CPU_PER_GPU)
    loads = [
        offered_load(online_jobs(cfg, seed, 1.0, cluster), cluster, resource="gpu")
        for seed in cfg.seeds
    ]
    return float(sum(loads) / len(loads))  # type: ignore[arg-type]


def ablation_steps(system: str, config: str | ExperimentConfig = "quick") -> list[dict[str, Any]]:
    """Per step of ``STEPS``: its name, the option it sets and the cumulative scenario changes."""
    system = check_choice("system", system, SYSTEMS)
    cfg = get_config(config)
    load = world_gpu_load(cfg)
    own: dict[str, tuple[str, dict[str, dict[str, Any]]]] = {
        "authors": ("", {}),
        "load": (
            f"workload.load = {load:.3g} (GPU)",
            {"workload": {"load": load, "load_resource": "gpu"}},
        ),
        "ps": ('workload.ps_demand = "per_network"', {"workload": {"ps_demand": "per_network"}}),
    }
    if system == "synergy":
        own |= {
            "prefetch": ("none (the measured tables have no stages)", {}),
            "profiles": ('workload.profiles = "smdlab"', {"workload": {"profiles": "smdlab"}}),
            "restart": (
                f"simulation.restart_s = {cfg.restart_s:g}",
                {"simulation": {"restart_s": cfg.restart_s}},
            ),
        }
    else:
        own |= {
            "prefetch": (
                'workload.job_model = "prefetch"',
                {"workload": {"job_model": "prefetch"}},
            ),
            "profiles": ('workload.stages = "smdlab"', {"workload": {"stages": "smdlab"}}),
            "restart": (
                f'simulation.restart_rule = "on_restart", restart_s = {cfg.restart_s:g}; '
                "workload.restart_overheads = false",
                {
                    "workload": {"restart_overheads": False},
                    "simulation": {"restart_rule": "on_restart", "restart_s": cfg.restart_s},
                },
            ),
        }
    own["cluster"] = (f"cluster.machines = {cfg.machines}", {"cluster": {"machines": cfg.machines}})
    out = []
    acc: dict[str, dict[str, Any]] = {"workload": {}, "simulation": {}, "cluster": {}}
    for step in STEPS:
        change, delta = own[step]
        for section, values in delta.items():
            acc[section] = {**acc[section], **values}
        out.append(
            {"step": step, "change": change, "changes": {k: dict(v) for k, v in acc.items()}}
        )
    return out


def _scenario(system: str, inputs: AblationInputs, changes: Mapping[str, Mapping[str, Any]]):
    """The authors' scenario of ``system`` on ``inputs`` with ``changes`` applied."""
    from smdlab.workloads.scenario import load_scenario

    if system == "synergy":
        sc = load_scenario(data_dir() / "scenarios" / "synergy_16x8.toml")
        base = {"path": str(data_dir() / inputs.synergy_path), "jobs": inputs.synergy_jobs}
        cluster = {"machines": inputs.synergy_machines}
    else:
        sc = load_scenario(data_dir() / "scenarios" / "muri_n8g8.toml")
        base, cluster = {"jobs": inputs.muri_jobs}, {}
    workload = {k: v for k, v in {**base, **changes.get("workload", {})}.items() if v is not None}
    return sc.with_changes(
        workload=workload,
        simulation=dict(changes.get("simulation", {})),
        cluster={**cluster, **changes.get("cluster", {})},
    )


def ablation_run(task: tuple[str, str, str, str]) -> tuple[float, int, int]:
    """(mean JCT of the measured jobs, measured jobs, machines) of one policy in one configuration."""
    from smdlab.sim.runner import run_policies, simulation_options

    system, inputs_name, changes_json, policy = task
    sc = _scenario(system, INPUTS[inputs_name], json.loads(changes_json))
    cluster = sc.build_cluster()
    jobs = sc.build_jobs(cluster)
    res = run_policies(
        jobs,
        cluster,
        [policy],
        variants=sc.variants,
        policy_options=sc.policy_options,
        record_history=False,
        **simulation_options(sc),
    )[policy]
    s = res.summary
    return float(s["mean_jct"]), int(s.get("jobs_measured", s["jobs"])), len(cluster.machines)


def _input_text(system: str, inputs: AblationInputs) -> str:
    if system == "synergy":
        n = "all" if inputs.synergy_jobs is None else f"first {inputs.synergy_jobs}"
        return f"{inputs.synergy_path} ({n} jobs)"
    n = "all 992" if inputs.muri_jobs is None else f"first {inputs.muri_jobs}"
    return f"muri/trace3.csv ({n} jobs)"


Task = tuple[str, str, str, str]  # (system, inputs name, cumulative changes as JSON, policy)


def ablation_plan(
    config: str | ExperimentConfig = "quick", systems: Sequence[str] = SYSTEMS
) -> tuple[list[tuple[str, int, dict[str, Any], tuple[str, str], str]], list[Task]]:
    """The figure's rows to fill (system, step index, step, pair, changes) and the runs they need.

    Each run (``ablation_run``) is one policy in one cumulative configuration; a configuration
    that a step leaves unchanged is run once.
    """
    cfg = get_config(config)
    wanted = [check_choice("system", s, SYSTEMS) for s in systems]
    plan = []
    tasks: dict[Task, None] = {}
    all_pairs = (("synergy", SYNERGY_PAIRS), ("muri", MURI_PAIRS))
    for system, pairs in [(s, p) for s, p in all_pairs if s in wanted]:
        for i, step in enumerate(ablation_steps(system, cfg)):
            key = json.dumps(step["changes"], sort_keys=True)
            for pair in pairs:
                plan.append((system, i, step, pair, key))
                for name in pair:
                    tasks.setdefault((system, cfg.ablation_inputs, key, name), None)
    return plan, list(tasks)


def ablation_frame(
    config: str | ExperimentConfig,
    plan: Sequence[tuple[str, int, dict[str, Any], tuple[str, str], str]],
    results: Mapping[Task, tuple[float, int, int]],
) -> pd.DataFrame:
    """The figure's tidy frame from ``ablation_plan``'s rows and each run's result."""
    cfg = get_config(config)
    inputs = INPUTS[cfg.ablation_inputs]
    rows = []
    for system, i, step, (base, policy), key in plan:
        b = results[(system, cfg.ablation_inputs, key, base)]
        q = results[(system, cfg.ablation_inputs, key, policy)]
        rows.append(
            {
                "system": system,
                "step_index": i,
                "step": step["step"],
                "label": STEP_LABELS[step["step"]],
                "change": step["change"],
                "baseline": base,
                "policy": policy,
                "mean_jct_baseline_s": b[0],
                "mean_jct_policy_s": q[0],
                "ratio": b[0] / q[0],
                "jobs_measured": q[1],
                "machines": q[2],
                "input": _input_text(system, inputs),
            }
        )
    df = pd.DataFrame(rows, columns=COLUMNS)
    df.attrs.update(experiment="multiresource_ablation", config=cfg.name)
    return df


def multiresource_ablation(
    config: str | ExperimentConfig = "quick",
    *,
    workers: int = 1,
    systems: Sequence[str] = SYSTEMS,
    log: Callable[[str], None] | None = None,
) -> pd.DataFrame:
    """Gain ratio of Synergy's and Muri's policy pairs after each cumulative step (module docstring).

    systems: which of ``SYSTEMS`` to run (their rows come in ``SYSTEMS`` order). log: called with
    one line per finished run (sequential runs only, ``workers == 1``).
    """
    cfg = get_config(config)
    plan, keys = ablation_plan(cfg, systems)
    if log is not None and workers == 1:

        def run(task: Task) -> tuple[float, int, int]:
            t0 = time.perf_counter()
            out = ablation_run(task)
            log(
                f"{task[0]} {task[2]} {task[3]}: mean JCT {out[0]:.6g} s ({time.perf_counter() - t0:.0f} s)"
            )
            return out

        results = {k: run(k) for k in keys}
    else:
        results = dict(zip(keys, run_tasks(ablation_run, keys, workers), strict=True))
    return ablation_frame(cfg, plan, results)
