"""The batch mode stepped from outside, the chain environment and the deep Q-network provisioner."""

from __future__ import annotations

import numpy as np
import pytest

from smdlab.errors import InvalidInput
from smdlab.model.batch import BatchJob, Chain, requested_wall_times
from smdlab.policies.batch import (
    FixedLead,
    Oracle,
    Provisioner,
    ProvisionState,
    Reactive,
)
from smdlab.sim.batch import batch_run, simulate_batch

pytest.importorskip("gymnasium")

LIMIT = 4 * 3600.0
GPUS = 16


def _background(n: int = 160, seed: int = 3) -> list[BatchJob]:
    """A seeded background at about 90% offered load on 16 GPUs."""
    rng = np.random.default_rng(seed)
    gpus = rng.choice([1, 2, 4, 8], size=n)
    dur = rng.exponential(2 * 3600, size=n) + 60
    req = requested_wall_times(dur, LIMIT, rng, 3.0)
    mean_work = float((gpus * np.minimum(dur, req)).mean())
    arrivals = np.cumsum(rng.exponential(mean_work / (0.9 * GPUS), size=n))
    return [
        BatchJob(f"j{k}", float(a), int(g), float(d), float(r), f"acct{k % 3}")
        for k, (a, g, d, r) in enumerate(zip(arrivals, gpus, dur, req, strict=True))
    ]


BACKGROUND = _background()
CHAINS = [Chain(f"c{k}", 3600.0 * (5 + 7 * k), 1 + 3 * (k % 2), 3 * LIMIT) for k in range(3)]


class _Recorder(Provisioner):
    """Wraps a provisioner and logs every decision point: time, chains shown, chosen."""

    def __init__(self, inner: Provisioner) -> None:
        self.inner, self.name, self.needs_probe = inner, inner.name, inner.needs_probe
        self.log: list[tuple[float, tuple[str, ...], tuple[str, ...]]] = []

    def decide(self, state: ProvisionState) -> tuple[str, ...]:
        chosen = self.inner.decide(state)
        self.log.append((state.time, tuple(v.name for v in state.chains), tuple(chosen)))
        return chosen


def _stepped(prov: Provisioner, queue: str):
    """The run driven from outside through ``steps``, with its decision log."""
    run = batch_run(BACKGROUND, GPUS, LIMIT, queue, chains=CHAINS, provisioner=prov)
    log = []
    gen = run.steps()
    try:
        state = next(gen)
        while True:
            chosen = prov.decide(state)
            log.append((state.time, tuple(v.name for v in state.chains), tuple(chosen)))
            state = gen.send(chosen)
    except StopIteration:
        pass
    return run.result(0.0), log


@pytest.mark.parametrize("queue", ["easy", "conservative", "fair_easy"])
@pytest.mark.parametrize("make", [Reactive, lambda: FixedLead(1800), Oracle])
def test_stepping_from_outside_equals_the_batch_mode(make, queue):
    rec = _Recorder(make())
    ref = simulate_batch(BACKGROUND, GPUS, LIMIT, queue, chains=CHAINS, provisioner=rec)
    res, log = _stepped(make(), queue)
    assert log == rec.log and len(log) > 10
    assert res.jobs.equals(ref.jobs) and res.chains.equals(ref.chains)
    assert (res.chains["links"] >= 3).all()


def test_a_paused_run_takes_a_chain_as_if_given_at_the_start():
    chain = CHAINS[1]
    run = batch_run(BACKGROUND, GPUS, LIMIT, "easy")
    for _ in run.steps(before=chain.arrival):
        pass
    assert run.t < chain.arrival and run.start
    run.provisioner = FixedLead(3600)
    run.add_chain(chain)
    run.run()
    ref = simulate_batch(
        BACKGROUND, GPUS, LIMIT, "easy", chains=[chain], provisioner=FixedLead(3600)
    )
    assert run.result(0.0).jobs.equals(ref.jobs)
    with pytest.raises(InvalidInput, match="arrival 0 must be after the run's time"):
        run.add_chain(Chain("late", 0.0, 1, 2 * LIMIT))


def _env(**kw):
    from smdlab.rl import make_env

    options = {
        "jobs": BACKGROUND,
        "gpus": GPUS,
        "limit_s": LIMIT,
        "chain_length_s": 3 * LIMIT,
        "arrivals": [3600.0 * h for h in (4, 9, 15)],
    }
    return make_env(observation="batch_chain", **(options | kw))


def test_chain_env_passes_gymnasium_check_env():
    from gymnasium.utils.env_checker import check_env

    env = _env()
    check_env(env, skip_render_check=True)
    assert env.observation_space.shape == (8,)


def _episode(env, seed, policy):
    obs, _ = env.reset(seed=seed)
    total, done, n = 0.0, False, 0
    while not done:
        obs, r, done, truncated, info = env.step(policy(env))
        assert not truncated and env.observation_space.contains(obs)
        total += r
        n += 1
    return total, info, n


@pytest.mark.parametrize("lead", [0.0, 1800.0])
def test_an_episode_is_the_batch_mode_run_of_its_chain(lead):
    from smdlab.rl.batch_env import AGENT_CHAIN, EPISODE_MAX_LINKS

    weight = 0.25
    env = _env(overlap_weight=weight)
    total, info, n = _episode(env, 5, lambda e: int(0 < e._state.chains[0].time_left <= lead))
    cr = env._run.chains[AGENT_CHAIN]
    chain = Chain(
        AGENT_CHAIN, cr.chain.arrival, cr.chain.gpus, 3 * LIMIT, max_links=EPISODE_MAX_LINKS
    )
    prov = FixedLead(lead) if lead else Reactive()
    ref = simulate_batch(BACKGROUND, GPUS, LIMIT, "easy", chains=[chain], provisioner=prov)
    row = ref.chains.iloc[0]
    assert info["interruption_h"] == pytest.approx(row["interruption_s"] / 3600)
    assert info["overlap_gpu_h"] == pytest.approx(row["overlap_gpu_h"])
    assert total == pytest.approx(-row["interruption_s"] / 3600 - weight * row["overlap_gpu_h"])
    assert n > 10 and (lead > 0 or row["overlap_gpu_h"] == 0)


def test_chain_env_bad_input_lines():
    env = _env()
    env.reset(seed=0)
    with pytest.raises(InvalidInput, match=r"action must be 0 \(wait\) or 1 \(submit\)"):
        env.step(2)
    with pytest.raises(InvalidInput, match="chain_length_s must exceed the wall-time limit"):
        _env(chain_length_s=LIMIT)
    with pytest.raises(InvalidInput, match="chain_gpus"):
        _env(chain_gpus=(GPUS + 1,))


def test_seeded_dqn_training_is_deterministic():
    pytest.importorskip("stable_baselines3")
    from smdlab.rl.batch_dqn import DQNProvisioner, train_dqn

    def trained():
        model, budget = train_dqn(_env(), steps=400, seed=7, learning_starts=100)
        return model, budget

    (m1, b1), (m2, b2) = trained(), trained()
    p1, p2 = m1.q_net.state_dict(), m2.q_net.state_dict()
    assert p1.keys() == p2.keys()
    assert all((p1[k] == p2[k]).all() for k in p1)
    assert b1["steps"] == 400 and b1["episodes"] == b2["episodes"]
    runs = [
        simulate_batch(
            BACKGROUND,
            GPUS,
            LIMIT,
            "easy",
            chains=CHAINS,
            provisioner=DQNProvisioner(m, GPUS, LIMIT),
        )
        for m in (m1, m2)
    ]
    assert runs[0].jobs.equals(runs[1].jobs)
