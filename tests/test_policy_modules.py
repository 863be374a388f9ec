"""A policy in a user's module (outside the package) runs wherever a built-in one does:
``smdlab simulate --policy mod:Class``, a scenario file, ``smdlab sweep`` on two Dask workers,
and a ``register_policy`` registration reaches the workers too. Bad specs fail in one line."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pandas as pd
import pytest

from smdlab.cli import main
from smdlab.errors import InvalidInput
from smdlab.policies.registry import _EXTRA, get_policy, register_policy, registrations

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
MODULE = "smdlab_user_policies"  # a name no other test imports

SOURCE = textwrap.dedent(
    '''
    from smdlab.policies import Decision, Policy
    from smdlab.policies.toolkit import admit_bundles, queued_jobs


    class LargestFirst(Policy):
        """Most GPUs per worker first, in bundles."""

        name = "largest_first"

        def __init__(self, reverse: bool = False):
            self.reverse = reverse

        def decide(self, state):
            order = sorted(
                queued_jobs(state),
                key=lambda q: q.job.worker_demand.get("gpu", 0.0),
                reverse=not self.reverse,
            )
            return admit_bundles(order, state, stop_at_first_unfit=False)


    def make_policy():
        return LargestFirst(reverse=True)


    NotAPolicy = 3


    class WrongDecide(Policy):
        name = "wrong"

        def decide(self):
            return Decision()
    '''
)


@pytest.fixture
def user_module(tmp_path, monkeypatch):
    """The user's module in its own folder, importable in this process (sys.path)."""
    (tmp_path / f"{MODULE}.py").write_text(SOURCE, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    yield tmp_path
    sys.modules.pop(MODULE, None)


def _env(*paths: Path) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": os.pathsep.join([*map(str, paths), str(ROOT)])}


def test_cli_simulate_runs_a_class_of_a_module_in_the_working_directory(user_module):
    # no PYTHONPATH entry for the folder: `smdlab` imports modules of the working directory
    out = subprocess.run(
        [str(BIN / "smdlab"), "simulate", "--jobs", "6", "--json",
         "--policy", f"{MODULE}:LargestFirst,{MODULE}:make_policy,fifo"],
        capture_output=True, text=True, env=_env(), cwd=user_module, timeout=300, check=True,
    )  # fmt: skip
    results = json.loads(out.stdout)
    assert list(results) == [f"{MODULE}:LargestFirst", f"{MODULE}:make_policy", "fifo"]
    assert all(r["jobs_completed"] == 6 for r in results.values())


def test_a_scenario_file_names_a_module_policy_with_options(user_module, capsys):
    scenario = user_module / "s.toml"
    scenario.write_text(
        textwrap.dedent(
            f"""
            name = "user policy"
            policies = ["{MODULE}:LargestFirst", "fifo"]
            [workload]
            jobs = 6
            [policy_options."{MODULE}:LargestFirst"]
            reverse = true
            """
        ),
        encoding="utf-8",
    )
    assert main(["simulate", "--scenario", str(scenario), "--json"]) == 0
    results = json.loads(capsys.readouterr().out)
    assert set(results) == {f"{MODULE}:LargestFirst", "fifo"}
    assert results[f"{MODULE}:LargestFirst"]["jobs_completed"] == 6


@pytest.mark.parametrize(
    ("spec", "words"),
    [
        ("nosuchmodule:Thing", "cannot import module 'nosuchmodule'"),
        (f"{MODULE}:NotAPolicy", "NotAPolicy is not a policy class or a function returning one"),
        (f"{MODULE}:WrongDecide", "WrongDecide.decide must take one argument, the state"),
        (f"{MODULE}:Missing", f"module {MODULE!r} has no attribute 'Missing'"),
    ],
)
def test_a_bad_spec_is_one_line_and_exit_2(user_module, capsys, spec, words):
    assert main(["simulate", "--jobs", "4", "--policy", spec]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(f"smdlab: error: policy {spec!r}: ")
    assert words in err
    with pytest.raises(InvalidInput, match="policy"):
        get_policy(spec)


def test_registrations_send_specs_for_importable_classes(user_module):
    import importlib

    cls = importlib.import_module(MODULE).LargestFirst
    try:
        register_policy("user_largest", cls)
        register_policy("user_spec", f"{MODULE}:make_policy")
        assert registrations(["user_largest", "user_spec", "fifo"]) == {
            "user_largest": f"{MODULE}:LargestFirst",
            "user_spec": f"{MODULE}:make_policy",
        }
    finally:
        _EXTRA.pop("user_largest", None)
        _EXTRA.pop("user_spec", None)
    with pytest.raises(InvalidInput, match="without commas or colons"):
        register_policy("a:b", cls)


@pytest.mark.slow  # a local Dask cluster of two worker processes (about 20 s here)
def test_cli_sweep_runs_a_module_policy_on_two_dask_workers(user_module):
    out = subprocess.run(
        [str(BIN / "smdlab"), "sweep", "--jobs", "6", "--policy", f"{MODULE}:LargestFirst,fifo",
         "--seeds", "1,2", "--machines", "2", "--workers", "2", "--no-progress"],
        capture_output=True, text=True, env=_env(user_module), cwd=ROOT, timeout=300, check=True,
    )  # fmt: skip
    df = pd.read_csv(io.StringIO(out.stdout))
    assert sorted(set(df["policy"])) == ["fifo", f"{MODULE}:LargestFirst"]
    assert len(df) == 4 and (df["jobs_completed"] == 6).all()


@pytest.mark.slow  # a local Dask cluster of two worker processes (about 20 s here)
def test_a_registration_reaches_the_dask_workers(user_module):
    import importlib

    from smdlab.sim.sweep import run_sweep
    from smdlab.workloads.scenario import load_scenario

    cls = importlib.import_module(MODULE).LargestFirst
    scenario = load_scenario(None).with_changes(workload={"jobs": 6})
    try:
        register_policy("user_largest", cls)
        df = run_sweep(scenario, policies=["user_largest"], seeds=[1, 2], machines=[2], workers=2)
    finally:
        _EXTRA.pop("user_largest", None)
    assert list(df["policy"]) == ["user_largest", "user_largest"]
    assert (df["jobs_completed"] == 6).all()
