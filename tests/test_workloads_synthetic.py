"""Synthetic workloads: seeded, at the requested offered load, calibrated durations."""

from __future__ import annotations

import numpy as np
import pytest

from smdlab import Cluster, InvalidInput, LayerProfile, speed
from smdlab.workloads import DEFAULT_GPU_MIX, cluster_bundle_limit, offered_load, synthetic

NETS = ["resnet50", "alexnet", "bert_base"]


def test_same_seed_same_jobs_other_seed_other_jobs():
    cl = Cluster.homogeneous(4)
    a = synthetic(40, cl, seed=7, networks=NETS)
    b = synthetic(40, cl, seed=7, networks=NETS)
    c = synthetic(40, cl, seed=8, networks=NETS)

    def key(jobs):
        return [(j.name, j.profile.network, j.samples, j.arrival, j.max_workers) for j in jobs]

    assert key(a) == key(b)
    assert key(a) != key(c)


@pytest.mark.parametrize("load", [0.3, 1.0, 2.5])
def test_offered_load_is_the_requested_one(load):
    cl = Cluster.homogeneous(8)
    jobs = synthetic(50, cl, load=load, seed=1, networks=NETS)
    assert offered_load(jobs, cl) == pytest.approx(load, rel=1e-9)
    per = offered_load(jobs, cl, per_resource=True)
    assert max(per.values()) == pytest.approx(load, rel=1e-9)
    # Every bundle holds 1 GPU (of 8 per machine) and 20 Gbps (of 100): the GPU load is 5/8 of the NIC's.
    assert per["gpu"] == pytest.approx(per["bw_gbps"] * 5 / 8)
    assert offered_load(jobs, cl, resource="gpu") == pytest.approx(per["gpu"])
    # The uniform bundle makes the NIC the bottleneck.
    uniform = offered_load(
        synthetic(50, cl, load=load, seed=1, networks=NETS, demands="uniform"),
        cl,
        per_resource=True,
    )
    assert uniform["bw_gbps"] == pytest.approx(load) and uniform["gpu"] == pytest.approx(
        load * 5 / 8
    )


def test_arrivals_sizes_and_calibration():
    # Holds 10 bundles of bert_base (NIC-bound), 8 of resnet50 and 6 of alexnet (CPU-bound): larger draws are clipped.
    cl = Cluster.homogeneous(2)
    jobs = synthetic(300, cl, seed=2, networks=NETS, duration_range_s=(60, 86400))
    arrivals = np.array([j.arrival for j in jobs])
    assert arrivals[0] == 0 and np.all(np.diff(arrivals) >= 0)
    n = np.array([j.max_workers for j in jobs])
    limit = np.array([cluster_bundle_limit(cl, j.worker_demand, j.ps_demand) for j in jobs])
    assert all(k in DEFAULT_GPU_MIX or k == lim for k, lim in zip(n, limit)) and np.all(n <= limit)
    assert {j.profile.network: lim for j, lim in zip(jobs, limit)} == {
        "resnet50": 8,
        "bert_base": 10,
        "alexnet": 6,
    }
    assert n.max() == 10 and n[limit == 6].max() == 6
    assert all(j.max_ps == j.max_workers for j in jobs)
    durations = np.array([j.samples / speed(j, j.max_workers, j.max_ps) for j in jobs])
    assert durations.min() >= 60 - 1e-6 and durations.max() <= 86400 + 1e-6
    assert 600 < np.median(durations) < 5400  # log-normal with a median of 1,800 s
    assert {j.profile.network for j in jobs} == set(NETS)


def test_mix_cap_factor_and_custom_profiles():
    cl = Cluster.homogeneous(2)
    only = synthetic(30, cl, seed=1, networks=NETS, mix={"alexnet": 1.0})
    assert {j.profile.network for j in only} == {"alexnet"}
    wide = synthetic(30, cl, seed=1, networks=NETS, cap_factor=2.0)
    base = synthetic(30, cl, seed=1, networks=NETS)
    assert [j.max_workers for j in wide] == [min(2 * j.max_workers, 1024) for j in base]
    f = np.full(2, 1e-4)
    tiny = LayerProfile(["x", "y"], f, 2 * f, np.full(2, 1e6), network="tiny")
    jobs = synthetic(5, cl, seed=1, networks=[tiny], gpu_mix={1: 1.0})
    assert {j.profile.network for j in jobs} == {"tiny"} and all(j.max_workers == 1 for j in jobs)


@pytest.mark.parametrize(
    "kwargs, text",
    [
        ({"n_jobs": 0}, "n_jobs"),
        ({"load": -1}, "load"),
        ({"networks": ["nope"]}, "network must be one of"),
        ({"mix": {"nope": 1}}, "mix names network"),
        ({"gpu_mix": {0: 1.0}}, "gpu_mix GPU count"),
        ({"duration_range_s": (100, 10)}, "duration_range_s"),
        ({"cap_factor": 0.5}, "cap_factor"),
    ],
)
def test_bad_arguments(kwargs, text):
    args = {"n_jobs": 5, "cluster": Cluster.homogeneous(2), "networks": NETS, **kwargs}
    with pytest.raises(InvalidInput, match=text):
        synthetic(args.pop("n_jobs"), args.pop("cluster"), **args)
