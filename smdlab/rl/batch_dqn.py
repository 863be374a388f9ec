"""A deep Q-network provisioner: stable-baselines3's DQN trained on the chain environment
(``smdlab.rl.batch_env``, docs/batch.md).

``train_dqn`` trains the library's DQN (stable-baselines3, MIT licence) with its MLP Q-network
(``DQN_SETTINGS``), seeded, on one CPU thread (so a seeded run is repeatable); ``DQNProvisioner``
asks the trained network, greedily, at every decision point of every chain awaiting one. Needs
the ``[rl]`` extra.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from smdlab.errors import check_int
from smdlab.policies.batch import ChainView, Provisioner, ProvisionState
from smdlab.rl.batch_env import SUBMIT, ChainEnv, chain_observation
from smdlab.rl.extra import rl_import

# The library's DQN with a small MLP; the other values are the library's defaults scaled to a
# budget of tens of thousands of steps (ours, not tuned beyond a check that it learns).
DQN_SETTINGS: dict[str, Any] = {
    "learning_rate": 5e-4,
    "buffer_size": 50_000,
    "learning_starts": 1_000,
    "batch_size": 64,
    "gamma": 0.99,
    "train_freq": 4,
    "target_update_interval": 1_000,
    "exploration_fraction": 0.3,
    "exploration_final_eps": 0.02,
    "policy_kwargs": {"net_arch": [64, 64]},
}


def _dqn() -> Any:
    """stable-baselines3's DQN, or InvalidInput saying how to install it."""
    return rl_import("stable_baselines3", "DQN", "provisioner", "the dqn provisioner")


def train_dqn(
    env: ChainEnv, *, steps: int, seed: int = 0, **settings: Any
) -> tuple[Any, dict[str, float]]:
    """A DQN trained ``steps`` environment steps on ``env`` (``DQN_SETTINGS``, overridden by
    ``settings``), and its budget: steps, episodes, seed, CPU and wall seconds."""
    steps = check_int("steps", steps, 1)
    dqn = _dqn()
    import torch

    torch.set_num_threads(1)  # deterministic sums, and the machine's cores are shared
    model = dqn("MlpPolicy", env, seed=seed, device="cpu", verbose=0, **(DQN_SETTINGS | settings))
    c0, w0 = time.process_time(), time.perf_counter()
    model.learn(total_timesteps=steps)
    info = {
        "steps": float(steps),
        "episodes": float(model._episode_num),
        "seed": float(seed),
        "cpu_s": time.process_time() - c0,
        "wall_s": time.perf_counter() - w0,
    }
    return model, info


class DQNProvisioner(Provisioner):
    """Submit a chain's successor when the trained Q-network prefers it (greedy), or once the
    running link has ended. model: a trained stable-baselines3 DQN; gpus, limit_s: the cluster's
    (the observation's scales, as in training)."""

    def __init__(self, model: Any, gpus: int, limit_s: float, *, name: str = "dqn") -> None:
        if not callable(getattr(model, "predict", None)):
            raise TypeError(f"model must have predict(obs), got {model!r}")
        self.model, self.gpus, self.limit_s, self.name = model, gpus, limit_s, name
        self.budget: dict[str, float] = {}  # the training's, if the trainer records it

    def decide(self, state: ProvisionState) -> tuple[str, ...]:
        """Names of the chains whose successor the network submits now."""
        now = [v.name for v in state.chains if v.time_left <= 0]
        rest = [v for v in state.chains if v.time_left > 0]
        if rest:
            obs = np.stack([chain_observation(v, state, self.gpus, self.limit_s) for v in rest])
            actions, _ = self.model.predict(obs, deterministic=True)
            now += [v.name for v, a in zip(rest, actions, strict=True) if int(a) == SUBMIT]
        return tuple(now)

    def submit(self, view: ChainView, state: ProvisionState) -> bool:
        """Submit this chain's successor now (one chain's ``decide``)."""
        return bool(self.decide(ProvisionState(state.time, state.step_s, (view,), state.queue)))
