"""All-reduce jobs in the simulator: every policy runs them (p = 0, no PS placement); CLI."""

from __future__ import annotations

import json

import pytest

import smdlab
from smdlab.cli import main
from smdlab.policies.registry import get_policy, list_policies
from smdlab.sim import simulate

FAST = {"omru": {"generations": 30}, "omru_noreuse": {"generations": 30}}


def _mixed_jobs():
    jobs = []
    for i, net in enumerate(["resnet50", "vgg16", "alexnet", "googlenet", "resnext", "resnet50"]):
        arch = "allreduce" if i % 2 == 0 else "ps"
        extra = {"max_ps": 3} if arch == "ps" else {}
        jobs.append(
            smdlab.make_job(
                f"j{i}",
                net,
                1e5 * (i + 1),
                arch=arch,
                arrival=50.0 * i,
                max_workers=6,
                gpus_per_machine=4,
                **extra,
            )
        )
    return jobs


@pytest.mark.parametrize("name", list_policies())
def test_every_policy_runs_mixed_jobs(name):
    cluster = smdlab.Cluster.homogeneous(3, gpu=4, cpu=64, mem_gb=256, bw_gbps=40)
    jobs = _mixed_jobs()
    r = simulate(jobs, cluster, get_policy(name, **FAST.get(name, {})))
    assert r.summary["jobs_completed"] == len(jobs)
    ar = r.jobs[r.jobs["job"].isin([j.name for j in jobs if j.arch == "allreduce"])]
    assert (ar["ps"] == 0).all() and (ar["mean_ps"] == 0).all()
    ps = r.jobs[~r.jobs.index.isin(ar.index)]
    assert (ps["ps"] >= 1).all()


def test_cli_omru_interface(capsys):
    rc = main(
        [
            "simulate",
            "--workload",
            "omru-action",
            "--machines",
            "2",
            "--gpus-per-machine",
            "4",
            "--policy",
            "seqex,parallel,optimus_like",
            "--json",
        ]
    )
    assert rc == 0
    out = json.loads(capsys.readouterr().out)
    assert list(out) == ["seqex", "parallel", "optimus_like"]
    for entry in out.values():
        assert entry["jobs_completed"] == 5
        assert entry["makespan"] > 0 and entry["mean_jct"] > 0
        assert 0 < entry["utilization"]["gpu"] <= 1


@pytest.mark.parametrize(
    "argv, field",
    [
        (["--gpus-per-machine", "0"], "gpu"),
        (["--jobs", "5"], "jobs"),
    ],
)
def test_cli_bad_input_exits_2(capsys, argv, field):
    rc = main(
        ["simulate", "--workload", "omru-image", "--machines", "2", "--policy", "seqex", *argv]
    )
    err = capsys.readouterr().err
    assert rc == 2 and field in err and len(err.strip().splitlines()) == 1
