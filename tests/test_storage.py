"""Storage as a resource: the IO bound, the simulator's storage, the cache rules and bad input."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from smdlab.errors import InvalidInput
from smdlab.model.cluster import Cluster
from smdlab.model.storage import (
    Dataset,
    Storage,
    StorageAllocation,
    bundled_datasets,
    cost_rate,
    io_speed,
    remote_need_gbps,
)
from smdlab.policies.base import Decision
from smdlab.policies.ps.fifo import FIFO
from smdlab.policies.storage.allocators import (
    JobIO,
    allocate,
    fair_bandwidth,
    lru_allocation,
    proportional_cache,
)
from smdlab.sim.errors import InvalidDecision
from smdlab.sim.result import TIMING_KEYS
from smdlab.sim.simulator import simulate
from smdlab.sim.storage import STORAGE_SUMMARY_KEYS
from smdlab.workloads.storage import job_datasets, storage_for
from smdlab.workloads.synthetic import synthetic


@pytest.fixture(scope="module")
def small():
    cluster = Cluster.homogeneous(2)
    return cluster, synthetic(12, cluster, seed=3)


def test_bundled_datasets_have_positive_sizes():
    ds = bundled_datasets()
    assert {"imagenet1k", "coco2017", "librispeech960", "wmt14_en_de"} <= set(ds)
    im = ds["imagenet1k"]
    assert im.size_gb == pytest.approx(138.0)
    assert im.samples == pytest.approx(1281167)


def test_cached_fraction_serves_exactly_that_fraction_of_an_epoch():
    # Uniform sampling without replacement: every sample once per epoch, so a cached subset of
    # c/d of the samples serves exactly c/d of the epoch's reads, whatever the order.
    rng = np.random.default_rng(0)
    n, cached = 1000, 300
    in_cache = np.zeros(n, dtype=bool)
    in_cache[rng.choice(n, cached, replace=False)] = True
    for _ in range(3):
        order = rng.permutation(n)
        assert int((~in_cache[order]).sum()) == n - cached
    d = Dataset("x", 100.0, 0.1)
    # 1 GB/s remote with 30% cached: 1e3 MB/s over 0.1 MB per sample, 70% of samples remote
    assert io_speed(d, 30.0, 1.0) == pytest.approx(1000.0 / (0.1 * 0.7))
    assert io_speed(d, 100.0, 0.0) == math.inf
    assert remote_need_gbps(d, io_speed(d, 30.0, 1.0), 30.0) == pytest.approx(1.0)


def _same_result(a, b, skip=()):
    pd.testing.assert_frame_equal(a.jobs, b.jobs)
    pd.testing.assert_frame_equal(a.history, b.history)
    for k, v in a.summary.items():
        if k not in TIMING_KEYS and k not in skip:
            assert b.summary[k] == v or (isinstance(v, float) and math.isnan(v)), k


@pytest.mark.parametrize("policy", ["fifo", "srtf", "cba", "silod"])
@pytest.mark.parametrize("which", ["cache", "bandwidth"])
def test_infinite_cache_or_free_bandwidth_gives_todays_results(small, policy, which):
    cluster, jobs = small
    base = simulate(jobs, cluster, "fifo" if policy in ("cba", "silod") else policy)
    kw = (
        {"cache_gb": math.inf, "remote_gbps": 0.01}
        if which == "cache"
        else {"cache_gb": 5.0, "remote_gbps": math.inf}
    )
    st = storage_for(jobs, cache_price=0.02, remote_price=1.0, **kw)
    got = simulate(jobs, cluster, policy, storage=st)
    # cba and silod also re-split at completions: more decision points, the same schedule
    _same_result(base, got, skip=("decisions",) if policy in ("cba", "silod") else ())
    assert set(STORAGE_SUMMARY_KEYS) <= set(got.summary)
    assert set(STORAGE_SUMMARY_KEYS).isdisjoint(base.summary)


def test_speed_is_the_minimum_of_compute_and_io_bounds(small):
    cluster, jobs = small
    job = jobs[0]
    alone = simulate([job], cluster, "fifo")
    compute = float(alone.history["speed"].iloc[0])
    d = bundled_datasets()[job_datasets([job])[job.name]]
    for pool in (1e-3, 1e3):
        st = Storage({job.name: d.name}, cache_gb=0.0, remote_gbps=pool, allocator="none")
        res = simulate([job], cluster, "fifo", storage=st)
        want = min(compute, io_speed(d, 0.0, pool))
        speeds = res.history["speed"].to_numpy()
        assert speeds[speeds > 0][-1] == pytest.approx(want, rel=1e-12)
        assert res.summary["io_bound_share"] == (1.0 if want < compute else 0.0)


def test_fair_bandwidth_is_max_min_fair():
    assert fair_bandwidth(3.0, {"a": 0.5, "b": 2.0, "c": 4.0}) == {"a": 0.5, "b": 1.25, "c": 1.25}
    assert fair_bandwidth(math.inf, {"a": 1.0, "b": 0.0}) == {"a": 1.0}


def test_cache_rules():
    ds = bundled_datasets()
    st = Storage({"a": "imagenet1k", "b": "coco2017", "c": "cifar10"}, cache_gb=150.0)
    jobs = {"a": JobIO(1000.0, 4), "b": JobIO(500.0, 1)}
    # LRU: datasets read now first (ties by name), then most recent; whole datasets that fit:
    # ImageNet's 138 GB no longer fit after COCO's 18
    assert lru_allocation(st, jobs, {"cifar10": 5.0}) == {
        "coco2017": 18.0,
        "cifar10": ds["cifar10"].size_gb,
    }
    prop = proportional_cache(st, jobs)
    assert prop["coco2017"] == pytest.approx(18.0)  # its GPU share (30 GB) is above its size
    assert prop["imagenet1k"] == pytest.approx(132.0)
    assert allocate(st, "none", jobs, {}).cache_gb == {}


@pytest.mark.parametrize("seed", range(10))
def test_cba_allocation_is_no_costlier_than_the_others_at_full_speed(seed):
    rng = np.random.default_rng(seed)
    names = list(bundled_datasets())
    job_ds = {f"j{i}": names[int(rng.integers(len(names)))] for i in range(8)}
    st = Storage(
        job_ds,
        cache_gb=float(rng.uniform(0, 300)),
        cache_price=float(rng.uniform(0, 0.05)),
        remote_price=float(rng.uniform(0, 4)),
    )
    jobs = {j: JobIO(float(rng.uniform(100, 5000)), 1.0) for j in job_ds}
    cba = cost_rate(st, allocate(st, "cba", jobs, {}))
    for rule in ("none", "lru", "proportional", "silod"):
        assert (
            cba <= cost_rate(st, allocate(st, rule, jobs, {"cifar10": 1.0})) * (1 + 1e-12) + 1e-12
        )


class _OverCache(FIFO):
    name = "overcache"

    def decide(self, state):
        d = super().decide(state)
        return Decision(d.allocations, storage=StorageAllocation({"imagenet1k": 138.0}))


def test_decision_over_the_cache_capacity_is_rejected(small):
    cluster, jobs = small
    st = storage_for(jobs, cache_gb=10.0)
    with pytest.raises(InvalidDecision, match="more than the cache's 10 GB"):
        simulate(jobs, cluster, _OverCache(), storage=st)


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: Dataset("x", 0.0, 1.0), r"dataset 'x': size_gb must be > 0"),
        (lambda: Dataset("x", 1.0, -1.0), r"dataset 'x': sample_mb must be > 0"),
        (lambda: Storage({"j": "nope"}), r"job 'j' names unknown dataset 'nope'"),
        (lambda: Storage({}, cache_gb=-1), r"storage cache_gb must be >= 0"),
        (lambda: Storage({}, remote_gbps=-1), r"storage remote_gbps must be >= 0"),
        (lambda: Storage({}, cache_price=-0.1), r"storage cache_price must be >= 0"),
        (lambda: Storage({}, remote_price=-2), r"storage remote_price must be >= 0"),
        (lambda: Storage({}, machine_cache_gb=(1.0, -1.0)), r"machine_cache_gb\[1\] must be >= 0"),
    ],
)
def test_bad_input_one_line(make, message):
    with pytest.raises(InvalidInput, match=message) as err:
        make()
    assert "\n" not in str(err.value)


def test_storage_naming_a_job_outside_the_workload(small):
    cluster, jobs = small
    with pytest.raises(InvalidInput, match="names job 'ghost', which is not in the workload"):
        simulate(jobs, cluster, "fifo", storage=Storage({"ghost": "cifar10"}))


def test_autocba_budget_below_the_cheapest_allocation(small):
    cluster, jobs = small
    st = storage_for(jobs, cache_gb=50.0, remote_gbps=2.0, cache_price=0.01, remote_price=1.0)
    from smdlab.policies.storage.autocba import AutoCBA

    ok = simulate(jobs, cluster, AutoCBA(budget=200.0), storage=st)
    assert ok.summary["jobs_completed"] == len(jobs)
    with pytest.raises(
        InvalidInput,
        match=r"budget must be at least the cheapest feasible allocation, [0-9.]+ per hour; got 0.001",
    ):
        simulate(jobs, cluster, AutoCBA(budget=0.001, gpu_price=1.0), storage=st)


def test_machine_caches_add_up():
    st = Storage({}, machine_cache_gb=(10.0, 20.0))
    assert st.cache_gb == 30.0


def test_scenarios_at_three_cache_sizes_load_and_run_tiny():
    from smdlab.paths import data_dir
    from smdlab.sim.runner import run_scenario
    from smdlab.workloads.scenario import load_scenario

    costs = []
    for gb in (0, 100, 400):
        sc = load_scenario(data_dir() / "scenarios" / f"storage_cache_{gb}gb.toml")
        assert sc.storage is not None and sc.storage["cache_gb"] == gb
        small = sc.with_changes(workload={"jobs": 6}, policies=("fifo_lru", "cba"))
        res = run_scenario(small)
        costs.append({k: r.summary["io_cost"] for k, r in res.items()})
        assert all(r.summary["jobs_completed"] == 6 for r in res.values())
    for c in costs:
        assert c["cba"] <= c["fifo_lru"] * (1 + 1e-12) + 1e-12


def test_scenario_storage_table_bad_key_and_value():
    from smdlab.workloads.scenario import Scenario

    with pytest.raises(InvalidInput, match="storage"):
        Scenario(storage={"cache": 1.0})
    with pytest.raises(InvalidInput, match="storage cache_gb must be >= 0"):
        Scenario(storage={"cache_gb": -5})


def test_io_cost_vs_cache_is_registered_and_computes_tiny():
    from smdlab.experiments.reproduce import FIGURES, make_figure, run_experiment

    assert "io_cost_vs_cache" in FIGURES
    df = run_experiment("io_cost_vs_cache", "tiny")
    assert set(df["policy"]) == {
        "no_cache",
        "lru",
        "proportional",
        "silod",
        "cba",
        "autocba",
        "smd",
        "smd_storage",
    }
    assert (df["io_cost"] >= 0).all() and (df["welfare"] > 0).all()
    make_figure("io_cost_vs_cache", df)


def test_dataset_mix_follows_the_network_task_on_philly_and_synthetic(small):
    from smdlab.workloads.storage import DATASET_MIXES, NETWORK_TASKS
    from smdlab.workloads.trace import load_philly

    for jobs in (load_philly(first=60), small[1]):
        got = job_datasets(jobs, seed=2)
        for j in jobs:
            assert got[j.name] in DATASET_MIXES[NETWORK_TASKS[j.profile.network]]
        # a job keeps its dataset whatever else the workload holds
        assert job_datasets(jobs[:5], seed=2) == {j.name: got[j.name] for j in jobs[:5]}
    with pytest.raises(InvalidInput, match="dataset mix 'vision' names unknown dataset 'mnist'"):
        job_datasets(small[1], mixes={"vision": {"mnist": 1.0}})


def test_storage_and_a_network_fabric_together_are_refused_in_one_line():
    from smdlab.model.cluster import FabricSpec

    cluster = Cluster.racks(racks=2, machines_per_rack=1, uplink_gbps=10).with_fabric(FabricSpec())
    jobs = synthetic(4, cluster, seed=1)
    with pytest.raises(InvalidInput, match="storage or a network fabric, not both"):
        simulate(jobs, cluster, "fifo", storage=storage_for(jobs, cache_gb=10.0, remote_gbps=1.0))
