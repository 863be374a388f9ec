"""A trained placement agent as a policy: the shared base of ``deeprm`` and ``sched2``.

The decision points, spaces and networks are ``smdlab.rl.placement_builder`` (docs/rl.md,
"Placement agents").
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from smdlab.errors import InvalidInput, check_int
from smdlab.paths import data_dir
from smdlab.policies.base import EXECUTIONS, ClusterState, Decision, Policy
from smdlab.rl.placement_builder import (
    DEFAULT_HORIZON,
    DEFAULT_STEP_S,
    DEFAULT_WINDOW,
    MAX_SIZES,
    FactsCache,
    PlacementBuilder,
    logits,
    net_inputs,
)
from smdlab.rl.weights import load_weights
from smdlab.solve.placement import capacity_matrix


class PlacementAgentPolicy(Policy):
    """A trained placement agent as a policy: greedy (most probable valid action) at each decision
    point until "wait". Subclasses set ``name``, ``agent``, ``observation`` and ``action``."""

    execution = "non_elastic"
    executions = EXECUTIONS
    agent = ""
    observation = ""
    action = ""

    def __init__(self, weights: str | None = None, max_actions: int = 10_000) -> None:
        path = self.default_weights() if weights is None else Path(weights)
        nets, self.meta = load_weights(path, self.agent, ("row", "wait"))
        self.row_net, self.wait_net = nets["row"], nets["wait"]
        self.window = check_int("window", self.meta.get("window", DEFAULT_WINDOW), 1)
        self.horizon = check_int("horizon", self.meta.get("horizon", DEFAULT_HORIZON), 1)
        self.step_s = float(self.meta.get("step_s", DEFAULT_STEP_S))
        # size levels each choice offers (weights without the key start jobs at their request)
        self.sizes = check_int("sizes", self.meta.get("sizes", 1), 1, MAX_SIZES)
        self.max_actions = check_int("max_actions", max_actions, 1)
        self.path = path
        self._facts: FactsCache | None = None
        self._key: tuple | None = None

    @classmethod
    def default_weights(cls) -> Path:
        """The shipped weights file, ``data/<agent>/weights.npz``."""
        return data_dir() / cls.agent / "weights.npz"

    def reset(self) -> None:
        """Forget the per-run job facts."""
        self._facts = None
        self._key = None

    def _cache(self, state: ClusterState) -> FactsCache:
        cap = capacity_matrix(state.cluster)
        key = (id(state.cluster), state.mode)
        if self._facts is None or self._key != key:
            self._facts = FactsCache(cap, state.cluster.resources, state.mode)
            self._key = key
        return self._facts

    def builder(self, state: ClusterState) -> PlacementBuilder:
        """A builder for this state in the agent's spaces."""
        return PlacementBuilder(
            state,
            self._cache(state),
            window=self.window,
            action=self.action,
            horizon=self.horizon,
            step_s=self.step_s,
            sizes=self.sizes,
        )

    def act(self, builder: PlacementBuilder) -> int:
        """The most probable valid action for the builder's current state."""
        obs = builder.observation(self.observation)
        rows, wait = net_inputs(
            self.agent, obs, builder.n_machines, builder.window, builder.horizon
        )
        z = logits(self.row_net, self.wait_net, rows, wait)
        if z.shape[0] != builder.n_actions:
            raise InvalidInput(
                f"weights: {str(self.path)!r} score {z.shape[0]} actions; this cluster has "
                f"{builder.n_actions}"
            )
        return int(np.argmax(np.where(builder.mask(), z, -np.inf)))

    def decide(self, state: ClusterState) -> Decision:
        """Start waiting jobs one action at a time until the agent waits."""
        if not state.queued:
            return Decision()
        b = self.builder(state)
        for _ in range(self.max_actions):
            if not b.apply(self.act(b)):
                break
        return b.decision()
