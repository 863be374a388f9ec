"""The library learner (MaskablePPO) on smdlab's environments: masks, seeds, weights (docs/rl.md)."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

from smdlab.errors import InvalidInput
from smdlab.paths import data_dir
from smdlab.rl.library import (
    MODEL,
    WEIGHTS,
    PPOConfig,
    check_checkpoint,
    greedy_action,
    greedy_mean_jct,
    load_actor,
    require_masks,
    train,
    workload_env,
)

pytest.importorskip("sb3_contrib")

# a few environment steps: two rollouts of 2 x 8, one pass each
TINY = PPOConfig(workload="dl2_small", timesteps=32, n_envs=2, n_steps=8, batch_size=8, epochs=1)


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    out = tmp_path_factory.mktemp("ppo")
    train(out, TINY)
    return out


def test_an_environment_without_masks_is_refused_in_one_line():
    with pytest.raises(InvalidInput, match="action_masks"):
        require_masks(gym.make("CartPole-v1"))
    require_masks(workload_env("dl2_small"))  # smdlab's environments give their masks


def test_a_seeded_run_is_deterministic(trained, tmp_path):
    train(tmp_path, TINY)
    a, meta = load_actor(trained / WEIGHTS)
    b, _ = load_actor(tmp_path / WEIGHTS)
    assert meta["summary"]["timesteps"] == 32 and meta["summary"]["seed"] == 0
    for (wa, ba), (wb, bb) in zip(a, b, strict=True):
        assert np.array_equal(wa, wb) and np.array_equal(ba, bb)


def test_exported_actor_makes_the_library_policys_decisions(trained):
    from sb3_contrib import MaskablePPO

    model = MaskablePPO.load(trained / MODEL, device="cpu")
    layers, _ = load_actor(trained / WEIGHTS)
    env = workload_env("dl2_small")
    obs, _ = env.reset(options={"workload_seed": 1000})
    for _ in range(30):
        mask = env.action_masks()
        ours = greedy_action(layers, obs, mask)
        theirs, _ = model.predict(obs, action_masks=mask, deterministic=True)
        assert ours == int(theirs)
        obs, _, term, _, _ = env.step(ours)
        if term:
            break


def test_greedy_episodes_give_a_mean_jct_per_seed(trained):
    layers, _ = load_actor(trained / WEIGHTS)
    jcts = greedy_mean_jct(layers, workload_env("dl2_small"), seeds=(1000,))
    assert len(jcts) == 1 and jcts[0] > 0


def test_a_checkpoint_from_another_learner_is_refused(tmp_path):
    from stable_baselines3 import PPO

    other = tmp_path / "ppo.zip"
    PPO("MlpPolicy", gym.make("CartPole-v1"), n_steps=16, batch_size=8, device="cpu").save(other)
    with pytest.raises(InvalidInput, match="another learner"):
        check_checkpoint(other)
    junk = tmp_path / "checkpoint.pt"
    junk.write_bytes(b"not a zip")
    with pytest.raises(InvalidInput, match="not a maskable_ppo checkpoint"):
        check_checkpoint(junk)
    with pytest.raises(InvalidInput, match="not 'maskable_ppo'"):
        load_actor(data_dir() / "dl2" / "weights.npz")


def test_bad_settings_are_refused_in_one_line(tmp_path):
    with pytest.raises(InvalidInput, match="workload"):
        train(tmp_path, PPOConfig(workload="nowhere"))
    with pytest.raises(InvalidInput, match="timesteps"):
        train(tmp_path, PPOConfig(timesteps=0))
    with pytest.raises(InvalidInput, match="warmup: the control learner has no teacher"):
        train(tmp_path, PPOConfig(warmup=10))
    with pytest.raises(InvalidInput, match="sizes"):
        train(tmp_path, PPOConfig(agent="dl2", sizes=2))
    with pytest.raises(InvalidInput, match="time_limit"):
        train(tmp_path, TINY, time_limit=0)
    with pytest.raises(InvalidInput, match="teacher: 'smaller' needs deeprm or sched2"):
        train(tmp_path, PPOConfig(agent="deeprm", teacher="smaller"))
    with pytest.raises(InvalidInput, match="teacher must be one of"):
        train(tmp_path, PPOConfig(agent="deeprm", sizes=3, teacher="drf"))


def test_a_time_limit_stops_at_a_rollout_boundary_and_its_steps_repeat_the_run(trained, tmp_path):
    import dataclasses

    # a limit that has passed when the second rollout starts: one rollout of 16 is trained
    cut = train(tmp_path / "cut", dataclasses.replace(TINY, timesteps=10_000), time_limit=1e-9)
    assert cut["timesteps"] == 16 and cut["timesteps_asked"] == 10_000
    again = train(tmp_path / "again", dataclasses.replace(TINY, timesteps=16))
    a, _ = load_actor(tmp_path / "cut" / WEIGHTS)
    b, _ = load_actor(tmp_path / "again" / WEIGHTS)
    assert again["timesteps"] == 16
    for (wa, ba), (wb, bb) in zip(a, b, strict=True):
        assert np.array_equal(wa, wb) and np.array_equal(ba, bb)


def test_dl2_trains_through_the_library_after_its_warm_up_from_drf(tmp_path):
    from sb3_contrib import MaskablePPO

    from smdlab.policies.learned.dl2 import DL2

    cfg = PPOConfig(
        agent="dl2", timesteps=16, n_envs=2, n_steps=8, batch_size=8, epochs=1, warmup=40
    )
    summary = train(tmp_path, cfg)
    assert summary["warmup_steps"] >= 40 and summary["timesteps"] == 16
    assert "warmup" in (tmp_path / "curve.csv").read_text()
    policy = DL2(weights=str(tmp_path / WEIGHTS))  # the dl2 policy reads the library's actor
    model = MaskablePPO.load(tmp_path / MODEL, device="cpu")
    env = workload_env("dl2_small")
    obs, _ = env.reset(options={"workload_seed": 1000})
    for _ in range(30):
        theirs, _ = model.predict(obs, action_masks=env.action_masks(), deterministic=True)
        assert policy.act(env.builder) == int(theirs)
        obs, _, term, _, _ = env.step(int(theirs))
        if term:
            break


@pytest.mark.parametrize(
    "argv, message",
    [
        (["train", "ppo", "--env", "nowhere", "--steps", "3"], "workload must be one of"),
        (["train", "ppo", "--steps", "0"], "steps must be"),
        (["train", "deeprm_env", "--steps", "0"], "steps must be"),
        (["train", "deeprm", "--teacher", "smaller", "--steps", "3"], "teacher: 'smaller' needs"),
    ],
)
def test_cli_bad_input_is_one_line(tmp_path, capsys, argv, message):
    from smdlab.cli import main

    assert main([*argv, "--out", str(tmp_path / "o"), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1
