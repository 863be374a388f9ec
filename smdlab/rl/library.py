"""Learners from a library: sb3-contrib's MaskablePPO on smdlab's environments (docs/rl.md).

The control learner: MaskablePPO (sb3-contrib, MIT licence; stable-baselines3, MIT licence) with
the environments exactly as ``make_env`` builds them; the library reads each environment's
``action_masks()``. Training writes ``model.zip`` (the library's own checkpoint), ``weights.npz``
(the policy's actor in smdlab's numpy format, ``smdlab.rl.weights``) and ``train.json`` (settings
and budget: environment steps, wall time, seed) into its output folder. The exported actor runs
with numpy only (``greedy_mean_jct``). Needs the ``[rl]`` extra.
"""

from __future__ import annotations

import dataclasses
import json
import time
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from smdlab.errors import InvalidInput, check_choice, check_int, check_positive
from smdlab.rl.networks import Layers, mlp
from smdlab.rl.weights import load_weights, save_weights

LEARNER = "maskable_ppo"
MODEL = "model.zip"
WEIGHTS = "weights.npz"
SETTINGS = "train.json"
# the control learner's workloads: environment options of ``make_env`` per name
WORKLOADS = ("dl2_small", "locality_small", "philly")
HELD_OUT = tuple(range(1000, 1010))  # training draws workload seeds 0-99


def _library() -> Any:
    """sb3-contrib's MaskablePPO, or InvalidInput saying how to install it."""
    try:
        from sb3_contrib import MaskablePPO
    except ImportError:
        raise InvalidInput(
            "learner: MaskablePPO needs the rl extra: pip install -e '.[rl]' "
            "(stable-baselines3, sb3-contrib, torch CPU)"
        ) from None
    return MaskablePPO


def require_masks(env: Any) -> None:
    """InvalidInput unless ``env`` gives its valid actions (``action_masks()``), as a masked
    learner needs."""
    method = getattr(getattr(env, "unwrapped", env), "action_masks", None)
    if not callable(method):
        raise InvalidInput(
            f"env: {type(env).__name__} has no action_masks(); the {LEARNER} learner needs an "
            "environment that gives its valid actions"
        )


PHILLY_JOBS = 60  # jobs of the Philly window the control trains on (learned_vs_heuristics')


def philly_window(jobs: int, load: float = 1.5) -> Any:
    """The Philly window of ``learned_vs_heuristics``: the first ``jobs`` jobs of the default
    window with per-network PS demands at offered ``load`` on ``dl2_small``'s cluster."""
    from smdlab.paths import data_dir
    from smdlab.workloads.scenario import load_scenario

    base = load_scenario(data_dir() / "scenarios" / "dl2_small.toml")
    ph = load_scenario(data_dir() / "scenarios" / "philly.toml")
    return ph.with_changes(
        workload={"jobs": jobs, "demands": "per_network", "load": load},
        cluster=dict(base.cluster),
        simulation=dict(base.simulation),
    )


def workload_env(workload: str, *, philly_jobs: int = PHILLY_JOBS, **options: Any) -> Any:
    """The environment the control learner trains on for ``workload`` (``WORKLOADS``):
    ``dl2_small`` and ``philly`` (the Philly window of ``learned_vs_heuristics``, its first
    ``philly_jobs`` jobs) in DL2's slot environment; ``locality_small`` in the placement
    environment with SCHED²'s observation and actions and the ``jct`` reward."""
    from smdlab.rl.env import make_env

    check_choice("workload", workload, WORKLOADS)
    if workload == "dl2_small":
        return make_env(observation="dl2", **options)
    if workload == "philly":
        scenario = philly_window(check_int("philly_jobs", philly_jobs, 1))
        return make_env(observation="dl2", scenario=scenario, **options)
    return make_env(observation="sched2", reward="jct", **options)


@dataclass(frozen=True)
class ControlConfig:
    """Settings of one MaskablePPO run (saved with its weights)."""

    workload: str = "dl2_small"
    timesteps: int = 100_000  # environment steps in all
    seed: int = 0
    n_steps: int = 1024  # environment steps per rollout
    batch_size: int = 128
    epochs: int = 10  # passes over each rollout
    hidden: int = 64  # units per hidden layer (two layers, ReLU), actor and critic apart
    lr: float = 3e-4
    gamma: float = 0.99
    entropy: float = 0.01
    train_seeds: int = 100

    def checked(self) -> ControlConfig:
        """This config with every field validated (InvalidInput names the bad one)."""
        return dataclasses.replace(
            self,
            workload=check_choice("workload", self.workload, WORKLOADS),
            timesteps=check_int("timesteps", self.timesteps, 1),
            seed=check_int("seed", self.seed, 0),
            n_steps=check_int("n_steps", self.n_steps, 2),
            batch_size=check_int("batch_size", self.batch_size, 2),
            epochs=check_int("epochs", self.epochs, 1),
            hidden=check_int("hidden", self.hidden, 1),
            lr=check_positive("lr", self.lr),
            gamma=check_positive("gamma", self.gamma, allow_zero=True),
            entropy=check_positive("entropy", self.entropy, allow_zero=True),
            train_seeds=check_int("train_seeds", self.train_seeds, 1),
        )


def actor_layers(model: Any) -> Layers:
    """The policy's actor as numpy layers: its hidden layers, then its action head."""
    body = [m for m in model.policy.mlp_extractor.policy_net if hasattr(m, "weight")]
    head = model.policy.action_net
    return [
        (m.weight.detach().cpu().numpy().copy(), m.bias.detach().cpu().numpy().copy())
        for m in [*body, head]
    ]


def _check_out(out: Path, force: bool) -> None:
    if out.exists() and not out.is_dir():
        raise InvalidInput(f"out: {str(out)!r} is a file, not a folder")
    ours = {MODEL, WEIGHTS, SETTINGS}
    if out.is_dir() and not force:
        foreign = sorted(p.name for p in out.iterdir() if p.name not in ours)
        if foreign:
            raise InvalidInput(
                f"out: folder {str(out)!r} holds files training did not write "
                f"({', '.join(foreign[:3])}); choose an empty folder or pass --force"
            )


def check_checkpoint(path: str | Path) -> None:
    """InvalidInput unless ``path`` is a MaskablePPO checkpoint (the library's ``model.zip``)."""
    path = Path(path)
    if not path.is_file():
        raise InvalidInput(f"checkpoint: no file at {str(path)!r}")
    try:
        with zipfile.ZipFile(path) as z:
            data = json.loads(z.read("data"))
        owner = str(data["policy_class"].get("__module__", ""))
    except (zipfile.BadZipFile, KeyError, ValueError, AttributeError, TypeError):
        raise InvalidInput(
            f"checkpoint: {str(path)!r} is not a {LEARNER} checkpoint (another learner's, or "
            "not a stable-baselines3 file)"
        ) from None
    if "maskable" not in owner:
        raise InvalidInput(
            f"checkpoint: {str(path)!r} is from another learner ({owner or 'unknown'}), "
            f"not {LEARNER}"
        )


def train_control(
    out: str | Path,
    config: ControlConfig | None = None,
    *,
    force: bool = False,
    resume: bool = False,
) -> dict[str, Any]:
    """Train MaskablePPO on ``config.workload`` into folder ``out``; returns a summary dict
    (``resume``: continue from ``out/model.zip``)."""
    cfg = (config or ControlConfig()).checked()
    maskable_ppo = _library()
    import torch

    out = Path(out)
    _check_out(out, force)
    env = workload_env(cfg.workload, train_seeds=cfg.train_seeds)
    require_masks(env)
    torch.set_num_threads(1)  # deterministic sums, and the machine's cores are shared
    done = 0
    if resume and (out / MODEL).is_file():
        check_checkpoint(out / MODEL)
        model = maskable_ppo.load(out / MODEL, env=env, device="auto")
        done = int(model.num_timesteps)
    else:
        model = maskable_ppo(
            "MlpPolicy",
            env,
            learning_rate=cfg.lr,
            n_steps=cfg.n_steps,
            batch_size=cfg.batch_size,
            n_epochs=cfg.epochs,
            gamma=cfg.gamma,
            ent_coef=cfg.entropy,
            policy_kwargs={
                "net_arch": {"pi": [cfg.hidden, cfg.hidden], "vf": [cfg.hidden, cfg.hidden]},
                "activation_fn": torch.nn.ReLU,
            },
            seed=cfg.seed,
            device="auto",  # a GPU where torch finds one, else the CPU
            verbose=0,
        )
    t0 = time.perf_counter()
    if cfg.timesteps > done:
        model.learn(total_timesteps=cfg.timesteps - done, reset_num_timesteps=not done)
    seconds = time.perf_counter() - t0
    out.mkdir(parents=True, exist_ok=True)
    model.save(out / MODEL)
    meta = {
        "agent": LEARNER,
        "workload": cfg.workload,
        "obs_dim": int(env.observation_space.shape[0]),
        "n_actions": int(env.action_space.n),
        "config": dataclasses.asdict(cfg),
    }
    summary = {"timesteps": int(model.num_timesteps), "seconds": seconds, "seed": cfg.seed}
    save_weights(out / WEIGHTS, {"actor": actor_layers(model)}, meta | {"summary": summary})
    (out / SETTINGS).write_text(json.dumps(meta | {"summary": summary}, indent=1, sort_keys=True))
    return summary


def load_actor(path: str | Path) -> tuple[Layers, dict[str, Any]]:
    """(actor layers, meta) of a control learner's ``weights.npz``; InvalidInput if it is
    another agent's or unreadable."""
    nets, meta = load_weights(path, LEARNER, ("actor",))
    return nets["actor"], meta


def greedy_action(layers: Layers, obs: np.ndarray, mask: np.ndarray) -> int:
    """The most probable valid action of the actor."""
    logits = mlp(layers, np.asarray(obs, dtype=np.float32))
    return int(np.argmax(np.where(mask, logits, -np.inf)))


def greedy_mean_jct(
    layers: Layers, env: Any, seeds: Sequence[int] = HELD_OUT, max_steps: int = 1_000_000
) -> list[float]:
    """The mean JCT of each workload seed's episode with the actor acting greedily in ``env``."""
    require_masks(env)
    out = []
    for s in seeds:
        obs, info = env.reset(options={"workload_seed": int(s)})
        done = False
        for _ in range(max_steps):
            obs, _, term, trunc, info = env.step(greedy_action(layers, obs, env.action_masks()))
            if term or trunc:
                done = True
                break
        if not done or "mean_jct" not in info:
            raise InvalidInput(f"max_steps: episode of seed {s} did not end in {max_steps} steps")
        out.append(float(info["mean_jct"]))
    return out
