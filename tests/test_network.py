"""The flow-level fabric (docs/network.md): water-filling invariants, volumes, the simulator on a
fabric, communication policies and bad input."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from smdlab.cli import main
from smdlab.errors import InvalidInput
from smdlab.model.cluster import Cluster, FabricSpec, load_cluster_file
from smdlab.model.fabric import Links, job_volumes, levels_from_scores, water_fill
from smdlab.model.job import make_job
from smdlab.model.traffic import cross_rack_bytes_per_iteration
from smdlab.policies.network import COMMUNICATION_POLICIES
from smdlab.sim.simulator import simulate
from smdlab.workloads.synthetic import synthetic
from tests._cli_output import without_workload_line


def _random_fabric(rng: np.random.Generator, n: int = 12, links: int = 6):
    """Random demands (jobs x links, some zero) and capacities."""
    mask = rng.random((n, links)) < 0.4
    demand = np.where(mask, rng.uniform(0.1, 5.0, (n, links)), 0.0)
    return demand, rng.uniform(0.5, 6.0, links)


@pytest.mark.parametrize("seed", range(25))
def test_no_link_over_capacity(seed):
    rng = np.random.default_rng(seed)
    demand, cap = _random_fabric(rng)
    levels = rng.integers(0, 8, demand.shape[0]) if seed % 2 else None
    x = water_fill(demand, cap, levels)
    assert np.all((x >= 0) & (x <= 1))
    assert np.all((x[:, None] * demand).sum(axis=0) <= cap * (1 + 1e-9))


@pytest.mark.parametrize("seed", range(10))
def test_a_job_alone_gets_its_bottleneck_rate(seed):
    rng = np.random.default_rng(seed)
    demand, cap = _random_fabric(rng, n=1)
    demand[0, 0] = 3.0  # at least one link
    x = water_fill(demand, cap)[0]
    on = demand[0] > 0
    assert x == pytest.approx(min(1.0, float((cap[on] / demand[0, on]).min())))


@pytest.mark.parametrize("seed", range(25))
def test_a_higher_level_is_never_slower_on_the_same_links(seed):
    rng = np.random.default_rng(seed)
    demand, cap = _random_fabric(rng)
    path = rng.random(demand.shape[1]) < 0.5
    path[0] = True
    demand[0] = np.where(path, rng.uniform(0.5, 5, path.size), 0.0)
    demand[1] = np.where(path, rng.uniform(0.5, 5, path.size), 0.0)
    levels = rng.integers(0, 8, demand.shape[0])
    levels[0], levels[1] = 2, 5
    x = water_fill(demand, cap, levels)
    assert x[0] >= x[1] - 1e-12


def test_fair_sharing_by_hand():
    # two jobs wanting 2 and 0.5 on a link of 1: the small one is served whole, the other gets 0.5
    x = water_fill(np.array([[2.0], [0.5]]), np.array([1.0]))
    assert x == pytest.approx([0.25, 1.0])
    # strict priority: the second job first, it takes 0.5; the first gets the rest (0.5 of 2)
    x = water_fill(np.array([[2.0], [0.5]]), np.array([1.0]), np.array([1, 0]))
    assert x == pytest.approx([0.25, 1.0])
    x = water_fill(np.array([[2.0], [0.5]]), np.array([1.0]), np.array([0, 1]))
    assert x == pytest.approx([0.5, 0.0])


def test_levels_are_compressed_in_order():
    scores = np.array([5.0, 1.0, 3.0, 3.0, 9.0, 0.5, 7.0, 2.0, 8.0, 4.0, 6.0])
    lv = levels_from_scores(scores, 8)
    assert lv.max() <= 7 and lv[2] == lv[3]
    order = np.argsort(scores, kind="stable")
    assert np.all(np.diff(lv[order]) >= 0)
    assert levels_from_scores(np.zeros(4), 8).tolist() == [0, 0, 0, 0]


def _racked(uplink_gbps: float, racks: int = 2, **fabric) -> Cluster:
    c = Cluster.racks(racks=racks, machines_per_rack=1, uplink_gbps=uplink_gbps)
    return c.with_fabric(FabricSpec(**fabric))


@pytest.mark.parametrize("arch", ["ps", "allreduce"])
def test_core_volume_is_the_cross_rack_bytes(arch):
    cluster = _racked(10, racks=3, core_gbps=100)
    links = Links.of(cluster)
    job = make_job("a", "vgg16", 1e4, arch=arch, max_workers=8)
    tasks = ((0, 3, 1), (1, 2, 0), (2, 1, 1)) if arch == "ps" else ((0, 3, 0), (1, 2, 0), (2, 1, 0))
    vol = job_volumes(job, tasks, links)
    assert vol[links.core] == pytest.approx(
        cross_rack_bytes_per_iteration(job, tasks, cluster.rack_of)
    )
    for r in range(3):  # every rack sends and receives
        assert vol[links.rack_up[r]] > 0 and vol[links.rack_down[r]] > 0


def _spanning_job(name: str = "a", samples: float = 2e4, **kw):
    """A 16-worker ring all-reduce gang: it spans both 8-GPU machines, so both racks."""
    return make_job(
        name,
        "vgg16",
        samples,
        arch="allreduce",
        max_workers=16,
        requested_workers=16,
        gang=True,
        **kw,
    )


def test_a_fabric_that_never_binds_gives_todays_results():
    base = Cluster.racks(racks=4, machines_per_rack=2, uplink_gbps=1000)
    jobs = synthetic(30, base, seed=3)
    for policy in ("fifo", "tiresias"):
        flat = simulate(jobs, base, policy)
        fab = simulate(jobs, base.with_fabric(FabricSpec("fair")), policy)
        pd.testing.assert_frame_equal(flat.jobs, fab.jobs)
        assert flat.summary["mean_jct"] == fab.summary["mean_jct"]


def test_a_job_alone_iterates_at_its_bottleneck():
    job = _spanning_job()
    free = simulate([job], _racked(1000), "fifo").jobs.iloc[0]
    c = _racked(5.0)
    vol = job_volumes(job, ((0, 8, 0), (1, 8, 0)), Links.of(c))
    assert set(vol) == {0, 1, 2, 3}  # both racks' uplinks, both ways
    spi = job.samples_per_iteration(16)
    tau0 = (free["finish"] - free["start"]) * spi / job.samples
    bottleneck = max(vol.values()) / (5.0e9 / 8)
    got = simulate([job], c, "fifo").jobs.iloc[0]
    want = job.samples / spi * max(tau0, bottleneck)
    assert bottleneck > tau0  # the uplink binds here
    assert got["finish"] - got["start"] == pytest.approx(want, rel=1e-9)


def test_two_jobs_on_one_core_link_fairly_and_by_priority():
    # four one-machine racks with ample uplinks; each 16-worker job spans two racks and crosses
    # the 5 Gbps core, the one link they share
    base = Cluster.racks(racks=4, machines_per_rack=1, uplink_gbps=1000)
    jobs = [_spanning_job("a"), _spanning_job("b", samples=4e4)]
    alone = simulate(jobs[:1], base.with_fabric(FabricSpec(core_gbps=5)), "fifo").jobs
    runs = {}
    for comm in COMMUNICATION_POLICIES:
        r = simulate(jobs, base.with_fabric(FabricSpec(comm, core_gbps=5)), "fifo")
        assert (r.jobs["status"] == "completed").all()
        runs[comm] = r
    finish = {c: r.jobs.set_index("job")["finish"] for c, r in runs.items()}
    # fair: a shares the core with b, so it ends later than alone
    assert finish["fair"]["a"] > alone["finish"].iloc[0] * (1 + 1e-6)
    # jcs serves a (less left to do) first: alone on the core until it ends, as alone
    assert finish["jcs"]["a"] == pytest.approx(alone["finish"].iloc[0], rel=1e-9)
    assert runs["jcs"].summary["mean_jct"] < runs["fair"].summary["mean_jct"]


def _zero_uplink() -> Cluster:
    """A fabric request whose rack uplink has capacity 0."""
    return Cluster.groups([{"machines": 1, "uplink_gbps": 0}], fabric={})


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda: FabricSpec(levels=9), r"fabric levels must be an integer in \[1, 8\], got 9"),
        (lambda: FabricSpec(core_gbps=0), "fabric core_gbps must be > 0"),
        (lambda: Cluster.homogeneous(2).with_fabric(FabricSpec()), "fabric needs racks"),
        (
            lambda: Cluster.groups([{"machines": 1}], fabric={"communication": "fair"}),
            r"racks\[0\].uplink_gbps is required when a fabric is requested",
        ),
        (lambda: Cluster.groups([{"machines": 1}], fabric={"speed": 1}), "unknown key 'speed'"),
        (
            _zero_uplink,
            "uplink_gbps must be > 0",
        ),
        (
            lambda: simulate([_spanning_job()], _racked(5, communication="magic"), "fifo"),
            "fabric communication 'magic' is not a registered communication policy",
        ),
    ],
)
def test_bad_input(build, message):
    with pytest.raises(InvalidInput, match=message):
        build()


CLUSTER_TOML = """
[[racks]]
name = "a"
machines = 2
uplink_gbps = 20

[[racks]]
name = "b"
machines = 2
uplink_gbps = 20

[fabric]
communication = "{comm}"
levels = {levels}
"""


def test_cluster_file_and_cli(tmp_path, capsys):
    f = tmp_path / "c.toml"
    f.write_text(CLUSTER_TOML.format(comm="crux", levels=8))
    cluster = load_cluster_file(f)
    assert cluster.fabric == FabricSpec("crux", 8)
    sc = tmp_path / "s.toml"
    sc.write_text('policies = ["fifo"]\n[workload]\njobs = 8\nload = 0.5\n')
    assert main(["simulate", "--scenario", str(sc), "--cluster-file", str(f), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["fifo"]["jobs_completed"] == 8
    for comm, levels, message in (
        ("crux", 9, "fabric levels must be"),
        ("magic", 8, "'magic' is not a registered communication policy"),
    ):
        f.write_text(CLUSTER_TOML.format(comm=comm, levels=levels))
        assert main(["simulate", "--scenario", str(sc), "--cluster-file", str(f)]) == 2
        err = without_workload_line(capsys.readouterr().err).strip().splitlines()
        assert len(err) == 1 and message in err[0]


def test_gavels_mode_refuses_a_fabric():
    from types import SimpleNamespace

    from smdlab.sim.gavel_engine import check_gavel_engine

    with pytest.raises(InvalidInput, match="has no network model; drop the cluster's"):
        check_gavel_engine(SimpleNamespace(workload={"kind": "gavel"}), _racked(10))


@pytest.mark.parametrize("policy", ["tiresias", "optimus"])
def test_preemptive_and_elastic_runs_on_a_binding_fabric_finish_every_job(policy):
    base = Cluster.racks(racks=4, machines_per_rack=2, uplink_gbps=10)
    jobs = synthetic(16, base, seed=5)
    r = simulate(jobs, base.with_fabric(FabricSpec("crux")), policy)
    done = r.jobs[r.jobs["status"] == "completed"]
    assert len(done) == len(jobs)
    assert np.allclose(done["samples_done"], done["samples"])
    assert (r.history["speed"] >= 0).all()


def test_lcof_counts_the_other_jobs_on_a_jobs_links():
    from smdlab.model.fabric import FabricState
    from smdlab.policies.network import get_communication_policy

    rng = np.random.default_rng(0)
    vol = np.where(rng.random((30, 12)) < 0.2, rng.random((30, 12)), 0.0)
    ones = np.ones(30)
    state = FabricState((), vol, np.ones(12), ones, ones, ones, ones)
    uses = (vol > 0).astype(float)
    others = ((uses @ uses.T) > 0).sum(axis=1) - (vol > 0).any(axis=1)
    scores = get_communication_policy("lcof").scores(state)
    assert np.array_equal(np.floor(scores), others)
