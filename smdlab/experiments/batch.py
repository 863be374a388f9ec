"""Chains on a Slurm-like batch queue: interruption, zero-interruption share and overlap waste of
each provisioner against offered load (the ``interruption_vs_load`` figure, docs/batch.md).

Setting, per load: a window of the Philly trace (``batch_start``, ``batch_jobs`` rows) as
background on a pool of ``batch_gpus`` GPUs, arrivals scaled to the offered load, EASY
backfilling, wall-time limit ``BATCH_LIMIT_S``, requested times by the f-model. The learned
provisioners' wait predictors are trained on the background jobs submitted in the window's first
half (a run without chains); the deep Q-network provisioner is trained on the chain environment
(``smdlab.rl.batch_env``) over the ``batch_jobs`` rows before the window, scaled to the same
load; the chains arrive in the window's second half (held out from both).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from smdlab.errors import InvalidInput
from smdlab.experiments.config import ExperimentConfig, get_config
from smdlab.experiments.jct import run_tasks
from smdlab.model.batch import BatchJob, Chain
from smdlab.policies.batch import FEATURES, Learned, Provisioner, provisioner
from smdlab.policies.batch.provision import log_wait
from smdlab.sim.batch import BatchResult, simulate_batch
from smdlab.workloads.batch import batch_trace, make_chains, offered_load

# Wall-time limit of the experiments: 12 h (many academic GPU partitions cap jobs at 12-48 h).
BATCH_LIMIT_S = 12 * 3600.0
# A chain lasts four limits (a two-day service or training run).
CHAIN_LINKS = 4
CHAIN_GPUS = (1, 2, 4, 8)
# Provisioner decision step (s).
STEP_S = 600.0
# The fixed-lead baseline submits one hour before the end.
LEAD = "lead_1h"
PREDICTORS = ("learned_gbr", "learned_rf")
BASELINES = ("reactive", LEAD, "oracle")
# The deep Q-network provisioner (stable-baselines3's DQN; needs the rl extra).
DQN = "dqn"


@dataclass(frozen=True)
class BatchSetting:
    """One load's inputs: background, chains, GPUs, and the first half's end (train/test cut);
    the deep Q-network's training background (the rows before the window, at the same load) and
    training steps."""

    load: float
    jobs: list[BatchJob]
    chains: list[Chain]
    gpus: int
    cut_s: float
    train_jobs: list[BatchJob]
    dqn_steps: int


def batch_setting(cfg: ExperimentConfig, load: float) -> BatchSetting:
    """The background window scaled to ``load`` and the held-out chains of the second half."""
    base = batch_trace(
        limit_s=BATCH_LIMIT_S, start=cfg.batch_start, first=cfg.batch_jobs, seed=cfg.batch_seed
    )
    scale = load / offered_load(base, cfg.batch_gpus)
    jobs = batch_trace(
        limit_s=BATCH_LIMIT_S,
        start=cfg.batch_start,
        first=cfg.batch_jobs,
        seed=cfg.batch_seed,
        rate_scale=scale,
    )
    span = jobs[-1].arrival
    cut = span / 2
    chains = make_chains(
        cfg.batch_chains,
        length_s=CHAIN_LINKS * BATCH_LIMIT_S,
        gpus=CHAIN_GPUS,
        t0=cut,
        t1=cut + (span - cut) / 2,
        seed=cfg.batch_seed,
    )
    return BatchSetting(
        load, jobs, chains, cfg.batch_gpus, cut, _earlier_rows(cfg, load), cfg.batch_dqn_steps
    )


def _earlier_rows(cfg: ExperimentConfig, load: float) -> list[BatchJob]:
    """The ``batch_jobs`` rows before the window (as many as there are), scaled to ``load``."""
    first = min(cfg.batch_start, cfg.batch_jobs)
    if first < 2:
        return []
    start, seed = cfg.batch_start - first, cfg.batch_seed
    base = batch_trace(limit_s=BATCH_LIMIT_S, start=start, first=first, seed=seed)
    scale = load / offered_load(base, cfg.batch_gpus)
    return batch_trace(limit_s=BATCH_LIMIT_S, start=start, first=first, seed=seed, rate_scale=scale)


def wait_features(setting: BatchSetting) -> pd.DataFrame:
    """Features and waits of every background job (a run without chains)."""
    res = simulate_batch(setting.jobs, setting.gpus, BATCH_LIMIT_S, "easy", record_features=True)
    assert res.features is not None
    return res.features


def wait_training_set(setting: BatchSetting) -> pd.DataFrame:
    """Features and waits of the background jobs submitted before the cut (a run without chains)."""
    feats = wait_features(setting)
    return feats[feats["submit"] < setting.cut_s].reset_index(drop=True)


def wait_prediction_error(setting: BatchSetting, kind: str, seed: int = 0) -> dict[str, float]:
    """A predictor trained before the cut, scored on the background jobs submitted after it:
    mean absolute error of log(1 + wait), and the same for always predicting the training mean."""
    feats = wait_features(setting)
    early = feats["submit"] < setting.cut_s
    model = fit_wait_predictor(feats[early], kind, seed)
    test = feats[~early]
    y = log_wait(test["wait_s"].to_numpy())
    pred = model.predict(test[list(FEATURES)].to_numpy(dtype=float))
    mean = float(log_wait(feats.loc[early, "wait_s"].to_numpy()).mean())
    return {
        "train_jobs": float(early.sum()),
        "test_jobs": float(len(test)),
        "mae_log": float(np.abs(pred - y).mean()),
        "mae_log_mean_baseline": float(np.abs(mean - y).mean()),
    }


def fit_wait_predictor(train: pd.DataFrame, kind: str, seed: int = 0):
    """A scikit-learn regressor of log(1 + wait) on ``FEATURES``: ``gbr`` (gradient boosting) or
    ``rf`` (random forest). Needs the ``batch`` extra (scikit-learn)."""
    try:
        from sklearn.ensemble import GradientBoostingRegressor, RandomForestRegressor
    except ImportError:  # pragma: no cover - depends on the environment
        raise InvalidInput(
            "the learned provisioners need scikit-learn: pip install 'smdlab[batch]'"
        ) from None
    X = train[list(FEATURES)].to_numpy(dtype=float)
    y = log_wait(train["wait_s"].to_numpy())
    if kind == "gbr":
        model = GradientBoostingRegressor(n_estimators=150, max_depth=3, random_state=seed)
    elif kind == "rf":
        forest = RandomForestRegressor(
            n_estimators=50, min_samples_leaf=5, random_state=seed, n_jobs=1
        )
        return SerialForest(forest.fit(X, y))
    else:
        raise InvalidInput(f"kind must be gbr or rf, got {kind!r}")
    return model.fit(X, y)


class SerialForest:
    """A fitted scikit-learn random forest regressor whose ``predict`` skips joblib: the trees'
    predictions summed in the same order, then divided, as ``RandomForestRegressor.predict``
    does with one job (the same floats); its per-call overhead dominated the learned
    provisioner's one-row predictions."""

    def __init__(self, forest: Any) -> None:
        self.forest = forest

    def predict(self, X: Any) -> np.ndarray:
        """Mean prediction of the trees for rows ``X`` (finite floats)."""
        rows = np.ascontiguousarray(X, dtype=np.float32)  # the forest's own input conversion
        if rows.ndim != 2 or not np.isfinite(rows).all():
            return np.asarray(self.forest.predict(X))  # its own checks and messages
        out = np.zeros(rows.shape[0], dtype=np.float64)
        for tree in self.forest.estimators_:
            out += tree.predict(rows, check_input=False)
        out /= len(self.forest.estimators_)
        return out


def provisioners(setting: BatchSetting, names: Sequence[str], seed: int = 0) -> list[Provisioner]:
    """The provisioners ``names`` (baselines by name; ``learned_gbr``/``learned_rf`` trained on
    the setting's first half)."""
    out: list[Provisioner] = []
    train = None
    for name in names:
        if name in PREDICTORS:
            train = wait_training_set(setting) if train is None else train
            out.append(Learned(fit_wait_predictor(train, name.split("_")[1], seed), name=name))
        elif name == DQN:
            out.append(train_dqn_provisioner(setting, seed))
        else:
            out.append(provisioner(name))
    return out


def train_dqn_provisioner(setting: BatchSetting, seed: int = 0) -> Provisioner:
    """The deep Q-network provisioner trained (``setting.dqn_steps`` steps, seeded) on the chain
    environment over ``setting.train_jobs``; its ``budget`` holds steps, episodes, CPU and wall
    seconds of the training."""
    from smdlab.rl.batch_dqn import DQNProvisioner, train_dqn
    from smdlab.rl.batch_env import ChainEnv

    if not setting.train_jobs:
        raise InvalidInput("the dqn provisioner needs trace rows before the window (batch_start)")
    env = ChainEnv(
        setting.train_jobs,
        setting.gpus,
        BATCH_LIMIT_S,
        chain_length_s=CHAIN_LINKS * BATCH_LIMIT_S,
        chain_gpus=CHAIN_GPUS,
        step_s=STEP_S,
    )
    model, budget = train_dqn(env, steps=setting.dqn_steps, seed=seed)
    prov = DQNProvisioner(model, setting.gpus, BATCH_LIMIT_S, name=DQN)
    prov.budget = budget
    return prov


def run_chains(setting: BatchSetting, prov: Provisioner) -> BatchResult:
    """The setting's background and chains under EASY backfilling and ``prov``."""
    return simulate_batch(
        setting.jobs,
        setting.gpus,
        BATCH_LIMIT_S,
        "easy",
        chains=setting.chains,
        provisioner=prov,
        step_s=STEP_S,
    )


def chain_metrics(chains: pd.DataFrame) -> dict[str, float]:
    """Per-chain means: interruptions, interruption hours, overlap GPU-hours, completion hours,
    and the share of chains never interrupted."""
    return {
        "interruptions": float(chains["interruptions"].mean()),
        "interruption_h": float(chains["interruption_s"].mean() / 3600),
        "zero_interruption_share": float((chains["interruptions"] == 0).mean()),
        "overlap_gpu_h": float(chains["overlap_gpu_h"].mean()),
        "completion_h": float(chains["completion_s"].mean() / 3600),
    }


def _load_rows(
    task: tuple[ExperimentConfig, float, tuple[str, ...], Callable[[str], None] | None],
) -> tuple[list[dict], list[str]]:
    """One load's rows of ``interruption_vs_load`` and its progress messages (also passed to
    the task's progress callback as they happen, if it has one)."""
    cfg, load, names, progress = task
    setting = batch_setting(cfg, load)
    rows, said = [], []
    for prov in provisioners(setting, names, cfg.batch_seed):
        t0 = time.process_time()
        m = chain_metrics(run_chains(setting, prov).chains)
        rows.append({"load": load, "provisioner": prov.name, **m})
        b = getattr(prov, "budget", None)
        trained = (
            f"; trained {b['steps']:.0f} steps, {b['episodes']:.0f} episodes, "
            f"{b['cpu_s']:.1f} CPU s, {b['wall_s']:.1f} s wall"
            if b
            else ""
        )
        said.append(
            f"load {load:g}: {prov.name} done ({time.process_time() - t0:.1f} CPU s{trained})"
        )
        if progress is not None:
            progress(said[-1])
    return rows, said


def interruption_vs_load(
    config: str | ExperimentConfig = "quick",
    workers: int = 1,
    names: Sequence[str] = (*BASELINES, *PREDICTORS, DQN),
    progress: Callable[[str], None] | None = None,
) -> pd.DataFrame:
    """One row per (load, provisioner): chain metrics, and the interruption-time reduction
    against reactive (``reduction``, 1 - its interruption time / reactive's). workers > 1 runs
    the loads in worker processes (their progress is reported as each load finishes)."""
    cfg = get_config(config)
    names = tuple(names)
    if workers > 1 and len(cfg.batch_loads) > 1:  # loads are independent: one task each
        tasks = [(cfg, load, names, None) for load in cfg.batch_loads]
        rows = []
        for part, said in run_tasks(_load_rows, tasks, workers):
            rows += part
            if progress is not None:
                for msg in said:
                    progress(msg)
    else:
        rows = [r for load in cfg.batch_loads for r in _load_rows((cfg, load, names, progress))[0]]
    df = pd.DataFrame(rows)
    reactive = df[df["provisioner"] == "reactive"].set_index("load")["interruption_h"]
    base = df["load"].map(reactive)
    df["reduction"] = np.where(base > 0, 1 - df["interruption_h"] / base, np.nan)
    return df
