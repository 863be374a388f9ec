"""``deeprm_slowdown_vs_load``: DeepRM in its own environment against its paper's baselines.

The average job slowdown of DeepRM (the shipped ``data/deeprm_env/weights.npz``, greedy), SJF,
Packer, Tetris* and random (``smdlab.rl.deeprm_env``) at each offered load, over held-out
jobsets (workload seeds from 1,000 up; training draws 0-99, validation 200-204). Tetris*'s knob
is tuned per load on training jobsets 0-9 from ``KNOBS`` (DeepRM's paper tunes it too), and the
tuned knob is in the row. One row per (load, policy): ``mean_slowdown`` is the mean over
jobsets of each jobset's mean job slowdown.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from smdlab.errors import InvalidInput, check_int
from smdlab.experiments.config import ExperimentConfig, get_config

HELD_OUT_FIRST = 1000
TUNE_SEEDS = tuple(range(10))  # training jobsets Tetris*'s knob is tuned on
KNOBS = (0.001, 0.003, 0.01, 0.03, 0.1, 0.3, 1.0)
POLICIES = ("deeprm", "sjf", "packer", "tetris", "random")
LABELS = {
    "deeprm": "DeepRM",
    "sjf": "SJF",
    "packer": "Packer",
    "tetris": "Tetris*",
    "random": "Random",
}
COLUMNS = ("load", "policy", "label", "mean_slowdown", "sem", "jobsets", "knob")


def tuned_knob(load: float, seeds: tuple[int, ...] = TUNE_SEEDS) -> float:
    """Tetris*'s knob with the lowest mean slowdown on training jobsets at ``load``."""
    from smdlab.rl.deeprm_env import DeepRMEnv
    from smdlab.rl.deeprm_train import mean_slowdown

    env = DeepRMEnv(load)
    scores = [mean_slowdown(env, f"tetris@{k}", seeds, [load]) for k in KNOBS]
    return KNOBS[int(np.argmin(scores))]


def deeprm_slowdown_vs_load(
    config: str | ExperimentConfig = "quick", *, workers: int = 1, weights: str | None = None
) -> pd.DataFrame:
    """Mean slowdown per (load, policy) on held-out jobsets of DeepRM's environment."""
    from smdlab.rl.deeprm_env import DeepRMEnv
    from smdlab.rl.deeprm_train import DeepRMAgent, run_episode

    cfg = get_config(config)
    n = check_int("deeprm_jobsets", cfg.deeprm_jobsets, 1)
    agent = DeepRMAgent(weights)
    seeds = range(HELD_OUT_FIRST, HELD_OUT_FIRST + n)
    rows = []
    for load in cfg.deeprm_loads:
        env = DeepRMEnv(load)
        knob = tuned_knob(load, TUNE_SEEDS[: max(2, min(len(TUNE_SEEDS), n))])
        for policy in POLICIES:
            runner = (
                agent if policy == "deeprm" else f"tetris@{knob}" if policy == "tetris" else policy
            )
            values = np.array([run_episode(env, runner, s, load) for s in seeds])
            rows.append(
                {
                    "load": float(load),
                    "policy": policy,
                    "label": LABELS[policy],
                    "mean_slowdown": float(values.mean()),
                    "sem": float(values.std(ddof=1) / np.sqrt(n)) if n > 1 else np.nan,
                    "jobsets": n,
                    "knob": knob if policy == "tetris" else np.nan,
                }
            )
    df = pd.DataFrame(rows, columns=list(COLUMNS))
    df.attrs.update(experiment="deeprm_slowdown_vs_load", config=cfg.name)
    return df


def best_heuristic_gap(df: pd.DataFrame, high: float = 1.1) -> pd.DataFrame:
    """Per load from ``high`` up: DeepRM's mean slowdown, the best of SJF, Packer and Tetris*,
    and DeepRM's ratio to it."""
    missing = {"load", "policy", "mean_slowdown"} - set(df.columns)
    if missing:
        raise InvalidInput(f"df lacks column(s) {', '.join(sorted(missing))}")
    out = []
    for load, part in df[df["load"] >= high].groupby("load"):
        s = part.set_index("policy")["mean_slowdown"]
        best = str(s.reindex(["sjf", "packer", "tetris"]).idxmin())
        out.append(
            {
                "load": load,
                "deeprm": s["deeprm"],
                "best_heuristic": best,
                "best_slowdown": s[best],
                "ratio": s["deeprm"] / s[best],
            }
        )
    return pd.DataFrame(out)
