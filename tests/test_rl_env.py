"""DL2's Gymnasium environment over the simulator (smdlab.rl, docs/rl.md)."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("gymnasium")

from gymnasium.utils.env_checker import check_env

from smdlab.errors import InvalidInput
from smdlab.rl import make_env


def _rollout(env, seed: int, policy: str, steps: int = 400) -> tuple[list, list]:
    rng = np.random.default_rng(seed)
    obs, info = env.reset(seed=seed)
    observations, rewards = [obs], []
    for _ in range(steps):
        if policy == "drf":
            a = env.expert_action()
        else:
            a = int(rng.choice(np.flatnonzero(info["action_mask"])))
        obs, r, term, trunc, info = env.step(a)
        observations.append(obs)
        rewards.append(r)
        if term or trunc:
            break
    return observations, rewards


def test_passes_the_gymnasium_checker():
    check_env(make_env(), skip_render_check=True)


def test_spaces_follow_dl2():
    env = make_env()
    assert env.action_space.n == 3 * 20 + 1
    obs, info = env.reset(seed=0)
    assert obs.shape == env.observation_space.shape
    mask = info["action_mask"]
    assert mask.dtype == bool and mask[-1]
    assert np.array_equal(mask, env.action_masks())
    n_jobs = int(obs.reshape(20, -1)[:, : len(env.types)].sum())
    assert not mask[3 * n_jobs : -1].any()  # no action on an empty window row


def test_seeded_and_deterministic():
    a_obs, a_rew = _rollout(make_env(), 3, "random")
    b_obs, b_rew = _rollout(make_env(), 3, "random")
    assert a_rew == b_rew
    assert all(np.array_equal(x, y) for x, y in zip(a_obs, b_obs))


def test_episode_reward_counts_every_job_once():
    env = make_env()
    _, rewards = _rollout(env, 0, "drf", steps=100_000)
    assert env.result is not None  # ran to the end
    done = int((env.result.jobs.status == "completed").sum())
    assert sum(rewards) == pytest.approx(done, abs=1e-6)
    assert all(r >= -1e-9 for r in rewards)


def test_invalid_action_changes_nothing():
    env = make_env()
    obs, info = env.reset(seed=1)
    bad = int(np.flatnonzero(~info["action_mask"])[0])
    obs2, r, term, _, info2 = env.step(bad)
    assert not info2["valid"] and r == 0.0 and not term
    assert np.array_equal(obs, obs2)
    with pytest.raises(InvalidInput, match="action"):
        env.step(env.action_space.n)


def test_slots_go_through_the_simulator():
    env = make_env(max_slots=3)
    env.reset(seed=0)
    times = []
    for _ in range(3):
        _, _, term, trunc, info = env.step(env.end_action)
        times.append(info["time"])
    assert trunc and not term
    assert times == [1200.0, 2400.0, 3600.0]


def test_slot_only_baseline_acts_at_slot_boundaries():
    from smdlab.policies.registry import get_policy
    from smdlab.rl.evaluate import SlotOnly
    from smdlab.sim import simulate

    env = make_env()
    env.reset(options={"workload_seed": 1000})
    res = simulate(env._workloads[1000], env.cluster, SlotOnly(get_policy("drf")))
    acted = res.decisions[(res.decisions.started + res.decisions.preempted) > 0]
    assert len(acted) and ((acted.time % 1200.0) == 0).all()
    assert (res.jobs.status == "completed").all()


def test_dl2_policy_acts_in_the_env_as_in_the_simulator():
    # The greedy actor stepped through the environment and the `dl2` policy run by `simulate`
    # take the same decisions: the same mean JCT to the last bit.
    from smdlab.policies.learned.dl2 import DL2
    from smdlab.sim import simulate

    env = make_env()
    policy = DL2()
    _, info = env.reset(options={"workload_seed": 1000})
    term = False
    while not term:
        _, _, term, _, info = env.step(policy.act(env.builder))
    jobs = env._workloads[1000]
    res = simulate(jobs, env.cluster, DL2(), restart_s=env.restart_s)
    assert info["mean_jct"] == res.summary["mean_jct"]


def test_cached_slots_and_one_action_checks_agree_with_fresh_builds():
    # The environment's builders reuse per-job rows (SlotCache) and check one action at a time;
    # a builder made from nothing, with the same actions, must agree on every mask and observation.
    from smdlab.rl.slot_builder import SlotBuilder

    env = make_env()
    rng = np.random.default_rng(4)
    _, info = env.reset(options={"workload_seed": 3})
    fresh = SlotBuilder(env.builder.state, env.window, env.types, env.slot_s)
    for _ in range(300):
        cached = env.builder
        assert np.array_equal(fresh.observation(), cached.observation())
        assert np.array_equal(fresh.mask(), cached.mask())
        checks = [cached.valid(a) for a in range(env.end_action)]
        cached._mask = None  # the one-action check without the cached mask
        assert checks == [cached.valid(a) for a in range(env.end_action)]
        assert checks == list(cached.mask()[:-1])
        a = int(rng.choice(np.flatnonzero(info["action_mask"])))
        _, _, term, _, info = env.step(a)
        if term:
            break
        if a == env.end_action:
            fresh = SlotBuilder(env.builder.state, env.window, env.types, env.slot_s)
        else:
            fresh.apply(a)
