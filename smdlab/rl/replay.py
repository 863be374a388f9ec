"""DL2's prioritised experience replay (docs/rl.md): numpy, seeded, saved with a checkpoint.

Follows the behaviour of DL2's ``prioritized_memory.py`` (pengyanghua/DL2; read, not copied):
a first-in-first-out memory of (state, mask, action, reward); a new sample's priority is
max(1, reward - mean reward in memory); a sampled one's becomes min(|error| + 0.01, 4) ** 0.9;
a batch is drawn one sample per equal segment of the total priority, with importance weights
(p / p_min) ** -beta, beta rising from 0.1 by 0.0001 per batch up to 1.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from smdlab.errors import InvalidInput, check_int

EPSILON = 0.01  # added to |error| so that no priority is 0
ALPHA = 0.9  # how much the error shapes the priority
ERROR_CAP = 4.0  # |error| above this counts as this
BETA_START = 0.1  # importance-weight exponent at the first batch
BETA_STEP = 1e-4  # its rise per batch


class ReplayMemory:
    """A fixed-size prioritised memory of (observation, mask, action, reward) samples."""

    def __init__(self, capacity: int, obs_dim: int, n_actions: int) -> None:
        self.capacity = check_int("replay", capacity, 1)
        self.obs = np.zeros((self.capacity, obs_dim), dtype=np.float32)
        self.masks = np.zeros((self.capacity, n_actions), dtype=np.bool_)
        self.actions = np.zeros(self.capacity, dtype=np.int64)
        self.rewards = np.zeros(self.capacity, dtype=np.float64)
        self.priority = np.zeros(self.capacity, dtype=np.float64)
        self.size = 0
        self.pointer = 0
        self.beta = BETA_START

    @property
    def full(self) -> bool:
        """Whether every place holds a sample (DL2 trains only from then on)."""
        return self.size == self.capacity

    def store(self, obs: np.ndarray, mask: np.ndarray, action: int, reward: float) -> None:
        """Add one sample, replacing the oldest once full."""
        i = self.pointer
        self.obs[i] = obs
        self.masks[i] = mask
        self.actions[i] = action
        self.rewards[i] = reward
        self.size = min(self.size + 1, self.capacity)
        mean = float(self.rewards[: self.size].mean())
        self.priority[i] = max(1.0, reward - mean)
        self.pointer = (i + 1) % self.capacity

    def sample(self, n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        """Indices of ``n`` samples (one per priority segment) and their importance weights."""
        if self.size == 0:
            raise InvalidInput("replay: the memory is empty")
        p = self.priority[: self.size]
        total = float(p.sum())
        edges = np.cumsum(p)
        draws = (np.arange(n) + rng.random(n)) * (total / n)
        idx = np.minimum(np.searchsorted(edges, draws, side="left"), self.size - 1)
        self.beta = min(1.0, self.beta + BETA_STEP)
        weights = (p[idx] / p.min()) ** -self.beta
        return idx, weights

    def update(self, idx: np.ndarray, errors: np.ndarray) -> None:
        """New priorities for sampled ``idx`` from their errors (reward - value)."""
        clipped = np.minimum(np.abs(errors) + EPSILON, ERROR_CAP)
        self.priority[idx] = clipped**ALPHA

    def state(self) -> dict[str, Any]:
        """Everything needed to continue (saved with a checkpoint)."""
        n = self.size
        return {
            "capacity": self.capacity,
            "obs": self.obs[:n].copy(),
            "masks": self.masks[:n].copy(),
            "actions": self.actions[:n].copy(),
            "rewards": self.rewards[:n].copy(),
            "priority": self.priority[:n].copy(),
            "pointer": self.pointer,
            "beta": self.beta,
        }

    def load(self, state: dict[str, Any]) -> None:
        """Continue from ``state()`` of a memory of the same shape."""
        if int(state["capacity"]) != self.capacity:
            raise InvalidInput(
                f"replay: the checkpoint's memory holds {state['capacity']} samples, "
                f"not {self.capacity}"
            )
        n = len(state["actions"])
        self.obs[:n] = np.asarray(state["obs"])
        self.masks[:n] = np.asarray(state["masks"])
        self.actions[:n] = np.asarray(state["actions"])
        self.rewards[:n] = np.asarray(state["rewards"])
        self.priority[:n] = np.asarray(state["priority"])
        self.size = n
        self.pointer = int(state["pointer"])
        self.beta = float(state["beta"])
