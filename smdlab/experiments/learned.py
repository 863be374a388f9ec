"""Learned schedulers against heuristics, and their learning curves (docs/rl.md).

``learned_vs_heuristics``: the mean JCT of every registered learned policy (``dl2``, ``deeprm``,
``sched2``, whichever are registered) against DRF, Optimus, Tiresias and SMD, each in its natural
mode, plus DRF at slot boundaries only (``drf@slot``, the comparison DL2's own simulator makes):

- on held-out seeds (from 1,000 up; training draws seeds 0-99) of each training workload the
  learned policies' ``train.json`` names (DL2: ``data/scenarios/dl2_small.toml``; DeepRM-MM and
  SCHED²: ``locality_small.toml``, ring all-reduce jobs whose speed depends on locality), one
  seed per seed of the configuration;
- on a Philly window: the first ``learned_philly_jobs`` jobs of the default Philly window
  (``data/scenarios/philly.toml``) with per-network PS demands (elastic jobs, not gangs), at
  offered load 1.5 on the training workload's cluster (4 machines of 8 GPUs).

A policy that refuses a workload (InvalidInput) gets a row with no JCT and its message in ``note``.

``learning_curves``: the training logs shipped with each learned policy's weights
(``data/<agent>/curve.csv``: update, kind ``train`` or ``validation``, mean JCT; else the
per-update list ``curve`` in ``data/<agent>/train.json``), so no training
runs at reproduce time, and DRF's mean JCT on the agent's validation seeds (where its
``train.json`` names them) as reference levels.
"""

from __future__ import annotations

import dataclasses
import math

import pandas as pd

from smdlab.errors import InvalidInput
from smdlab.experiments.config import ExperimentConfig, get_config
from smdlab.experiments.jct import run_tasks
from smdlab.paths import data_dir

LEARNED = ("dl2", "deeprm", "sched2")
HEURISTICS = ("drf", "optimus", "tiresias", "smd")
HELD_OUT_FIRST = 1000  # held-out workload seeds start here (training uses 0-99)
PHILLY_LOAD = 1.5  # the training workload's offered load
COLUMNS = ("workload", "seed", "policy", "label", "mean_jct_s", "jobs", "note")
# each learned agent's training workload when its settings name none (the environments' default)
DEFAULT_SCENARIOS = {
    "dl2": "dl2_small.toml",
    "deeprm": "locality_small.toml",
    "sched2": "locality_small.toml",
}


def learned_policies() -> list[str]:
    """The learned policies registered now, in LEARNED order."""
    from smdlab.policies.registry import list_policies

    have = set(list_policies())
    return [p for p in LEARNED if p in have]


def _training_scenario(name: str = "dl2_small.toml"):
    from smdlab.workloads.scenario import load_scenario

    return load_scenario(data_dir() / "scenarios" / name)


def training_scenarios() -> list[str]:
    """The scenario files (in ``data/scenarios``) the registered learned policies trained on,
    from the settings beside their weights (``data/<agent>/train.json``), without repeats."""
    import json

    names = []
    for agent in learned_policies():
        path = data_dir() / agent / "train.json"
        name = None
        if path.is_file():
            name = json.loads(path.read_text()).get("config", {}).get("scenario")
        if name == "":  # the agent's default workload (``smdlab.rl.library.agent_env``)
            name = DEFAULT_SCENARIOS[agent]
        if isinstance(name, str) and (data_dir() / "scenarios" / name).is_file():
            names.append(name)
    return list(dict.fromkeys(names)) or ["dl2_small.toml"]


def philly_learning_scenario(jobs: int):
    """The Philly window of ``learned_vs_heuristics``: ``jobs`` trace jobs, PS demands, the
    training workload's cluster and load (``smdlab.rl.library.philly_window``)."""
    from smdlab.rl.library import philly_window

    return philly_window(jobs, PHILLY_LOAD)


def _policy(name: str):
    from smdlab.policies.registry import get_policy
    from smdlab.rl.evaluate import SlotOnly

    base, _, mode = name.partition("@")
    inner = get_policy(base)
    return SlotOnly(inner) if mode == "slot" else inner


def _point(task) -> list[dict]:
    from smdlab.sim import simulate
    from smdlab.viz.style import policy_label
    from smdlab.workloads.scenario import Scenario

    workload, scenario_dict, seed, policy = task
    sc = Scenario(**scenario_dict)
    cluster = sc.build_cluster()
    jobs = sc.build_jobs(cluster)
    note = ""
    try:
        res = simulate(
            jobs,
            cluster,
            _policy(policy),
            mode=sc.simulation["mode"],
            restart_s=sc.simulation["restart_s"],
            record_history=False,
        )
        jct = float(res.summary["mean_jct"])
    except InvalidInput as exc:  # a learned policy that does not support this workload
        jct, note = math.nan, str(exc)
    return [
        {
            "workload": workload,
            "seed": seed,
            "policy": policy,
            "label": policy_label(policy),
            "mean_jct_s": jct,
            "jobs": len(jobs),
            "note": note,
        }
    ]


def learned_vs_heuristics(
    config: str | ExperimentConfig = "quick", *, workers: int = 1
) -> pd.DataFrame:
    """Mean JCT per (workload, seed, policy): learned policies, heuristics and DRF@slot."""
    cfg = get_config(config)
    policies = [*learned_policies(), *HEURISTICS, "drf@slot"]
    tasks = []
    for name in training_scenarios():
        base = _training_scenario(name)
        label = f"{base.name}: held-out seeds"
        for k in range(len(cfg.seeds)):
            sc = dataclasses.replace(base, seed=HELD_OUT_FIRST + k)
            tasks += [(label, sc.to_dict(), HELD_OUT_FIRST + k, p) for p in policies]
    ph = philly_learning_scenario(cfg.learned_philly_jobs)
    tasks += [("Philly window", ph.to_dict(), ph.seed, p) for p in policies]
    rows = [r for part in run_tasks(_point, tasks, workers) for r in part]
    rows += control_rows(cfg)
    df = pd.DataFrame(rows, columns=list(COLUMNS))
    df.attrs.update(experiment="learned_vs_heuristics", config=cfg.name)
    return df


CONTROL = "ppo"  # the control learner's rows (MaskablePPO, ``smdlab.rl.library``)
CONTROL_WORKLOADS = {"dl2_small.toml": "dl2_small", "locality_small.toml": "locality_small"}


def control_rows(cfg: ExperimentConfig) -> list[dict]:
    """The control learner's mean JCT beside the policies: its shipped actor
    (``data/control/<workload>/weights.npz``) run greedily in the environment it trained in, on
    the same held-out seeds and Philly window; none where no actor is shipped or the library's
    extra is missing."""
    try:
        from smdlab.rl.library import greedy_mean_jct, load_actor, workload_env
    except ImportError:  # gymnasium missing: no environments
        return []
    rows = []
    cases: list[tuple[str, str, list[int], dict[str, int]]] = []
    for name in training_scenarios():
        workload = CONTROL_WORKLOADS.get(name)
        if workload is not None:
            base = _training_scenario(name)
            seeds = [HELD_OUT_FIRST + k for k in range(len(cfg.seeds))]
            cases.append((f"{base.name}: held-out seeds", workload, seeds, {}))
    ph = philly_learning_scenario(cfg.learned_philly_jobs)
    cases.append(("Philly window", "philly", [ph.seed], {"philly_jobs": cfg.learned_philly_jobs}))
    for label, workload, seeds, options in cases:
        path = data_dir() / "control" / workload / "weights.npz"
        if not path.is_file():
            continue
        layers, _ = load_actor(path)
        env = workload_env(workload, **options)
        jobs = len(env.scenario.build_jobs(env.cluster)) if seeds else 0
        for seed, jct in zip(seeds, greedy_mean_jct(layers, env, seeds), strict=True):
            rows.append(
                {
                    "workload": label,
                    "seed": seed,
                    "policy": CONTROL,
                    "label": "MaskablePPO (control)",
                    "mean_jct_s": jct,
                    "jobs": jobs,
                    "note": f"trained on {workload}",
                }
            )
    return rows


def _curve_from_settings(agent: str) -> pd.DataFrame | None:
    """The per-update mean JCT list ``curve`` of ``data/<agent>/train.json`` as training rows."""
    import json

    path = data_dir() / agent / "train.json"
    if not path.is_file():
        return None
    curve = json.loads(path.read_text()).get("curve")
    if not isinstance(curve, list) or not curve:
        return None
    return pd.DataFrame(
        {
            "update": range(1, len(curve) + 1),
            "kind": "train",
            "mean_jct": [float(v) for v in curve],
        }
    )


def _references(agent: str) -> list[dict]:
    """DRF's mean JCT on an agent's validation seeds, at every event (``drf``) and at slot
    boundaries only (``drf@slot``, DL2's teacher), from the settings beside its weights
    (``train.json``: ``config.val_seeds`` and ``config.scenario``); none without them."""
    import json

    from smdlab.sim import simulate
    from smdlab.workloads.scenario import load_scenario

    path = data_dir() / agent / "train.json"
    if not path.is_file():
        return []
    config = json.loads(path.read_text()).get("config", {})
    seeds, scenario = config.get("val_seeds"), config.get("scenario")
    if not seeds or not scenario or not (data_dir() / "scenarios" / scenario).is_file():
        return []
    base = load_scenario(data_dir() / "scenarios" / scenario)
    cluster = base.build_cluster()
    workloads = [dataclasses.replace(base, seed=int(s)).build_jobs(cluster) for s in seeds]
    rows = []
    for kind in ("drf", "drf@slot"):
        jcts = [
            simulate(jobs, cluster, _policy(kind), restart_s=base.simulation["restart_s"]).summary[
                "mean_jct"
            ]
            for jobs in workloads
        ]
        rows.append({"agent": agent, "update": 0, "kind": kind, "mean_jct": sum(jcts) / len(jcts)})
    return rows


def learning_curves(config: str | ExperimentConfig = "quick", *, workers: int = 1) -> pd.DataFrame:
    """The shipped training logs: one row per (agent, update, kind) with its mean JCT; kinds
    ``drf`` and ``drf@slot`` are DRF on the agent's validation seeds (computed here)."""
    get_config(config)  # the logs are what they are: every configuration shows them whole
    frames = []
    for agent in learned_policies():
        path = data_dir() / agent / "curve.csv"
        # else a log kept in train.json: one mean JCT per update, "curve"
        found = pd.read_csv(path) if path.is_file() else _curve_from_settings(agent)
        if found is None:
            continue
        df = found
        missing = {"update", "kind", "mean_jct"} - set(df.columns)
        if missing:
            raise InvalidInput(
                f"{path.name} of {agent}: lacks column(s) {', '.join(sorted(missing))}"
            )
        frames.append(df.assign(agent=agent)[["agent", "update", "kind", "mean_jct"]])
        refs = _references(agent)
        if refs:
            frames.append(pd.DataFrame(refs))
    if not frames:
        raise InvalidInput("learning curves: no learned policy ships a data/<agent>/curve.csv")
    return pd.concat(frames, ignore_index=True)
