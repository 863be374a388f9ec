"""The placement environment and its agents, DeepRM-MM and SCHED² (smdlab.rl, docs/rl.md)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

pytest.importorskip("gymnasium")

from gymnasium.utils.env_checker import check_env

from smdlab.cli import main
from smdlab.errors import InvalidInput
from smdlab.policies.learned.deeprm import DeepRM
from smdlab.policies.learned.sched2 import Sched2
from smdlab.rl import DL2Env, PlacementEnv, make_env
from smdlab.rl.placement_builder import logits, net_inputs
from smdlab.rl.weights import load_weights


@pytest.mark.parametrize("observation", ["deeprm", "sched2", "default"])
def test_each_observation_space_passes_the_gymnasium_checker(observation):
    env = make_env(observation=observation)
    assert isinstance(env, PlacementEnv)
    check_env(env, skip_render_check=True)


def test_observation_names():
    assert isinstance(make_env(), DL2Env)
    assert isinstance(make_env(observation="dl2"), DL2Env)
    with pytest.raises(InvalidInput, match="observation must be one of dl2, deeprm, sched2"):
        make_env(observation="pixels")
    env = make_env(observation="sched2")
    assert env.action == "locality" and env.action_space.n == 10 * 3 + 1
    env = make_env(observation="deeprm")
    assert env.action == "machine" and env.action_space.n == 10 * 4 + 1
    assert env.observation_space.shape == (4 * 4 * 10 + 10 * 4 * 10 + 1,)


def _random_episode(env, seed: int) -> tuple[list, list, dict]:
    rng = np.random.default_rng(seed)
    obs, info = env.reset(options={"workload_seed": seed})
    seen, rewards = [obs], []
    while True:
        a = int(rng.choice(np.flatnonzero(info["action_mask"])))
        obs, r, term, trunc, info = env.step(a)
        seen.append(obs)
        rewards.append(r)
        if term or trunc:
            return seen, rewards, info


def test_slowdown_rewards_sum_to_minus_the_total_slowdown_and_are_seeded():
    env = make_env(observation="deeprm")
    seen, rewards, info = _random_episode(env, 7)
    jobs = env.result.jobs
    assert (jobs.status == "completed").all()
    ideal = {j.name: env.facts.get(j).ideal_s for j in env._workloads[7]}
    slowdown = sum(r.jct / ideal[r.job] for r in jobs.itertuples())
    assert sum(rewards) == pytest.approx(-slowdown, rel=1e-3)
    assert info["mean_jct"] == pytest.approx(jobs.jct.mean())
    again, rewards2, _ = _random_episode(make_env(observation="deeprm"), 7)
    assert rewards == rewards2 and all(np.array_equal(a, b) for a, b in zip(seen, again))


def test_locality_actions_and_mask():
    env = make_env(observation="sched2")
    obs, info = env.reset(options={"workload_seed": 1})
    b = env.builder
    mask = info["action_mask"]
    assert not mask[-1]  # an idle cluster with a job that fits: waiting is refused
    k = int(np.flatnonzero(mask[:-1])[0]) // 3
    consolidated = b.options()[k][0]
    assert consolidated is not None
    assert len({m for m, w, _ in consolidated if w > 0}) == b.job_facts[k].packed
    bad = int(np.flatnonzero(~mask)[0])
    obs2, r, _, _, info2 = env.step(bad)
    assert not info2["valid"] and r == 0.0 and np.array_equal(obs, obs2)
    with pytest.raises(InvalidInput, match="action"):
        env.step(env.action_space.n)


def test_sensitivity_comes_from_the_timing_model():
    env = make_env(observation="sched2")
    env.reset(options={"workload_seed": 1004})
    facts = {j.profile.network: env.facts.get(j) for j in env._workloads[1004]}
    assert facts["alexnet"].sensitivity > 0.9  # a large model: its ring crawls over the NICs
    one = [env.facts.get(j) for j in env._workloads[1004] if env.facts.get(j).workers == 1]
    assert one and all(f.sensitivity == 0 for f in one)


# ---- training ------------------------------------------------------------------------------

torch = pytest.importorskip("torch")

from smdlab.rl.reinforce import (  # noqa: E402 (needs torch)
    ReinforceConfig,
    load_checkpoint,
    make_agent_env,
    train_agent,
)
from smdlab.rl.train import CHECKPOINT, CURVE, WEIGHTS  # noqa: E402


def _cfg(agent: str, steps: int = 4) -> ReinforceConfig:
    return ReinforceConfig(
        agent=agent, steps=steps, seed=2, episodes=2, hidden=8, checkpoint_every=2
    )


@pytest.fixture(scope="module", params=["deeprm", "sched2"])
def trained(request, tmp_path_factory):
    out = tmp_path_factory.mktemp(request.param)
    train_agent(out, _cfg(request.param))
    return request.param, out


def _arrays(path, agent):
    nets, _ = load_weights(path, agent, ("row", "wait"))
    return [a for layer in (*nets["row"], *nets["wait"]) for a in layer]


def test_seeded_training_is_deterministic_and_resumes(trained, tmp_path):
    agent, out = trained
    train_agent(tmp_path, _cfg(agent, steps=2))  # interrupted after the checkpoint at 2
    assert load_checkpoint(tmp_path / CHECKPOINT)["step"] == 2
    train_agent(tmp_path, _cfg(agent))
    for a, b in zip(_arrays(out / WEIGHTS, agent), _arrays(tmp_path / WEIGHTS, agent)):
        assert np.array_equal(a, b)
    curve = (out / CURVE).read_text().splitlines()
    assert curve[0] == "update,kind,mean_jct" and len(curve) == 1 + 4
    assert curve == (tmp_path / CURVE).read_text().splitlines()


def test_saved_policy_reproduces_the_networks_decisions(trained):
    agent, out = trained
    policy = (DeepRM if agent == "deeprm" else Sched2)(weights=str(out / WEIGHTS))
    ck = load_checkpoint(out / CHECKPOINT)
    env = make_agent_env(_cfg(agent))
    nets = {
        name: [
            (ck["nets"][f"{name}.{i}.weight"].numpy(), ck["nets"][f"{name}.{i}.bias"].numpy())
            for i in (0, 2)
        ]
        for name in ("row", "wait")
    }
    obs, info = env.reset(options={"workload_seed": 1001})
    for _ in range(30):
        rows, wait = net_inputs(agent, obs, env.n_machines, env.window, env.horizon)
        z = logits(nets["row"], nets["wait"], rows, wait)
        want = int(np.argmax(np.where(info["action_mask"], z, -np.inf)))
        assert policy.act(env.builder) == want
        obs, _, term, _, info = env.step(want)
        if term:
            break


def test_trained_policy_runs_in_the_simulator(trained):
    from smdlab.sim import simulate

    agent, out = trained
    env = make_agent_env(_cfg(agent))
    env.reset(options={"workload_seed": 1000})
    jobs, cluster = env._workloads[1000], env.cluster
    runs = [
        simulate(
            jobs, cluster, (DeepRM if agent == "deeprm" else Sched2)(weights=str(out / WEIGHTS))
        )
        for _ in range(2)
    ]
    assert runs[0].summary["mean_jct"] == runs[1].summary["mean_jct"]
    assert (runs[0].jobs.status == "completed").all()
    assert runs[0].summary["execution"] == "non_elastic"


def test_corrupt_and_foreign_files_give_clear_errors(trained, tmp_path):
    agent, out = trained
    other = "sched2" if agent == "deeprm" else "deeprm"
    (tmp_path / CHECKPOINT).write_bytes(b"not a checkpoint")
    with pytest.raises(InvalidInput, match="not a readable agent checkpoint"):
        train_agent(tmp_path, _cfg(agent))
    (tmp_path / "w.npz").write_bytes(b"PK\x03\x04 broken")
    with pytest.raises(InvalidInput, match=f"not a readable {agent} weights file"):
        (DeepRM if agent == "deeprm" else Sched2)(weights=str(tmp_path / "w.npz"))
    with pytest.raises(InvalidInput, match=f"holds '{agent}' weights"):
        (Sched2 if agent == "deeprm" else DeepRM)(weights=str(out / WEIGHTS))
    ck = load_checkpoint(out / CHECKPOINT)
    torch.save({**ck, "format": 99}, tmp_path / "newer.pt")
    with pytest.raises(InvalidInput, match="format 99"):
        load_checkpoint(tmp_path / "newer.pt")
    (tmp_path / CHECKPOINT).unlink()
    foreign = tmp_path / "f"
    foreign.mkdir()
    torch.save(ck, foreign / CHECKPOINT)
    with pytest.raises(InvalidInput, match=f"is for agent '{agent}'"):
        train_agent(foreign, _cfg(other))


def test_resume_with_another_learning_rate_is_refused(trained, tmp_path):
    agent, out = trained
    (tmp_path / CHECKPOINT).write_bytes((out / CHECKPOINT).read_bytes())
    with pytest.raises(InvalidInput, match=r"trained with lr 0\.001, not 0\.5; resume with --lr"):
        train_agent(tmp_path, dataclasses.replace(_cfg(agent, steps=6), lr=0.5))
    assert load_checkpoint(tmp_path / CHECKPOINT)["step"] == 4  # nothing was trained


def test_shipped_policies_run_through_the_cli(capsys):
    import json

    from smdlab.rl.placement_env import locality_scenario

    rc = main(
        ["simulate", "--scenario", str(locality_scenario()), "--policy", "deeprm,sched2", "--json"]
    )
    assert rc == 0
    out = json.loads(capsys.readouterr().out)
    assert all(out[p]["jobs_completed"] == 20 for p in ("deeprm", "sched2"))


@pytest.mark.parametrize(
    "argv, message",
    [
        (["train", "nope", "--steps", "3"], "agent must be one of dl2, deeprm, sched2"),
        (["train", "sched2", "--steps", "0"], "steps must be"),
        (["train", "deeprm", "--steps", "1", "--episodes", "0"], "episodes must be"),
    ],
)
def test_cli_bad_input_is_one_line(tmp_path, capsys, argv, message):
    assert main([*argv, "--out", str(tmp_path / "o"), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1


def test_scenario_pipeline_flag(tmp_path):
    from smdlab.rl.placement_env import locality_scenario
    from smdlab.workloads.scenario import load_scenario

    jobs = load_scenario(locality_scenario()).build_jobs()
    assert jobs and all(j.pipeline is None and j.arch == "allreduce" for j in jobs)
    bad = tmp_path / "bad.toml"
    bad.write_text(locality_scenario().read_text().replace("pipeline = false", 'pipeline = "no"'))
    with pytest.raises(InvalidInput, match=r"workload\.pipeline must be true or false"):
        load_scenario(bad)
