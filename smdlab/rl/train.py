"""DL2's agent: a supervised warm-up that imitates DRF, then actor-critic (docs/rl.md).

Needs PyTorch (the ``[rl]`` extra, CPU). The actor and the critic each have two fully connected
layers or more (input -> hidden ... -> output, ReLU between); the loss adds an entropy bonus; Adam updates
both (DL2, TPDS 2021). Training writes ``checkpoint.pt`` (atomically, every
``checkpoint_every`` updates) and ``weights.npz`` (the actor, read by the ``dl2`` policy without
PyTorch) into its output folder, and resumes from the checkpoint found there.
"""

from __future__ import annotations

import dataclasses
import json
import os
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from smdlab.errors import InvalidInput, check_choice, check_int, check_positive
from smdlab.policies.learned.dl2 import DL2
from smdlab.rl.env import DL2Env, default_rl_scenario
from smdlab.rl.replay import ReplayMemory
from smdlab.rl.slot_builder import feature_scale
from smdlab.rl.weights import save_weights

AGENTS = ("dl2",)
CHECKPOINT_FORMAT = 1
CHECKPOINT = "checkpoint.pt"
WEIGHTS = "weights.npz"
SETTINGS = "train.json"
CURVE = "curve.csv"  # the learning curve: training episodes' and validation runs' mean JCT
RETURNS = ("slot", "step", "job")
_OURS = {
    CHECKPOINT,
    WEIGHTS,
    SETTINGS,
    CURVE,
    CHECKPOINT + ".tmp",
    WEIGHTS + ".tmp",
    CURVE + ".tmp",
}


def _torch() -> Any:
    """The torch module, or InvalidInput saying how to install it."""
    try:
        import torch
    except ImportError:
        raise InvalidInput(
            "agent: DL2 training needs PyTorch; install the rl extra: pip install -e '.[rl]' "
            "(torch==2.13.0, CPU)"
        ) from None
    return torch


@dataclass(frozen=True)
class TrainConfig:
    """Settings of one training run (saved with its checkpoint and weights)."""

    steps: int = 2000  # updates in all (warm-up included)
    seed: int = 0
    warmup: int | None = None  # updates imitating DRF (None: a quarter of ``steps``)
    rollout: int = 32  # environment steps per update
    hidden: int = 64  # units per hidden layer
    depth: int = 1  # hidden layers (DL2's code: 2 of 2/3 of the input size)
    lr: float = 1e-3  # Adam's learning rate in the actor-critic phase
    warmup_lr: float | None = None  # ... in the warm-up (None: ``lr``)
    gamma: float = 0.99  # discount per environment step
    entropy: float = 0.01  # weight of the entropy bonus
    normalize_advantage: bool = False  # scale each rollout's advantages to mean 0, deviation 1
    # "slot": every action of a slot gets the discounted sum of slot rewards from its slot on,
    # ``gamma`` per slot (DL2's code: each action of a slot gets that slot's reward); "step":
    # discounted per environment step, bootstrapped by the critic after ``rollout`` steps;
    # "job": an action gets the progress in its slot of the job it added to, "end the slot" the
    # slot's reward over its jobs (DL2's code, TS_REWARD_PLUS_JOB_REWARD); no discount.
    returns: str = "step"
    # with slot returns: the advantage is GAE(lam) over steps within a slot (undiscounted; the
    # critic values each partial allocation) and over slots (``gamma``); 1.0 gives G - V.
    lam: float = 1.0
    # DL2's experience replay (``smdlab.rl.replay``): after the warm-up, every slot's samples go
    # into a prioritised memory of this many samples and, once it is full, each slot ends with
    # one update on a batch of ``rollout`` samples drawn from it; 0: on-policy rollouts.
    replay: int = 0
    validate_every: int = 0  # updates between greedy validation runs (0: none)
    val_seeds: tuple[int, ...] = (200, 201, 202, 203, 204)  # workload seeds of validation
    checkpoint_every: int = 50  # updates between checkpoints (the environment restarts there)
    train_seeds: int = 100  # workload seeds the episodes draw from
    scenario: str = ""  # scenario file (empty: the bundled dl2_small.toml)

    def checked(self) -> TrainConfig:
        """This config with every field validated (InvalidInput names the bad one)."""
        steps = check_int("steps", self.steps, 1)
        warmup = steps // 4 if self.warmup is None else check_int("warmup", self.warmup, 0)
        return dataclasses.replace(
            self,
            steps=steps,
            seed=check_int("seed", self.seed, 0),
            warmup=min(warmup, steps),
            rollout=check_int("rollout", self.rollout, 1),
            hidden=check_int("hidden", self.hidden, 1),
            depth=check_int("depth", self.depth, 1, 8),
            lr=check_positive("lr", self.lr),
            warmup_lr=None
            if self.warmup_lr is None
            else check_positive("warmup_lr", self.warmup_lr),
            gamma=check_positive("gamma", self.gamma, allow_zero=True),
            lam=_unit("lam", self.lam),
            replay=check_int("replay", self.replay, 0),
            entropy=check_positive("entropy", self.entropy, allow_zero=True),
            checkpoint_every=check_int("checkpoint_every", self.checkpoint_every, 1),
            normalize_advantage=bool(self.normalize_advantage),
            returns=check_choice("returns", self.returns, RETURNS),
            validate_every=check_int("validate_every", self.validate_every, 0),
            val_seeds=tuple(check_int("val_seeds", v, 0) for v in self.val_seeds),
            train_seeds=check_int("train_seeds", self.train_seeds, 1),
        )


def _unit(field: str, value: float) -> float:
    """``value`` if it is a number in [0, 1], else InvalidInput naming ``field``."""
    v = check_positive(field, value, allow_zero=True)
    if v > 1:
        raise InvalidInput(f"{field} must be in [0, 1], got {value!r}")
    return v


def _nets(torch: Any, n_in: int, n_out: int, hidden: int, depth: int = 1) -> tuple[Any, Any]:
    nn = torch.nn

    def net(out: int) -> Any:
        layers: list[Any] = []
        width = n_in
        for _ in range(depth):
            layers += [nn.Linear(width, hidden), nn.ReLU()]
            width = hidden
        return nn.Sequential(*layers, nn.Linear(width, out))

    return net(n_out), net(1)


def _slot_gae(
    value: Any,
    rews: list[float],
    dones: list[bool],
    ends: list[bool],
    last: float,
    gamma: float,
    lam: float,
) -> Any:
    """GAE(lam) advantages of one rollout of whole slots: within a slot the next state's value
    counts undiscounted, across a slot boundary by ``gamma`` (``last``: the value after the
    rollout, 0 after an episode's end)."""
    adv = value.clone()
    nxt, running = last, 0.0
    for t in range(len(rews) - 1, -1, -1):
        disc = 0.0 if dones[t] else (gamma if ends[t] else 1.0)
        v = float(value[t])
        delta = rews[t] + disc * nxt - v
        running = delta + disc * lam * running
        adv[t] = running
        nxt = v
    return adv


def _check_out(out: Path, force: bool) -> None:
    """Refuse an output folder holding files training did not write (unless ``force``)."""
    if out.exists() and not out.is_dir():
        raise InvalidInput(f"out: {str(out)!r} is a file, not a folder")
    if out.is_dir() and not force:
        foreign = sorted(p.name for p in out.iterdir() if p.name not in _OURS)
        if foreign:
            raise InvalidInput(
                f"out: folder {str(out)!r} holds files training did not write ({', '.join(foreign[:3])}); "
                "choose an empty folder or pass --force"
            )


def read_checkpoint(
    path: str | Path, *, kind: str, key: str, fmt: int, readable: str | None = None
) -> dict[str, Any]:
    """The torch checkpoint at ``path`` if it is a ``kind`` one (holds ``key``) of format <= ``fmt``."""
    torch = _torch()
    path = Path(path)
    try:
        ck = torch.load(path, map_location="cpu", weights_only=True)
    except FileNotFoundError:
        raise InvalidInput(f"checkpoint: no file at {str(path)!r}") from None
    except Exception as exc:  # torch raises many kinds on a damaged file
        raise InvalidInput(
            f"checkpoint: {str(path)!r} is not a readable {readable or kind} checkpoint "
            f"({type(exc).__name__})"
        ) from None
    if not isinstance(ck, dict) or "format" not in ck or key not in ck:
        raise InvalidInput(f"checkpoint: {str(path)!r} is not a {kind} checkpoint")
    if not isinstance(ck["format"], int) or ck["format"] > fmt:
        raise InvalidInput(
            f"checkpoint: {str(path)!r} has format {ck['format']!r}; this smdlab reads format "
            f"<= {fmt}"
        )
    return ck


def load_checkpoint(path: str | Path) -> dict[str, Any]:
    """A training checkpoint; InvalidInput if it is unreadable, foreign or of a newer format."""
    return read_checkpoint(path, kind="DL2", key="actor", fmt=CHECKPOINT_FORMAT)


def check_space(ck: dict[str, Any], path: Path, n_obs: int, n_actions: int) -> None:
    """Raise unless checkpoint ``ck`` is for ``n_obs`` observation values and ``n_actions``."""
    if ck.get("obs_dim") != n_obs or ck.get("n_actions") != n_actions:
        raise InvalidInput(
            f"checkpoint: {str(path)!r} is for an observation of {ck.get('obs_dim')} values "
            f"and {ck.get('n_actions')} actions; this environment has {n_obs} and {n_actions}"
        )


def write_curve(out: Path, rows: Iterable[tuple[int, str, float]]) -> None:
    """Write ``curve.csv`` (update, kind, mean JCT) into folder ``out``, atomically."""
    lines = ["update,kind,mean_jct"] + [f"{u},{k},{v!r}" for u, k, v in rows]
    tmp = out / (CURVE + ".tmp")
    tmp.write_text("\n".join(lines) + "\n")
    os.replace(tmp, out / CURVE)


def _save_atomic(torch: Any, obj: Any, path: Path) -> None:
    tmp = path.with_name(path.name + ".tmp")
    torch.save(obj, tmp)
    os.replace(tmp, path)  # readers see the old or the new file, never half of one


def export_weights(actor: Any, meta: dict[str, Any], path: Path) -> None:
    """Write the actor as the numpy weights file the ``dl2`` policy reads (atomically)."""
    layers = [
        (m.weight.detach().numpy().copy(), m.bias.detach().numpy().copy())
        for m in actor
        if hasattr(m, "weight")
    ]
    tmp = path.with_name(path.name + ".tmp")
    save_weights(tmp, {"actor": layers}, meta)
    os.replace(tmp, path)


def train_dl2(
    out: str | Path,
    config: TrainConfig | None = None,
    *,
    force: bool = False,
    progress: bool = False,
) -> dict[str, Any]:
    """Train DL2 into folder ``out`` (resuming from its checkpoint); returns a summary dict."""
    cfg = (config or TrainConfig()).checked()
    torch = _torch()
    out = Path(out)
    _check_out(out, force)
    scenario = cfg.scenario or str(default_rl_scenario())
    env = DL2Env(scenario, train_seeds=cfg.train_seeds)
    n_in = int(env.observation_space.shape[0])  # type: ignore[index]
    n_out = env.end_action + 1
    torch.set_num_threads(1)  # deterministic sums, and the machine's cores are shared
    torch.manual_seed(cfg.seed)
    actor, critic = _nets(torch, n_in, n_out, cfg.hidden, cfg.depth)
    opt = torch.optim.Adam([*actor.parameters(), *critic.parameters()], lr=cfg.lr)
    gen = torch.Generator().manual_seed(cfg.seed)
    memory = ReplayMemory(cfg.replay, n_in, n_out) if cfg.replay else None
    draw = np.random.default_rng(cfg.seed)  # the replay's batches
    step = 0
    curve: list[tuple[int, str, float]] = []  # (update, "train" | "validation", mean JCT)
    best: tuple[float, int, dict[str, Any]] | None = None  # (validation JCT, update, actor)
    ck_path = out / CHECKPOINT
    if ck_path.exists():
        ck = load_checkpoint(ck_path)
        check_space(ck, ck_path, n_in, n_out)
        if (ck.get("hidden"), ck.get("depth", 1)) != (cfg.hidden, cfg.depth):
            raise InvalidInput(
                f"checkpoint: {str(ck_path)!r} has {ck.get('depth', 1)} hidden layer(s) of "
                f"{ck.get('hidden')}, not {cfg.depth} of {cfg.hidden}"
            )
        actor.load_state_dict(ck["actor"])
        critic.load_state_dict(ck["critic"])
        opt.load_state_dict(ck["optimizer"])
        gen.set_state(ck["generator"])
        step = int(ck["step"])
        curve = [(int(u), str(k), float(v)) for u, k, v in ck.get("curve", [])]
        if ck.get("best") is not None:
            jct, upd, state = ck["best"]
            best = (float(jct), int(upd), state)
        if memory is not None:
            if ck.get("replay") is None:
                raise InvalidInput(
                    f"checkpoint: {str(ck_path)!r} was written without --replay; train into "
                    "another folder"
                )
            memory.load(
                {k: v.numpy() if hasattr(v, "numpy") else v for k, v in ck["replay"].items()}
            )
            draw.bit_generator.state = ck["replay_draw"]
    out.mkdir(parents=True, exist_ok=True)
    scale = torch.from_numpy(feature_scale(len(env.types), env.window))
    meta = {
        "agent": "dl2",
        "window": env.window,
        "types": list(env.types),
        "hidden": cfg.hidden,
        "depth": cfg.depth,
        "config": dataclasses.asdict(cfg) | {"scenario": Path(scenario).name},
    }
    val_jobs = {}
    if cfg.validate_every:
        base = env.scenario
        val_jobs = {
            v: dataclasses.replace(base, seed=v).build_jobs(env.cluster) for v in cfg.val_seeds
        }

    def layers_of(state: dict[str, Any]) -> list[tuple[np.ndarray, np.ndarray]]:
        keys = sorted({k.split(".")[0] for k in state}, key=int)
        return [(state[f"{k}.weight"].numpy(), state[f"{k}.bias"].numpy()) for k in keys]

    def validate() -> float:
        """Mean JCT of the greedy actor on the validation seeds (the ``dl2`` policy's path)."""
        from smdlab.sim.simulator import simulate

        policy = DL2.from_layers(layers_of(actor.state_dict()), meta)
        jcts = [
            simulate(jobs, env.cluster, policy, restart_s=env.restart_s).summary["mean_jct"]
            for jobs in val_jobs.values()
        ]
        return float(np.mean(jcts))

    def checkpoint() -> None:
        _save_atomic(
            torch,
            {
                "format": CHECKPOINT_FORMAT,
                "obs_dim": n_in,
                "n_actions": n_out,
                "hidden": cfg.hidden,
                "depth": cfg.depth,
                "step": step,
                "actor": actor.state_dict(),
                "critic": critic.state_dict(),
                "optimizer": opt.state_dict(),
                "generator": gen.get_state(),
                "curve": curve,
                "best": None if best is None else [best[0], best[1], best[2]],
                "replay": None
                if memory is None
                else {
                    k: torch.from_numpy(v) if isinstance(v, np.ndarray) else v
                    for k, v in memory.state().items()
                },
                "replay_draw": draw.bit_generator.state,
            },
            ck_path,
        )
        if best is None:
            export_weights(actor, meta | {"trained_steps": step}, out / WEIGHTS)
        else:  # the actor that did best on the validation seeds so far
            layers = layers_of(best[2])
            tmp = out / (WEIGHTS + ".tmp")
            save_weights(
                tmp,
                {"actor": layers},
                meta | {"trained_steps": best[1], "validation_mean_jct": best[0]},
            )
            os.replace(tmp, out / WEIGHTS)
        write_curve(out, curve)

    bar = None
    if progress:
        from tqdm import tqdm

        bar = tqdm(total=cfg.steps, initial=step, desc="train dl2", unit="update")
    t0 = time.perf_counter()
    losses: list[float] = []
    obs: np.ndarray | None = None
    info: dict[str, Any] = {}
    slot_returns = cfg.returns in ("slot", "job") or memory is not None
    restarted = -1  # the update count at the last restart
    while step < cfg.steps:
        if obs is None or (step % cfg.checkpoint_every == 0 and restarted != step):
            # the environment restarts at each checkpoint: a resumed run repeats an uninterrupted one
            obs, info = env.reset(seed=cfg.seed * 1_000_003 + step)
            restarted = step
        warm = step < (cfg.warmup or 0)
        replaying = memory is not None and not warm
        for group in opt.param_groups:
            group["lr"] = cfg.warmup_lr if warm and cfg.warmup_lr is not None else cfg.lr
        xs, masks, acts, rews, dones, ends = [], [], [], [], [], []
        whose: list[str | None] = []  # the job each action added to (None: end or invalid)
        job_rews: list[float] = []
        while True:
            mask = info["action_mask"]
            x = torch.from_numpy(obs) * scale
            if warm:
                a = env.expert_action()
            else:
                with torch.no_grad():
                    logits = actor(x).masked_fill(~torch.from_numpy(mask), -1e9)
                    a = int(torch.multinomial(torch.softmax(logits, 0), 1, generator=gen))
            builder = env.builder
            who = None
            if builder is not None and a != env.end_action and builder.valid(a):
                who = builder.jobs[a // 3].name
            obs, r, term, trunc, info = env.step(a)
            whose.append(who)
            if a == env.end_action or term or trunc:  # the slot ended: credit its actions
                done_in_slot: dict[str, float] = info.get("job_progress", {})
                share = r / max(1, sum(v > 0 for v in done_in_slot.values()))
                start = len(job_rews)
                job_rews += [
                    done_in_slot.get(w, 0.0) if w is not None else share for w in whose[start:]
                ]
            xs.append(x)
            masks.append(torch.from_numpy(mask))
            acts.append(a)
            rews.append(r)
            dones.append(term or trunc)
            ends.append(term or trunc or a == env.end_action)
            if term or trunc:
                if "mean_jct" in info:
                    curve.append((step, "train", float(info["mean_jct"])))
                obs, info = env.reset()
            # slot returns need whole slots: a rollout runs on to the end of its last slot
            if ends[-1] and replaying:  # DL2: one update per slot, from the memory
                break
            if len(xs) >= cfg.rollout and (ends[-1] or not slot_returns):
                break
        X = torch.stack(xs)
        M = torch.stack(masks)
        A = torch.tensor(acts)
        with torch.no_grad():
            ret = float(critic(torch.from_numpy(obs) * scale)) if not dones[-1] else 0.0
        returns = []
        if cfg.returns == "job":
            returns = job_rews[::-1]
        elif (
            slot_returns
        ):  # every action of a slot: its slot's reward plus later slots', discounted
            slot_ret = ret
            for r, d, e in zip(reversed(rews), reversed(dones), reversed(ends)):
                if e:
                    slot_ret = r + cfg.gamma * slot_ret * (0.0 if d else 1.0)
                returns.append(slot_ret)
        else:
            for r, d in zip(reversed(rews), reversed(dones)):
                ret = r + cfg.gamma * ret * (0.0 if d else 1.0)
                returns.append(ret)
        G = torch.tensor(returns[::-1], dtype=torch.float32)
        weights = None
        if replaying:
            assert memory is not None
            for x, m, a, g in zip(X.numpy(), M.numpy(), acts, G.tolist(), strict=True):
                memory.store(x, m, a, g)
            if not memory.full:
                continue  # DL2 trains once the memory is full
            idx, w = memory.sample(cfg.rollout, draw)
            X = torch.from_numpy(memory.obs[idx])
            M = torch.from_numpy(memory.masks[idx])
            A = torch.from_numpy(memory.actions[idx])
            G = torch.from_numpy(memory.rewards[idx]).float()
            weights = torch.from_numpy(w).float()
        logits = actor(X).masked_fill(~M, -1e9)
        logp = torch.log_softmax(logits, 1)
        value = critic(X).squeeze(1)
        gae = None
        if cfg.returns == "slot" and cfg.lam < 1.0 and not warm and not replaying:
            gae = _slot_gae(value.detach(), rews, dones, ends, ret, cfg.gamma, cfg.lam)
            G = gae + value.detach()  # the lambda-return is the critic's target
        value_loss = 0.5 * ((G - value) ** 2).mean()
        if warm:  # imitate DRF's choices
            loss = torch.nn.functional.nll_loss(logp, A) + value_loss
        else:
            adv = (G - value).detach() if gae is None else gae
            if weights is not None:  # importance weights of the prioritised draw
                assert memory is not None
                memory.update(idx, adv.numpy())
                adv = adv * weights
            if cfg.normalize_advantage and len(adv) > 1:
                adv = (adv - adv.mean()) / (adv.std() + 1e-8)
            chosen = logp.gather(1, A[:, None]).squeeze(1)
            entropy = -(logp.exp() * logp).sum(1).mean()
            loss = -(chosen * adv).mean() + value_loss - cfg.entropy * entropy
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(float(loss.detach()))
        step += 1
        # at multiples only: a run stopped early and resumed validates as an uninterrupted one
        if cfg.validate_every and step % cfg.validate_every == 0:
            jct = validate()
            curve.append((step, "validation", jct))
            # selection starts with the actor-critic phase: the imitation is its starting point
            if step >= (cfg.warmup or 0) and (best is None or jct < best[0]):
                best = (jct, step, {k: v.clone() for k, v in actor.state_dict().items()})
        if bar is not None:
            bar.update()
        if step % cfg.checkpoint_every == 0 or step == cfg.steps:
            checkpoint()
    if bar is not None:
        bar.close()
    if not (out / WEIGHTS).exists():
        checkpoint()
    episode_jct = [v for _, k, v in curve if k == "train"]
    summary = {
        "steps": step,
        "seconds": time.perf_counter() - t0,
        "last_loss": losses[-1] if losses else None,
        "episodes": len(episode_jct),
        "mean_jct_last_episodes": float(np.mean(episode_jct[-10:])) if episode_jct else None,
        "best_validation": None if best is None else {"update": best[1], "mean_jct": best[0]},
    }
    (out / SETTINGS).write_text(json.dumps(meta | {"summary": summary}, indent=1, sort_keys=True))
    return summary
