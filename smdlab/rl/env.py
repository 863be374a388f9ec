"""DL2's time-slotted Gymnasium environment over the smdlab simulator (docs/rl.md)."""

from __future__ import annotations

from collections.abc import Generator
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np

from smdlab.errors import InvalidInput, check_int, check_positive
from smdlab.model.cluster import Cluster
from smdlab.model.job import Job
from smdlab.paths import data_dir
from smdlab.policies.base import (
    DEFAULT_SLOT_S,
    ClusterState,
    Decision,
    Policy,
    QueuedJob,
    RunningJob,
)
from smdlab.rl.episodes import EpisodeJobs
from smdlab.rl.slot_builder import (
    DEFAULT_WINDOW,
    EXTRA_FEATURES,
    SlotBuilder,
    SlotCache,
    at_slot,
    job_types,
)
from smdlab.sim.result import SimResult
from smdlab.sim.simulator import simulate_steps
from smdlab.workloads.scenario import Scenario, load_scenario


def default_rl_scenario() -> Path:
    """The bundled DL2 workload, ``data/scenarios/dl2_small.toml``."""
    return data_dir() / "scenarios" / "dl2_small.toml"


class _SlotMode(Policy):
    """Declares the environment's execution (elastic, one decision per slot); never decides."""

    name = "dl2_env"
    execution = "elastic"
    executions = ("elastic",)

    def __init__(self, slot_s: float) -> None:
        self.slot_s = slot_s

    def decide(self, state: ClusterState) -> Decision:  # pragma: no cover - the env decides
        """Not used: the environment sends its decisions to the simulator."""
        return Decision()


class DL2Env(EpisodeJobs, gym.Env):
    """DL2's scheduling problem: per slot, grow allocations one task at a time, then end the slot.

        Observation: a window of up to ``window`` unfinished jobs sorted by arrival, per job the type
        one-hot (bundled networks) then slots since arrival, remaining-epoch fraction, dominant share,
        workers and PSs, flattened (rows past the last job are zero). Action: ``3·k + c`` adds to
        window job ``k`` a worker (c = 0), a PS (1) or a worker+PS bundle (2); ``3·window`` ends the
        slot. ``info["action_mask"]`` and ``action_masks()`` give the valid actions; an invalid one
        changes nothing (reward 0, ``info["valid"]`` False). Reward, at the end of a slot: the sum over
        jobs of the epochs done in the slot over the job's total epochs. An episode is one workload run
        to completion; the simulator applies each slot's allocation as an ordinary Decision. Each reset
    draws the workload seed from ``range(train_seeds)`` (``options["workload_seed"]`` picks any seed:
    held-out evaluation uses seeds from 1,000 up), a draw of the scenario's workload.
    """

    metadata = {"render_modes": []}  # noqa: RUF012 (gymnasium's declared instance variable)

    def __init__(
        self,
        scenario: str | Path | Scenario | None = None,
        *,
        jobs: list[Job] | None = None,
        cluster: Cluster | None = None,
        window: int = DEFAULT_WINDOW,
        slot_s: float = DEFAULT_SLOT_S,
        max_slots: int | None = None,
        train_seeds: int = 100,
    ) -> None:
        if isinstance(scenario, Scenario):
            self.scenario = scenario
        else:
            self.scenario = load_scenario(default_rl_scenario() if scenario is None else scenario)
        if (jobs is None) != (cluster is None):
            raise InvalidInput("jobs and cluster must be given together (or neither)")
        self.fixed_jobs = None if jobs is None else list(jobs)
        self.cluster = self.scenario.build_cluster() if cluster is None else cluster
        self.window = check_int("window", window, 1, 1000)
        self.slot_s = check_positive("slot_s", slot_s)
        self.max_slots = None if max_slots is None else check_int("max_slots", max_slots, 1)
        self.train_seeds = check_int("train_seeds", train_seeds, 1)
        self._workloads: dict[int, list[Job]] = {}  # workload seed -> jobs (drawn once)
        sim = self.scenario.simulation
        self.mode = str(sim.get("mode", "wfbp"))
        self.restart_s = float(sim.get("restart_s", 30.0))
        self.types = job_types()
        self.n_features = len(self.types) + len(EXTRA_FEATURES)
        self.observation_space = gym.spaces.Box(
            0.0, np.inf, (self.window * self.n_features,), dtype=np.float32
        )
        self.action_space = gym.spaces.Discrete(3 * self.window + 1)
        self.end_action = 3 * self.window
        self._gen: Generator[ClusterState, Decision, SimResult] | None = None
        self.builder: SlotBuilder | None = None
        self._cache = SlotCache(self.cluster, self.types)  # per-job rows, reused across slots
        self.result: SimResult | None = None
        self.workload_seed: int | None = None

    # ---- helpers ---------------------------------------------------------------------------
    def _progress(self, state: ClusterState | None) -> float:
        """Sum over jobs seen so far of the fraction of their epochs done."""
        active: dict[str, float] = {}
        if state is not None:
            entries: list[QueuedJob | RunningJob] = [*state.queued, *state.running]
            for e in entries:
                s = e.job.samples
                active[e.job.name] = 1.0 - e.remaining / s if s else 1.0
        for name in self._seen:
            if name not in active:
                self._seen[name] = 1.0  # finished
        self._seen.update(active)
        return sum(self._seen.values())

    def _advance(self, decision: Decision | None) -> ClusterState | None:
        """Send ``decision`` (None: start) and run on to the next slot boundary (None: the end)."""
        assert self._gen is not None
        try:
            state = next(self._gen) if decision is None else self._gen.send(decision)
            while not at_slot(state.time, self.slot_s):
                state = self._gen.send(Decision())  # DL2 acts at slot boundaries only
        except StopIteration as stop:
            self.result = stop.value
            self._gen = None
            return None
        return state

    def _obs(self) -> np.ndarray:
        if self.builder is None:
            return np.zeros(self.window * self.n_features, dtype=np.float32)
        return self.builder.observation()

    def action_masks(self) -> np.ndarray:
        """Valid actions now (bool); only "end the slot" once the episode is over."""
        if self.builder is None:
            mask = np.zeros(self.end_action + 1, dtype=np.bool_)
            mask[-1] = True
            return mask
        return self.builder.mask().copy()

    def _info(self, **extra: Any) -> dict[str, Any]:
        state = None if self.builder is None else self.builder.state
        info: dict[str, Any] = {
            "action_mask": self.action_masks(),
            "time": state.time if state is not None else None,
            "slot": self.slots,
            "workload_seed": self.workload_seed,
        }
        if self.result is not None:
            info["mean_jct"] = float(self.result.summary["mean_jct"])
        info.update(extra)
        return info

    # ---- Gymnasium API ---------------------------------------------------------------------
    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        """Start a new episode: a fresh workload draw (``options["workload_seed"]`` fixes it)."""
        super().reset(seed=seed)
        options = dict(options or {})
        jobs = self._episode_jobs(options)
        self._gen = simulate_steps(
            jobs,
            self.cluster,
            _SlotMode(self.slot_s),
            mode=self.mode,
            slot_s=self.slot_s,
            restart_s=self.restart_s,
            record_history=False,
            lower_bound=False,  # the lower bound's LP: a cost per episode nothing here reads
        )
        self.result = None
        self.slots = 0
        self._seen: dict[str, float] = {}
        state = self._advance(None)
        self._last = self._progress(state)
        self.builder = (
            None
            if state is None
            else SlotBuilder(state, self.window, self.types, self.slot_s, self._cache)
        )
        return self._obs(), self._info()

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        """Apply one action; "end the slot" runs the simulator to the next slot boundary."""
        a = int(action)
        if not 0 <= a <= self.end_action:
            raise InvalidInput(f"action must be in [0, {self.end_action}], got {action!r}")
        if self.builder is None:  # episode over: nothing to do
            return self._obs(), 0.0, True, False, self._info(valid=False)
        if a != self.end_action:
            valid = self.builder.apply(a)
            return self._obs(), 0.0, False, False, self._info(valid=valid)
        state = self._advance(self.builder.decision())
        self.slots += 1
        before = dict(self._seen)
        now = self._progress(state)
        reward = now - self._last
        self._last = now
        # each job's share of the reward: its fraction of epochs done in this slot
        progress = {n: v - before.get(n, 0.0) for n, v in self._seen.items()}
        self.builder = (
            None
            if state is None
            else SlotBuilder(state, self.window, self.types, self.slot_s, self._cache)
        )
        terminated = state is None
        truncated = not terminated and self.max_slots is not None and self.slots >= self.max_slots
        info = self._info(valid=True, job_progress=progress)
        return self._obs(), float(reward), terminated, truncated, info

    def expert_action(self) -> int:
        """DRF's next action (the warm-up's teacher)."""
        return self.end_action if self.builder is None else self.builder.drf_action()


# the observation spaces of make_env (``batch_chain``: the batch queue's chain environment)
ENVIRONMENTS = ("dl2", "deeprm", "sched2", "default", "batch_chain")


def make_env(**options: Any) -> gym.Env:
    """An environment; ``observation`` picks the space (``ENVIRONMENTS``, default ``dl2``):
    ``dl2`` is DL2's slot environment (options: scenario, jobs + cluster, window, slot_s,
    max_slots, train_seeds); ``deeprm``, ``sched2`` and ``default`` are the placement
    environment's (``smdlab.rl.placement_env.PlacementEnv``, docs/rl.md); ``batch_chain`` is
    one chain on a batch queue (``smdlab.rl.batch_env.ChainEnv``, docs/batch.md)."""
    observation = options.pop("observation", "dl2")
    if observation not in ENVIRONMENTS:
        raise InvalidInput(
            f"observation must be one of {', '.join(ENVIRONMENTS)}; got {observation!r}"
        )
    if observation == "dl2":
        return DL2Env(**options)
    if observation == "batch_chain":
        from smdlab.rl.batch_env import ChainEnv

        return ChainEnv(**options)
    from smdlab.rl.placement_env import PlacementEnv

    return PlacementEnv(observation=observation, **options)
