"""Bad input to the model raises InvalidInput (a ValueError) naming the field and the range."""

from __future__ import annotations

import math

import numpy as np
import pytest

from smdlab import Cluster, InvalidInput, Job, LayerProfile, Machine, iteration_time
from smdlab.testing import random_job


def test_invalid_input_is_value_error():
    assert issubclass(InvalidInput, ValueError)


@pytest.mark.parametrize(
    "field, value, message",
    [
        ("samples", -5, "samples must be > 0"),
        ("samples", 0, "samples must be > 0"),
        ("samples", math.nan, "samples must be > 0 and finite"),
        ("samples", math.inf, "samples must be > 0 and finite"),
        ("global_batch", 0, r"global_batch must be an integer in >= 1"),
        ("global_batch", 2.5, "global_batch must be an integer"),
        ("weight", -1.0, "weight must be > 0"),
        ("arrival", -1.0, "arrival must be >= 0"),
        ("max_workers", 0, r"max_workers must be an integer in \[1, 1024\]"),
        ("batch_mode", "local", "batch_mode must be one of global, per_worker"),
        ("worker_demand", {"gpu": 1}, r"worker_demand\['bw_gbps'\] must be > 0"),
        ("ps_demand", {"bw_gbps": -3}, r"ps_demand\['bw_gbps'\] must be >= 0"),
        ("latency_s", math.nan, "latency_s must be >= 0"),
    ],
)
def test_job_fields(field, value, message, rng):
    with pytest.raises(InvalidInput, match=message):
        random_job(rng, **{field: value})


def test_per_worker_needs_batch(rng):
    with pytest.raises(InvalidInput, match="per_worker_batch must be an integer"):
        random_job(rng, batch_mode="per_worker")


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(forward_s=[1e-4, math.nan]), r"forward_s\[1\] must be finite and >= 0"),
        (dict(backward_s=[1e-4, -1.0]), r"backward_s\[1\] must be finite and >= 0"),
        (dict(param_bytes=[1.0]), r"param_bytes must have one entry per layer \(2\)"),
        (dict(names=[]), "names must list at least one layer"),
        (dict(forward_s=[0, 0], backward_s=[0, 0]), "must not all be 0"),
    ],
)
def test_profile_fields(kwargs, message):
    args = dict(
        names=["a", "b"], forward_s=[1e-4, 1e-4], backward_s=[2e-4, 2e-4], param_bytes=[10.0, 20.0]
    )
    args.update(kwargs)
    with pytest.raises(InvalidInput, match=message):
        LayerProfile(**args)


def test_profile_is_immutable():
    p = LayerProfile(["a"], [1e-4], [2e-4], [10.0])
    with pytest.raises(ValueError):
        p.forward_s[0] = 1.0
    with pytest.raises(AttributeError):
        p.names = ("b",)


@pytest.mark.parametrize(
    "w, p, message",
    [
        (0, 1, r"workers must be an integer in \[1, 6\]"),
        (1, 7, r"ps must be an integer in \[1, 6\]"),
    ],
)
def test_config_out_of_range(w, p, message, rng):
    with pytest.raises(InvalidInput, match=message):
        iteration_time(random_job(rng), w, p)


def test_unknown_mode(rng):
    with pytest.raises(InvalidInput, match="mode must be one of sequential, wfbp, wfbp_prefetch"):
        iteration_time(random_job(rng), 1, 1, mode="overlap")


def test_cluster_validation():
    with pytest.raises(InvalidInput, match="unknown resource 'tpu'"):
        Cluster((Machine("m", {"tpu": 4}),))
    with pytest.raises(InvalidInput, match=r"capacity\['gpu'\] must be >= 0"):
        Cluster((Machine("m", {"gpu": -1}),))
    with pytest.raises(InvalidInput, match=r"machines must be an integer in \[1, 100000\], got 0"):
        Cluster.homogeneous(0)
    with pytest.raises(InvalidInput, match="gpu must be >= 0 and finite"):
        Cluster.homogeneous(2, gpu=math.inf)
    with pytest.raises(InvalidInput, match="unknown resource 'tpu'"):
        Cluster.homogeneous(2).vector({"tpu": 1})


def test_cluster_pooled_capacity():
    c = Cluster.homogeneous(3, gpu=4, cpu=8, mem_gb=64, bw_gbps=25)
    assert dict(c.capacity) == {"gpu": 12, "cpu": 24, "mem_gb": 192, "bw_gbps": 75}
    np.testing.assert_array_equal(c.machine_matrix.sum(0), c.capacity_vector)
    p = Cluster.pooled(gpu=4, cpu=8)
    assert not p.has_machines and p.capacity["mem_gb"] == 0


def test_job_replace_revalidates(rng):
    job = random_job(rng)
    assert job.replace(samples=10).samples == 10
    with pytest.raises(InvalidInput):
        job.replace(samples=-1)
    assert isinstance(job, Job)


def test_job_replace_of_scheduling_fields_checks_them_and_keeps_the_model(rng):
    job = random_job(rng)
    copy = job.replace(samples=123.0, arrival=5, weight=2)
    assert (copy.samples, copy.arrival, copy.weight) == (123.0, 5, 2)
    assert (job.samples, job.arrival, job.weight) != (123.0, 5, 2)  # the original is untouched
    assert copy.model_key == job.model_key and copy.demand_key == job.demand_key
    assert copy.value_key != job.value_key  # samples are part of the value
    assert (
        copy.value_key == Job(**{f: getattr(copy, f) for f in Job.__dataclass_fields__}).value_key
    )
    assert job.replace(name=7).name == "7"
    for bad in ({"samples": 0}, {"arrival": -1}, {"weight": float("nan")}):
        with pytest.raises(InvalidInput, match=next(iter(bad))):
            job.replace(**bad)
    with pytest.raises(InvalidInput, match="requested_workers"):
        job.replace(requested_workers=job.max_workers + 1)
