"""DL2's prioritised replay (smdlab.rl.replay) and training with it (docs/rl.md)."""

from __future__ import annotations

import numpy as np
import pytest

from smdlab.errors import InvalidInput
from smdlab.rl.replay import ALPHA, BETA_START, BETA_STEP, EPSILON, ERROR_CAP, ReplayMemory


def _filled(n: int = 4, capacity: int = 4) -> ReplayMemory:
    mem = ReplayMemory(capacity, obs_dim=3, n_actions=2)
    for i in range(n):
        mem.store(np.full(3, i, np.float32), np.array([True, i % 2 == 0]), i % 2, float(i))
    return mem


def test_new_samples_get_dl2s_priority_and_the_oldest_is_replaced() -> None:
    mem = _filled(n=5)
    assert mem.full and mem.size == 4
    # the fifth sample (reward 4) replaced the first; rewards now 4, 1, 2, 3
    assert mem.rewards.tolist() == [4.0, 1.0, 2.0, 3.0]
    # max(1, reward - the memory's mean reward when it was stored): 4 - 2.5, 1, 1, 3 - 1.5
    assert mem.priority.tolist() == [1.5, 1.0, 1.0, 1.5]


def test_sampling_is_seeded_stratified_and_weighted() -> None:
    mem = _filled()
    mem.update(np.array([0, 1, 2, 3]), np.array([0.0, 0.5, -3.0, 10.0]))
    want = np.minimum(np.abs([0.0, 0.5, -3.0, 10.0]) + EPSILON, ERROR_CAP) ** ALPHA
    assert np.allclose(mem.priority, want)
    a_idx, a_w = mem.sample(8, np.random.default_rng(1))
    b_idx, b_w = _sampled_again(want)
    assert a_idx.tolist() == b_idx.tolist() and np.allclose(a_w, b_w)
    # one draw per segment of the total priority: the largest priorities are drawn most
    counts = np.bincount(a_idx, minlength=4)
    assert counts[3] >= counts[2] >= counts[1] >= counts[0]
    beta = BETA_START + BETA_STEP
    assert np.allclose(a_w, (want[a_idx] / want.min()) ** -beta)
    assert mem.beta == pytest.approx(beta)


def _sampled_again(priority: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    mem = _filled()
    mem.priority[:] = priority
    return mem.sample(8, np.random.default_rng(1))


def test_state_round_trips_and_refuses_another_size() -> None:
    mem = _filled(n=3)
    copy = ReplayMemory(4, obs_dim=3, n_actions=2)
    copy.load(mem.state())
    assert (copy.size, copy.pointer) == (3, 3)
    assert np.array_equal(copy.obs, mem.obs) and np.array_equal(copy.priority, mem.priority)
    with pytest.raises(InvalidInput, match="replay"):
        ReplayMemory(5, obs_dim=3, n_actions=2).load(mem.state())
    with pytest.raises(InvalidInput, match="replay"):
        ReplayMemory(0, obs_dim=3, n_actions=2)


def test_training_with_replay_is_deterministic_and_resumes(tmp_path) -> None:
    pytest.importorskip("torch")
    from smdlab.rl.train import CHECKPOINT, WEIGHTS, TrainConfig, load_checkpoint, train_dl2
    from smdlab.rl.weights import load_weights

    cfg = TrainConfig(
        steps=8, seed=2, warmup=2, rollout=16, hidden=8, returns="slot", gamma=0.0,
        replay=64, checkpoint_every=4,
    )  # fmt: skip
    a, b = tmp_path / "a", tmp_path / "b"
    train_dl2(a, cfg)
    train_dl2(b, TrainConfig(**{**cfg.__dict__, "steps": 4}))  # stopped at a checkpoint
    assert load_checkpoint(b / CHECKPOINT)["replay"] is not None
    train_dl2(b, cfg)
    actors = [load_weights(d / WEIGHTS, "dl2", ("actor",))[0]["actor"] for d in (a, b)]
    for (wa, ba), (wb, bb) in zip(*actors):
        assert np.array_equal(wa, wb) and np.array_equal(ba, bb)
    # a folder trained without replay is not resumed with it
    c = tmp_path / "c"
    train_dl2(c, TrainConfig(**{**cfg.__dict__, "replay": 0, "steps": 4}))
    with pytest.raises(InvalidInput, match="without --replay"):
        train_dl2(c, cfg)
