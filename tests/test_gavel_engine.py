"""``simulation.engine = "gavel"``: the gavel_* policies in Gavel's mode through ``smdlab simulate``."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from smdlab.cli import main
from smdlab.errors import InvalidInput
from smdlab.model.cluster import Cluster
from smdlab.paths import data_dir
from smdlab.sim.gavel_engine import cluster_spec, gavel_mode_sim_result
from smdlab.sim.gavel_mode import simulate_gavel_mode, window_average
from smdlab.workloads.gavel import read_gavel_trace

SCENARIO = str(data_dir() / "scenarios" / "gavel_36_36_36.toml")
TRACE = data_dir() / "traces" / "gavel" / "seed3_rate0.4_60jobs.trace"
SPEC = {"k80": 36, "p100": 36, "v100": 36}
LINE = "{jt}\tpython3 main.py\tcifar10\t--num_steps\t1\t{steps}\t{sf}\t1\t-1\t{t}\n"


def test_simulate_runs_gavel_policies_in_gavels_mode_and_others_in_smdlabs(capsys) -> None:
    policies = "gavel_fifo_perf,gavel_max_min_fairness_perf,fifo"
    args = ["simulate", "--scenario", SCENARIO, "--jobs", "12", "--policy", policies, "--json"]
    assert main(args) == 0
    out = capsys.readouterr()
    assert (
        "Gavel's mode: gavel_fifo_perf, gavel_max_min_fairness_perf; smdlab's simulator: fifo"
        in out.err
    )
    got = json.loads(out.out)
    assert list(got) == policies.split(",")
    trace = read_gavel_trace(TRACE, first=12)
    for name in ("fifo_perf", "max_min_fairness_perf"):
        s = got[f"gavel_{name}"]
        assert s["engine"] == "gavel" and s["execution"] == "gavel_mode" and s["slot_s"] == 360
        res = simulate_gavel_mode(trace, SPEC, name, seed=0)
        assert s["jobs_completed"] == 12
        assert s["mean_jct"] == pytest.approx(window_average(res, range(12)), rel=1e-12)
    assert "engine" not in got["fifo"] and got["fifo"]["jobs_completed"] == 12


def test_engine_smdlab_runs_gavel_policies_in_smdlabs_simulator(capsys) -> None:
    args = ["simulate", "--scenario", SCENARIO, "--jobs", "6", "--policy", "gavel_fifo_perf"]
    assert main([*args, "--engine", "smdlab", "--json"]) == 0
    out = capsys.readouterr()
    assert "Gavel's mode" not in out.err
    assert "engine" not in json.loads(out.out)["gavel_fifo_perf"]


def test_engine_gavel_needs_a_gavel_workload(capsys) -> None:
    args = ["simulate", "--engine", "gavel", "--policy", "gavel_fifo_perf", "--jobs", "4"]
    assert main(args) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "workload kind gavel" in err


def test_scenario_engine_is_checked(tmp_path: Path) -> None:
    from smdlab.workloads.scenario import load_scenario

    p = tmp_path / "s.toml"
    p.write_text(Path(SCENARIO).read_text().replace('engine = "gavel"', 'engine = "gandiva"'))
    with pytest.raises(InvalidInput, match=r"simulation\.engine"):
        load_scenario(p)


def test_cluster_spec_refuses_a_type_gavel_lacks() -> None:
    c = Cluster.groups([{"name": "a", "machines": 2, "gpu_type": "a100", "gpu": 1}])
    with pytest.raises(InvalidInput, match="a100"):
        cluster_spec(c)
    c = Cluster.groups(
        [{"name": t, "machines": 3, "gpu_type": t, "gpu": 2} for t in ("k80", "v100")]
    )
    assert cluster_spec(c) == {"k80": 6, "p100": 0, "v100": 6}


def test_sim_result_of_a_gavel_mode_run_is_consistent() -> None:
    trace = read_gavel_trace(TRACE, first=20)
    spec = {"k80": 4, "p100": 4, "v100": 4}
    res = simulate_gavel_mode(trace, spec, "max_min_fairness_perf", seed=0, solver="highs")
    r = gavel_mode_sim_result(res, trace, spec, name="x", round_s=360.0, wall=0.0)
    jobs = r.jobs.set_index("job")
    assert np.allclose([jobs.loc[str(i), "jct"] for i in res.jct], list(res.jct.values()))
    steps = r.history.groupby("job")["samples"].sum()
    assert all(steps[str(j.job_id)] == j.total_steps for j in trace)
    assert (jobs["queueing_delay"] >= -1e-6).all()
    assert r.utilization["gpu"].between(0, 1).all()
    assert len(r.decisions) == res.rounds
    assert r.summary["recomputations"] == res.recomputations


def test_a_micro_task_too_short_for_its_gpus_fails_and_the_job_is_dropped(tmp_path: Path) -> None:
    # 1 step on 2 GPUs: one worker gets 0 steps, the micro-task fails (Gavel: 5 times, dropped)
    p = tmp_path / "t.trace"
    jt = "ResNet-18 (batch size 64)"
    p.write_text(LINE.format(jt=jt, steps=1, sf=2, t=0) + LINE.format(jt=jt, steps=500, sf=1, t=0))
    trace = read_gavel_trace(p)
    res = simulate_gavel_mode(trace, {"k80": 0, "p100": 0, "v100": 4}, "fifo_perf")
    assert res.dropped == {0} and 0 not in res.jct and 1 in res.jct
    assert sum(t[0] == 0 for t in res.tasks) == 5
    assert window_average(res, range(2)) == res.jct[1]
