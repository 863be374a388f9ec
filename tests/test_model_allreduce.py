"""Properties of the ring all-reduce timing model (docs/model.md, "All-reduce jobs"), each a test."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from smdlab import InvalidInput, Job, LayerProfile, iteration_time, layer_timeline, make_job
from smdlab.model.allreduce import (
    allreduce_iteration_time,
    closed_form_uniform,
    uniform_profile,
)
from smdlab.model.timing import iteration_time_grid, iteration_time_table, speed
from smdlab.testing import random_profile

seeds = st.integers(0, 2**31 - 1)
MODES = ("sequential", "wfbp")


def _ar_job(rng: np.random.Generator, **overrides) -> Job:
    args = dict(
        profile=random_profile(rng),
        samples=1e5,
        global_batch=int(rng.integers(16, 512)),
        worker_demand={"gpu": 1, "cpu": 2, "bw_gbps": float(rng.uniform(1, 25))},
        ps_demand={},
        max_workers=12,
        arch="allreduce",
        bucket_mb=float(rng.uniform(0.5, 10)),
        intra_link=float(rng.uniform(20, 1000)),
        gpus_per_machine=4,
        latency_s=float(rng.uniform(0, 1e-4)),
    )
    args.update(overrides)
    return Job("ar", **args)


def _reference(job: Job, g: int, mode: str, bw: float) -> float:
    """Independent recurrence: walk the backward pass layer by layer, one ring, buckets in order."""
    prof = job.profile
    cs = job.global_batch / g if job.batch_mode == "global" else job.per_worker_batch
    clock = sum(prof.forward_s) * cs  # forward pass ends
    cap = job.bucket_mb * 1e6
    ready: list[tuple[float, float]] = []  # (ready time, bytes) per bucket
    acc = 0.0
    for layer in reversed(range(prof.layers)):
        clock += prof.backward_s[layer] * cs
        if prof.param_bytes[layer] > 0:
            acc += prof.param_bytes[layer]
            if acc >= cap:
                ready.append((clock, acc))
                acc = 0.0
    if acc > 0:
        # the last bucket is ready when its lowest layer with parameters has run backward
        low = min(i for i in range(prof.layers) if prof.param_bytes[i] > 0)
        t_low = sum(prof.forward_s) * cs + sum(prof.backward_s[low:]) * cs
        ready.append((t_low, acc))
    compute_end = clock
    ring_free = 0.0
    total_comm = 0.0
    for t_ready, size in ready:
        r = 0.0 if g == 1 else 2 * (g - 1) / g * size / bw + 2 * (g - 1) * job.latency_s
        total_comm += r
        ring_free = max(ring_free, t_ready) + r
    if mode == "sequential":
        return compute_end + total_comm
    return max(compute_end, ring_free)


def _bw(job: Job, g: int) -> float:
    return (
        job.intra_bw_bytes
        if g <= job.gpus_per_machine
        else min(job.intra_bw_bytes, job.worker_bw_bytes)
    )


@settings(max_examples=60, deadline=None)
@given(seeds, st.sampled_from(MODES))
def test_matches_reference_recurrence(seed, mode):
    job = _ar_job(np.random.default_rng(seed))
    table = iteration_time_table([job], mode)[0]
    assert table.shape == (job.max_workers, 1)
    for g in range(1, job.max_workers + 1):
        assert table[g - 1, 0] == pytest.approx(_reference(job, g, mode, _bw(job, g)), rel=1e-12)


@settings(max_examples=40, deadline=None)
@given(seeds)
def test_one_gpu_has_no_communication(seed):
    rng = np.random.default_rng(seed)
    job = _ar_job(rng, intra_link=1e-6, worker_demand={"gpu": 1, "bw_gbps": 1e-6})
    compute = job.global_batch * (job.profile.forward_total_s + job.profile.backward_total_s)
    for mode in (*MODES, "wfbp_prefetch"):
        assert iteration_time(job, 1, 0, mode) == pytest.approx(compute, rel=1e-12)


@settings(max_examples=40, deadline=None)
@given(seeds, st.sampled_from(MODES), st.floats(1.01, 10))
def test_monotone_in_bandwidth(seed, mode, factor):
    rng = np.random.default_rng(seed)
    job = _ar_job(rng)
    faster_intra = job.replace(intra_link=job.intra_link * factor)
    faster_nic = job.replace(
        worker_demand={**job.worker_demand, "bw_gbps": job.worker_demand["bw_gbps"] * factor}
    )
    base = iteration_time_table([job], mode)[0]
    for other in (faster_intra, faster_nic):
        assert np.all(iteration_time_table([other], mode)[0] <= base * (1 + 1e-12))


@settings(max_examples=40, deadline=None)
@given(seeds, st.sampled_from(MODES), st.floats(1.01, 10))
def test_monotone_in_bytes_for_a_fixed_bucket_layout(seed, mode, factor):
    rng = np.random.default_rng(seed)
    job = _ar_job(rng)
    # Bytes and bucket size scaled together keep the layout, so every bucket only grows.
    bigger = job.replace(
        profile=job.profile.scaled(params=factor), bucket_mb=job.bucket_mb * factor
    )
    assert np.all(
        iteration_time_table([bigger], mode)[0]
        >= iteration_time_table([job], mode)[0] * (1 - 1e-12)
    )
    # One layer larger, the bucket size above every total: one bucket, which only grows.
    one = job.replace(bucket_mb=1e6)
    sizes = np.array(job.profile.param_bytes)
    sizes[int(rng.integers(job.profile.layers))] *= factor
    grown = one.replace(
        profile=LayerProfile(
            job.profile.names, job.profile.forward_s, job.profile.backward_s, sizes
        )
    )
    assert np.all(
        iteration_time_table([grown], mode)[0] >= iteration_time_table([one], mode)[0] * (1 - 1e-12)
    )


def test_bucket_layout_change_can_lower_tau():
    # 24 MB output layer + 1 MB input layer with a long backward: at 25 MB buckets they share one
    # bucket (ready at the very end); 5% more bytes split them and the big one overlaps compute.
    prof = LayerProfile(
        ("in", "out"), np.array([1e-4, 1e-6]), np.array([1.0, 1e-6]), np.array([1e6, 24e6])
    )
    job = Job(
        "x",
        prof,
        1e4,
        1,
        {"gpu": 1, "bw_gbps": 10},
        {},
        arch="allreduce",
        max_workers=8,
        gpus_per_machine=1,
    )
    bigger = job.replace(profile=prof.scaled(params=1.05))
    assert iteration_time(bigger, 8, 0) < iteration_time(job, 8, 0)


@settings(max_examples=60, deadline=None)
@given(seeds)
def test_wfbp_never_exceeds_sequential(seed):
    job = _ar_job(np.random.default_rng(seed))
    wfbp = iteration_time_table([job], "wfbp")[0]
    seq = iteration_time_table([job], "sequential")[0]
    prefetch = iteration_time_table([job], "wfbp_prefetch")[0]
    assert np.all(wfbp <= seq * (1 + 1e-12))
    assert np.array_equal(prefetch, wfbp)


@settings(max_examples=60, deadline=None)
@given(
    st.integers(1, 30),
    st.floats(1e-3, 1.0),
    st.floats(1e5, 1e9),
    st.integers(1, 16),
    st.floats(1e8, 1e11),
    st.floats(0, 1e-3),
    st.sampled_from(MODES),
)
def test_uniform_layers_match_closed_form(n, compute, total_bytes, g, bw, alpha, mode):
    prof = uniform_profile(n, compute, total_bytes)
    # bucket size = one layer's bytes, so each layer is its own bucket
    job = Job(
        "u",
        prof,
        1e4,
        1,
        {"gpu": 1, "bw_gbps": 1},
        {},
        arch="allreduce",
        max_workers=16,
        bucket_mb=total_bytes / n / 1e6,
        intra_link=bw * 8 / 1e9,
        gpus_per_machine=16,
        latency_s=alpha,
        batch_mode="per_worker",
        per_worker_batch=1,
    )
    F, B = compute / 3, 2 * compute / 3
    expected = closed_form_uniform(n, F, B, total_bytes, g, bw, alpha, mode)
    assert iteration_time(job, g, 0, mode) == pytest.approx(expected, rel=1e-9)


def test_ring_crosses_machines_and_sharing_slows_it():
    job = make_job("r", "resnet50", 1e6, arch="allreduce", max_workers=16, gpus_per_machine=4)
    inside = allreduce_iteration_time(job, 4)
    spread = allreduce_iteration_time(job, 4, machines=2)
    shared = allreduce_iteration_time(job, 4, machines=2, sharing=3)
    assert inside < spread < shared
    assert allreduce_iteration_time(job, 8) == pytest.approx(iteration_time(job, 8, 0))


def test_pcie_is_slower_than_nvlink():
    nv = make_job("r", "vgg16", 1e6, arch="allreduce", max_workers=8)
    pcie = nv.replace(intra_link="pcie")
    assert iteration_time(pcie, 8, 0) > iteration_time(nv, 8, 0)


def test_timeline_ends_at_tau_and_shows_buckets():
    job = make_job("r", "resnet50", 1e6, arch="allreduce", max_workers=8)
    for mode in MODES:
        df = layer_timeline(job, 8, 0, mode)
        ar = df[df["phase"] == "allreduce"]
        assert len(ar) >= 2 and list(ar["bucket"]) == list(range(len(ar)))
        assert ar["bytes"].sum() == pytest.approx(job.profile.total_param_bytes)
        assert df["end"].max() == pytest.approx(iteration_time(job, 8, 0, mode))


def test_mixed_grid_and_speed():
    ps = make_job("p", "resnet50", 1e6, max_workers=4, max_ps=3)
    ar = make_job("a", "resnet50", 1e6, arch="allreduce", max_workers=4)
    grid = iteration_time_grid([ps, ar])
    assert grid.shape == (2, 4, 3)
    assert np.isinf(grid[1, :, 1:]).all() and np.isfinite(grid[1, :, 0]).all()
    assert speed(ar, 2, 0) == pytest.approx(ar.global_batch / iteration_time(ar, 2, 0))


@pytest.mark.parametrize(
    "kwargs, field",
    [
        ({"ps_demand": {"cpu": 4, "bw_gbps": 10}}, "ps_demand"),
        ({"max_ps": 2}, "max_ps"),
        ({"bucket_mb": 0}, "bucket_mb"),
        ({"bucket_mb": -5}, "bucket_mb"),
        ({"intra_link": "infiniband"}, "intra_link"),
        ({"arch": "ring"}, "arch"),
    ],
)
def test_bad_allreduce_input(kwargs, field):
    base = dict(arch="allreduce")
    base.update(kwargs)
    with pytest.raises(InvalidInput, match=field):
        make_job("x", "alexnet", 1e5, **base)


def test_ps_config_rejected_for_allreduce():
    ar = make_job("a", "alexnet", 1e5, arch="allreduce", max_workers=4)
    with pytest.raises(InvalidInput, match="ps"):
        iteration_time(ar, 2, 1)
    assert ar.max_ps == 0 and ar.ps_slots == 1 and dict(ar.ps_demand) == {}
