"""Racks and GPU types in the cluster: constructors, cluster files, bad input, typed speeds."""

from __future__ import annotations

import json

import pytest
from _cli_output import without_workload_line

from smdlab.cli import main
from smdlab.errors import InvalidInput
from smdlab.model.cluster import Cluster, Machine, Rack, load_cluster_file
from smdlab.model.gpu_types import GPU_TYPES, gavel_type_ratios, speed_ratio
from smdlab.model.job import make_job
from smdlab.policies.ps.fifo import FIFO
from smdlab.sim.simulator import simulate

RACKS_TOML = """
[[racks]]
name = "r0"
machines = 2
gpu_type = "v100"
gpu = 8
uplink_gbps = 100

[[racks]]
name = "r1"
machines = 3
gpu_type = "k80"
gpu = 4
uplink_gbps = 40
oversubscription = 2
"""


def test_racks_constructor_shape():
    c = Cluster.racks(racks=4, machines_per_rack=8, gpu_type="p100")
    assert len(c.machines) == 32 and len(c.topology) == 4
    assert c.gpu_types == ("p100",)
    assert c.rack_of[:9] == (0,) * 8 + (1,)
    assert c.capacity["gpu"] == 256
    assert c.machines[0].name == "r0-m0" and c.machines[0].rack == "r0"


def test_homogeneous_unchanged():
    c = Cluster.homogeneous(3)
    assert c.topology == () and c.gpu_types == () and c.rack_of == (-1, -1, -1)
    assert repr(c) == "Cluster(3 machines; pooled gpu=24, cpu=192, mem_gb=768, bw_gbps=300)"


def test_groups_and_file(tmp_path):
    f = tmp_path / "c.toml"
    f.write_text(RACKS_TOML)
    c = load_cluster_file(f)
    assert [m.gpu_type for m in c.machines] == ["v100"] * 2 + ["k80"] * 3
    assert c.capacity["gpu"] == 2 * 8 + 3 * 4
    assert c.topology[1].effective_uplink_gbps == 20


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (
            lambda: Cluster((Machine("a", {"gpu": 1}, "v100", ""),), topology=(Rack("r0"),)),
            "in no rack",
        ),
        (lambda: Rack("r0", 100, 0.5), "oversubscription must be >= 1"),
        (lambda: Cluster.racks(gpu_type="h100"), "gpu_type must be one of"),
        (
            lambda: Cluster.groups([{"name": "r", "machines": 1}, {"name": "r", "machines": 1}]),
            "unique",
        ),
        (lambda: Cluster((Machine("a", {"gpu": 1}, "", "r9"),)), "not declared"),
    ],
)
def test_bad_input(build, message):
    with pytest.raises(InvalidInput, match=message):
        build()


def test_cli_cluster_file(tmp_path, capsys):
    f = tmp_path / "c.toml"
    f.write_text(RACKS_TOML)
    sc = tmp_path / "s.toml"
    sc.write_text('policies = ["fifo"]\n[workload]\njobs = 6\nload = 0.5\n')
    assert main(["simulate", "--scenario", str(sc), "--cluster-file", str(f), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["fifo"]["jobs_completed"] == 6
    bad = tmp_path / "bad.toml"
    bad.write_text(RACKS_TOML.replace('"k80"', '"tpu"'))
    assert main(["simulate", "--scenario", str(sc), "--cluster-file", str(bad)]) == 2
    err = without_workload_line(capsys.readouterr().err).strip().splitlines()
    assert len(err) == 1 and "gpu_type must be one of" in err[0]


def test_scenario_racks_table(tmp_path):
    from smdlab.workloads.scenario import load_scenario

    sc = tmp_path / "s.toml"
    sc.write_text(
        '[[cluster.racks]]\nmachines = 2\ngpu_type = "k80"\n[[cluster.racks]]\nmachines = 1\n'
    )
    c = load_scenario(sc).build_cluster()
    assert [m.gpu_type for m in c.machines] == ["k80", "k80", "v100"]
    sc.write_text("[cluster]\nmachines = 3\n[[cluster.racks]]\nmachines = 2\n")
    with pytest.raises(InvalidInput, match="cannot be combined"):
        load_scenario(sc)


def test_speed_follows_gpu_type():
    # Gavel's measured ratios: K80 slower than P100 slower than V100 (median over job types).
    r = gavel_type_ratios()
    assert r["k80"] < r["p100"] < r["v100"] == 1.0 < r["a100"]
    assert set(GPU_TYPES) == {"k80", "p100", "v100", "a100"}
    assert speed_ratio("resnet50", "") == 1.0
    job = make_job("j", "resnet50", samples=64 * 200, global_batch=64)
    jct = {}
    for t in ("v100", "k80"):
        res = simulate([job], Cluster.racks(racks=1, machines_per_rack=1, gpu_type=t), FIFO())
        jct[t] = res.jobs["jct"].iloc[0]
    assert jct["k80"] / jct["v100"] == pytest.approx(1 / speed_ratio("resnet50", "k80"), rel=1e-6)
    flat = simulate([job], Cluster.homogeneous(1), FIFO()).jobs["jct"].iloc[0]
    assert flat == pytest.approx(jct["v100"], rel=1e-12)


def test_utilization_per_gpu_type():
    job = make_job("j", "resnet50", samples=64 * 200, global_batch=64)
    c = Cluster.groups(
        [{"name": "a", "machines": 1, "gpu_type": "k80"}, {"name": "b", "machines": 1}]
    )
    s = simulate([job], c, FIFO()).summary["utilization"]
    assert {"gpu", "cpu", "mem_gb", "bw_gbps", "gpu_k80", "gpu_v100"} <= set(s)
    # The pooled GPU utilisation is the capacity-weighted mean of the per-type ones (8 GPUs each).
    assert s["gpu"] == pytest.approx((s["gpu_k80"] + s["gpu_v100"]) / 2)
    assert s["gpu_k80"] + s["gpu_v100"] > 0
    flat = simulate([job], Cluster.homogeneous(2), FIFO()).summary["utilization"]
    assert set(flat) == {"gpu", "cpu", "mem_gb", "bw_gbps"}


def test_cross_rack_traffic():
    from smdlab.model.traffic import cross_rack_bytes_per_iteration

    job = make_job("j", "resnet50", samples=64 * 100, global_batch=64)
    size = float(job.profile.param_bytes.sum())
    racks = (0, 0, 1)
    # 2 workers on machine 0 (rack 0), 1 worker on machine 2 (rack 1), 2 PSs on machine 1 (rack 0)
    tasks = ((0, 2, 0), (1, 0, 2), (2, 1, 0))
    assert cross_rack_bytes_per_iteration(job, tasks, racks) == pytest.approx(1 * 2 * 2 * size / 2)
    assert cross_rack_bytes_per_iteration(job, ((0, 2, 2),), racks) == 0.0
    ring = make_job("r", "resnet50", samples=64 * 100, global_batch=64, arch="allreduce")
    assert cross_rack_bytes_per_iteration(ring, ((0, 2, 0), (2, 2, 0)), racks) == pytest.approx(
        2 * 2 * 3 / 4 * size
    )
    # End to end: a 2-worker ring on two racks of one 1-GPU machine each crosses twice per iteration.
    ring2 = make_job(
        "r2", "resnet50", samples=64 * 100, global_batch=64, arch="allreduce",
        requested_workers=2, max_workers=2, gang=True,
    )  # fmt: skip
    c = Cluster.groups(
        [{"name": "a", "machines": 1, "gpu": 1}, {"name": "b", "machines": 1, "gpu": 1}]
    )
    s = simulate([ring2], c, FIFO()).summary
    assert s["cross_rack_gb"] == pytest.approx(100 * 2 * 2 * 0.5 * size / 1e9)
    assert "cross_rack_gb" not in simulate([job], Cluster.homogeneous(1), FIFO()).summary


def test_bundled_heterogeneous_scenario():
    from smdlab.paths import data_dir
    from smdlab.workloads.scenario import load_scenario

    sc = load_scenario(data_dir() / "scenarios" / "heterogeneous.toml")
    c = sc.build_cluster()
    assert c.gpu_types == ("k80", "p100", "v100") and len(c.topology) == 3
    assert {"gavel_max_min", "gavel_max_sum", "hetero_placement"} <= set(sc.policies)


def _k80_cluster() -> Cluster:
    return Cluster.groups([{"name": "k", "machines": 1, "gpu_type": "k80", "gpu": 4}])


def test_throughput_table_missing_network_raises_before_the_run():
    import dataclasses

    from smdlab.model.profiles import LayerProfile

    prof = LayerProfile.load("resnet50").scaled(name="mynet")  # a network without a job type
    job = dataclasses.replace(make_job("j", "resnet50", samples=1e4), profile=prof)
    with pytest.raises(InvalidInput, match="network 'mynet' has no job type") as exc:
        simulate([job], _k80_cluster(), FIFO())
    assert "\n" not in str(exc.value)
    # On the profile's own GPU type no ratio is needed, so no table either.
    assert simulate([job], Cluster.racks(1, 1), FIFO()).summary["jobs_completed"] == 1


def test_throughput_table_missing_gpu_type_or_job_type(tmp_path):
    from smdlab.model.colocation import load_gavel_solo
    from smdlab.model.gpu_types import use_throughputs

    solo = load_gavel_solo()
    job = make_job("j", "resnet50", samples=1e4)
    no_k80 = solo[solo["gpu_type"] != "k80"]
    with use_throughputs(no_k80), pytest.raises(InvalidInput, match="on GPU type 'k80'"):
        simulate([job], _k80_cluster(), FIFO())
    no_resnet = solo[~solo["job_type"].str.startswith("ResNet-50")]
    with use_throughputs(no_resnet), pytest.raises(InvalidInput, match="no job type 'ResNet-50"):
        simulate([job], _k80_cluster(), FIFO())
    # The bundled table is back outside the block.
    assert simulate([job], _k80_cluster(), FIFO()).summary["jobs_completed"] == 1
    # A full table read from a file gives the bundled ratios.
    f = tmp_path / "t.csv"
    solo.to_csv(f, index=False)
    with use_throughputs(f):
        inside = speed_ratio("lstm_lm", "p100")
    assert inside == speed_ratio("lstm_lm", "p100")


def test_cli_throughputs_file(tmp_path, capsys):
    from smdlab.model.colocation import load_gavel_solo

    solo = load_gavel_solo()
    f = tmp_path / "c.toml"
    f.write_text(RACKS_TOML)
    sc = tmp_path / "s.toml"
    sc.write_text('policies = ["fifo"]\n[workload]\njobs = 4\nload = 0.5\n')
    good = tmp_path / "good.csv"
    solo.to_csv(good, index=False)
    args = ["simulate", "--scenario", str(sc), "--cluster-file", str(f), "--json"]
    assert main([*args, "--throughputs", str(good)]) == 0
    capsys.readouterr()
    bad = tmp_path / "bad.csv"
    solo[solo["gpu_type"] != "k80"].to_csv(bad, index=False)
    assert main([*args, "--throughputs", str(bad)]) == 2
    err = without_workload_line(capsys.readouterr().err).strip().splitlines()
    assert len(err) == 1 and "on GPU type 'k80'" in err[0] and "bad.csv" in err[0]
    broken = tmp_path / "broken.csv"
    broken.write_text("gpu_type,job_type\nk80,x\n")
    assert main([*args, "--throughputs", str(broken)]) == 2
    err = without_workload_line(capsys.readouterr().err).strip().splitlines()
    assert len(err) == 1 and "lacks column 'placement'" in err[0]


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (("oversubscription = 2", "oversubscription = 0.5"), "oversubscription must be >= 1"),
        (('"k80"', '"h100"'), "gpu_type must be one of"),
        (('name = "r1"', 'name = "r0"'), "'r0-m0' appears more than once"),
    ],
)
def test_cli_cluster_file_bad_input(tmp_path, capsys, change, message):
    # Machines of a cluster file are named <rack>-m<j>: a repeated rack name repeats machine names.
    bad = tmp_path / "bad.toml"
    bad.write_text(RACKS_TOML.replace(*change))
    sc = tmp_path / "s.toml"
    sc.write_text('policies = ["fifo"]\n[workload]\njobs = 2\n')
    assert main(["simulate", "--scenario", str(sc), "--cluster-file", str(bad)]) == 2
    err = without_workload_line(capsys.readouterr().err).strip().splitlines()
    assert len(err) == 1 and message in err[0]
