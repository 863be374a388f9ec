"""Properties of the layered timing model (docs/model.md), each a test."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, strategies as st

from smdlab import (
    Job,
    LayerProfile,
    active_piece,
    duration,
    iteration_time,
    iteration_time_grid,
    layer_timeline,
    speed,
    speed_grid,
)
from smdlab.testing import random_job

CONFIGS = list(itertools.product(range(1, 7), range(1, 7)))
seeds = st.integers(0, 2**31 - 1)


def _compute_total(job: Job, w: int) -> float:
    cs = job.global_batch / w if job.batch_mode == "global" else job.per_worker_batch
    return cs * (job.profile.forward_total_s + job.profile.backward_total_s)


@given(seeds, st.sampled_from(["global", "per_worker"]), st.floats(0, 1e-3))
def test_mode_ordering(seed, batch_mode, latency):
    rng = np.random.default_rng(seed)
    extra = (
        {"batch_mode": "per_worker", "per_worker_batch": 32} if batch_mode == "per_worker" else {}
    )
    job = random_job(rng, latency_s=latency, **extra)
    for w, p in CONFIGS:
        seq = iteration_time(job, w, p, "sequential")
        wf = iteration_time(job, w, p, "wfbp")
        pre = iteration_time(job, w, p, "wfbp_prefetch")
        tol = 1e-9 * seq
        assert _compute_total(job, w) <= pre + tol
        assert pre <= wf + tol
        assert wf <= seq + tol


@pytest.mark.parametrize("mode", ["sequential", "wfbp", "wfbp_prefetch"])
@given(seed=seeds)
def test_nonincreasing_in_ps(mode, seed):
    job = random_job(np.random.default_rng(seed))
    tau = iteration_time_grid([job], mode)[0]
    assert np.all(np.diff(tau, axis=1) <= 1e-9 * tau[:, 1:])


@pytest.mark.parametrize("mode", ["sequential", "wfbp", "wfbp_prefetch"])
@given(seed=seeds, layer=st.integers(0, 20), factor=st.floats(1.0, 4.0))
def test_monotone_in_sizes_and_bandwidths(mode, seed, layer, factor):
    rng = np.random.default_rng(seed)
    job = random_job(rng)
    prof = job.profile
    s = prof.param_bytes.copy()
    s[layer % prof.layers] *= factor
    bigger = job.replace(profile=LayerProfile(prof.names, prof.forward_s, prof.backward_s, s))
    faster_ps = job.replace(
        ps_demand={**job.ps_demand, "bw_gbps": job.ps_demand["bw_gbps"] * factor}
    )
    faster_w = job.replace(
        worker_demand={**job.worker_demand, "bw_gbps": job.worker_demand["bw_gbps"] * factor}
    )
    base, grow, fps, fw = (
        iteration_time_grid([j], mode)[0] for j in (job, bigger, faster_ps, faster_w)
    )
    tol = 1e-9 * base
    assert np.all(grow >= base - tol)
    assert np.all(fps <= base + tol)
    assert np.all(fw <= base + tol)


@given(seeds, st.floats(0, 1e-3), st.floats(0, 1e-9))
def test_single_layer_sequential_is_optimus_form(seed, latency, update):
    rng = np.random.default_rng(seed)
    f, b, s = rng.uniform(1e-5, 1e-3), rng.uniform(1e-5, 1e-3), rng.uniform(1e6, 1e8)
    bw = rng.uniform(1, 20)
    prof = LayerProfile(["only"], [f], [b], [s], update_s_per_byte=update)
    # equal NICs and w >= p: the PS NIC binds
    job = Job(
        "o",
        prof,
        1e6,
        128,
        {"bw_gbps": bw},
        {"bw_gbps": bw},
        latency_s=latency,
        max_workers=8,
        max_ps=8,
    )
    B = bw * 1e9 / 8
    a_, b_, c_ = f + b, 2 * latency, 2 * s / B + update * s  # d = e = 0
    for w, p in itertools.product(range(1, 9), range(1, 9)):
        if w >= p:
            expected = a_ * 128 / w + b_ + c_ * w / p
            assert iteration_time(job, w, p, "sequential") == pytest.approx(expected, rel=1e-12)
        if w > p:  # at w == p both NICs bind: either piece is right
            piece = active_piece(job, w, p, "sequential")
            assert (piece.compute, piece.ps_comm, piece.const) == pytest.approx(
                (a_, c_, b_), rel=1e-12, abs=1e-300
            )


@pytest.mark.parametrize("mode", ["sequential", "wfbp", "wfbp_prefetch"])
@given(seed=seeds)
def test_active_piece_reproduces_tau(mode, seed):
    job = random_job(np.random.default_rng(seed), latency_s=1e-4)
    for w, p in CONFIGS[::5]:
        piece = active_piece(job, w, p, mode)
        assert piece.tau == pytest.approx(iteration_time(job, w, p, mode), rel=1e-9)
        assert min(piece.compute, piece.ps_comm, piece.const) >= 0


@pytest.mark.parametrize("mode", ["sequential", "wfbp"])
@given(seed=seeds)
def test_active_piece_is_a_supporting_path(mode, seed):
    # tau is the max over paths of linear functions in (cs, w/p, 1): the active piece at one point
    # evaluated at any other point never exceeds tau there.
    job = random_job(np.random.default_rng(seed), latency_s=1e-4)
    tau = iteration_time_grid([job], mode)[0]
    w, p = np.meshgrid(np.arange(1, 7), np.arange(1, 7), indexing="ij")
    for w0, p0 in CONFIGS[::4]:
        k = active_piece(job, w0, p0, mode)
        values = k.compute * job.global_batch / w + k.ps_comm * w / p + k.const
        assert np.all(values <= tau * (1 + 1e-9))


@given(seed=seeds)
def test_push_chain_closed_form(seed):
    job = random_job(np.random.default_rng(seed))
    for w, p in CONFIGS[::7]:
        tl = layer_timeline(job, w, p, "wfbp")
        pushes = tl[tl.phase == "push"].set_index("layer_index")
        c = (pushes.end - pushes.start).sort_index().to_numpy()
        cs = job.global_batch / w
        F = cs * job.profile.forward_total_s
        b = cs * job.profile.backward_s
        b_suffix = np.cumsum(b[::-1])[::-1]
        closed = max(F + b_suffix[k] + c[: k + 1].sum() for k in range(job.profile.layers))
        assert pushes.end.max() == pytest.approx(closed, rel=1e-12)
        assert tl.end.max() == pytest.approx(iteration_time(job, w, p, "wfbp"), rel=1e-12)


def test_timeline_sequential_matches_tau(rng):
    job = random_job(rng, latency_s=1e-4)
    tl = layer_timeline(job, 3, 2, "sequential")
    assert tl.end.max() == pytest.approx(iteration_time(job, 3, 2, "sequential"), rel=1e-12)


def test_single_layer_prefetch_equals_wfbp(rng):
    job = random_job(rng, profile=LayerProfile(["x"], [1e-4], [2e-4], [4e6]))
    np.testing.assert_allclose(
        iteration_time_grid([job], "wfbp_prefetch"), iteration_time_grid([job], "wfbp")
    )


def test_free_communication_gives_compute_time(rng):
    job = random_job(rng)
    prof = job.profile
    free = job.replace(
        profile=LayerProfile(prof.names, prof.forward_s, prof.backward_s, np.zeros(prof.layers))
    )
    for mode in ("sequential", "wfbp", "wfbp_prefetch"):
        assert iteration_time(free, 4, 1, mode) == pytest.approx(_compute_total(free, 4), rel=1e-12)


@pytest.mark.parametrize("mode", ["sequential", "wfbp", "wfbp_prefetch"])
def test_grid_equals_scalar(mode, rng):
    jobs = [random_job(rng, name=str(i)) for i in range(5)]
    jobs.append(
        random_job(
            rng, name="pw", batch_mode="per_worker", per_worker_batch=16, max_workers=3, max_ps=2
        )
    )
    grid = iteration_time_grid(jobs, mode)
    sgrid = speed_grid(jobs, mode)
    for i, j in enumerate(jobs):
        for w in range(1, j.max_workers + 1):
            for p in range(1, j.max_ps + 1):
                assert grid[i, w - 1, p - 1] == pytest.approx(
                    iteration_time(j, w, p, mode), rel=1e-12
                )
                assert sgrid[i, w - 1, p - 1] == pytest.approx(speed(j, w, p, mode), rel=1e-12)
    assert np.isinf(grid[-1, 3:, :]).all() and (sgrid[-1, 3:, :] == 0).all()


def test_speed_and_duration_conventions(rng):
    job = random_job(rng)
    tau = iteration_time(job, 3, 2)
    assert speed(job, 3, 2) == pytest.approx(job.global_batch / tau)
    assert duration(job, 3, 2) == pytest.approx(job.samples / speed(job, 3, 2))
    pw = job.replace(batch_mode="per_worker", per_worker_batch=32)
    assert speed(pw, 3, 2) == pytest.approx(3 * 32 / iteration_time(pw, 3, 2))
    # per-worker compute does not shrink with more workers
    assert active_piece(pw, 1, 1).compute_scale == active_piece(pw, 5, 1).compute_scale == 32
