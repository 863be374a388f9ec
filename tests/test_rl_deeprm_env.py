"""DeepRM's own environment, its baselines, its agent and the slowdown-vs-load figure (docs/rl.md)."""

from __future__ import annotations

import numpy as np
import pytest

from smdlab.errors import InvalidInput
from smdlab.paths import data_dir
from smdlab.rl.deeprm_env import DeepRMEnv, DeepRMSetting, check_load, jobset
from smdlab.rl.deeprm_train import DeepRMAgent, DeepRMTrainConfig, run_episode, train_deeprm

pytest.importorskip("gymnasium")


def test_jobsets_follow_deeprms_distribution():
    st = DeepRMSetting(arrival_steps=20_000, max_time=20_000)
    lens, sizes = jobset(0.7 * st.load_per_rate, 0, st)
    arrived = lens > 0
    assert arrived.mean() == pytest.approx(0.7, abs=0.02)  # Bernoulli arrivals
    lens, sizes = lens[arrived], sizes[arrived]
    short = lens <= 3
    assert set(lens[short]) == {1, 2, 3} and set(lens[~short]) == set(range(10, 16))
    assert short.mean() == pytest.approx(0.8, abs=0.02)
    dominant, other = sizes.max(axis=1), sizes.min(axis=1)
    assert set(dominant) == set(range(5, 11)) and set(other) == {1, 2}
    assert st.load_per_rate == pytest.approx(4.1 * 4.5 / 10)  # 0.7 is 129% load
    work = (lens[:, None] * sizes).sum(axis=0) / st.slots / 20_000
    assert work == pytest.approx([0.7 * st.load_per_rate] * 2, rel=0.05)


def test_rewards_sum_to_minus_the_total_slowdown_and_episodes_are_seeded():
    env = DeepRMEnv(1.3)
    totals = []
    for _ in range(2):
        env.reset(options={"workload_seed": 1000})
        rng = np.random.default_rng(0)
        total, done = 0.0, False
        while not done:
            _, r, term, trunc, info = env.step(env.heuristic_action("random", rng=rng))
            total += r
            done = term or trunc
        assert total == pytest.approx(-env.slowdowns().sum())
        assert info["mean_slowdown"] == pytest.approx(env.slowdowns().mean())
        totals.append(total)
    assert totals[0] == totals[1]


def test_masks_name_the_jobs_that_can_be_placed():
    env = DeepRMEnv(1.7)
    obs, _ = env.reset(options={"workload_seed": 3})
    assert obs.shape == env.observation_space.shape and env.observation_space.contains(obs)
    placed = 0
    for _ in range(200):
        mask = env.action_masks()
        assert mask[-1]  # moving on is always allowed
        k = int(np.argmax(mask))
        if k < env.move_on:
            free = env.free.sum()
            job = env.slot[k]
            env.step(k)
            assert env.free.sum() == free - env.length[job] * env.demand[job].sum()
            placed += 1
        else:
            env.step(env.move_on)
    assert placed > 10


def test_sjf_takes_the_shortest_job_that_fits_now():
    env = DeepRMEnv(1.7)
    env.reset(options={"workload_seed": 5})
    for _ in range(100):
        a = env.heuristic_action("sjf")
        fitting = [k for k in range(env.move_on) if env.fits_now(k)]
        if fitting:
            shortest = min(env.length[env.slot[k]] for k in fitting)  # type: ignore[index]
            assert env.length[env.slot[a]] == shortest  # type: ignore[index]
        else:
            assert a == env.move_on
        env.step(a)


def test_gymnasium_checker_passes():
    from gymnasium.utils.env_checker import check_env

    check_env(DeepRMEnv(1.0), skip_render_check=True)


def test_bad_input_is_one_line():
    with pytest.raises(InvalidInput, match="visible must be at most backlog"):
        DeepRMEnv(setting=DeepRMSetting(visible=10, backlog=5))
    for load in (0, -0.5):
        with pytest.raises(InvalidInput, match=r"load must be in \(0, 1.845\]"):
            DeepRMEnv(load)
    with pytest.raises(InvalidInput, match="load must be in"):
        check_load(2.0, DeepRMSetting())
    with pytest.raises(InvalidInput, match="heuristic must be one of"):
        DeepRMEnv(1.0).heuristic_action("fifo")
    with pytest.raises(InvalidInput, match="not 'deeprm_env'"):
        DeepRMAgent(data_dir() / "dl2" / "weights.npz")


TINY = DeepRMTrainConfig(
    iterations=2, warmup=1, warmup_jobsets=1, jobsets=1, episodes=2, validate_every=1, loads=(1.3,)
)


def test_a_seeded_training_run_is_deterministic_and_its_weights_reload(tmp_path):
    pytest.importorskip("torch")
    a = train_deeprm(tmp_path / "a", TINY)
    b = train_deeprm(tmp_path / "b", TINY)
    assert a["environment_steps"] == b["environment_steps"] > 0
    wa, wb = (
        DeepRMAgent(tmp_path / "a" / "weights.npz"),
        DeepRMAgent(tmp_path / "b" / "weights.npz"),
    )
    for (x, y), (u, v) in zip(wa.layers, wb.layers, strict=True):
        assert np.array_equal(x, u) and np.array_equal(y, v)
    assert wa.meta["summary"]["seed"] == 0 and wa.meta["summary"]["iterations"] == 2
    env = DeepRMEnv(1.3)
    assert run_episode(env, wa, 1000, 1.3) == run_episode(env, wb, 1000, 1.3)


def test_slowdown_vs_load_rows_per_policy_and_load():
    from smdlab.experiments.deeprm import best_heuristic_gap, deeprm_slowdown_vs_load

    df = deeprm_slowdown_vs_load("tiny")
    assert len(df) == 2 * 5 and df.groupby(["load", "policy"]).size().eq(1).all()
    assert (df["mean_slowdown"] >= 1).all()
    gap = best_heuristic_gap(df)
    assert list(gap["load"]) == [1.3] and gap["best_heuristic"].iloc[0] in {
        "sjf",
        "packer",
        "tetris",
    }
