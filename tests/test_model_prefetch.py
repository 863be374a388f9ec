"""The wfbp_prefetch mode: priority pulls and the exact steady-state period (docs/model.md).

Times here are multiples of TICK = 2**-10 s on NICs of exactly 2**20 bytes/s, so every sum the model
forms is exact in floating point and ties (a pull released just as the link frees) are real ties,
decided the same way by the kernel and by the brute-force simulation below.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, strategies as st

from smdlab import Job, LayerProfile, active_piece, iteration_time_grid
from smdlab.model import timing

TICK = 2.0**-10  # seconds
NIC = 2.0**23 / 1e9  # bw_gbps of a NIC that moves exactly 2**20 bytes/s
BYTES_PER_TICK = 2.0**10  # on a NIC of 2**20 bytes/s
GRID = (1, 2, 4)  # w, p values with dyadic M/w and w/p


def _job(f, b, c, *, ps_nic=1.0, worker_nic=1.0, upd=0.0, lat=0.0, batch=1, mode="global") -> Job:
    """A job whose layers take f, b ticks per sample and whose pushes/pulls take c ticks on a 1x NIC."""
    n = len(f)
    prof = LayerProfile(
        [f"l{i}" for i in range(n)],
        np.asarray(f) * TICK,
        np.asarray(b) * TICK,
        np.asarray(c, dtype=float) * BYTES_PER_TICK,
        update_s_per_byte=upd,
    )
    extra = {"batch_mode": "per_worker", "per_worker_batch": batch} if mode == "per_worker" else {}
    return Job(
        "x",
        prof,
        1e6,
        batch,
        {"gpu": 1, "bw_gbps": NIC * worker_nic},
        {"bw_gbps": NIC * ps_nic},
        latency_s=lat,
        max_workers=4,
        max_ps=4,
        **extra,
    )


def _kernel(job: Job, preemptive: bool, track: bool = False) -> np.ndarray:
    """wfbp_prefetch on the job's whole (w, p) grid with the chosen pull rule: (K, W, P)."""
    w, p = np.meshgrid(
        np.arange(1, job.max_workers + 1.0), np.arange(1, job.max_ps + 1.0), indexing="ij"
    )
    t = timing._Batch([job], w.ravel()[None], p.ravel()[None], track)
    return timing._wfbp_prefetch(t, preemptive)[:, 0].reshape(-1, job.max_workers, job.max_ps)


def _wfbp(job: Job) -> np.ndarray:
    return iteration_time_grid([job], "wfbp")[0]


# --- a brute-force event simulation, one (w, p) at a time, several whole iterations -------------


def _inputs(job: Job, w: int, p: int):
    cs = job.global_batch / w if job.batch_mode == "global" else job.per_worker_batch
    prof = job.profile
    kappa = max(1 / job.worker_bw_bytes, w / (p * job.ps_bw_bytes))
    c = [s * kappa + job.latency_s for s in prof.param_bytes]
    u = [prof.update_s_per_byte * s * w / p for s in prof.param_bytes]
    return [x * cs for x in prof.forward_s], [x * cs for x in prof.backward_s], c, u


def _pull_link(ready, c, start, preemptive):
    """One link, lowest pending layer first; a pull released as another ends waits for that one."""
    left, pending, ends = list(c), set(), [0.0] * len(c)
    unreleased = sorted(range(len(c)), key=lambda l: ready[l])
    now = start
    while unreleased or pending:
        if not pending:
            now = max(now, ready[unreleased[0]])
        while unreleased and ready[unreleased[0]] <= now:
            pending.add(unreleased.pop(0))
        top = min(pending)
        next_release = ready[unreleased[0]] if unreleased else float("inf")
        if not preemptive or now + left[top] <= next_release:
            now += left[top]
            ends[top] = now
            pending.remove(top)
        else:  # the served pull is interrupted when the next one is released
            left[top] -= next_release - now
            now = next_release
    return ends, now


def _brute_periods(f, b, c, u, preemptive, iterations=5):
    """Start-to-start times of consecutive backward passes over several simulated iterations."""
    L = len(f)
    gpu = push_link = pull_link = 0.0
    pulled = [0.0] * L  # pull of each layer ended (previous iteration); none before the first
    starts = []
    for _ in range(iterations):
        t = gpu
        for l in range(L):  # forward of layer l: after its pull and forward of l-1
            t = max(t, pulled[l]) + f[l]
        starts.append(t)
        back_end = [0.0] * L
        for l in reversed(range(L)):
            t += b[l]
            back_end[l] = t
        gpu = t
        ready = [0.0] * L
        for l in reversed(range(L)):  # pushes L..1 on one link, continuing across iterations
            push_link = max(push_link, back_end[l]) + c[l]
            ready[l] = push_link + u[l]
        pulled, pull_link = _pull_link(ready, c, pull_link, preemptive)
    return np.diff(starts)


ticks = st.integers(0, 8)
layers = st.lists(st.tuples(st.integers(1, 8), ticks, ticks), min_size=1, max_size=5)


@st.composite
def small_jobs(draw):
    """Small networks with dyadic times, random NIC speeds, update times, latencies, batch modes."""
    rows = draw(layers)
    f, b, c = (list(x) for x in zip(*rows))
    return _job(
        f,
        b,
        c,
        ps_nic=draw(st.sampled_from([0.5, 1.0, 2.0, 4.0])),
        worker_nic=draw(st.sampled_from([0.5, 1.0, 2.0])),
        upd=draw(st.sampled_from([0.0, 0.0, 2.0**-20, 2.0**-18])),
        lat=draw(st.sampled_from([0.0, 0.0, TICK / 2])),
        batch=draw(st.sampled_from([1, 4])),
        mode=draw(st.sampled_from(["global", "per_worker"])),
    )


# --- (a) a hand-computed case ------------------------------------------------------------------


def test_backlogged_pull_link_hand_case():
    # Ticks; w = p = 1, batch 1, both NICs bind equally. f = (4, 1, 1), b = (1, 1, 1), c = (1, 1, 3),
    # layers 1..3 input side first. From the start of a backward pass (time 0):
    #   backward ends   be3 = 1, be2 = 2, be1 = 3
    #   pushes (L..1)   3: [1, 4]   2: [4, 5]   1: [5, 6]     -> pulls released at 4, 5, 6
    #   FIFO pulls      3: [4, 7]   2: [7, 8]   1: [8, 9]     D = (9, 8, 7)
    #   priority, non-preemptive: 3: [4, 7]; at 7 both 2 and 1 wait, 1 first: 1: [7, 8], 2: [8, 9]
    #                   D = (8, 9, 7)
    #   priority, preemptive: 3 runs [4, 5], 2 interrupts it: [5, 6]; 1 (released at 6) [6, 7];
    #                   3 resumes [7, 9]                      D = (7, 6, 9)
    # Next forward: layer l starts after its pull and layer l-1; the next backward starts at
    # max_l (D_l + f_l + ... + f_3):
    #   wfbp (all pulls first)   9 + 6 = 15
    #   non-preemptive           max(8 + 6, 9 + 2, 7 + 1) = 14
    #   preemptive               max(7 + 6, 6 + 2, 9 + 1) = 13
    job = _job([4, 1, 1], [1, 1, 1], [1, 1, 3])
    assert _wfbp(job)[0, 0] == 15 * TICK
    assert _kernel(job, preemptive=False)[0, 0, 0] == 14 * TICK
    assert _kernel(job, preemptive=True)[0, 0, 0] == 13 * TICK
    assert iteration_time_grid([job], "wfbp_prefetch")[0, 0, 0] == 13 * TICK
    # critical path of the preemptive period: be3 + pushes 3, 2, 1 + pull 1 + forward 1..3
    piece = active_piece(job, 1, 1, "wfbp_prefetch")
    assert (piece.compute, piece.ps_comm, piece.const) == (7 * TICK, 0.0, 6 * TICK)
    # non-preemptive: be3 + push 3 + pull 3 + pull 1 + forward 1..3 (const: 3 + 3 + 1 ticks)
    row = _kernel(job, preemptive=False, track=True)[:, 0, 0]
    assert tuple(row[1:]) == (7 * TICK, 0.0, 7 * TICK)


# --- (b) one layer: nothing to reorder ------------------------------------------------------------


@given(
    small_jobs().filter(lambda j: j.profile.layers == 1)
    | st.builds(
        lambda f, b, c, upd: _job([f], [b], [c], ps_nic=0.5, upd=upd),
        st.integers(1, 9),
        ticks,
        ticks,
        st.sampled_from([0.0, 2.0**-18]),
    )
)
def test_single_layer_equals_wfbp(job):
    for preemptive in (True, False):
        np.testing.assert_allclose(_kernel(job, preemptive)[0], _wfbp(job), rtol=1e-13)


# --- (c) the vectorised kernel against the brute-force simulation -------------------------------


@pytest.mark.parametrize("preemptive", [True, False])
@given(job=small_jobs())
def test_kernel_matches_brute_force(preemptive, job):
    tau = _kernel(job, preemptive)[0]
    for w in GRID:
        for p in GRID:
            periods = _brute_periods(*_inputs(job, w, p), preemptive)
            # the period is reached from the first iteration on (see _wfbp_prefetch)
            np.testing.assert_array_equal(periods, periods[0])
            assert tau[w - 1, p - 1] == periods[0]


def test_kernel_matches_brute_force_on_long_networks(rng):
    # more than 64 layers (multi-word bitsets), releases out of layer order (update times)
    for n, upd in ((70, 0.0), (130, 2.0**-18)):
        f, b, c = rng.integers(1, 9, n), rng.integers(0, 9, n), rng.integers(0, 9, n)
        job = _job(f, b, c, ps_nic=2.0, upd=upd)
        for preemptive in (True, False):
            tau = _kernel(job, preemptive)[0]
            for w, p in ((1, 1), (4, 2), (2, 4)):
                periods = _brute_periods(*_inputs(job, w, p), preemptive, iterations=3)
                assert tau[w - 1, p - 1] == periods[-1]


# --- (d) ordering and monotonicity ----------------------------------------------------------------


@given(job=small_jobs())
def test_ordering_of_pull_rules(job):
    pre, non, wf = _kernel(job, True)[0], _kernel(job, False)[0], _wfbp(job)
    w = np.arange(1, 5.0)[:, None]
    cs = job.global_batch / w if job.batch_mode == "global" else job.per_worker_batch
    compute = cs * (job.profile.forward_total_s + job.profile.backward_total_s)
    tol = 1e-12 * wf
    assert np.all(compute <= pre + tol) and np.all(pre <= non + tol) and np.all(non <= wf + tol)


@given(
    job=small_jobs(),
    layer=st.integers(0, 4),
    extra=st.integers(1, 8),
    faster=st.sampled_from([1.25, 2.0, 4 / 3]),
)
def test_preemptive_is_monotone(job, layer, extra, faster):
    # tau is the optimum of max_l (D_l + q_l) over preemptive pull schedules (see _wfbp_prefetch):
    # larger pulls, later releases give no better optimum; faster NICs and more PSs give smaller c_l.
    prof = job.profile
    s = prof.param_bytes.copy()
    s[layer % prof.layers] += extra * BYTES_PER_TICK
    grown = job.replace(
        profile=LayerProfile(
            prof.names, prof.forward_s, prof.backward_s, s, update_s_per_byte=prof.update_s_per_byte
        )
    )
    fps = job.replace(ps_demand={"bw_gbps": job.ps_demand["bw_gbps"] * faster})
    fw = job.replace(
        worker_demand={**job.worker_demand, "bw_gbps": job.worker_demand["bw_gbps"] * faster}
    )
    base, big, ps, wk = (
        iteration_time_grid([j], "wfbp_prefetch")[0] for j in (job, grown, fps, fw)
    )
    tol = 1e-12 * base
    assert np.all(big >= base - tol)
    assert np.all(ps <= base + tol) and np.all(wk <= base + tol)
    assert np.all(np.diff(base, axis=1) <= tol[:, 1:])


# The non-preemptive rule is not monotone: one base network, f = (16, 4, 4), b = (12, 16, 4),
# c = (4, 12, 16) ticks, w = p = 1. From a backward start: pushes 3: [4, 20], 2: [20, 32],
# 1: [32, 36]; pull 3 [20, 36]; at 36 both 2 and 1 wait, 1 first [36, 40], 2 [40, 52];
# tau = max(40 + 24, 52 + 8, 36 + 4) = 64.
#  * c3 = 4 instead (s_3 four times smaller): pull 3 [8, 12], pull 2 starts at once [32, 44],
#    layer 1 (released at 36) waits: [44, 48], tau = 48 + 24 = 72 > 64.
#  * every c_l times 3/4 (a 4/3 faster NIC, or p 3 -> 4 at w = 4 when the PS NIC binds): pushes
#    3: [4, 16], 2: [20, 29], 1: [32, 35]; pull 3 [16, 28], 2 [29, 38], 1 waits: [38, 41],
#    tau = 41 + 24 = 65 > 64.
# Preemptive, layer 1 interrupts pull 2 at its release and waits for no one: tau = 40 + 24 = 64 for
# the base and with c3 = 4, and 38 + 24 = 62 with every c_l times 3/4.
BASE = dict(f=[16, 4, 4], b=[12, 16, 4])


def test_nonpreemptive_anomaly_in_layer_size():
    big, small = _job(c=[4, 12, 16], **BASE), _job(c=[4, 12, 4], **BASE)
    assert _kernel(big, False)[0, 0, 0] == 64 * TICK < _kernel(small, False)[0, 0, 0] == 72 * TICK
    assert _kernel(small, True)[0, 0, 0] == _kernel(big, True)[0, 0, 0] == 64 * TICK


def test_nonpreemptive_anomaly_in_bandwidth_and_ps():
    slow = _job(c=[4, 12, 16], **BASE)
    faster_w = _job(c=[4, 12, 16], worker_nic=4 / 3, ps_nic=4, **BASE)
    faster_ps = _job(c=[4, 12, 16], worker_nic=4, ps_nic=4 / 3, **BASE)
    assert _kernel(slow, False)[0, 0, 0] == 64 * TICK
    for fast in (faster_w, faster_ps):
        assert _kernel(fast, False)[0, 0, 0] == pytest.approx(65 * TICK, rel=1e-12)
        assert _kernel(fast, True)[0, 0, 0] == pytest.approx(62 * TICK, rel=1e-12)
    # PS-bound at w = 4 (per-worker batch 1: compute does not shrink): c = s * 4 / p, so p = 3 gives
    # the base times and p = 4 the 3/4 ones
    ps_bound = _job(f=BASE["f"], b=BASE["b"], c=[3, 9, 12], worker_nic=64, mode="per_worker")
    tau = _kernel(ps_bound, False)[0]
    assert tau[3, 2] == pytest.approx(64 * TICK, rel=1e-12) and tau[3, 3] == pytest.approx(
        65 * TICK, rel=1e-12
    )
    assert _kernel(ps_bound, True)[0, 3, 3] == pytest.approx(62 * TICK, rel=1e-12)


def test_nonpreemptive_anomaly_two_layers_update_time():
    # The smallest case hypothesis found. w = 1, batch 4: f = (4, 4), b = (0, 0), c = (2, 4) ticks,
    # PS updates u = (4, 8) / p ticks (only they change with p). Pushes end at 4 (layer 2), 6 (layer 1).
    #   p = 2: both pulls released at 8; 1 first [8, 10], 2 [10, 14]: tau = max(10 + 8, 14 + 4) = 18
    #   p = 3: 2 released at 6 2/3 goes first [6 2/3, 10 2/3]; 1 (released 7 1/3) waits: [10 2/3, 12 2/3],
    #          tau = 12 2/3 + 8 = 20 2/3 > 18. Preemptive: 1 interrupts 2 at 7 1/3, ends 9 1/3, tau 17 1/3.
    job = _job([1, 1], [0, 0], [1, 2], ps_nic=0.5, worker_nic=0.5, upd=2.0**-18, batch=4)
    non, pre = _kernel(job, False)[0, 0], _kernel(job, True)[0, 0]
    assert non[1] == 18 * TICK and non[2] == pytest.approx(62 / 3 * TICK, rel=1e-12)
    assert pre[1] == 18 * TICK and pre[2] == pytest.approx(52 / 3 * TICK, rel=1e-12)
