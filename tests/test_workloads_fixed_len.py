"""lengths="per_network": DL2's own job-length rule (every job of a network has its fixed work)."""

from __future__ import annotations

import dataclasses

import pytest

from smdlab.errors import InvalidInput
from smdlab.model.cluster import Cluster
from smdlab.paths import data_dir
from smdlab.workloads.scenario import load_scenario
from smdlab.workloads.synthetic import synthetic


def _by_network(jobs) -> dict[str, set[float]]:
    out: dict[str, set[float]] = {}
    for j in jobs:
        out.setdefault(j.profile.network, set()).add(j.samples)
    return out


def test_dl2_fixed_len_lengths_follow_the_network() -> None:
    sc = load_scenario(data_dir() / "scenarios" / "dl2_fixed_len.toml")
    cluster = sc.build_cluster()
    samples: dict[str, float] = {}
    for seed in (1, 7, 1000):
        jobs = dataclasses.replace(sc, seed=seed).build_jobs(cluster)
        assert len(jobs) == 20
        for j in jobs:
            # One length (the DL2 type's epochs) per network, the same for every workload seed.
            assert samples.setdefault(j.profile.network, j.samples) == j.samples
    assert len(set(samples.values())) > 1  # the networks do not all share one length


def test_drawn_lengths_vary_within_a_network_and_other_draws_match() -> None:
    cluster = Cluster.homogeneous(4, gpu=8, cpu=64, mem_gb=256, bw_gbps=100)
    drawn = synthetic(30, cluster, load=1.5, seed=3)
    fixed = synthetic(30, cluster, load=1.5, seed=3, lengths="per_network")
    assert any(len(v) > 1 for v in _by_network(drawn).values())
    assert all(len(v) == 1 for v in _by_network(fixed).values())
    # Only the lengths (and so the arrival scale) change: same networks and requests.
    assert [j.requested_workers for j in drawn] == [j.requested_workers for j in fixed]
    assert [j.profile.network for j in drawn] == [j.profile.network for j in fixed]


def test_unknown_length_rule_is_one_clear_line() -> None:
    cluster = Cluster.homogeneous(2, gpu=8, cpu=64, mem_gb=256, bw_gbps=100)
    with pytest.raises(InvalidInput, match="lengths"):
        synthetic(5, cluster, lengths="fixed")


def test_evaluate_runs_on_the_scenario_it_is_given() -> None:
    from smdlab.rl.evaluate import compare

    path = str(data_dir() / "scenarios" / "dl2_fixed_len.toml")
    fixed = compare(["drf"], [1000], scenario=path)
    small = compare(["drf"], [1000])
    assert list(fixed["policy"]) == ["drf"] and fixed["mean_jct"].gt(0).all()
    assert fixed["mean_jct"].iloc[0] != small["mean_jct"].iloc[0]
