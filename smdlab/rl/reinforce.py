"""DeepRM-MM's and SCHED²'s agents: REINFORCE with a time-dependent baseline (docs/rl.md).

Needs PyTorch (the ``[rl]`` extra, CPU). DeepRM (Mao et al., HotNets 2016) trains its policy
network by REINFORCE: for each jobset it runs several episodes, and the baseline of the return at
time step t is the mean over those episodes of the return at t; the gradient is
sum_t grad log pi(a_t | s_t) (v_t - b_t); its optimiser is RMSProp. DeepRM-MM (Chen, Xu, Wu,
arXiv 1711.07440) trains the same way with (job, machine) actions. SCHED² (Luan et al., GLOBECOM
2019) does not publish its training algorithm: ours uses the same REINFORCE on its own state,
action and reward (``jct``), so its training is inspired, not reproduced. Optionally (``warmup``,
ours, as DL2's warm-up) the first updates imitate a locality-aware first fit
(``PlacementEnv.expert_action``) by cross-entropy before REINFORCE starts.

Training writes ``checkpoint.pt`` (atomically, every ``checkpoint_every`` updates),
``weights.npz`` (both scorers, read by the ``deeprm`` / ``sched2`` policy with numpy only) and
``curve.csv`` (the learning curve) into its output folder, and resumes from the checkpoint found
there.
"""

from __future__ import annotations

import dataclasses
import json
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from smdlab.errors import InvalidInput, check_choice, check_int, check_positive
from smdlab.rl.placement_builder import net_inputs
from smdlab.rl.placement_env import PlacementEnv, locality_scenario
from smdlab.rl.train import (
    CHECKPOINT,
    SETTINGS,
    WEIGHTS,
    _check_out,
    _save_atomic,
    _torch,
    check_space,
    read_checkpoint,
    write_curve,
)
from smdlab.rl.weights import save_weights

AGENTS = ("deeprm", "sched2")
CHECKPOINT_FORMAT = 1


@dataclass(frozen=True)
class ReinforceConfig:
    """Settings of one REINFORCE run (saved with its checkpoint and weights)."""

    agent: str = "deeprm"
    steps: int = 200  # updates in all; each runs ``episodes`` episodes of one jobset
    seed: int = 0
    episodes: int = 4  # episodes per jobset (the time-dependent baseline averages over them)
    warmup: int = 0  # first updates imitate the teacher (``PlacementEnv.expert_action``; ours)
    hidden: int = 32
    lr: float = 1e-3  # RMSProp's learning rate (DeepRM's optimiser and rate)
    entropy: float = 0.0  # weight of an entropy bonus (DeepRM: none)
    checkpoint_every: int = 20
    train_seeds: int = 100  # workload seeds the jobsets are drawn from
    scenario: str = ""  # scenario file (empty: the bundled locality_small.toml)

    def checked(self) -> ReinforceConfig:
        """This config with every field validated (InvalidInput names the bad one)."""
        return dataclasses.replace(
            self,
            agent=check_choice("agent", self.agent, AGENTS),
            steps=check_int("steps", self.steps, 1),
            seed=check_int("seed", self.seed, 0),
            episodes=check_int("episodes", self.episodes, 1),
            warmup=check_int("warmup", self.warmup, 0),
            hidden=check_int("hidden", self.hidden, 1),
            lr=check_positive("lr", self.lr),
            entropy=check_positive("entropy", self.entropy, allow_zero=True),
            checkpoint_every=check_int("checkpoint_every", self.checkpoint_every, 1),
            train_seeds=check_int("train_seeds", self.train_seeds, 1),
        )


def _scorers(torch: Any, n_row: int, n_wait: int, per: int, hidden: int) -> Any:
    nn = torch.nn
    row = nn.Sequential(nn.Linear(n_row, hidden), nn.ReLU(), nn.Linear(hidden, per))
    wait = nn.Sequential(nn.Linear(n_wait, hidden), nn.ReLU(), nn.Linear(hidden, 1))
    return nn.ModuleDict({"row": row, "wait": wait})


def _layers(seq: Any) -> list[tuple[np.ndarray, np.ndarray]]:
    return [
        (m.weight.detach().numpy().copy(), m.bias.detach().numpy().copy())
        for m in seq
        if hasattr(m, "weight")
    ]


def load_checkpoint(path: str | Path) -> dict[str, Any]:
    """A REINFORCE checkpoint; InvalidInput if it is unreadable, foreign or of a newer format."""
    return read_checkpoint(
        path, kind="deeprm/sched2", key="nets", fmt=CHECKPOINT_FORMAT, readable="agent"
    )


def make_agent_env(cfg: ReinforceConfig) -> PlacementEnv:
    """The environment an agent trains in (its own observation, action and reward)."""
    scenario = cfg.scenario or str(locality_scenario())
    return PlacementEnv(scenario, observation=cfg.agent, train_seeds=cfg.train_seeds)


def train_agent(
    out: str | Path,
    config: ReinforceConfig | None = None,
    *,
    force: bool = False,
    progress: bool = False,
) -> dict[str, Any]:
    """Train DeepRM-MM or the SCHED²-inspired agent into folder ``out`` (resuming from its
    checkpoint); returns a summary dict."""
    cfg = (config or ReinforceConfig()).checked()
    torch = _torch()
    out = Path(out)
    _check_out(out, force)
    env = make_agent_env(cfg)
    obs0, _ = env.reset(seed=0)
    rows0, wait0 = net_inputs(cfg.agent, obs0, env.n_machines, env.window, env.horizon)
    per = env.n_machines if env.action == "machine" else 3
    per_row = 1 if cfg.agent == "deeprm" else per
    n_obs, n_actions = int(obs0.shape[0]), env.wait_action + 1
    torch.set_num_threads(1)  # deterministic sums, and the machine's cores are shared
    torch.manual_seed(cfg.seed)
    nets = _scorers(torch, rows0.shape[1], wait0.shape[0], per_row, cfg.hidden)
    opt = torch.optim.RMSprop(nets.parameters(), lr=cfg.lr)
    gen = torch.Generator().manual_seed(cfg.seed)
    step = 0
    curve: list[float] = []
    ck_path = out / CHECKPOINT
    if ck_path.exists():
        ck = load_checkpoint(ck_path)
        if (ck.get("agent"), ck.get("observation")) != (cfg.agent, env.observation):
            raise InvalidInput(
                f"checkpoint: {str(ck_path)!r} is for agent {ck.get('agent')!r} with observation "
                f"{ck.get('observation')!r}; this run trains {cfg.agent!r} on {env.observation!r}"
            )
        check_space(ck, ck_path, n_obs, n_actions)
        if ck.get("hidden") != cfg.hidden:
            raise InvalidInput(
                f"checkpoint: {str(ck_path)!r} has hidden size {ck.get('hidden')}, not {cfg.hidden}"
            )
        groups = ck.get("optimizer", {}).get("param_groups") or [{}]
        ck_lr = groups[0].get("lr")
        if ck_lr is not None and float(ck_lr) != cfg.lr:  # load_state_dict would keep ck_lr
            raise InvalidInput(
                f"checkpoint: {str(ck_path)!r} was trained with lr {ck_lr}, not {cfg.lr}; "
                f"resume with --lr {ck_lr} or train into a new folder"
            )
        nets.load_state_dict(ck["nets"])
        opt.load_state_dict(ck["optimizer"])
        gen.set_state(ck["generator"])
        step = int(ck["step"])
        curve = list(ck.get("curve", []))
    out.mkdir(parents=True, exist_ok=True)
    meta = {
        "agent": cfg.agent,
        "observation": env.observation,
        "action": env.action,
        "reward": env.reward,
        "window": env.window,
        "horizon": env.horizon,
        "step_s": env.step_s,
        "hidden": cfg.hidden,
        "config": dataclasses.asdict(cfg)
        | {"scenario": Path(cfg.scenario or locality_scenario()).name},
    }

    def checkpoint() -> None:
        _save_atomic(
            torch,
            {
                "format": CHECKPOINT_FORMAT,
                "agent": cfg.agent,
                "observation": env.observation,
                "obs_dim": n_obs,
                "n_actions": n_actions,
                "hidden": cfg.hidden,
                "step": step,
                "nets": nets.state_dict(),
                "optimizer": opt.state_dict(),
                "generator": gen.get_state(),
                "curve": curve,
            },
            ck_path,
        )
        tmp = out / (WEIGHTS + ".tmp")
        save_weights(
            tmp,
            {"row": _layers(nets["row"]), "wait": _layers(nets["wait"])},
            meta | {"trained_steps": step},
        )
        os.replace(tmp, out / WEIGHTS)
        # the format of dl2's curve: kind "train", warm-up updates included
        write_curve(out, [(u, "train", v) for u, v in enumerate(curve)])

    def scores(obs: np.ndarray) -> Any:
        rows, wait = net_inputs(cfg.agent, obs, env.n_machines, env.window, env.horizon)
        r = nets["row"](torch.from_numpy(rows)).reshape(-1)
        w = nets["wait"](torch.from_numpy(wait)[None, :]).reshape(-1)
        return torch.cat([r, w])

    bar = None
    if progress:
        from tqdm import tqdm

        bar = tqdm(total=cfg.steps, initial=step, desc=f"train {cfg.agent}", unit="update")
    t0 = time.perf_counter()
    while step < cfg.steps:
        # one jobset per update, drawn from the seed and the update count (resumes repeat it)
        jobset = int(np.random.default_rng([cfg.seed, step]).integers(0, cfg.train_seeds))
        warm = step < cfg.warmup
        episodes = []
        for _ in range(1 if warm else cfg.episodes):  # the teacher is deterministic
            obs, info = env.reset(options={"workload_seed": jobset})
            xs, masks, acts, rews = [], [], [], []
            done = env.builder is None
            while not done:
                mask = info["action_mask"]
                if warm:
                    a = env.expert_action()
                else:
                    with torch.no_grad():
                        z = scores(obs).masked_fill(~torch.from_numpy(mask), -1e9)
                        a = int(torch.multinomial(torch.softmax(z, 0), 1, generator=gen))
                xs.append(obs)
                masks.append(mask)
                acts.append(a)
                obs, r, term, trunc, info = env.step(a)
                rews.append(r)
                done = term or trunc
            episodes.append((xs, masks, acts, rews, info.get("mean_jct", np.nan)))
        # returns (undiscounted, as DeepRM) and the time-dependent baseline: the mean over the
        # jobset's episodes of the return at step t (0 past an episode's end)
        length = max(len(e[3]) for e in episodes)
        returns = np.zeros((len(episodes), length))
        for i, e in enumerate(episodes):
            g = np.cumsum(np.asarray(e[3], dtype=float)[::-1])[::-1]
            returns[i, : len(g)] = g
        baseline = returns.mean(axis=0)
        loss_terms = []
        count = 0
        for i, (xs, masks, acts, _, _) in enumerate(episodes):
            if not xs:
                continue
            adv = torch.tensor(returns[i, : len(xs)] - baseline[: len(xs)], dtype=torch.float32)
            z = torch.stack([scores(x) for x in xs])
            z = z.masked_fill(~torch.from_numpy(np.stack(masks)), -1e9)
            logp = torch.log_softmax(z, 1)
            chosen = logp.gather(1, torch.tensor(acts)[:, None]).squeeze(1)
            term = -chosen.sum() if warm else -(chosen * adv).sum()  # warm-up: cross-entropy
            if cfg.entropy:
                term = term - cfg.entropy * (-(logp.exp() * logp).sum())
            loss_terms.append(term)
            count += len(xs)
        if loss_terms:
            loss = torch.stack(loss_terms).sum() / count
            opt.zero_grad()
            loss.backward()
            opt.step()
        curve.append(float(np.nanmean([e[4] for e in episodes])))
        step += 1
        if bar is not None:
            bar.update()
            bar.set_postfix(mean_jct=f"{curve[-1]:,.0f}")
        if step % cfg.checkpoint_every == 0 or step == cfg.steps:
            checkpoint()
    if bar is not None:
        bar.close()
    if not (out / WEIGHTS).exists():
        checkpoint()
    summary = {
        "steps": step,
        "seconds": time.perf_counter() - t0,
        "mean_jct_first_updates": float(np.mean(curve[:10])) if curve else None,
        "mean_jct_last_updates": float(np.mean(curve[-10:])) if curve else None,
    }
    (out / SETTINGS).write_text(
        json.dumps(meta | {"summary": summary, "curve": curve}, indent=1, sort_keys=True)
    )
    return summary
