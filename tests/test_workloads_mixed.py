"""Mixed PS and all-reduce workloads: the synthetic arch_mix, the mixed scenario and the CLI."""

from __future__ import annotations

import json

import numpy as np
import pytest

import smdlab
from smdlab import InvalidInput
from smdlab.cli import main
from smdlab.model.timing import duration
from smdlab.paths import data_dir
from smdlab.workloads import load_scenario, synthetic


def _cluster():
    return smdlab.Cluster.homogeneous(4, gpu=4, cpu=64, mem_gb=256, bw_gbps=100)


def test_arch_mix_zero_leaves_the_workload_unchanged():
    a = synthetic(30, _cluster(), seed=3)
    b = synthetic(30, _cluster(), seed=3, arch_mix=0.0)
    assert [(j.name, j.samples, j.arrival, j.arch) for j in a] == [
        (j.name, j.samples, j.arrival, j.arch) for j in b
    ]


def test_arch_mix_keeps_arrivals_and_durations():
    ps = synthetic(40, _cluster(), seed=2)
    mixed = synthetic(40, _cluster(), seed=2, arch_mix=0.5)
    archs = [j.arch for j in mixed]
    assert 5 < archs.count("allreduce") < 35
    for p, m in zip(ps, mixed):
        assert m.arrival == p.arrival and m.requested_workers == p.requested_workers
        n = p.requested_workers
        if m.arch == "allreduce":
            assert m.max_ps == 0 and dict(m.ps_demand) == {} and m.gpus_per_machine == 4
            assert duration(m, n, 0) == pytest.approx(duration(p, n, n), rel=1e-9)


@pytest.mark.parametrize("bad", [-0.1, 1.5])
def test_bad_arch_mix(bad):
    with pytest.raises(InvalidInput, match="arch_mix"):
        synthetic(5, _cluster(), arch_mix=bad)


def test_mixed_scenario_runs(capsys):
    scenario = load_scenario(data_dir() / "scenarios" / "mixed.toml")
    jobs = scenario.build_jobs()
    assert {j.arch for j in jobs} == {"ps", "allreduce"}
    rc = main(
        [
            "simulate",
            "--scenario",
            str(data_dir() / "scenarios" / "mixed.toml"),
            "--jobs",
            "16",
            "--policy",
            "fifo,smd,sjf_bco",
            "--json",
        ]
    )
    assert rc == 0
    out = json.loads(capsys.readouterr().out)
    for entry in out.values():
        assert entry["jobs_completed"] == 16 and np.isfinite(entry["makespan"])


def test_cli_arch_mix_out_of_range_exits_2(capsys):
    rc = main(["simulate", "--jobs", "5", "--arch-mix", "2", "--policy", "fifo"])
    err = capsys.readouterr().err
    assert rc == 2 and "arch_mix" in err
