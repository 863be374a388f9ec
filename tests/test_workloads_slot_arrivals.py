"""arrival_slot_s: DL2's own arrival process (every job arrives at a slot boundary)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from smdlab.errors import InvalidInput
from smdlab.model.cluster import Cluster
from smdlab.paths import data_dir
from smdlab.workloads.scenario import Scenario, load_scenario
from smdlab.workloads.synthetic import synthetic

CLUSTER = Cluster.homogeneous(4, gpu=8, cpu=64, mem_gb=256, bw_gbps=100)


def test_arrivals_move_up_to_the_next_slot_boundary_and_nothing_else_changes() -> None:
    free = synthetic(30, CLUSTER, load=1.5, seed=3)
    slotted = synthetic(30, CLUSTER, load=1.5, seed=3, arrival_slot_s=1200)
    for a, b in zip(free, slotted, strict=True):
        assert b.arrival % 1200 == 0
        assert a.arrival <= b.arrival < a.arrival + 1200
        assert (a.name, a.profile.network, a.samples) == (b.name, b.profile.network, b.samples)
    assert len({j.arrival for j in slotted}) < len({j.arrival for j in free})  # some share a slot


def test_zero_slot_keeps_poisson_arrivals() -> None:
    free = synthetic(10, CLUSTER, load=1.5, seed=4)
    zero = synthetic(10, CLUSTER, load=1.5, seed=4, arrival_slot_s=0)
    assert [j.arrival for j in free] == [j.arrival for j in zero]


def test_negative_slot_is_one_clear_line() -> None:
    with pytest.raises(InvalidInput, match="arrival_slot_s"):
        synthetic(5, CLUSTER, arrival_slot_s=-1)


def test_scenario_key_reaches_the_generator() -> None:
    sc = load_scenario(data_dir() / "scenarios" / "dl2_slotted.toml")
    small = load_scenario(data_dir() / "scenarios" / "dl2_small.toml")
    cluster = sc.build_cluster()
    jobs = dataclasses.replace(sc, seed=1000).build_jobs(cluster)
    base = dataclasses.replace(small, seed=1000).build_jobs(cluster)
    assert np.all(np.array([j.arrival for j in jobs]) % 1200 == 0)
    assert [j.samples for j in jobs] == [j.samples for j in base]
    with pytest.raises(InvalidInput, match=r"workload\.arrival_slot_s"):
        Scenario(workload={"kind": "synthetic", "jobs": 5, "arrival_slot_s": "x"})
