"""Storage with Gavel's round-based policies: in smdlab's simulator, and refused by Gavel's mode."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from smdlab.errors import InvalidInput
from smdlab.model.cluster import Cluster
from smdlab.paths import data_dir
from smdlab.policies.storage.cba import CBA
from smdlab.policies.storage.silod import SiloD
from smdlab.sim.simulator import simulate
from smdlab.workloads.storage import storage_for
from smdlab.workloads.synthetic import synthetic


@pytest.fixture(scope="module")
def small():
    cluster = Cluster.homogeneous(2)
    return cluster, synthetic(8, cluster, load=1.5, seed=5)


@pytest.mark.parametrize("base", ["gavel_max_sum", "gavel_max_min"])
def test_rounds_with_an_infinite_cache_keep_gavels_schedule(small, base):
    cluster, jobs = small
    st = storage_for(jobs, cache_gb=math.inf, remote_gbps=0.05, cache_price=0.01, remote_price=2.0)
    plain = simulate(jobs, cluster, base)
    for policy in (CBA(base=base), SiloD(base=base)):
        got = simulate(jobs, cluster, policy, storage=st)
        pd.testing.assert_frame_equal(plain.jobs, got.jobs)


class _Counting(CBA):
    """CBA on Gavel's rounds, counting the decisions that carry storage."""

    def decide(self, state):
        decision = super().decide(state)
        self.seen += 1
        self.with_storage += decision.storage is not None
        self.rounds += decision.wake_at is not None
        return decision


def test_every_round_decision_carries_storage_and_speeds_are_capped(small):
    cluster, jobs = small
    st = storage_for(jobs, cache_gb=50.0, remote_gbps=0.05, cache_price=0.01, remote_price=2.0)
    policy = _Counting(base="gavel_max_sum")
    policy.seen = policy.with_storage = policy.rounds = 0
    res = simulate(jobs, cluster, policy, storage=st)
    assert policy.rounds > 0 and policy.with_storage == policy.seen
    assert res.summary["storage_allocator"] == "policy"
    assert res.summary["io_bound_share"] > 0
    # Gavel's own policy, storage-oblivious, gets the run's rule (LRU) at every event
    plain = simulate(jobs, cluster, "gavel_max_sum", storage=st)
    assert plain.summary["storage_allocator"] == "lru" and plain.summary["io_bound_share"] > 0


def test_gavels_mode_refuses_storage_in_one_line(tmp_path, capsys):
    from smdlab.cli import main
    from smdlab.sim.gavel_engine import check_gavel_engine
    from smdlab.workloads.scenario import load_scenario

    path = data_dir() / "scenarios" / "gavel_36_36_36.toml"
    sc = load_scenario(path).with_changes(storage={"cache_gb": 10.0, "remote_gbps": 1.0})
    with pytest.raises(InvalidInput, match="engine 'gavel' has no storage model"):
        check_gavel_engine(sc, sc.build_cluster())
    check_gavel_engine(load_scenario(path), sc.build_cluster())  # without storage: accepted
    # the CLI: exit 2, one line (the scenario's trace path made absolute in the copy)
    text = path.read_text().replace('path = "', f'path = "{path.parent}/')
    copy = tmp_path / "gavel_storage.toml"
    copy.write_text(text + "\n[storage]\ncache_gb = 10.0\nremote_gbps = 1.0\n")
    args = ["simulate", "--scenario", str(copy), "--jobs", "2", "--policy", "gavel_fifo_perf"]
    assert main(args) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "has no storage model" in err
