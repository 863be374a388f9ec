"""DL2's agent: seeded training, resume, checkpoints, and the trained policy (docs/rl.md)."""

from __future__ import annotations

import numpy as np
import pytest

from smdlab.cli import main
from smdlab.errors import InvalidInput
from smdlab.policies.base import Decision
from smdlab.policies.learned.dl2 import DL2
from smdlab.rl import make_env
from smdlab.rl.slot_builder import SlotBuilder, feature_scale
from smdlab.rl.train import (
    CHECKPOINT,
    CURVE,
    WEIGHTS,
    TrainConfig,
    load_checkpoint,
    train_dl2,
)
from smdlab.rl.weights import load_weights

torch = pytest.importorskip("torch")

# small and quick: 200 updates of 4 environment steps, a checkpoint at 100
CFG = TrainConfig(steps=200, seed=3, warmup=50, rollout=4, hidden=16, checkpoint_every=100)


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    out = tmp_path_factory.mktemp("dl2")
    train_dl2(out, CFG)
    return out


def _arrays(path):
    layers = load_weights(path, "dl2", ("actor",))[0]["actor"]
    return [a for layer in layers for a in layer]


def test_seeded_training_is_deterministic_and_resumes(trained, tmp_path):
    # the same 200 updates, interrupted after the checkpoint at 100 and resumed
    train_dl2(tmp_path, TrainConfig(**{**CFG.__dict__, "steps": 100}))
    assert load_checkpoint(tmp_path / CHECKPOINT)["step"] == 100
    train_dl2(tmp_path, CFG)
    for a, b in zip(_arrays(trained / WEIGHTS), _arrays(tmp_path / WEIGHTS)):
        assert np.array_equal(a, b)


# DL2's slot returns (GAE within slots), two hidden layers, greedy validation keeping the best actor
SLOT_CFG = TrainConfig(
    steps=6,
    seed=1,
    warmup=2,
    rollout=16,
    hidden=16,
    depth=2,
    returns="slot",
    gamma=0.9,
    lam=0.9,
    validate_every=2,
    val_seeds=(200,),
    checkpoint_every=3,
)


def test_slot_returns_with_validation_are_deterministic_and_resume(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    summary = train_dl2(a, SLOT_CFG)
    train_dl2(b, TrainConfig(**{**SLOT_CFG.__dict__, "steps": 3}))
    train_dl2(b, SLOT_CFG)
    for x, y in zip(_arrays(a / WEIGHTS), _arrays(b / WEIGHTS)):
        assert np.array_equal(x, y)
    assert (a / CURVE).read_text() == (b / CURVE).read_text()
    curve = (a / CURVE).read_text().splitlines()
    assert curve[0] == "update,kind,mean_jct"
    validations = [line for line in curve if ",validation," in line]
    assert [int(v.split(",")[0]) for v in validations] == [2, 4, 6]
    # weights.npz is the actor-critic actor that did best on the validation seeds
    best = min((float(v.split(",")[2]), int(v.split(",")[0])) for v in validations[1:])
    _, meta = load_weights(a / WEIGHTS, "dl2", ("actor",))
    assert (meta["validation_mean_jct"], meta["trained_steps"]) == best
    assert summary["best_validation"] == {"update": best[1], "mean_jct": best[0]}
    assert len(DL2(weights=str(a / WEIGHTS)).layers) == 3


def test_slot_gae_reduces_to_slot_return_minus_value_and_discounts_across_slots():
    from smdlab.rl.train import _slot_gae

    value = torch.tensor([0.2, 0.5, 0.1, 0.3, 0.4])
    rews = [0.0, 0.0, 1.0, 0.0, 2.0]  # two slots: steps 0-2 and 3-4
    ends = [False, False, True, False, True]
    dones = [False] * 5
    # lambda 1, gamma 0: every action gets its slot's reward minus its own value
    adv = _slot_gae(value, rews, dones, ends, 9.0, gamma=0.0, lam=1.0)
    assert torch.allclose(adv, torch.tensor([0.8, 0.5, 0.9, 1.7, 1.6]))
    # lambda 0: one-step errors; inside a slot the next value counts in full, across by gamma
    adv = _slot_gae(value, rews, dones, ends, 9.0, gamma=0.5, lam=0.0)
    want = [0.5 - 0.2, 0.1 - 0.5, 1.0 + 0.5 * 0.3 - 0.1, 0.4 - 0.3, 2.0 + 0.5 * 9.0 - 0.4]
    assert torch.allclose(adv, torch.tensor(want))
    # the episode's end cuts the bootstrap
    adv = _slot_gae(value, rews, [*dones[:4], True], ends, 9.0, gamma=0.5, lam=0.0)
    assert float(adv[4]) == pytest.approx(2.0 - 0.4)


def test_saved_policy_reproduces_the_actors_decisions(trained):
    policy = DL2(weights=str(trained / WEIGHTS))
    ck = load_checkpoint(trained / CHECKPOINT)
    nn = torch.nn
    w = ck["actor"]
    actor = nn.Sequential(
        nn.Linear(w["0.weight"].shape[1], 16), nn.ReLU(), nn.Linear(16, w["2.weight"].shape[0])
    )
    actor.load_state_dict(w)
    env = make_env()
    obs, info = env.reset(seed=5)
    scale = feature_scale(len(env.types), env.window)
    for _ in range(40):
        with torch.no_grad():
            logits = actor(torch.from_numpy(obs * scale)).numpy()
        want = int(np.argmax(np.where(info["action_mask"], logits, -np.inf)))
        assert policy.act(env.builder) == want
        obs, _, term, _, info = env.step(want)
        if term:
            break


def test_trained_policy_runs_in_the_simulator(trained):
    from smdlab.sim import simulate

    env = make_env()
    env.reset(options={"workload_seed": 1000})
    jobs, cluster = env._workloads[1000], env.cluster
    a = simulate(jobs, cluster, DL2(weights=str(trained / WEIGHTS)))
    b = simulate(jobs, cluster, DL2(weights=str(trained / WEIGHTS)))
    assert a.summary["mean_jct"] == b.summary["mean_jct"]
    assert (a.jobs.status == "completed").all()
    assert a.summary["execution"] == "elastic" and a.summary["slot_s"] == 1200.0


def test_between_slots_the_policy_changes_nothing(trained):
    env = make_env()
    env.reset(seed=0)
    state = env.builder.state
    moved = type(state)(**{**state.__dict__, "time": 600.0})
    assert DL2(weights=str(trained / WEIGHTS)).decide(moved) == Decision()
    assert SlotBuilder(state).mask()[-1]


def test_corrupt_checkpoint_and_weights_give_clear_errors(trained, tmp_path):
    bad = tmp_path / CHECKPOINT
    bad.write_bytes(b"not a checkpoint")
    with pytest.raises(InvalidInput, match="not a readable DL2 checkpoint"):
        load_checkpoint(bad)
    with pytest.raises(InvalidInput, match="not a readable DL2 checkpoint"):
        train_dl2(tmp_path, CFG)
    (tmp_path / "w.npz").write_bytes(b"PK\x03\x04 broken")
    with pytest.raises(InvalidInput, match="not a readable dl2 weights file"):
        DL2(weights=str(tmp_path / "w.npz"))
    ck = load_checkpoint(trained / CHECKPOINT)
    torch.save({**ck, "format": 99}, tmp_path / "newer.pt")
    with pytest.raises(InvalidInput, match="format 99"):
        load_checkpoint(tmp_path / "newer.pt")


def test_checkpoint_from_another_space_is_refused(trained, tmp_path):
    ck = load_checkpoint(trained / CHECKPOINT)
    torch.save({**ck, "obs_dim": 7}, tmp_path / CHECKPOINT)
    with pytest.raises(InvalidInput, match="observation of 7 values"):
        train_dl2(tmp_path, CFG)


@pytest.mark.parametrize(
    "argv, message",
    [
        (["train", "nope", "--steps", "3"], "agent must be one of dl2, deeprm, sched2"),
        (["train", "dl2", "--steps", "0"], "steps must be"),
        (["train", "dl2", "--steps", "3", "--workload", "nope.toml"], "--workload"),
        (["train", "dl2", "--steps", "3", "--lam", "1.5"], "lam must be in [0, 1]"),
    ],
)
def test_cli_bad_input_is_one_line(tmp_path, capsys, argv, message):
    assert main([*argv, "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1


def test_cli_refuses_foreign_files(tmp_path, capsys):
    (tmp_path / "notes.txt").write_text("mine")
    assert main(["train", "dl2", "--steps", "1", "--out", str(tmp_path), "--no-progress"]) == 2
    assert "--force" in capsys.readouterr().err
    assert (tmp_path / "notes.txt").read_text() == "mine"
