"""The placement environment: DeepRM-MM's and SCHED²'s problem over the simulator (docs/rl.md)."""

from __future__ import annotations

from collections.abc import Generator
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np

from smdlab.errors import InvalidInput, check_choice, check_int, check_positive
from smdlab.model.cluster import Cluster
from smdlab.model.job import Job
from smdlab.paths import data_dir
from smdlab.policies.base import ClusterState, Decision, Policy
from smdlab.rl.episodes import EpisodeJobs
from smdlab.rl.placement_builder import (
    ACTIONS,
    DEFAULT_HORIZON,
    DEFAULT_STEP_S,
    DEFAULT_WINDOW,
    MAX_SIZES,
    OBSERVATIONS,
    FactsCache,
    PlacementBuilder,
    observation_size,
    ring_speed,
)
from smdlab.sim.result import SimResult
from smdlab.sim.simulator import simulate_steps
from smdlab.solve.placement import capacity_matrix
from smdlab.workloads.scenario import Scenario, load_scenario

REWARDS = ("slowdown", "jct")
# each observation's own action space and reward (DeepRM-MM: machine, slowdown; SCHED²: locality)
NATURAL = {
    "deeprm": ("machine", "slowdown"),
    "sched2": ("locality", "jct"),
    "default": ("machine", "jct"),
}


def locality_scenario() -> Path:
    """The bundled placement workload, ``data/scenarios/locality_small.toml``."""
    return data_dir() / "scenarios" / "locality_small.toml"


class _EventMode(Policy):
    """Declares the environment's execution (non-elastic, decisions at events); never decides."""

    name = "placement_env"
    execution = "non_elastic"
    executions = ("non_elastic",)
    slot_s = None

    def decide(self, state: ClusterState) -> Decision:  # pragma: no cover - the env decides
        """Not used: the environment sends its decisions to the simulator."""
        return Decision()


class PlacementEnv(EpisodeJobs, gym.Env):
    """Start waiting jobs at their requests on placements the agent picks; decisions at events.

    At each decision point (an arrival or a completion with jobs waiting) the agent takes actions
    one at a time: each starts one window job on the placement the action names (``action``:
    ``machine``, a machine to start from, DeepRM-MM; ``locality``, a locality degree, inspired by
    SCHED²). The last action, "wait", sends the jobs started to the simulator, which runs on to
    the next decision point. Points where only "wait" is valid are passed without asking.
    Observation: ``observation`` (``deeprm``, ``sched2`` or ``default``; ``PlacementBuilder``'s
    methods document each). Reward, paid at each "wait" for the time it advances: ``slowdown``
    (DeepRM): -sum over jobs in the system of dt / T_j (T_j: the job's ideal duration), so an
    episode sums to minus the total slowdown; ``jct``: -(jobs in the system) x dt / 3,600, an
    episode sums to minus the total JCT in hours. ``info["action_mask"]`` and
    ``action_masks()`` give the valid actions; an invalid one changes nothing (reward 0,
    ``info["valid"]`` False). ``sizes`` above 1 lets each action also choose the job's worker
    count (``size_levels``: the request halved 0 .. sizes-1 times); 1 starts every job at its
    request. Each reset draws the workload seed from ``range(train_seeds)``;
    ``options["workload_seed"]`` picks any seed (held-out evaluation: 1,000 up).
    """

    metadata = {"render_modes": []}  # noqa: RUF012 (gymnasium's declared instance variable)

    def __init__(
        self,
        scenario: str | Path | Scenario | None = None,
        *,
        observation: str = "default",
        action: str | None = None,
        reward: str | None = None,
        jobs: list[Job] | None = None,
        cluster: Cluster | None = None,
        window: int = DEFAULT_WINDOW,
        horizon: int = DEFAULT_HORIZON,
        step_s: float = DEFAULT_STEP_S,
        max_steps: int | None = None,
        train_seeds: int = 100,
        sizes: int = 1,
    ) -> None:
        self.observation = check_choice("observation", observation, OBSERVATIONS)
        natural_action, natural_reward = NATURAL[self.observation]
        self.action = check_choice("action", action or natural_action, ACTIONS)
        self.reward = check_choice("reward", reward or natural_reward, REWARDS)
        if isinstance(scenario, Scenario):
            self.scenario = scenario
        else:
            self.scenario = load_scenario(locality_scenario() if scenario is None else scenario)
        if (jobs is None) != (cluster is None):
            raise InvalidInput("jobs and cluster must be given together (or neither)")
        self.fixed_jobs = None if jobs is None else list(jobs)
        self.cluster = self.scenario.build_cluster() if cluster is None else cluster
        self.window = check_int("window", window, 1, 1000)
        self.horizon = check_int("horizon", horizon, 1, 1000)
        self.step_s = check_positive("step_s", step_s)
        self.max_steps = None if max_steps is None else check_int("max_steps", max_steps, 1)
        self.train_seeds = check_int("train_seeds", train_seeds, 1)
        self.sizes = check_int("sizes", sizes, 1, MAX_SIZES)
        sim = self.scenario.simulation
        self.mode = str(sim.get("mode", "wfbp"))
        self.restart_s = float(sim.get("restart_s", 30.0))
        self.cap = capacity_matrix(self.cluster)
        self.n_machines = self.cap.shape[0]
        size = observation_size(self.observation, self.n_machines, self.window, self.horizon)
        self.observation_space = gym.spaces.Box(0.0, np.inf, (size,), dtype=np.float32)
        per = (self.n_machines if self.action == "machine" else 3) * self.sizes
        self.action_space = gym.spaces.Discrete(self.window * per + 1)
        self.wait_action = self.window * per
        self._workloads: dict[int, list[Job]] = {}
        self._gen: Generator[ClusterState, Decision, SimResult] | None = None
        self.builder: PlacementBuilder | None = None
        self.result: SimResult | None = None
        self.workload_seed: int | None = None
        self.facts = FactsCache(self.cap, self.cluster.resources, self.mode)
        self.steps = 0
        self._state: ClusterState | None = None

    # ---- helpers ---------------------------------------------------------------------------
    def _rate(self, job: Job) -> float:
        """Reward lost per second while ``job`` is in the system."""
        return 1 / 3600.0 if self.reward == "jct" else 1.0 / self.facts.get(job).ideal_s

    def _in_system(self, builder: PlacementBuilder) -> list[tuple[str, float, float]]:
        """(job, cost rate, estimated finish) of every job in the system after the builder's
        decision: running and just-started jobs at their speeds, waiting jobs never."""
        state, t0 = builder.state, builder.state.time
        out = []
        for r in state.running:
            v = self.facts.running_speed(r)
            out.append((r.job.name, self._rate(r.job), t0 + r.remaining / v if v > 0 else np.inf))
        started = {builder.jobs[k].name: k for k in builder.tasks}
        for q in state.queued:
            k = started.get(q.job.name)
            finish = np.inf
            if k is not None:
                w, p = builder.alloc[k]
                machines = len({m for m, tw, _ in builder.tasks[k] if tw > 0}) or 1
                v = ring_speed(q.job, w, p, machines, self.mode)
                finish = t0 + q.remaining / v if v > 0 else np.inf
            out.append((q.job.name, self._rate(q.job), finish))
        return out

    def _advance(self, builder: PlacementBuilder | None) -> float:
        """Send the builder's decision (None: start) and run on to the next point with a choice
        (``self.builder``; None at the end); returns the reward of the time passed."""
        assert self._gen is not None
        reward, t0 = 0.0, 0.0
        system: list[tuple[str, float, float]] = []
        try:
            while True:
                if builder is None:
                    state = next(self._gen)
                else:
                    t0, system = builder.state.time, self._in_system(builder)
                    state = self._gen.send(builder.decision())
                    reward -= sum(r * (min(f, state.time) - t0) for _, r, f in system)
                builder = self._builder(state)
                if builder.mask()[:-1].any():
                    break
            self.builder = builder
            self._state = state
        except StopIteration as stop:
            self.result = stop.value
            self._gen = None
            self.builder = None
            self._state = None
            finish = self.result.jobs.set_index("job")["finish"]
            reward -= sum(r * (float(finish[name]) - t0) for name, r, _ in system)
        return reward

    def _builder(self, state: ClusterState) -> PlacementBuilder:
        return PlacementBuilder(
            state,
            self.facts,
            window=self.window,
            action=self.action,
            horizon=self.horizon,
            step_s=self.step_s,
            sizes=self.sizes,
        )

    def _obs(self) -> np.ndarray:
        if self.builder is None:
            return np.zeros(self.observation_space.shape, dtype=np.float32)  # type: ignore[arg-type]
        return self.builder.observation(self.observation)

    def action_masks(self) -> np.ndarray:
        """Valid actions now (bool); only "wait" once the episode is over."""
        if self.builder is None:
            mask = np.zeros(self.wait_action + 1, dtype=np.bool_)
            mask[-1] = True
            return mask
        return self.builder.mask().copy()

    def expert_action(self, smaller: bool = False) -> int:
        """The warm-up teacher's next action (``PlacementBuilder.expert_action``; ``smaller``:
        its variant that starts a job below its request rather than wait)."""
        if self.builder is None:
            return self.wait_action
        return self.builder.expert_action(smaller=smaller)

    def _info(self, **extra: Any) -> dict[str, Any]:
        info: dict[str, Any] = {
            "action_mask": self.action_masks(),
            "time": None if self._state is None else self._state.time,
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
            _EventMode(),
            mode=self.mode,
            restart_s=self.restart_s,
            record_history=False,
            lower_bound=False,  # the lower bound's LP: a cost per episode nothing here reads
        )
        self.result = None
        self.steps = 0
        self._state = None
        self.builder = None
        self._advance(None)
        return self._obs(), self._info()

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        """Apply one action; "wait" runs the simulator to the next decision point."""
        a = int(action)
        if not 0 <= a <= self.wait_action:
            raise InvalidInput(f"action must be in [0, {self.wait_action}], got {action!r}")
        if self.builder is None:  # episode over: nothing to do
            return self._obs(), 0.0, True, False, self._info(valid=False)
        self.steps += 1
        truncated = self.max_steps is not None and self.steps >= self.max_steps
        if a != self.wait_action:
            valid = self.builder.apply(a)
            if valid and not self.builder.mask()[:-1].any():
                a = self.wait_action  # nothing else to start: the point ends here
            else:
                return self._obs(), 0.0, False, truncated, self._info(valid=valid)
        elif not self.builder.mask()[-1]:
            return self._obs(), 0.0, False, truncated, self._info(valid=False)
        reward = self._advance(self.builder)
        terminated = self.builder is None
        return (
            self._obs(),
            float(reward),
            terminated,
            truncated and not terminated,
            self._info(valid=True),
        )
