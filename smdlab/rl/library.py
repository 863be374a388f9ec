"""Learners from a library: sb3-contrib's MaskablePPO trains every smdlab agent (docs/rl.md).

MaskablePPO (sb3-contrib, MIT licence; stable-baselines3, MIT licence) runs on the environments
exactly as ``make_env`` builds them, several at once (``n_envs``, the library's ``DummyVecEnv``);
the library reads each environment's ``action_masks()``. ``train`` trains one agent (``AGENTS``):

- ``ppo``, the control learner: the library's MLP on a ``WORKLOADS`` environment;
- ``dl2``: DL2's slot environment, its input scaling, and first its supervised warm-up from DRF
  (``warmup``: ours, as DL2's paper; ``imitate``);
- ``deeprm`` / ``sched2``: the placement environment in the agent's own spaces, optionally
  choosing each job's worker count (``sizes``), with the shared row scorer as the action head
  (``smdlab.rl.maskable_policies``); a warm-up from the locality-aware first fit is optional.

Training writes ``model.zip`` (the library's own checkpoint), ``weights.npz`` (the actor in
smdlab's numpy format, ``smdlab.rl.weights``, read by the agent's policy) and ``train.json``
(settings and budget: environment steps, wall time, seed) and ``curve.csv`` (every finished
training episode's mean JCT) into its output folder. Needs the ``[rl]`` extra.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import time
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from smdlab.errors import InvalidInput, check_choice, check_int, check_positive
from smdlab.rl.extra import rl_import
from smdlab.rl.networks import Layers, mlp
from smdlab.rl.placement_builder import MAX_SIZES
from smdlab.rl.weights import load_weights, save_weights

LEARNER = "maskable_ppo"
AGENTS = ("ppo", "dl2", "deeprm", "sched2")
MODEL = "model.zip"
WEIGHTS = "weights.npz"
SETTINGS = "train.json"
CURVE = "curve.csv"
# the control learner's workloads: environment options of ``make_env`` per name
WORKLOADS = ("dl2_small", "locality_small", "philly")
HELD_OUT = tuple(range(1000, 1010))  # training draws workload seeds 0-99


def _library() -> Any:
    """sb3-contrib's MaskablePPO, or InvalidInput saying how to install it."""
    return rl_import("sb3_contrib", "MaskablePPO", "learner", "MaskablePPO")


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
class PPOConfig:
    """Settings of one MaskablePPO run (saved with its weights)."""

    agent: str = "ppo"  # AGENTS
    workload: str = "dl2_small"  # ppo: the WORKLOADS environment
    scenario: str = ""  # dl2, deeprm, sched2: scenario file (empty: the agent's default)
    sizes: int = 1  # deeprm, sched2: size levels per placement choice (1: the request only)
    timesteps: int = 100_000  # environment steps of PPO in all (the warm-up's not counted)
    seed: int = 0
    n_envs: int = 8  # environments stepped together; one rollout is n_envs x n_steps steps
    n_steps: int = 128  # environment steps per environment per rollout
    batch_size: int = 128
    epochs: int = 10  # passes over each rollout
    hidden: int = 64  # units per hidden layer (ReLU), actor and critic apart
    depth: int = 2  # hidden layers (deeprm, sched2: the critic's; the scorers have one)
    lr: float = 3e-4
    gamma: float = 0.99
    entropy: float = 0.01
    warmup: int = 0  # environment steps of the teacher imitated before PPO (whole episodes)
    warmup_epochs: int = 10  # passes of cross-entropy over the teacher's steps
    warmup_lr: float = 1e-3
    train_seeds: int = 100
    # deeprm, sched2 with sizes: "smaller" warms up from the teacher that starts a job below its
    # request rather than wait (``PlacementBuilder.expert_action``); "request" never does
    teacher: str = "request"

    def checked(self) -> PPOConfig:
        """This config with every field validated (InvalidInput names the bad one)."""
        agent = check_choice("agent", self.agent, AGENTS)
        if agent == "ppo" and self.warmup:
            raise InvalidInput("warmup: the control learner has no teacher; use 0")
        teacher = check_choice("teacher", self.teacher, TEACHERS)
        if teacher == "smaller" and (agent not in PLACEMENT or self.sizes < 2):
            raise InvalidInput("teacher: 'smaller' needs deeprm or sched2 with sizes of 2 or more")
        return dataclasses.replace(
            self,
            agent=agent,
            workload=check_choice("workload", self.workload, WORKLOADS),
            sizes=check_int("sizes", self.sizes, 1, MAX_SIZES if agent in PLACEMENT else 1),
            timesteps=check_int("timesteps", self.timesteps, 1),
            seed=check_int("seed", self.seed, 0),
            n_envs=check_int("n_envs", self.n_envs, 1, 64),
            n_steps=check_int("n_steps", self.n_steps, 2),
            batch_size=check_int("batch_size", self.batch_size, 2),
            epochs=check_int("epochs", self.epochs, 1),
            hidden=check_int("hidden", self.hidden, 1),
            depth=check_int("depth", self.depth, 1, 8),
            lr=check_positive("lr", self.lr),
            gamma=check_positive("gamma", self.gamma, allow_zero=True),
            entropy=check_positive("entropy", self.entropy, allow_zero=True),
            warmup=check_int("warmup", self.warmup, 0),
            warmup_epochs=check_int("warmup_epochs", self.warmup_epochs, 1),
            warmup_lr=check_positive("warmup_lr", self.warmup_lr),
            train_seeds=check_int("train_seeds", self.train_seeds, 1),
            teacher=teacher,
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


PLACEMENT = ("deeprm", "sched2")
TEACHERS = ("request", "smaller")  # the placement agents' warm-up teachers (PPOConfig.teacher)


def agent_env(cfg: PPOConfig) -> Any:
    """The environment ``cfg.agent`` trains in (the agent's own spaces and reward)."""
    from smdlab.rl.env import make_env

    if cfg.agent == "ppo":
        return workload_env(cfg.workload, train_seeds=cfg.train_seeds)
    scenario = cfg.scenario or None
    if cfg.agent == "dl2":
        return make_env(observation="dl2", scenario=scenario, train_seeds=cfg.train_seeds)
    return make_env(
        observation=cfg.agent, scenario=scenario, sizes=cfg.sizes, train_seeds=cfg.train_seeds
    )


def _policy(cfg: PPOConfig, env: Any, torch: Any) -> tuple[Any, dict[str, Any]]:
    """(policy class, policy_kwargs) of the agent's network."""
    arch = [cfg.hidden] * cfg.depth
    kwargs: dict[str, Any] = {"activation_fn": torch.nn.ReLU}
    if cfg.agent in PLACEMENT:
        from smdlab.rl.maskable_policies import SharedScorerPolicy

        per_row = env.sizes * (1 if cfg.agent == "deeprm" else 3)
        scorer = {
            "agent": cfg.agent,
            "n_machines": env.n_machines,
            "window": env.window,
            "horizon": env.horizon,
            "per_row": per_row,
            "hidden": cfg.hidden,
        }
        return SharedScorerPolicy, kwargs | {"net_arch": {"pi": [], "vf": arch}, "scorer": scorer}
    kwargs["net_arch"] = {"pi": arch, "vf": arch}
    if cfg.agent == "dl2":
        from smdlab.rl.maskable_policies import ScaledObservation
        from smdlab.rl.slot_builder import feature_scale

        scale = feature_scale(len(env.types), env.window).tolist()
        kwargs |= {
            "features_extractor_class": ScaledObservation,
            "features_extractor_kwargs": {"scale": scale},
        }
    return "MlpPolicy", kwargs


def _layers(seq: Any) -> Layers:
    return [
        (m.weight.detach().cpu().numpy().copy(), m.bias.detach().cpu().numpy().copy())
        for m in seq
        if hasattr(m, "weight")
    ]


def _export(cfg: PPOConfig, model: Any, env: Any) -> tuple[str, dict[str, Layers], dict[str, Any]]:
    """(agent name, nets, meta) of the weights file the agent's policy reads."""
    if cfg.agent == "ppo":
        meta = {
            "workload": cfg.workload,
            "obs_dim": int(env.observation_space.shape[0]),
            "n_actions": int(env.action_space.n),
        }
        return LEARNER, {"actor": actor_layers(model)}, meta
    if cfg.agent == "dl2":
        meta = {"window": env.window, "types": list(env.types), "hidden": cfg.hidden}
        return "dl2", {"actor": actor_layers(model)}, meta | {"depth": cfg.depth}
    head = model.policy.action_net
    meta = {
        "observation": env.observation,
        "action": env.action,
        "reward": env.reward,
        "window": env.window,
        "horizon": env.horizon,
        "step_s": env.step_s,
        "sizes": env.sizes,
        "hidden": cfg.hidden,
    }
    return cfg.agent, {"row": _layers(head.row), "wait": _layers(head.wait)}, meta


def imitate(model: Any, env: Any, cfg: PPOConfig) -> tuple[int, list[float]]:
    """Supervised warm-up (ours; DL2's paper warms up from DRF): run the environment's teacher
    (``env.expert_action()``) for at least ``cfg.warmup`` steps in whole episodes, then fit the
    actor to its choices by cross-entropy and the critic to its discounted returns; returns (the
    teacher's steps, the mean JCT of each of its episodes)."""
    import torch

    rng = np.random.default_rng([cfg.seed, 1])
    xs: list[np.ndarray] = []
    masks: list[np.ndarray] = []
    acts: list[int] = []
    rets: list[float] = []
    jcts: list[float] = []
    while len(acts) < cfg.warmup:
        obs, info = env.reset(seed=int(rng.integers(2**31)))
        rewards: list[float] = []
        done = False
        while not done:
            a = env.expert_action(smaller=True) if cfg.teacher == "smaller" else env.expert_action()
            xs.append(obs)
            masks.append(env.action_masks())
            acts.append(a)
            obs, r, term, trunc, info = env.step(a)
            rewards.append(float(r))
            done = term or trunc
        g, back = 0.0, []
        for r in reversed(rewards):
            g = r + cfg.gamma * g
            back.append(g)
        rets.extend(reversed(back))
        jcts.append(float(info.get("mean_jct", np.nan)))
    policy, dev = model.policy, model.device
    x = torch.as_tensor(np.asarray(xs, dtype=np.float32), device=dev)
    m = np.asarray(masks, dtype=bool)
    a_t = torch.as_tensor(acts, device=dev)
    g_t = torch.as_tensor(np.asarray(rets, dtype=np.float32), device=dev)
    opt = torch.optim.Adam(policy.parameters(), lr=cfg.warmup_lr)
    for _ in range(cfg.warmup_epochs):
        perm = rng.permutation(len(acts))
        for i in range(0, len(perm), cfg.batch_size):
            idx = perm[i : i + cfg.batch_size]
            dist = policy.get_distribution(x[idx], action_masks=m[idx])
            value = policy.predict_values(x[idx]).squeeze(1)
            loss = -dist.log_prob(a_t[idx]).mean() + 0.5 * ((value - g_t[idx]) ** 2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
    return len(acts), jcts


def _vec_env(cfg: PPOConfig, first: Any) -> Any:
    """``cfg.n_envs`` environments stepped in turn (the library's ``DummyVecEnv``; with 2 shared
    cores, processes would not pay), ``first`` among them. They share one cache of built
    workloads, so a workload seed is built once, not once per environment."""
    from stable_baselines3.common.vec_env import DummyVecEnv

    envs = [first] + [agent_env(cfg) for _ in range(cfg.n_envs - 1)]
    for e in envs[1:]:
        e._workloads = first._workloads  # jobs are immutable; the cluster is the same scenario's
    return DummyVecEnv([functools.partial(_same, e) for e in envs])


def _same(env: Any) -> Any:
    return env


def _episode_log(
    curve: list[tuple[int, str, float]], cfg: PPOConfig, deadline: float | None
) -> Any:
    """A library callback appending (rollout, "train", mean JCT) for every finished episode, and
    stopping at the first rollout that starts after ``deadline`` (``time.perf_counter()``)."""
    from stable_baselines3.common.callbacks import BaseCallback

    per_rollout = cfg.n_envs * cfg.n_steps

    class EpisodeLog(BaseCallback):
        def _on_step(self) -> bool:
            if (
                deadline is not None
                and self.n_calls > cfg.n_steps
                and self.n_calls % cfg.n_steps == 1
                and time.perf_counter() > deadline
            ):
                return False  # a new rollout begins: stop; every finished one was trained on
            for done, info in zip(self.locals["dones"], self.locals["infos"], strict=True):
                if done and "mean_jct" in info:
                    rollout = 1 + (self.model.num_timesteps - 1) // per_rollout
                    curve.append((rollout, "train", float(info["mean_jct"])))
            return True

    return EpisodeLog()


def train(
    out: str | Path,
    config: PPOConfig | None = None,
    *,
    force: bool = False,
    time_limit: float | None = None,
) -> dict[str, Any]:
    """Train ``config.agent`` with MaskablePPO (after its warm-up, if any) into folder ``out``;
    returns a summary dict (environment steps, wall and CPU time, seed). ``time_limit`` (s)
    stops PPO at the first rollout that starts after it; ``timesteps`` then counts the rollouts
    trained on, and ``--steps`` of that count repeats the run exactly."""
    cfg = (config or PPOConfig()).checked()
    if time_limit is not None:
        time_limit = check_positive("time_limit", time_limit)
    maskable_ppo = _library()
    import torch

    out = Path(out)
    _check_out(out, force)
    env = agent_env(cfg)
    require_masks(env)
    torch.set_num_threads(1)  # deterministic sums, and the machine's cores are shared
    vec = _vec_env(cfg, env)
    policy, policy_kwargs = _policy(cfg, env, torch)
    model = maskable_ppo(
        policy,
        vec,
        learning_rate=cfg.lr,
        n_steps=cfg.n_steps,
        batch_size=cfg.batch_size,
        n_epochs=cfg.epochs,
        gamma=cfg.gamma,
        ent_coef=cfg.entropy,
        policy_kwargs=policy_kwargs,
        seed=cfg.seed,
        device="auto",  # a GPU where torch finds one, else the CPU
        verbose=0,
    )
    t0, cpu0 = time.perf_counter(), time.process_time()
    curve: list[tuple[int, str, float]] = []
    warm_steps, teacher = imitate(model, env, cfg) if cfg.warmup else (0, [])
    curve += [(0, "warmup", v) for v in teacher]
    warm_s = time.perf_counter() - t0
    model.learn(
        total_timesteps=cfg.timesteps,
        callback=_episode_log(curve, cfg, None if time_limit is None else t0 + time_limit),
    )
    seconds, cpu = time.perf_counter() - t0, time.process_time() - cpu0
    per_rollout = cfg.n_envs * cfg.n_steps
    trained = int(model.num_timesteps)
    if trained < cfg.timesteps:  # stopped by the time limit at a rollout's first step
        trained = (trained // per_rollout) * per_rollout
    out.mkdir(parents=True, exist_ok=True)
    model.save(out / MODEL)
    agent, nets, meta = _export(cfg, model, env)
    summary = {
        "timesteps": trained,
        "timesteps_asked": cfg.timesteps,
        "warmup_steps": warm_steps,
        "seconds": seconds,
        "cpu_seconds": cpu,
        "warmup_seconds": warm_s,
        "seed": cfg.seed,
        "device": str(model.device),
    }
    meta = meta | {"agent": agent, "learner": LEARNER, "config": dataclasses.asdict(cfg)}
    save_weights(out / WEIGHTS, nets, meta | {"summary": summary})
    (out / SETTINGS).write_text(json.dumps(meta | {"summary": summary}, indent=1, sort_keys=True))
    _write_curve(out / CURVE, curve)
    return summary


def _write_curve(path: Path, rows: Sequence[tuple[int, str, float]]) -> None:
    lines = ["update,kind,mean_jct"] + [f"{u},{k},{v!r}" for u, k, v in rows]
    path.write_text("\n".join(lines) + "\n")


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
