"""DL2's trained actor as a policy (docs/rl.md); its slot state is ``smdlab.rl.slot_builder``."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from smdlab.errors import InvalidInput, check_int
from smdlab.paths import data_dir
from smdlab.policies.base import DEFAULT_SLOT_S, ClusterState, Decision, Policy
from smdlab.rl.networks import mlp
from smdlab.rl.slot_builder import (
    DEFAULT_WINDOW,
    EXTRA_FEATURES,
    SlotBuilder,
    SlotCache,
    at_slot,
    feature_scale,
    job_types,
)
from smdlab.rl.weights import load_weights


def default_weights_path() -> Path:
    """The shipped weights, ``data/dl2/weights.npz``."""
    return data_dir() / "dl2" / "weights.npz"


class DL2(Policy):
    """DL2's trained actor as a policy: greedy (most probable valid action) at every slot.
    Gang jobs (all-or-nothing trace jobs) are unsupported: InvalidInput.

    Mode: elastic per slot, every 1,200 s (DL2 rebuilds every allocation each slot; its simulator,
    pengyanghua/DL2 parameters.py, TS_DURATION = 1200.0). Between slot boundaries (arrivals,
    completions) nothing changes: new jobs wait for the next slot, as in DL2. The weights come from
    ``smdlab train dl2`` (default: the shipped ``data/dl2/weights.npz``, docs/rl.md).
    """

    name = "dl2"
    execution = "elastic"
    executions = ("elastic",)
    slot_s = DEFAULT_SLOT_S

    def __init__(self, weights: str | None = None, max_actions: int = 10_000) -> None:
        path = default_weights_path() if weights is None else Path(weights)
        nets, meta = load_weights(path, "dl2", ("actor",))
        layers = nets["actor"]
        self._setup(layers, meta, max_actions, repr(str(path)))

    @classmethod
    def from_layers(
        cls, layers: Sequence[tuple[np.ndarray, np.ndarray]], meta: dict, max_actions: int = 10_000
    ) -> DL2:
        """The policy of an actor held in memory (training validates with it)."""
        policy = cls.__new__(cls)
        policy._setup(list(layers), meta, max_actions, "the given actor")
        return policy

    def _setup(self, layers: list, meta: dict, max_actions: int, where: str) -> None:
        self.layers, self.meta = layers, meta
        self.window = check_int("window", self.meta.get("window", DEFAULT_WINDOW), 1)
        self.types = tuple(self.meta.get("types", job_types()))
        self.max_actions = check_int("max_actions", max_actions, 1)
        n_in = self.layers[0][0].shape[1]
        expect = self.window * (len(self.types) + len(EXTRA_FEATURES))
        if n_in != expect or self.layers[-1][0].shape[0] != 3 * self.window + 1:
            raise InvalidInput(
                f"weights: {where} is for an observation of {n_in} values; DL2's space here "
                f"has {expect} (window {self.window}, {len(self.types)} job types)"
            )
        self.scale = feature_scale(len(self.types), self.window)
        self._cache: SlotCache | None = None

    def reset(self) -> None:
        """Forget the previous run's per-job rows."""
        self._cache = None

    def act(self, builder: SlotBuilder) -> int:
        """The most probable valid action for the builder's current state."""
        logits = mlp(self.layers, builder.observation() * self.scale)
        logits = np.where(builder.mask(), logits, -np.inf)
        return int(np.argmax(logits))

    def decide(self, state: ClusterState) -> Decision:
        """Rebuild every allocation at a slot boundary; keep them between boundaries."""
        slot = state.slot_s
        # without periodic points (slot_s None) it acts at every event
        if (slot is not None and not at_slot(state.time, slot)) or not (
            state.queued or state.running
        ):
            return Decision()
        slot = slot or self.slot_s
        if self._cache is None or self._cache.cluster is not state.cluster:
            self._cache = SlotCache(state.cluster, self.types)
        builder = SlotBuilder(state, self.window, self.types, slot, self._cache)
        end = builder.n_actions - 1
        for _ in range(self.max_actions):
            a = self.act(builder)
            if a == end or not builder.apply(a):
                break
        return builder.decision()
