"""Per-machine caches: the cluster-wide default unchanged, the local-read rule and bad input."""

from __future__ import annotations

import dataclasses

import pandas as pd
import pytest

from smdlab.errors import InvalidInput
from smdlab.model.cluster import Cluster
from smdlab.model.storage import (
    Storage,
    StorageAllocation,
    bundled_datasets,
    io_speed,
    local_cache_gb,
    place_cache,
)
from smdlab.paths import data_dir
from smdlab.policies.ps.fifo import FIFO
from smdlab.sim.errors import InvalidDecision
from smdlab.sim.simulator import simulate
from smdlab.workloads.storage import job_datasets, storage_for
from smdlab.workloads.synthetic import synthetic


@pytest.mark.parametrize("policy", ["fifo", "cba", "smd_storage"])
def test_cluster_scope_with_machine_capacities_equals_one_cluster_cache(policy):
    cluster = Cluster.homogeneous(2)
    jobs = synthetic(8, cluster, load=1.5, seed=5)
    one = storage_for(jobs, cache_gb=150.0, remote_gbps=0.3, cache_price=0.01, remote_price=2.0)
    split = dataclasses.replace(one, machine_cache_gb=(100.0, 50.0))
    assert split.cache_gb == one.cache_gb and split.cache_scope == "cluster"
    a = simulate(jobs, cluster, policy, storage=one)
    b = simulate(jobs, cluster, policy, storage=split)
    pd.testing.assert_frame_equal(a.jobs, b.jobs)
    pd.testing.assert_frame_equal(a.history, b.history)
    for key in ("io_cost", "cache_gb_hours", "remote_gb_read", "io_bound_share"):
        assert a.summary[key] == b.summary[key]


def test_place_cache_and_local_reads():
    ds = bundled_datasets()
    st = Storage({}, machine_cache_gb=(10.0, 5.0), cache_scope="machine")
    k1, k2 = "cifar10", "coco2017"
    readers = {k1: {0: 2.0, 1: 1.0}, k2: {1: 3.0}}
    placed = place_cache(st, {k1: 8.0, k2: 4.0}, readers)
    # machine 1: coco first (3 workers read it there, cifar 1), then what is left of 5 GB
    assert placed == {k1: {0: 8.0, 1: 1.0}, k2: {1: 4.0}}
    alloc = StorageAllocation({k1: 8.0, k2: 4.0}, {}, placed)
    assert local_cache_gb(alloc, k1, [(0, 1, 0), (1, 1, 1)]) == pytest.approx(4.5)
    assert local_cache_gb(alloc, k2, [(0, 2, 0)]) == 0.0
    assert ds[k1].size_gb > 0


class _CacheOn(FIFO):
    """FIFO, with the job's whole dataset cached on its own machine or on another one."""

    def __init__(self, same: bool, dataset: str, pool: float):
        super().__init__()
        self.same, self.dataset, self.pool = same, dataset, pool

    def decide(self, state):
        decision = super().decide(state)
        if not decision.allocations:
            return decision
        a = decision.allocations[0]
        m = a.placement.tasks[0][0]
        machine = m if self.same else (m + 1) % len(state.cluster.machines)
        size = bundled_datasets()[self.dataset].size_gb
        alloc = StorageAllocation({}, {a.job: self.pool}, {self.dataset: {machine: size}})
        return dataclasses.replace(decision, storage=alloc)


@pytest.mark.parametrize("same", [True, False])
def test_a_machine_cache_serves_only_the_workers_on_its_machine(same):
    cluster = Cluster.homogeneous(2)
    job = synthetic(1, cluster, seed=2)[0].replace(max_workers=1, max_ps=1)
    alone = simulate([job], cluster, "fifo")
    compute = float(alone.history["speed"].iloc[0])
    k = job_datasets([job])[job.name]
    size = bundled_datasets()[k].size_gb
    pool = 1e-3
    st = Storage(
        {job.name: k}, machine_cache_gb=(size, size), remote_gbps=pool, cache_scope="machine"
    )
    res = simulate([job], cluster, _CacheOn(same, k, pool), storage=st)
    want = compute if same else min(compute, io_speed(bundled_datasets()[k], 0.0, pool))
    speeds = res.history["speed"].to_numpy()
    assert speeds[speeds > 0][-1] == pytest.approx(want, rel=1e-12)


def test_machine_scope_default_rule_runs_and_charges_replicas():
    cluster = Cluster.homogeneous(2)
    jobs = synthetic(8, cluster, load=1.5, seed=5)
    st = dataclasses.replace(
        storage_for(jobs, remote_gbps=0.3, cache_price=0.01, remote_price=2.0),
        machine_cache_gb=(200.0, 200.0),
        cache_scope="machine",
    )
    res = simulate(jobs, cluster, "cba", storage=st)
    assert res.summary["jobs_completed"] == len(jobs)
    assert res.summary["cache_gb_hours"] > 0


def test_machine_scope_bad_input_one_line():
    cluster = Cluster.homogeneous(2)
    jobs = synthetic(3, cluster, seed=1)
    with pytest.raises(InvalidInput, match="cache_scope 'machine' needs machine_cache_gb"):
        Storage({}, cache_gb=10.0, cache_scope="machine")
    with pytest.raises(InvalidInput, match="storage cache_scope must be one of"):
        Storage({}, cache_scope="rack")
    three = Storage(job_datasets(jobs), machine_cache_gb=(1.0, 1.0, 1.0), cache_scope="machine")
    with pytest.raises(InvalidInput, match="machine_cache_gb has 3 entries; the cluster has 2"):
        simulate(jobs, cluster, "fifo", storage=three)
    pooled = Cluster.pooled(gpu=8, cpu=64, mem_gb=512)
    two = dataclasses.replace(three, machine_cache_gb=(1.0, 1.0))
    with pytest.raises(InvalidInput, match="needs a cluster with machines"):
        simulate(jobs, pooled, "fifo", storage=two)

    class Over(FIFO):
        def decide(self, state):
            d = super().decide(state)
            over = StorageAllocation({}, {}, {"imagenet1k": {0: 2.0}})
            return dataclasses.replace(d, storage=over)

    with pytest.raises(
        InvalidDecision, match="caches 2 GB on machine 0, more than its cache's 1 GB"
    ):
        simulate(jobs, cluster, Over(), storage=two)


def test_scenario_storage_table_takes_machine_caches():
    from smdlab.sim.runner import run_scenario
    from smdlab.workloads.scenario import Scenario, load_scenario

    sc = load_scenario(data_dir() / "scenarios" / "storage_cache_100gb.toml")
    machines = len(sc.build_cluster().machines)
    table = {**sc.storage, "machine_cache_gb": [25.0] * machines, "cache_scope": "machine"}
    res = run_scenario(sc.with_changes(storage=table, workload={"jobs": 5}, policies=("cba",)))
    assert res["cba"].summary["jobs_completed"] == 5
    with pytest.raises(InvalidInput, match="storage cache_scope 'machine' needs machine_cache_gb"):
        Scenario(storage={"cache_scope": "machine"})
    with pytest.raises(InvalidInput, match="machine_cache_gb must be a list of GB"):
        Scenario(storage={"machine_cache_gb": 5.0})


@pytest.mark.parametrize("policy", ["cba", "silod"])
def test_machine_scope_never_stalls_a_job_its_machines_cannot_feed(policy):
    # A split that caches a dataset whole at cluster level gives its readers no bandwidth; on
    # machines that hold only part of it they would stall without the simulator's re-share.
    cluster = Cluster.homogeneous(4)
    jobs = synthetic(40, cluster, load=1.5, seed=0)
    st = dataclasses.replace(
        storage_for(jobs, remote_gbps=1.0, cache_price=0.01, remote_price=2.0),
        machine_cache_gb=(100.0,) * 4,
        cache_scope="machine",
    )
    res = simulate(jobs, cluster, policy, storage=st)
    assert res.summary["jobs_completed"] == len(jobs)
