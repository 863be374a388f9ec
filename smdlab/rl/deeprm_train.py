"""DeepRM's agent in DeepRM's own environment: policy gradient with a time-dependent baseline.

As DeepRM (Mao et al., HotNets 2016; hongzimao/deeprm, MIT licence, Copyright (c) 2017 Pensieve:
``pg_re.py``, ``pg_su.py``, ``pg_network.py`` were read, nothing copied): a policy network of
one hidden layer of 20 units over the image; each iteration runs ``episodes`` episodes of each
of ``jobsets`` jobsets, sampling actions; returns are undiscounted; the baseline of the return at
step t is the mean over the jobset's episodes of their return at t (0 past an episode's end); the
loss is -sum log pi(a_t) (v_t - b_t) over every step, divided by the steps; RMSProp (learning
rate 10^-3, rho 0.9, epsilon 10^-9). Its warm-up imitates SJF by cross-entropy (DeepRM's
supervised ``pg_su`` with ``evaluate_policy_name = "SJF"``). Ours: invalid placements are masked
out of the softmax; every ``validate_every`` iterations the greedy policy runs on validation
jobsets and ``weights.npz`` keeps the best. The trained policy runs with numpy only
(``DeepRMAgent``). Needs the ``[rl]`` extra (PyTorch, CPU) to train.
"""

from __future__ import annotations

import dataclasses
import json
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from smdlab.errors import InvalidInput, check_int, check_positive
from smdlab.paths import data_dir
from smdlab.rl.deeprm_env import DeepRMEnv, DeepRMSetting, check_load
from smdlab.rl.extra import rl_import
from smdlab.rl.networks import Layers, mlp
from smdlab.rl.weights import load_weights, save_weights

AGENT = "deeprm_env"  # the weights' agent name: DeepRM in its own environment
LOADS = (0.3, 0.5, 0.7, 0.9, 1.1, 1.3, 1.5, 1.7)  # the sweep's offered loads
VAL_SEEDS = tuple(range(200, 205))  # validation jobsets (training draws 0-99; held out: 1,000 up)
HIGH = 1.1  # validation uses the loads from here up (the target's range)


def default_weights_path() -> Path:
    """The shipped weights, ``data/deeprm_env/weights.npz``."""
    return data_dir() / AGENT / "weights.npz"


@dataclass(frozen=True)
class DeepRMTrainConfig:
    """Settings of one DeepRM training run (saved with its weights)."""

    iterations: int = 200
    seed: int = 0
    jobsets: int = 4  # jobsets per iteration (DeepRM: num_ex)
    episodes: int = 10  # episodes per jobset, averaged by the baseline (num_seq_per_batch)
    warmup: int = 8  # epochs imitating SJF first (DeepRM's pg_su), minibatches of 256
    warmup_jobsets: int = 20  # training jobsets (at every training load) SJF's steps come from
    hidden: int = 20  # DeepRM's one hidden layer of 20
    lr: float = 1e-3
    validate_every: int = 10  # iterations between validations (0: none, keep the last)
    loads: tuple[float, ...] = LOADS  # training draws each jobset's load from these
    train_seeds: int = 100

    def checked(self) -> DeepRMTrainConfig:
        """This config with every field validated (InvalidInput names the bad one)."""
        st = DeepRMSetting()
        return dataclasses.replace(
            self,
            iterations=check_int("iterations", self.iterations, 1),
            seed=check_int("seed", self.seed, 0),
            jobsets=check_int("jobsets", self.jobsets, 1),
            episodes=check_int("episodes", self.episodes, 1),
            warmup=check_int("warmup", self.warmup, 0),
            warmup_jobsets=check_int("warmup_jobsets", self.warmup_jobsets, 1),
            hidden=check_int("hidden", self.hidden, 1),
            lr=check_positive("lr", self.lr),
            validate_every=check_int("validate_every", self.validate_every, 0),
            loads=tuple(check_load(v, st) for v in self.loads),
            train_seeds=check_int("train_seeds", self.train_seeds, 1),
        )


def _torch() -> Any:
    """The torch module, or InvalidInput saying how to install it."""
    return rl_import("torch", None, "agent", "training")


def _softmax_sample(logits: np.ndarray, mask: np.ndarray, u: float) -> int:
    z = np.where(mask, logits, -np.inf)
    p = np.exp(z - z.max())
    c = np.cumsum(p)
    return int(min(np.searchsorted(c, u * c[-1], side="right"), len(c) - 1))


class DeepRMAgent:
    """DeepRM's trained policy network, greedy: the most probable valid action (numpy only)."""

    def __init__(self, weights: str | Path | None = None) -> None:
        path = default_weights_path() if weights is None else Path(weights)
        nets, self.meta = load_weights(path, AGENT, ("policy",))
        self.layers: Layers = nets["policy"]

    @classmethod
    def from_layers(cls, layers: Layers, meta: dict[str, Any]) -> DeepRMAgent:
        """The agent of a network held in memory (training validates with it)."""
        agent = cls.__new__(cls)
        agent.layers, agent.meta = layers, meta
        return agent

    def act(self, obs: np.ndarray, mask: np.ndarray) -> int:
        """The most probable valid action."""
        logits = mlp(self.layers, obs)
        return int(np.argmax(np.where(mask, logits, -np.inf)))


def run_episode(env: DeepRMEnv, policy: str | DeepRMAgent, seed: int, load: float) -> float:
    """The mean slowdown of one jobset (``seed``, ``load``) under ``policy``: a DeepRM agent or a
    baseline name (``sjf``, ``packer``, ``tetris``, ``tetris@KNOB``, ``random``)."""
    obs, info = env.reset(options={"workload_seed": seed, "load": load})
    rng = np.random.default_rng([seed, 11])
    name, _, knob = policy.partition("@") if isinstance(policy, str) else ("", "", "")
    while True:
        if isinstance(policy, DeepRMAgent):
            a = policy.act(obs, env.action_masks())
        else:
            a = env.heuristic_action(name, knob=float(knob or 0.5), rng=rng)
        obs, _, term, trunc, info = env.step(a)
        if term or trunc:
            return float(info["mean_slowdown"])


def mean_slowdown(
    env: DeepRMEnv, policy: str | DeepRMAgent, seeds: Sequence[int], loads: Sequence[float]
) -> float:
    """Mean over jobsets (every seed at every load) of their mean slowdown."""
    return float(np.mean([run_episode(env, policy, s, v) for v in loads for s in seeds]))


def train_deeprm(
    out: str | Path, config: DeepRMTrainConfig | None = None, *, progress: bool = False
) -> dict[str, Any]:
    """Train DeepRM in its own environment into folder ``out`` (``weights.npz``, ``train.json``,
    ``curve.csv``); returns a summary dict."""
    cfg = (config or DeepRMTrainConfig()).checked()
    torch = _torch()
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise InvalidInput(f"out: {str(out)!r} is a file, not a folder")
    env = DeepRMEnv(cfg.loads, train_seeds=cfg.train_seeds)
    n_in, n_out = int(env.observation_space.shape[0]), env.move_on + 1  # type: ignore[index]
    torch.set_num_threads(1)  # deterministic sums, and the machine's cores are shared
    torch.manual_seed(cfg.seed)
    nn = torch.nn
    net = nn.Sequential(nn.Linear(n_in, cfg.hidden), nn.ReLU(), nn.Linear(cfg.hidden, n_out))
    opt = torch.optim.RMSprop(net.parameters(), lr=cfg.lr, alpha=0.9, eps=1e-9)
    meta: dict[str, Any] = {
        "agent": AGENT,
        "setting": dataclasses.asdict(env.setting),
        "config": dataclasses.asdict(cfg),
    }

    def layers() -> Layers:
        return [
            (m.weight.detach().numpy().copy(), m.bias.detach().numpy().copy())
            for m in net
            if hasattr(m, "weight")
        ]

    val_loads = [v for v in cfg.loads if v >= HIGH] or list(cfg.loads)
    val_env = DeepRMEnv(cfg.loads)
    curve: list[tuple[int, str, float]] = []
    best: tuple[float, int, Layers] | None = None
    t0 = time.perf_counter()
    steps = 0

    def save(done: int) -> dict[str, Any]:
        """Write the kept network, the settings and the curve after ``done`` iterations (a run
        cut there writes what a run of ``done`` iterations writes, wall time apart)."""
        final = layers() if best is None else best[2]
        summary = {
            "iterations": done,
            "environment_steps": steps,
            "seconds": round(time.perf_counter() - t0, 1),
            "seed": cfg.seed,
            "kept_iteration": done if best is None else best[1],
            "validation_mean_slowdown": None if best is None else best[0],
        }
        out.mkdir(parents=True, exist_ok=True)
        tmp = out / "weights.npz.tmp"
        settings = meta | {"config": meta["config"] | {"iterations": done}}
        save_weights(tmp, {"policy": final}, settings | {"summary": summary})
        os.replace(tmp, out / "weights.npz")
        (out / "train.json").write_text(
            json.dumps(settings | {"summary": summary}, indent=1, sort_keys=True) + "\n"
        )
        _write_curve(out, curve)
        return summary

    def validate(iteration: int, kind: str = "validation", candidate: bool = True) -> None:
        """Greedy mean slowdown on the validation jobsets; keeps the best candidate network."""
        nonlocal best
        agent = DeepRMAgent.from_layers(layers(), meta)
        val = mean_slowdown(val_env, agent, VAL_SEEDS, val_loads)
        curve.append((iteration, kind, val))
        if candidate and (best is None or val < best[0]):
            best = (val, iteration, layers())
        out.mkdir(parents=True, exist_ok=True)
        _write_curve(out, curve)  # a long run shows its progress

    bar = None
    if progress:
        from tqdm import tqdm

        bar = tqdm(total=cfg.iterations, desc="train deeprm_env", unit="iteration")
    if cfg.warmup:  # imitate SJF: its steps on training jobsets, minibatches of 256
        xs0: list[np.ndarray] = []
        ms0: list[np.ndarray] = []
        acts0: list[int] = []
        for seed in range(min(cfg.warmup_jobsets, cfg.train_seeds)):
            for load in cfg.loads:
                obs, _ = env.reset(options={"workload_seed": seed, "load": load})
                while True:
                    a = env.heuristic_action("sjf")
                    xs0.append(obs.astype(np.float16))  # 0/1 cells and tenths: exact
                    ms0.append(env.action_masks())
                    acts0.append(a)
                    obs, _, term, trunc, _ = env.step(a)
                    if term or trunc:
                        break
        X0 = torch.from_numpy(np.stack(xs0))
        M0 = torch.from_numpy(np.stack(ms0))
        A0 = torch.tensor(acts0)
        order = torch.Generator().manual_seed(cfg.seed)
        for epoch in range(cfg.warmup):
            perm = torch.randperm(len(A0), generator=order)
            for i in range(0, len(A0), 256):
                idx = perm[i : i + 256]
                x = X0[idx].float()
                logp = torch.log_softmax(net(x).masked_fill(~M0[idx], -1e9), 1)
                loss = torch.nn.functional.nll_loss(logp, A0[idx])
                opt.zero_grad()
                loss.backward()
                opt.step()
            # the imitation's last epoch is a candidate: the starting point of the gradient
            validate(epoch + 1, "warmup", candidate=epoch + 1 == cfg.warmup)
        steps += len(A0)
    for it in range(cfg.iterations):
        draw = np.random.default_rng([cfg.seed, it])
        xs: list[np.ndarray] = []
        ms: list[np.ndarray] = []
        acts: list[int] = []
        advs: list[float] = []
        slowdowns: list[float] = []
        w = layers()
        for _ in range(cfg.jobsets):
            seed = int(draw.integers(0, cfg.train_seeds))
            load = float(cfg.loads[int(draw.integers(0, len(cfg.loads)))])
            runs = []
            for _ in range(cfg.episodes):
                obs, info = env.reset(options={"workload_seed": seed, "load": load})
                ex, em, ea, er = [], [], [], []
                while True:
                    mask = env.action_masks()
                    a = _softmax_sample(mlp(w, obs), mask, float(draw.random()))
                    ex.append(obs)
                    em.append(mask)
                    ea.append(a)
                    obs, r, term, trunc, info = env.step(a)
                    er.append(r)
                    if term or trunc:
                        break
                runs.append((ex, em, ea, np.cumsum(np.asarray(er)[::-1])[::-1]))
                slowdowns.append(float(info["mean_slowdown"]))
            length = max(len(run[3]) for run in runs)
            padded = np.zeros((len(runs), length))
            for i, run in enumerate(runs):
                padded[i, : len(run[3])] = run[3]
            baseline = padded.mean(axis=0)  # the time-dependent baseline
            for ex, em, ea, ret in runs:
                xs += ex
                ms += em
                acts += ea
                advs += list(ret - baseline[: len(ret)])
        steps += len(xs)
        X = torch.from_numpy(np.stack(xs))
        M = torch.from_numpy(np.stack(ms))
        logp = torch.log_softmax(net(X).masked_fill(~M, -1e9), 1)
        chosen = logp.gather(1, torch.tensor(acts)[:, None]).squeeze(1)
        loss = -(chosen * torch.tensor(advs, dtype=torch.float32)).sum() / len(xs)
        opt.zero_grad()
        loss.backward()
        opt.step()
        curve.append((it + 1, "train", float(np.mean(slowdowns))))
        if cfg.validate_every and (it + 1) % cfg.validate_every == 0:
            validate(it + 1)
            save(it + 1)  # a long run can be cut at any validation
        if bar is not None:
            bar.update()
            bar.set_postfix(slowdown=f"{curve[-1][2]:.2f}")
    if bar is not None:
        bar.close()
    return save(cfg.iterations)


def _write_curve(out: Path, curve: Sequence[tuple[int, str, float]]) -> None:
    """Write ``curve.csv`` (iteration, kind, mean slowdown) into folder ``out``, atomically."""
    lines = ["iteration,kind,mean_slowdown"] + [f"{u},{k},{v!r}" for u, k, v in curve]
    tmp = out / "curve.csv.tmp"
    tmp.write_text("\n".join(lines) + "\n")
    os.replace(tmp, out / "curve.csv")
