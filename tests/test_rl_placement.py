"""The placement environment and its agents, DeepRM-MM and SCHED² (smdlab.rl, docs/rl.md)."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("gymnasium")

from gymnasium.utils.env_checker import check_env

from smdlab.cli import main
from smdlab.errors import InvalidInput
from smdlab.policies.learned.deeprm import DeepRM
from smdlab.policies.learned.sched2 import Sched2
from smdlab.rl import DL2Env, PlacementEnv, make_env
from smdlab.rl.placement_builder import size_levels
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


# ---- sizes: each placement choice at several worker counts --------------------------------


def test_size_levels_halve_the_request_and_skip_repeats():
    env = make_env(observation="sched2", sizes=3)
    env.reset(options={"workload_seed": 1000})
    for job in env._workloads[1000]:
        f = env.facts.get(job)
        levels = size_levels(job, f, 3)
        assert levels[0] == (f.workers, f.ps)  # level 0: the request
        counts = [lv[0] for lv in levels if lv is not None]
        assert counts == sorted(set(counts), reverse=True)  # distinct, shrinking
        if f.workers == 1:
            assert levels[1:] == [None, None]


@pytest.mark.parametrize("observation", ["deeprm", "sched2"])
def test_sized_actions_start_jobs_at_the_chosen_count_and_masks_hold(observation):
    env = make_env(observation=observation, sizes=3)
    base = env.n_machines if observation == "deeprm" else 3
    assert env.action_space.n == env.window * base * 3 + 1
    rng = np.random.default_rng(5)
    env.reset(options={"workload_seed": 1002})
    smaller = 0
    for _ in range(400):
        b = env.builder
        if b is None:
            break
        mask = env.action_masks()
        valid = np.flatnonzero(mask[:-1])
        for a in valid:  # every valid action names an existing, fitting size
            k, c = divmod(int(a), b.per)
            assert b.levels[k][c % b.sizes] is not None
        sized = [a for a in valid if a % b.sizes]
        pick = sized if sized and rng.random() < 0.7 else np.flatnonzero(mask)
        a = int(rng.choice(pick))
        want = None
        if a != env.wait_action:
            k, c = divmod(a, b.per)
            want = b.levels[k][c % b.sizes]
        _obs, _, term, _, info = env.step(a)
        if want is not None:  # the step applied it to this decision point's builder
            assert b.alloc[k] == want and sum(w for _, w, _ in b.tasks[k]) == want[0]
            smaller += want[0] < b.job_facts[k].workers
        if term:
            break
    assert smaller > 0  # some job started below its request
    assert env.result is not None and (env.result.jobs.status == "completed").all()
    assert info["mean_jct"] > 0


def test_the_smaller_teacher_starts_below_the_request_only_where_the_teacher_waits():
    env = make_env(observation="sched2", sizes=3)
    env.reset(options={"workload_seed": 1001})
    below = 0
    for _ in range(600):
        b = env.builder
        if b is None:
            break
        plain, smaller = env.expert_action(), env.expert_action(smaller=True)
        if plain != env.wait_action:  # the teacher starts a job: the variant does the same
            assert smaller == plain and plain % b.per % b.sizes == 0
        elif smaller != env.wait_action:  # it would wait: the variant starts a job below
            assert env.action_masks()[smaller] and smaller % b.per % b.sizes > 0
            below += 1
            if below == 3:
                break
        _, _, term, _, _ = env.step(smaller)
        if term:
            break
    assert below == 3


def test_size_choices_and_the_sized_teacher():
    from smdlab.rl.evaluate_agents import SizedTeacher, size_choices

    c = size_choices("sched2", seeds=[1000])
    assert c["decisions"] >= c["starts"] >= c["below"] >= c["started_below"]
    assert c["only_below"] >= c["started_below"] and 0.0 <= c["mass_below"] <= 1.0
    assert c["starts"] == 20 and c["mean_jct"] > 0  # the workload's 20 jobs each start once
    assert SizedTeacher(fallback=False).name == "teacher"
    with pytest.raises(InvalidInput, match="agent: 'drf' is not a placement agent"):
        size_choices("drf", seeds=[1000])


def test_one_size_is_the_request_only_action_space():
    one = make_env(observation="deeprm")
    three = make_env(observation="deeprm", sizes=3)
    assert three.action_space.n - 1 == 3 * (one.action_space.n - 1)
    with pytest.raises(InvalidInput, match="sizes"):
        make_env(observation="deeprm", sizes=0)


# ---- training (MaskablePPO from sb3-contrib) -------------------------------------------------

pytest.importorskip("sb3_contrib")

from smdlab.rl.library import MODEL, WEIGHTS, PPOConfig, agent_env, train  # noqa: E402


def _cfg(agent: str, sizes: int = 1) -> PPOConfig:
    return PPOConfig(
        agent=agent,
        sizes=sizes,
        timesteps=32,
        seed=2,
        n_envs=2,
        n_steps=8,
        batch_size=8,
        epochs=1,
        hidden=8,
        warmup=20,
        warmup_epochs=1,
    )


@pytest.fixture(scope="module", params=[("deeprm", 1), ("sched2", 2)])
def trained(request, tmp_path_factory):
    agent, sizes = request.param
    out = tmp_path_factory.mktemp(agent)
    train(out, _cfg(agent, sizes))
    return agent, sizes, out


def _arrays(path, agent):
    nets, _ = load_weights(path, agent, ("row", "wait"))
    return [a for layer in (*nets["row"], *nets["wait"]) for a in layer]


def test_seeded_training_is_deterministic(trained, tmp_path):
    agent, sizes, out = trained
    train(tmp_path, _cfg(agent, sizes))
    for a, b in zip(_arrays(out / WEIGHTS, agent), _arrays(tmp_path / WEIGHTS, agent)):
        assert np.array_equal(a, b)
    _, meta = load_weights(out / WEIGHTS, agent, ("row", "wait"))
    assert meta["sizes"] == sizes and meta["learner"] == "maskable_ppo"
    assert meta["summary"]["timesteps"] == 32 and meta["summary"]["warmup_steps"] >= 20


def test_saved_policy_makes_the_library_policys_decisions(trained):
    from sb3_contrib import MaskablePPO

    agent, sizes, out = trained
    policy = (DeepRM if agent == "deeprm" else Sched2)(weights=str(out / WEIGHTS))
    model = MaskablePPO.load(out / MODEL, device="cpu")
    env = agent_env(_cfg(agent, sizes).checked())
    obs, _ = env.reset(options={"workload_seed": 1001})
    for _ in range(30):
        theirs, _ = model.predict(obs, action_masks=env.action_masks(), deterministic=True)
        assert policy.act(env.builder) == int(theirs)
        obs, _, term, _, _info = env.step(int(theirs))
        if term:
            break


def test_trained_policy_runs_in_the_simulator(trained):
    from smdlab.sim import simulate

    agent, sizes, out = trained
    env = agent_env(_cfg(agent, sizes).checked())
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
    agent, _, out = trained
    (tmp_path / "w.npz").write_bytes(b"PK\x03\x04 broken")
    with pytest.raises(InvalidInput, match=f"not a readable {agent} weights file"):
        (DeepRM if agent == "deeprm" else Sched2)(weights=str(tmp_path / "w.npz"))
    with pytest.raises(InvalidInput, match=f"holds '{agent}' weights"):
        (Sched2 if agent == "deeprm" else DeepRM)(weights=str(out / WEIGHTS))


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
        (["train", "deeprm", "--steps", "1", "--sizes", "0"], "sizes must be"),
        (["train", "dl2", "--steps", "1", "--sizes", "2"], "sizes must be"),
        (["train", "ppo", "--steps", "1", "--warmup", "5"], "warmup: the control learner"),
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
