"""DeepRM's own environment: one machine of slotted resources, jobs as rectangles (docs/rl.md).

After DeepRM (Mao, Alizadeh, Menache, Kandula, "Resource Management with Deep Reinforcement
Learning", HotNets 2016) and its public code, hongzimao/deeprm (MIT licence, Copyright (c) 2017
Pensieve): ``parameters.py``, ``job_distribution.py``, ``environment.py`` and
``other_agents.py`` were read for the setting; no code is copied. The heuristics SJF, Packer,
Tetris* and random are the paper's baselines (``DEEPRM_HEURISTICS``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import gymnasium as gym
import numpy as np

from smdlab.errors import InvalidInput, check_int

SHORT_CHANCE = 0.8  # DeepRM's job_small_chance
DEEPRM_HEURISTICS = ("sjf", "packer", "tetris", "random")


@dataclass(frozen=True)
class DeepRMSetting:
    """DeepRM's parameters (``parameters.py`` defaults; ``arrival_steps`` is its ``simu_len``
    of the paper's experiments, 50)."""

    resources: int = 2  # num_res
    slots: int = 10  # res_slot: units of each resource
    horizon: int = 20  # time_horizon: the image's rows, steps a job may be placed ahead
    visible: int = 5  # num_nw: visible job slots
    backlog: int = 60  # backlog_size
    max_len: int = 15  # max_job_len
    max_size: int = 10  # max_job_size
    arrival_steps: int = 50  # steps at which jobs may arrive (a jobset)
    max_time: int = 300  # an episode is cut here (a policy that never places jobs)
    track_since_new: int = 10  # max_track_since_new

    def checked(self) -> DeepRMSetting:
        """This setting with every field validated (InvalidInput names the bad one)."""
        check_int("resources", self.resources, 1, 8)
        check_int("slots", self.slots, 1, 100)
        check_int("horizon", self.horizon, 2, 200)
        check_int("visible", self.visible, 1, 100)
        check_int("backlog", self.backlog, 0, 10_000)
        if self.visible > self.backlog:
            raise InvalidInput(
                f"visible must be at most backlog ({self.backlog}): DeepRM shows the first jobs "
                f"of its queue, got {self.visible}"
            )
        check_int("max_len", self.max_len, 5, self.horizon - 1)
        check_int("max_size", self.max_size, 5, self.slots)
        check_int("arrival_steps", self.arrival_steps, 1)
        check_int("max_time", self.max_time, self.arrival_steps)
        check_int("track_since_new", self.track_since_new, 1)
        return self

    @property
    def lengths(self) -> tuple[tuple[int, int], tuple[int, int]]:
        """(short, long) job length ranges, inclusive: 1 to max_len/5, and 2/3 max_len to max_len."""
        return (1, self.max_len // 5), (math.ceil(self.max_len * 2 / 3), self.max_len)

    @property
    def sizes(self) -> tuple[tuple[int, int], tuple[int, int]]:
        """(dominant, other) resource demand ranges, inclusive: max_size/2 to max_size, 1 to
        max_size/5."""
        return (self.max_size // 2, self.max_size), (1, self.max_size // 5)

    @property
    def load_per_rate(self) -> float:
        """Offered load per unit arrival probability: E[length] E[demand per resource] / slots."""
        (s0, s1), (l0, l1) = self.lengths
        mean_len = SHORT_CHANCE * (s0 + s1) / 2 + (1 - SHORT_CHANCE) * (l0 + l1) / 2
        (d0, d1), (o0, o1) = self.sizes
        k = self.resources
        mean_size = ((d0 + d1) / 2 + (k - 1) * (o0 + o1) / 2) / k
        return mean_len * mean_size / self.slots

    @property
    def width(self) -> int:
        """Columns of the observation image."""
        return (self.slots + self.max_size * self.visible) * self.resources + self.backlog_cols + 1

    @property
    def backlog_cols(self) -> int:
        """Columns of the backlog's part of the image."""
        return max(1, math.ceil(self.backlog / self.horizon))


def check_load(load: float, setting: DeepRMSetting) -> float:
    """``load`` if it is in (0, the load of an arrival at every step], else InvalidInput."""
    top = setting.load_per_rate
    try:
        v = float(load)
    except (TypeError, ValueError):
        v = math.nan
    if not (0 < v <= top):
        raise InvalidInput(f"load must be in (0, {top:g}] (an arrival every step), got {load!r}")
    return v


def jobset(
    load: float, seed: int, setting: DeepRMSetting | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """A jobset: per arrival step, the length of the job arriving (0: none) and its demand per
    resource. Bernoulli arrivals at ``load / load_per_rate``; 80% short jobs; one dominant
    resource per job, drawn uniformly."""
    st = (setting or DeepRMSetting()).checked()
    p = check_load(load, st) / st.load_per_rate
    rng = np.random.default_rng([check_int("seed", seed, 0), 7_919])
    n = st.arrival_steps
    (s0, s1), (l0, l1) = st.lengths
    (d0, d1), (o0, o1) = st.sizes
    arrive = rng.random(n) < p
    short = rng.random(n) < SHORT_CHANCE
    lens = np.where(short, rng.integers(s0, s1 + 1, n), rng.integers(l0, l1 + 1, n))
    dominant = rng.integers(0, st.resources, n)
    sizes = rng.integers(o0, o1 + 1, (n, st.resources))
    sizes[np.arange(n), dominant] = rng.integers(d0, d1 + 1, n)
    lens = np.where(arrive, lens, 0)
    sizes = np.where(arrive[:, None], sizes, 0)
    return lens.astype(np.int64), sizes.astype(np.int64)


class DeepRMEnv(gym.Env):
    """DeepRM's environment: place visible jobs on one machine's resource image, or move on.

    Observation: DeepRM's image, ``horizon`` rows (time steps ahead) by ``width`` columns,
    flattened: per resource, the machine's occupied units at each step, then each visible job
    slot's rectangle (its length in rows, its demand in columns); then the backlog's job count as
    filled cells; then the steps since the last arrival over ``track_since_new``. Action ``j <
    visible`` places visible job ``j`` at the earliest step at which it fits for its whole
    length within the horizon (it may start later than now); the first backlogged job takes its
    slot. Action ``visible`` (or a job that cannot be placed) moves time on by one step: the
    image shifts, jobs that end leave, a new job may arrive. Reward, at each move: minus the sum
    over jobs in the system (placed and not ended, visible, backlogged) of 1 / length, so an
    episode sums to minus the total slowdown. ``action_masks()``: the visible jobs that can be
    placed, and "move on". An episode is one jobset run until every job has ended.
    """

    metadata = {"render_modes": []}  # noqa: RUF012 (gymnasium's declared instance variable)

    def __init__(
        self,
        load: float | tuple[float, ...] = 1.3,
        *,
        setting: DeepRMSetting | None = None,
        train_seeds: int = 100,
    ) -> None:
        self.setting = st = (setting or DeepRMSetting()).checked()
        loads = load if isinstance(load, tuple) else (load,)
        if not loads:
            raise InvalidInput("load must name at least one load")
        self.loads = tuple(check_load(v, st) for v in loads)
        self.train_seeds = check_int("train_seeds", train_seeds, 1)
        self.observation_space = gym.spaces.Box(
            0.0, 1.0, (st.horizon * st.width,), dtype=np.float32
        )
        self.action_space = gym.spaces.Discrete(st.visible + 1)
        self.move_on = st.visible
        self._cols = np.arange(max(st.slots, st.max_size))
        self._rows = np.arange(st.horizon)
        self.lens = np.zeros(0, dtype=np.int64)
        self.sizes = np.zeros((0, st.resources), dtype=np.int64)
        self.load = self.loads[0]
        self.workload_seed = 0
        self._start(self.lens, self.sizes)

    # ---- state -----------------------------------------------------------------------------
    def _start(self, lens: np.ndarray, sizes: np.ndarray) -> None:
        st = self.setting
        self.seq_lens, self.seq_sizes = lens, sizes
        self.time = 0
        self.free = np.full((st.horizon, st.resources), st.slots, dtype=np.int64)
        self.slot: list[int | None] = [None] * st.visible  # job ids
        self.queue: list[int] = []  # backlogged job ids, in arrival order
        self.enter: list[int] = []
        self.length: list[int] = []
        self.demand: list[np.ndarray] = []
        self.finish: list[int] = []  # -1: not placed
        self.placed: list[int] = []  # placed jobs not yet ended
        self.dropped = 0
        self.since_new = 0
        self._starts_cache: np.ndarray | None = None
        self._arrive()

    def _arrive(self) -> None:
        t = self.time
        if t >= len(self.seq_lens) or self.seq_lens[t] <= 0:
            return
        self._starts_cache = None
        self.since_new = 0
        if None not in self.slot and len(self.queue) >= self.setting.backlog:
            self.dropped += 1  # DeepRM: the backlog is full, the job is lost
            return
        j = len(self.enter)
        self.enter.append(t)
        self.length.append(int(self.seq_lens[t]))
        self.demand.append(self.seq_sizes[t])
        self.finish.append(-1)
        if None in self.slot:
            self.slot[self.slot.index(None)] = j
        else:
            self.queue.append(j)

    def _starts(self) -> np.ndarray:
        """Per visible slot, the earliest step ahead at which its job fits for its whole length
        (-1: no job, or none); cached until the state changes."""
        if self._starts_cache is not None:
            return self._starts_cache
        st = self.setting
        out = np.full(st.visible, -1, dtype=np.int64)
        ks = [k for k, j in enumerate(self.slot) if j is not None]
        js = [j for j in self.slot if j is not None]
        if ks:
            dem = np.stack([self.demand[j] for j in js])  # (K, R)
            n = np.array([self.length[j] for j in js])[:, None]  # (K, 1)
            bad = ~(self.free[None, :, :] >= dem[:, None, :]).all(axis=2)  # (K, H)
            cs = np.zeros((len(js), st.horizon + 1), dtype=np.int64)
            np.cumsum(bad, axis=1, out=cs[:, 1:])
            end = self._rows[None, :] + n  # a window [t, t + n) must end within the horizon
            inside = end <= st.horizon
            clean = inside & (
                np.take_along_axis(cs, np.minimum(end, st.horizon), axis=1) == cs[:, :-1]
            )
            first = clean.argmax(axis=1)
            out[ks] = np.where(clean.any(axis=1), first, -1)
        self._starts_cache = out
        return out

    def fits_now(self, k: int) -> bool:
        """Whether visible job ``k`` fits from now for its whole length (the heuristics' test)."""
        j = self.slot[k]
        if j is None:
            return False
        return bool((self.free[: self.length[j]] >= self.demand[j]).all())

    def action_masks(self) -> np.ndarray:
        """Valid actions now: visible jobs that can be placed within the horizon, and move on."""
        return np.append(self._starts() >= 0, True)

    def _obs(self) -> np.ndarray:
        st = self.setting
        img = np.zeros((st.horizon, st.width), dtype=np.float32)
        c = 0
        for r in range(st.resources):
            used = st.slots - self.free[:, r]
            img[:, c : c + st.slots] = self._cols[None, : st.slots] < used[:, None]
            c += st.slots
            for j in self.slot:
                if j is not None:
                    img[: self.length[j], c : c + int(self.demand[j][r])] = 1.0
                c += st.max_size
        n = len(self.queue)
        cols = st.backlog_cols
        full, part = divmod(n, cols)
        img[:full, c : c + cols] = 1.0
        if part and full < st.horizon:
            img[full, c : c + part] = 1.0
        c += cols
        img[:, c] = min(self.since_new, st.track_since_new) / st.track_since_new
        return img.reshape(-1)

    def _in_system(self) -> float:
        lengths = [self.length[j] for j in self.placed]
        lengths += [self.length[j] for j in self.slot if j is not None]
        lengths += [self.length[j] for j in self.queue]
        return float(sum(1.0 / n for n in lengths))

    def _done(self) -> bool:
        return (
            self.time >= self.setting.arrival_steps
            and not self.placed
            and not self.queue
            and all(j is None for j in self.slot)
        )

    def slowdowns(self) -> np.ndarray:
        """Each arrived job's slowdown (finish - arrival) / length; a job not ended by now counts
        as ending now."""
        fin = np.array([f if f >= 0 and f <= self.time else self.time for f in self.finish])
        if not len(fin):
            return np.zeros(0)
        return (fin - np.array(self.enter)) / np.array(self.length)

    def _info(self) -> dict[str, Any]:
        info: dict[str, Any] = {
            "action_mask": self.action_masks(),
            "time": self.time,
            "load": self.load,
            "workload_seed": self.workload_seed,
        }
        if self._done() or self.time >= self.setting.max_time:
            sd = self.slowdowns()
            info["mean_slowdown"] = float(sd.mean()) if len(sd) else 0.0
            info["dropped"] = self.dropped
        return info

    # ---- Gymnasium API ---------------------------------------------------------------------
    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        """A new jobset: ``options["workload_seed"]`` and ``options["load"]`` fix it, else a
        training seed (``range(train_seeds)``) and one of the environment's loads."""
        super().reset(seed=seed)
        options = dict(options or {})
        ws = options.get("workload_seed")
        if ws is None:
            ws = int(self.np_random.integers(0, self.train_seeds))
        load = options.get("load")
        if load is None:
            load = self.loads[int(self.np_random.integers(0, len(self.loads)))]
        self.workload_seed = check_int("workload_seed", ws, 0)
        self.load = check_load(load, self.setting)
        lens, sizes = jobset(self.load, self.workload_seed, self.setting)
        self._start(lens, sizes)
        return self._obs(), self._info()

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        """Place a visible job, or move time on (a job that cannot be placed moves on too)."""
        a = int(action)
        if not 0 <= a <= self.move_on:
            raise InvalidInput(f"action must be in [0, {self.move_on}], got {action!r}")
        if self._done():
            return self._obs(), 0.0, True, False, self._info()
        j = self.slot[a] if a < self.move_on else None
        t = -1 if j is None else int(self._starts()[a])
        self._starts_cache = None
        if j is not None and t >= 0:
            n = self.length[j]
            self.free[t : t + n] -= self.demand[j]
            self.finish[j] = self.time + t + n
            self.placed.append(j)
            self.slot[a] = self.queue.pop(0) if self.queue else None
            return self._obs(), 0.0, False, False, self._info()
        reward = -self._in_system()  # the step that passes, from now to now + 1
        self.time += 1
        self.free[:-1] = self.free[1:]
        self.free[-1] = self.setting.slots
        self.placed = [p for p in self.placed if self.finish[p] > self.time]
        self.since_new += 1
        self._arrive()
        terminated = self._done()
        truncated = not terminated and self.time >= self.setting.max_time
        return self._obs(), reward, terminated, truncated, self._info()

    # ---- DeepRM's baselines ----------------------------------------------------------------
    def heuristic_action(
        self, name: str, *, knob: float = 0.5, rng: np.random.Generator | None = None
    ) -> int:
        """The action of DeepRM's baseline ``name`` (``DEEPRM_HEURISTICS``): among visible jobs
        that fit now, ``sjf`` takes the shortest, ``packer`` the best alignment (free units now
        · demand, Tetris'), ``tetris`` (Tetris*) the best of knob x alignment + (1 - knob) /
        length; move on when none fits. ``random`` picks any action uniformly (a job that
        cannot be placed moves on), as DeepRM's."""
        if name == "random":
            if rng is None:
                raise InvalidInput("rng: the random baseline needs a generator")
            return int(rng.integers(0, self.move_on + 1))
        if name not in ("sjf", "packer", "tetris"):
            raise InvalidInput(
                f"heuristic must be one of {', '.join(DEEPRM_HEURISTICS)}; got {name!r}"
            )
        best, act = 0.0, self.move_on
        for k, j in enumerate(self.slot):
            if j is None or not self.fits_now(k):
                continue
            align = float(self.free[0] @ self.demand[j])
            short = 1.0 / self.length[j]
            score = (
                short
                if name == "sjf"
                else align
                if name == "packer"
                else knob * align + (1 - knob) * short
            )
            if score > best:  # ties: the first slot
                best, act = score, k
        return act
