"""The paper agents' networks as sb3-contrib MaskablePPO policies (needs the ``[rl]`` extra).

- ``ScaledObservation``: DL2's input scaling (``slot_builder.feature_scale``) as the library's
  features extractor, so DL2's actor trains on the inputs the ``dl2`` policy feeds it.
- ``SharedScorerPolicy``: DeepRM-MM's and SCHED²'s action head, one scorer shared over rows (a
  (job, machine) pair or a job) plus a "wait" scorer (``placement_builder.net_inputs``), in
  place of the library's single linear head. The critic is the library's MLP. The scorers export
  to the ``row`` / ``wait`` nets the ``deeprm`` and ``sched2`` policies run with numpy.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
import torch
from sb3_contrib.common.maskable.policies import MaskableActorCriticPolicy
from stable_baselines3.common.torch_layers import BaseFeaturesExtractor
from torch import nn

from smdlab.rl.placement_builder import IMAGE_RESOURCES, JOB_FEATURES


class ScaledObservation(BaseFeaturesExtractor):
    """The observation times a fixed per-feature scale (DL2's network input)."""

    def __init__(self, observation_space: gym.spaces.Box, scale: list[float]) -> None:
        super().__init__(observation_space, int(np.prod(observation_space.shape)))
        self.scale: torch.Tensor
        self.register_buffer("scale", torch.tensor(scale, dtype=torch.float32))

    def forward(self, observations: torch.Tensor) -> torch.Tensor:
        """Scaled, flattened observations."""
        return observations.flatten(1) * self.scale


class SharedScorer(nn.Module):
    """Action logits of a placement agent from its flat observation: the row scorer over every
    row in row order, then the wait scorer (``placement_builder.logits`` in torch)."""

    def __init__(
        self, agent: str, n_machines: int, window: int, horizon: int, per_row: int, hidden: int
    ) -> None:
        super().__init__()
        self.agent, self.n_machines, self.window = agent, n_machines, window
        if agent == "deeprm":
            self.rh = len(IMAGE_RESOURCES) * horizon
            n_row, n_wait = 2 * self.rh, 2 * self.rh + 1
        else:
            self.f = len(JOB_FEATURES["sched2"])
            n_cluster = _sched2_cluster_size()
            n_row, n_wait = self.f + n_cluster, n_cluster
        self.row = nn.Sequential(nn.Linear(n_row, hidden), nn.ReLU(), nn.Linear(hidden, per_row))
        self.wait = nn.Sequential(nn.Linear(n_wait, hidden), nn.ReLU(), nn.Linear(hidden, 1))

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        """Logits (batch x actions)."""
        b, m, w = obs.shape[0], self.n_machines, self.window
        if self.agent == "deeprm":
            c = obs[:, : m * self.rh].reshape(b, m, self.rh)
            j = obs[:, m * self.rh : -1].reshape(b, w, self.rh)
            rows = torch.cat([j.repeat_interleave(m, 1), c.repeat(1, w, 1)], 2)
            wait = torch.cat([c.mean(1), j.mean(1), obs[:, -1:]], 1)
        else:
            jobs = obs[:, : w * self.f].reshape(b, w, self.f)
            wait = obs[:, w * self.f :]
            rows = torch.cat([jobs, wait[:, None, :].expand(b, w, wait.shape[1])], 2)
        return torch.cat([self.row(rows).reshape(b, -1), self.wait(wait)], 1)


def _sched2_cluster_size() -> int:
    from smdlab.rl.placement_builder import HIST_BINS

    return HIST_BINS + 3


class SharedScorerPolicy(MaskableActorCriticPolicy):
    """MaskablePPO's actor-critic with the ``SharedScorer`` as its action head (the actor reads
    the observation directly: ``net_arch`` pi must be empty)."""

    def __init__(self, *args: Any, scorer: dict[str, Any], **kwargs: Any) -> None:
        self.scorer = dict(scorer)
        super().__init__(*args, **kwargs)

    def _build(self, lr_schedule: Any) -> None:
        super()._build(lr_schedule)
        self.action_net = SharedScorer(**self.scorer)
        # the optimiser the library built holds the replaced head's parameters: rebuild it
        self.optimizer = self.optimizer_class(
            self.parameters(),
            lr=lr_schedule(1),  # type: ignore[call-arg]
            **self.optimizer_kwargs,
        )

    def _get_constructor_parameters(self) -> dict[str, Any]:
        return super()._get_constructor_parameters() | {"scorer": self.scorer}
