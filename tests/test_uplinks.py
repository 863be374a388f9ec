"""Rack uplinks in the timing model: ratios, link divisors and speeds computed by hand."""

from __future__ import annotations

import numpy as np
import pytest

from smdlab.errors import InvalidInput
from smdlab.model.allreduce import allreduce_iteration_time, uniform_profile
from smdlab.model.cluster import Cluster, Domain, load_cluster_file
from smdlab.model.job import Job, make_job
from smdlab.model.timing import link_speed, speed
from smdlab.model.traffic import Uplinks
from smdlab.sim import simulate

TASK = {"gpu": 1, "cpu": 1, "mem_gb": 1, "bw_gbps": 10}
PS = {"gpu": 0, "cpu": 1, "mem_gb": 1, "bw_gbps": 20}


def _uniform_job(arch: str = "ps", **kw) -> Job:
    prof = uniform_profile(4, compute_s=0.003, param_bytes=100e6)
    ps = {} if arch == "allreduce" else PS
    return Job("u", prof, 1e5, 64, TASK, ps, arch=arch, **kw)


def test_ratio_is_rack_nic_over_effective_uplink():
    # 2 machines x 100 Gbps NIC = 200 Gbps under an uplink of 100 / 2 = 50 Gbps: rho = 4
    c = Cluster.racks(racks=2, machines_per_rack=2, uplink_gbps=100, oversubscription=2)
    u = Uplinks.of(c)
    assert u is not None and u.rack_ratio == (4.0, 4.0)
    # an uplink above the rack's NIC total never binds: rho = 1
    assert Uplinks.of(Cluster.racks(racks=2, machines_per_rack=2, uplink_gbps=400)).rack_ratio == (
        1.0,
        1.0,
    )
    assert Uplinks.of(Cluster.homogeneous(4)) is None  # flat: no uplink term


def test_divisors_by_hand():
    u = Uplinks.of(Cluster.racks(racks=2, machines_per_rack=2, uplink_gbps=50))  # rho = 4
    job = _uniform_job()
    # both workers on rack 0, the PS on rack 1: all traffic crosses, f = 1 on both sides
    assert u.divisors(job, ((0, 2, 0), (2, 0, 1))) == (4.0, 4.0)
    # one PS local, one remote: a worker sends half across (f = 1/2: 2); the remote PS gets all
    assert u.divisors(job, ((0, 2, 1), (2, 0, 1))) == (2.0, 4.0)
    # within one rack (two machines): no uplink
    assert u.divisors(job, ((0, 2, 0), (1, 0, 1))) == (1.0, 1.0)
    ring = _uniform_job("allreduce")
    assert u.divisors(ring, ((0, 1, 0), (2, 1, 0))) == (4.0, 1.0)
    assert u.divisors(ring, ((0, 1, 0), (1, 1, 0))) == (1.0, 1.0)


def test_domain_uplink_is_the_slowest_link():
    racks = [
        {"name": "a", "machines": 1, "uplink_gbps": 100, "domain": "d0"},
        {"name": "b", "machines": 1, "uplink_gbps": 100, "domain": "d1"},
        {"name": "c", "machines": 1, "uplink_gbps": 100, "domain": "d0"},
    ]
    c = Cluster.groups(racks, [{"name": "d0", "uplink_gbps": 25}, {"name": "d1"}])
    u = Uplinks.of(c)
    # racks: 100 / 100 = 1; domain d0: 2 machines x 100 / 25 = 8; d1: 100 / 400 -> 1
    assert u.rack_ratio == (1.0, 1.0, 1.0) and u.domain_ratio == (8.0, 1.0)
    job = _uniform_job()
    assert u.divisors(job, ((0, 1, 0), (1, 0, 1))) == (8.0, 1.0)  # worker in d0 sends across d0
    assert u.divisors(job, ((0, 1, 0), (2, 0, 1))) == (1.0, 1.0)  # same domain, racks at rho 1
    with pytest.raises(InvalidInput, match="oversubscription must be >= 1"):
        Domain("d", 100, 0.5)


def test_link_speed_sequential_by_hand():
    job = _uniform_job()
    w, p, dw, dp = 2, 1, 4.0, 2.0
    prof = job.profile
    bw, bps = 10e9 / 8 / dw, 20e9 / 8 / dp
    kappa = max(1 / bw, (w / p) / bps)  # one push of a byte: worker side vs PS side
    S = prof.param_bytes.sum()
    compute = (prof.forward_s.sum() + prof.backward_s.sum()) * 64 / w
    tau = compute + 2 * S * kappa + prof.update_s_per_byte * S * w / p
    assert link_speed(job, w, p, dw, dp, "sequential") == pytest.approx(64 / tau, rel=1e-12)
    assert link_speed(job, w, p, 1.0, 1.0, "sequential") == pytest.approx(
        speed(job, w, p, "sequential"), rel=1e-12
    )


def test_ring_link_speed_is_the_ring_on_the_slower_link():
    ring = _uniform_job("allreduce")
    tau = allreduce_iteration_time(ring, 2, machines=2, link_bw_bytes=10e9 / 8 / 4)
    assert link_speed(ring, 2, 0, 4.0, machines=2) == pytest.approx(64 / tau, rel=1e-12)
    ring_fast = allreduce_iteration_time(ring, 2, machines=2)
    assert tau > ring_fast


def _two_rack_jct(uplink: float) -> float:
    # one GPU per machine, one machine per rack: a 2-worker job must span both racks
    c = Cluster.racks(racks=2, machines_per_rack=1, gpu=1, uplink_gbps=uplink)
    job = make_job("j", "resnet50", samples=2e5, max_workers=2, max_ps=1, requested_workers=2)
    job = job.replace(gang=True)
    r = simulate([job], c, "fifo", restart_s=0.0)
    return float(r.jobs["jct"].iloc[0])


def test_simulated_speed_reads_the_uplink():
    fast, slow = _two_rack_jct(1000.0), _two_rack_jct(10.0)
    job = make_job("j", "resnet50", samples=2e5, max_workers=2, max_ps=1)
    # rho = 100 / 10 = 10 on both racks; the PS sits on one of them
    u = Uplinks.of(Cluster.racks(racks=2, machines_per_rack=1, gpu=1, uplink_gbps=10.0))
    assert u.rack_ratio == (10.0, 10.0)
    assert fast == pytest.approx(2e5 / speed(job, 2, 1), rel=1e-9)
    # workers on both machines, the PS with one of them: the other worker sends all of its
    # traffic across (f = 1: 10), the PS receives half of its traffic across (f = 1/2: 5)
    assert slow == pytest.approx(2e5 / link_speed(job, 2, 1, 10.0, 5.0), rel=1e-9)
    assert slow > 2 * fast


def test_flat_equivalent_racked_cluster_gives_the_flat_result():
    from smdlab.workloads.synthetic import synthetic

    jobs = synthetic(10, Cluster.homogeneous(4, gpu=4), seed=3, arch_mix=0.5)
    flat = simulate(jobs, Cluster.homogeneous(4, gpu=4), "fifo")
    racked = simulate(
        jobs, Cluster.racks(racks=2, machines_per_rack=2, gpu=4, uplink_gbps=1000), "fifo"
    )
    assert np.array_equal(flat.jobs["jct"].to_numpy(), racked.jobs["jct"].to_numpy())


def test_cluster_file_domains(tmp_path):
    f = tmp_path / "c.toml"
    f.write_text(
        '[[racks]]\nname = "r0"\nmachines = 2\ndomain = "d"\n'
        '[[domains]]\nname = "d"\nuplink_gbps = 50\n'
    )
    c = load_cluster_file(f)
    assert c.domains == (Domain("d", 50.0, 1.0),)
    f.write_text('[[racks]]\nmachines = 1\n[[domains]]\nname = "d"\nspeed = 1\n')
    with pytest.raises(InvalidInput, match="unknown key 'speed'"):
        load_cluster_file(f)


def test_scenario_domains_table(tmp_path):
    from smdlab.workloads.scenario import load_scenario

    sc = tmp_path / "s.toml"
    sc.write_text(
        '[[cluster.racks]]\nmachines = 2\ndomain = "d"\n'
        '[[cluster.domains]]\nname = "d"\nuplink_gbps = 100\n'
    )
    c = load_scenario(sc).build_cluster()
    assert c.domains == (Domain("d", 100.0, 1.0),)
    assert Uplinks.of(c).domain_ratio == (2.0,)  # 2 machines x 100 Gbps / 100
    sc.write_text('[cluster]\nmachines = 2\n[[cluster.domains]]\nname = "d"\n')
    with pytest.raises(InvalidInput, match=r"cluster\.domains needs cluster\.racks"):
        load_scenario(sc)
    with pytest.raises(InvalidInput, match="'d' appears more than once"):
        Cluster.groups([{"machines": 1}], [{"name": "d"}, {"name": "d"}])
