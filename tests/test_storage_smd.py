"""SMD with storage (``smd_storage``): plain SMD where storage cannot bind; capacities respected."""

from __future__ import annotations

import math

import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from smdlab.model.cluster import Cluster
from smdlab.model.storage import bundled_datasets
from smdlab.policies.storage.smd_storage import SMDStorage
from smdlab.sim.simulator import simulate
from smdlab.workloads.storage import storage_for
from smdlab.workloads.synthetic import synthetic


@pytest.fixture(scope="module")
def small():
    cluster = Cluster.homogeneous(2)
    return cluster, synthetic(10, cluster, load=1.5, seed=4)


@pytest.mark.parametrize("execution", ["elastic", "non_elastic"])
@pytest.mark.parametrize("which", ["infinite_cache", "free_bandwidth", "every_dataset_fits"])
def test_decides_exactly_as_smd_when_storage_cannot_bind(small, execution, which):
    cluster, jobs = small
    everything = sum(d.size_gb for d in bundled_datasets().values())
    kw = {
        "infinite_cache": {"cache_gb": math.inf, "remote_gbps": 0.01},
        "free_bandwidth": {"cache_gb": 5.0, "remote_gbps": math.inf},
        "every_dataset_fits": {"cache_gb": everything, "remote_gbps": 0.01},
    }[which]
    storage = storage_for(jobs, cache_price=0.01, remote_price=2.0, **kw)
    base = simulate(jobs, cluster, "smd", execution=execution)
    got = simulate(jobs, cluster, "smd_storage", execution=execution, storage=storage)
    pd.testing.assert_frame_equal(base.jobs, got.jobs)
    pd.testing.assert_frame_equal(base.history, got.history)
    assert got.summary["storage_allocator"] == "policy"
    assert got.summary["io_bound_share"] == 0.0


class _Checked(SMDStorage):
    """smd_storage, checking every decision's storage against the capacities as it goes."""

    def decide(self, state):
        decision = super().decide(state)
        storage = state.storage.storage
        alloc = decision.storage
        tol = 1e-9
        for k, gb in alloc.cache_gb.items():
            assert 0 <= gb <= storage.datasets[k].size_gb * (1 + tol)
        assert sum(alloc.cache_gb.values()) <= storage.cache_gb * (1 + tol) + tol
        assert sum(alloc.remote_gbps.values()) <= storage.remote_gbps * (1 + tol) + tol
        plan = self.last_plan
        if plan is not None:  # the knapsack's bandwidth row holds
            assert sum(plan.shares.values()) <= plan.pool_gbps * (1 + tol) + tol
            assert sum(plan.cache_gb.values()) <= storage.cache_gb * (1 + tol) + tol
        self.checked += 1
        return decision


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.integers(0, 50),
    cache=st.sampled_from([0.0, 20.0, 150.0, 500.0]),
    pool=st.sampled_from([0.05, 0.3, 1.0, 4.0]),
    execution=st.sampled_from(["elastic", "non_elastic"]),
)
def test_storage_allocation_respects_cache_and_bandwidth(seed, cache, pool, execution):
    cluster = Cluster.homogeneous(2)
    jobs = synthetic(7, cluster, load=2.0, seed=seed)
    storage = storage_for(jobs, cache_gb=cache, remote_gbps=pool, seed=seed)
    policy = _Checked()
    policy.checked = 0
    res = simulate(jobs, cluster, policy, execution=execution, storage=storage)
    assert res.summary["jobs_completed"] == len(jobs)
    assert policy.checked > 0
