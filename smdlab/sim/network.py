"""The flow-level fabric in a run: after each event that changes the running jobs, every job's
share of the shared links is recomputed and its speed set to its table speed times that share.

Specification: docs/network.md. The job's speed without contention (``Run.base``) is what
``Engine.open`` computes; on a fabric the fixed worst-case uplink divisors
(``smdlab.model.traffic.Uplinks``) are off, contention replaces them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from smdlab.model.cluster import FabricSpec
from smdlab.model.fabric import (
    FabricState,
    Links,
    compute_seconds,
    job_volumes,
    levels_from_scores,
    water_fill,
)
from smdlab.policies.network import get_communication_policy
from smdlab.sim.running import Run, remaining

if TYPE_CHECKING:
    from smdlab.sim.engine import Engine

__all__ = ["Network"]


class Network:
    """The fabric of one run: its links, its communication policy and each job's volumes."""

    def __init__(self, engine: Engine, spec: FabricSpec) -> None:
        self.engine = engine
        self.spec = spec
        self.links = Links.of(engine.cluster)
        self.policy = get_communication_policy(spec.communication)
        self.fair = spec.communication == "fair"
        self._volumes: dict[tuple, dict[int, float]] = {}
        self._seen: dict[str, tuple[Run, float]] = {}
        self.updates = 0

    def reset(self) -> None:
        """Forget the last running set (a new run starts)."""
        self._seen = {}
        self.updates = 0

    def volumes(self, r: Run) -> dict[int, float]:
        """Bytes per iteration ``r`` sends over each shared link (cached by job and placement)."""
        key = (r.job.name, r.job.model_key, r.placement.tasks)
        hit = self._volumes.get(key)
        if hit is None:
            hit = self._volumes[key] = job_volumes(r.job, r.placement.tasks, self.links)
        return hit

    def update(self, t: float) -> None:
        """Recompute every running job's share at ``t`` when the running jobs changed."""
        running = self.engine.running
        seen = self._seen
        if len(seen) == len(running) and all(
            (old := seen.get(name)) is not None and old[0] is r and old[1] == r.base
            for name, r in running.items()
        ):
            return
        # the runs themselves are kept (not their ids, which a new run could reuse)
        self._seen = {name: (r, r.base) for name, r in running.items()}
        self.updates += 1
        runs = [r for r in running.values() if r.base > 0 and self.volumes(r)]
        x = self.shares(runs, t) if runs else np.ones(0)
        share = {r.job.name: float(v) for r, v in zip(runs, x, strict=True)}
        for name, r in running.items():
            speed = r.base * share.get(name, 1.0)
            if speed != r.speed:
                self.engine.set_speed(r, t, speed)

    def state(self, runs: list[Run], t: float) -> FabricState:
        """The fabric state a communication policy sees for ``runs`` at ``t``."""
        volume = np.zeros((len(runs), len(self.links.names)))
        for i, r in enumerate(runs):
            for e, v in self.volumes(r).items():
                volume[i, e] = v
        spi = np.array([float(r.job.samples_per_iteration(r.workers)) for r in runs])
        base = np.array([r.base for r in runs])
        return FabricState(
            tuple(r.job for r in runs),
            volume,
            self.links.capacity,
            spi / base,
            np.array([compute_seconds(r.job, r.workers) for r in runs]),
            np.array([r.gpus for r in runs]),
            np.array([remaining(r, t) for r in runs]) / spi,
        )

    def shares(self, runs: list[Run], t: float) -> np.ndarray:
        """Fraction of its uncontended speed each of ``runs`` gets (``water_fill``)."""
        st = self.state(runs, t)
        levels = None
        if not self.fair:
            levels = levels_from_scores(self.policy.scores(st), self.spec.levels)
        return water_fill(st.demand, st.capacity, levels)
