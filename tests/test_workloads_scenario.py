"""Scenario files: the bundled ones load and run; malformed ones fail with a clear message."""

from __future__ import annotations

import pytest

from smdlab import InvalidInput
from smdlab.sim.runner import run_scenario
from smdlab.workloads import Scenario, default_scenario_path, load_scenario


def test_default_scenario_loads_and_builds():
    s = load_scenario()
    assert s.name == "default" and s.seed == 1 and "fifo" in s.policies
    assert load_scenario(default_scenario_path()) == s
    cl = s.build_cluster()
    jobs = s.build_jobs(cl)
    assert len(jobs) == s.workload["jobs"] and len(cl.machines) == s.cluster["machines"]
    assert Scenario(**s.to_dict()) == s


def test_small_scenario_runs_every_policy_it_lists(tmp_path):
    p = tmp_path / "small.toml"
    p.write_text(
        'seed = 4\npolicies = "fifo, srtf"\n[cluster]\nmachines = 2\n'
        '[workload]\nkind = "synthetic"\njobs = 12\nload = 1.0\nnetworks = ["alexnet", "resnet50"]\n'
    )
    s = load_scenario(p)
    assert s.name == "small" and s.policies == ("fifo", "srtf")
    results = run_scenario(s)
    assert set(results) == {"fifo", "srtf"}
    assert all(r.summary["jobs_completed"] == 12 for r in results.values())


def test_csv_workload_paths_are_relative_to_the_scenario(tmp_path):
    (tmp_path / "jobs.csv").write_text("network,arrival,samples\nalexnet,0,1000\nresnet50,3,2000\n")
    p = tmp_path / "s.toml"
    p.write_text('[workload]\nkind = "csv"\npath = "jobs.csv"\n[cluster]\nmachines = 1\n')
    assert [j.name for j in load_scenario(p).build_jobs()] == ["j0", "j1"]


def test_overrides_switch_kind_cleanly():
    s = load_scenario().with_changes(
        workload={"kind": "philly", "jobs": 30}, cluster={"machines": 4}
    )
    assert (
        s.workload["kind"] == "philly"
        and "duration_median_s" not in s.workload
        and "load" not in s.workload
    )
    assert len(s.build_jobs()) == 30


@pytest.mark.parametrize(
    "text, match",
    [
        ("seed = 1\n[cluster\nmachines = 2\n", r"malformed TOML.*line 2"),
        ("seed = 1\nmachines = 2\n", r"unknown key 'machines'"),
        (
            "[cluster]\nmachines = 0\n",
            r"cluster.machines must be an integer in \[1, 100000\], got 0",
        ),
        ('[workload]\nkind = "poisson"\n', r"workload.kind must be one of synthetic, philly, csv"),
        ('[workload]\nkind = "synthetic"\npath = "x.csv"\n', r"unknown key 'path'"),
        ('[simulation]\nmode = "fast"\n', r"simulation.mode must be one of"),
        (
            "[simulation]\nelastic = true\n",
            r'simulation.elastic is a former key, removed in 0\.2; use simulation.execution = "elastic"',
        ),
        ("[simulation]\ndelta = 60\n", r"simulation.delta is a former key.*use simulation.slot_s"),
        ("policies = []\n", r"policies must be a non-empty list"),
        ("seed = -2\n", r"seed must be an integer"),
    ],
)
def test_bad_scenarios(tmp_path, text, match):
    p = tmp_path / "bad.toml"
    p.write_text(text)
    with pytest.raises(InvalidInput, match=match):
        load_scenario(p)


def test_missing_scenario_file():
    with pytest.raises(InvalidInput, match="not found"):
        load_scenario("/no/such/scenario.toml")
