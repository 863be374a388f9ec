"""One chain on a Slurm-like batch queue as a Gymnasium environment: when to submit the next link
(docs/batch.md, "The chain environment").

An episode is one chain of ``chain_length_s`` seconds (links of at most the wall-time limit)
arriving in a background of batch jobs (``smdlab.sim.batch``, queue policy ``queue``). At every
decision point of the chain's running link (every ``step_s`` while it has no successor) the agent
sees the queue and the chain (``OBSERVATION``) and acts: 0 waits, 1 submits the successor now.
Once the running link has ended the successor is submitted whatever the action (as every
provisioner's), so those points are not shown. The reward of a step is the change of

    -(interruption hours) - overlap_weight * (overlap GPU-hours)

of the chain (both as ``BatchResult.chains`` counts them), so an episode's return is minus the
chain's interruption hours minus ``overlap_weight`` times its overlap GPU-hours. The episode ends
when the chain's last link starts (its interruption and overlap are then fixed).

The background is run once up to each arrival time of ``arrivals`` and kept (``BatchRun.copy``);
a reset draws an arrival and the chain's GPUs (``chain_gpus``) from the environment's generator,
copies the kept run and adds the chain, which gives exactly the run ``simulate_batch`` would make
of the background and that chain.
"""

from __future__ import annotations

from collections.abc import Generator, Sequence
from typing import Any

import gymnasium as gym
import numpy as np

from smdlab.errors import InvalidInput, check_int, check_positive
from smdlab.model.batch import BatchJob, Chain
from smdlab.policies.batch import ChainView, Provisioner, ProvisionState
from smdlab.sim.batch import DEFAULT_STEP_S, BatchRun, batch_run

# What the agent sees, scaled so that every value is about 0-1 (GPUs over the cluster's, seconds
# over the wall-time limit; the queue's sizes through log1p, as they run to many limits' worth).
OBSERVATION: tuple[str, ...] = (
    "time_left / limit",
    "chain gpus / gpus",
    "log1p(queued jobs / gpus)",
    "queued gpus / gpus",
    "log1p(queued GPU-s / (gpus * limit))",
    "running gpus / gpus",
    "running GPU-s left / (gpus * limit)",
    "free gpus / gpus",
)
# No value reaches this bound (fractions are at most 1, log1p of a queue at most about 20).
OBS_HIGH = 1000.0
WAIT, SUBMIT = 0, 1
# Overlap GPU-hours' weight in the reward: one GPU-hour of two links at once costs as much as
# six minutes of interruption (ours: Mirage's reward is not public).
DEFAULT_OVERLAP_WEIGHT = 0.1
AGENT_CHAIN = "agent"
# Links an episode's chain may use: a learner that submits at every point makes links that each
# serve only until the next point; the overlap penalty, not an error, is what should stop it.
EPISODE_MAX_LINKS = 100_000


def chain_observation(
    view: ChainView, state: ProvisionState, gpus: int, limit_s: float
) -> np.ndarray:
    """The observation (``OBSERVATION``) of one chain awaiting a decision."""
    q_jobs, q_gpus, q_gpu_s, r_gpus, r_left, free = state.queue
    g, work = float(gpus), float(gpus) * limit_s
    raw = [view.time_left / limit_s, view.gpus / g, np.log1p(max(q_jobs, 0.0) / g), q_gpus / g]
    raw += [np.log1p(max(q_gpu_s, 0.0) / work), r_gpus / g, r_left / work, free / g]
    # the queue's running sums may drift a hair below zero
    return np.clip(np.array(raw, dtype=np.float32), 0.0, OBS_HIGH)


class _Agent(Provisioner):
    """The environment's provisioner: the agent decides through ``step``; this only names it."""

    name = "chain_env"

    def submit(self, view: ChainView, state: ProvisionState) -> bool:
        """Not asked: the environment drives the run's decision points."""
        return view.time_left <= 0


class ChainEnv(gym.Env):
    """One chain on a batch queue: at each decision point of its running link, wait (0) or submit
    the successor now (1). Reward and observation: module docstring.

    jobs, gpus, limit_s, queue: the background, the pool, the wall-time limit and the queue
    policy (as ``simulate_batch``). chain_length_s: the chain's service (over one limit).
    chain_gpus: its GPU counts, one drawn per episode. arrivals: the chain's arrival times, one
    drawn per episode (default 32 evenly spaced over the first three quarters of the jobs'
    submission span).
    """

    metadata = {"render_modes": []}  # noqa: RUF012 (gymnasium's declared instance variable)

    def __init__(
        self,
        jobs: Sequence[BatchJob],
        gpus: int,
        limit_s: float,
        *,
        chain_length_s: float,
        chain_gpus: Sequence[int] = (1, 2, 4, 8),
        arrivals: Sequence[float] | None = None,
        queue: str = "easy",
        step_s: float = DEFAULT_STEP_S,
        overlap_weight: float = DEFAULT_OVERLAP_WEIGHT,
    ) -> None:
        if not jobs:
            raise InvalidInput("jobs: the background needs at least one batch job")
        self.gpus = check_int("gpus", gpus, 1)
        self.limit_s = check_positive("limit_s", limit_s)
        self.chain_length_s = check_positive("chain_length_s", chain_length_s)
        if self.chain_length_s <= self.limit_s:
            raise InvalidInput(
                f"chain_length_s must exceed the wall-time limit {self.limit_s:g} s (a chain of "
                f"one link has no decision to make), got {chain_length_s!r}"
            )
        self.chain_gpus = tuple(check_int("chain_gpus", g, 1, self.gpus) for g in chain_gpus)
        if not self.chain_gpus:
            raise InvalidInput("chain_gpus must list at least one GPU count")
        self.step_s = check_positive("step_s", step_s)
        self.overlap_weight = check_positive("overlap_weight", overlap_weight, allow_zero=True)
        if arrivals is None:
            t = [j.arrival for j in jobs]
            t0, t1 = min(t), min(t) + 0.75 * (max(t) - min(t))
            arrivals = [float(a) for a in np.linspace(t0, t1, 32)[1:]]
        grid = sorted({check_positive("arrivals", a) for a in arrivals})
        if not grid:
            raise InvalidInput("arrivals must hold at least one arrival time > 0")
        base = batch_run(jobs, self.gpus, self.limit_s, queue, step_s=self.step_s)
        self._runs: list[tuple[float, BatchRun]] = []
        for a in grid:
            for _ in base.steps(before=a):  # no provisioner: it never pauses
                pass
            self._runs.append((a, base.copy()))
        self.observation_space = gym.spaces.Box(0.0, OBS_HIGH, (len(OBSERVATION),), np.float32)
        self.action_space = gym.spaces.Discrete(2)
        self._run: BatchRun | None = None
        self._gen: Generator[ProvisionState, Sequence[str], None] | None = None
        self._state: ProvisionState | None = None
        self._obs = np.zeros(len(OBSERVATION), dtype=np.float32)
        self._penalty = 0.0

    def _chain_penalty(self) -> tuple[float, float, float]:
        """The chain's penalty so far, its interruption hours and overlap GPU-hours."""
        assert self._run is not None
        cr = self._run.chains[AGENT_CHAIN]
        inter = cr.interruption_s / 3600
        overlap = cr.chain.gpus * max(cr.run_s - cr.covered, 0.0) / 3600
        return inter + self.overlap_weight * overlap, inter, overlap

    def _advance(self, chosen: Sequence[str] | None) -> bool:
        """Run to the next decision point the agent must take; True if the episode is over."""
        assert self._gen is not None
        try:
            state = next(self._gen) if chosen is None else self._gen.send(chosen)
            while state.chains[0].time_left <= 0:  # the run submits it anyway
                state = self._gen.send(())
        except StopIteration:
            self._state = None
            return True
        self._state = state
        self._obs = chain_observation(state.chains[0], state, self.gpus, self.limit_s)
        return False

    def _info(self) -> dict[str, Any]:
        _, inter, overlap = self._chain_penalty()
        assert self._run is not None
        return {
            "interruption_h": inter,
            "overlap_gpu_h": overlap,
            "links": self._run.chains[AGENT_CHAIN].links,
            "time": self._run.t,
        }

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        """A new episode: a chain at a drawn arrival with drawn GPUs, run to its first decision."""
        super().reset(seed=seed)
        arrival, kept = self._runs[int(self.np_random.integers(len(self._runs)))]
        gpus = int(self.np_random.choice(self.chain_gpus))
        run = kept.copy()
        run.provisioner = _Agent()
        run.add_chain(
            Chain(AGENT_CHAIN, arrival, gpus, self.chain_length_s, max_links=EPISODE_MAX_LINKS)
        )
        cr = run.chains[AGENT_CHAIN]
        self._run = run
        self._gen = run.steps(stop=lambda: cr.final)
        self._penalty = 0.0
        self._advance(None)  # a chain longer than one limit always reaches a decision point
        return self._obs.copy(), self._info()

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        """Wait (0) or submit the successor now (1); run to the next decision point."""
        a = int(action)
        if a not in (WAIT, SUBMIT):
            raise InvalidInput(f"action must be 0 (wait) or 1 (submit), got {action!r}")
        if self._state is None:
            raise InvalidInput("the episode is over: call reset() first")
        done = self._advance((AGENT_CHAIN,) if a == SUBMIT else ())
        penalty = self._chain_penalty()[0]
        reward = self._penalty - penalty
        self._penalty = penalty
        return self._obs.copy(), float(reward), done, False, self._info()

    def chain_result(self) -> dict[str, float]:
        """The episode's chain so far: interruption hours, overlap GPU-hours, links."""
        info = self._info()
        return {k: float(info[k]) for k in ("interruption_h", "overlap_gpu_h", "links")}
