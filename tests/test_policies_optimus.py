"""Optimus: NNLS fit of its speed form, the marginal-gain rule, fewest-servers placement."""

from __future__ import annotations

import numpy as np
import pytest
from _policy_cases import alloc_of, cluster, job, queued, running, state

from smdlab import InvalidInput, Job, LayerProfile, iteration_time
from smdlab.model.optimus_form import SpeedModel, design_matrix, fit_speed_model
from smdlab.policies.ps.optimus import DEFAULT_PROFILE_POINTS, Optimus, profile_job
from smdlab.policies.toolkit import apply_decision
from smdlab.solve.placement import spread_tasks


def test_nnls_recovers_coefficients_of_its_own_form():
    truth = (2.0e-3, 0.05, 0.03, 0.002, 0.001)
    w = np.array([pt[0] for pt in DEFAULT_PROFILE_POINTS])
    p = np.array([pt[1] for pt in DEFAULT_PROFILE_POINTS])
    tau = design_matrix(w, p, 256) @ np.array(truth)
    for relative in (True, False):
        m = fit_speed_model(w, p, tau, 256, relative=relative)
        assert np.allclose(m.coef, truth, rtol=1e-6, atol=1e-12)
        assert m.rel_error < 1e-9
    assert np.isclose(m.speed(3, 2), 256 / (design_matrix([3], [2], 256) @ np.array(truth))[0])


def test_nnls_keeps_coefficients_nonnegative():
    w = np.array([1, 2, 4, 8, 1, 2])
    p = np.array([1, 1, 2, 4, 2, 2])
    tau = 1.0 / w + 0.1 - 0.001 * w  # a negative linear term the form cannot express
    m = fit_speed_model(w, p, tau, 1.0)
    assert min(m.coef) >= 0


def test_one_layer_sequential_model_is_exactly_optimus_form():
    # docs/model.md, Properties: L = 1, sequential, global batch, PS NIC binding -> Optimus' form, d = e = 0
    prof = LayerProfile(["l0"], [1e-4], [2e-4], [4e6])
    j = Job(
        "one", prof, 1e5, 128, {"gpu": 1, "bw_gbps": 10}, {"bw_gbps": 2}, max_workers=8, max_ps=8
    )
    m = profile_job(j, "sequential")
    assert m.rel_error < 1e-9
    for w, p in [(3, 1), (5, 7), (8, 8)]:
        assert np.isclose(m.iteration_time(w, p), iteration_time(j, w, p, "sequential"), rtol=1e-8)
    assert m.coef[3] < 1e-9 * m.coef[2] and m.coef[4] < 1e-9 * m.coef[2]


class _Fixed(Optimus):
    """Optimus with given speed models, to test the allocation rule on its own."""

    def __init__(self, models, **kw):
        super().__init__(**kw)
        self.fixed = models

    def model(self, job, mode):
        return self.fixed[job.name]


def _gains(model: SpeedModel, rem: float, w: int, p: int, du_w: float, du_p: float):
    t = lambda w_, p_: rem / float(model.speed(w_, p_))  # noqa: E731
    return (t(w, p) - t(w + 1, p)) / du_w, (t(w, p) - t(w, p + 1)) / du_p


def test_stops_when_no_addition_helps():
    flat = SpeedModel((1e-6, 0.01, 0.0, 0.5, 0.5), 128)  # every extra task slows the job down
    opt = _Fixed({"a": flat}, oracle=True)
    d = opt.decide(state(cluster(2), [queued(job("a"))]))
    assert alloc_of(d, "a") == (1, 1)


def test_every_job_starts_at_one_and_one_before_any_grows():
    cl = cluster(1, gpu=2)
    jobs = [job("a", samples=1e7), job("b", arrival=1.0, samples=1e3)]
    d = Optimus().decide(state(cl, [queued(j) for j in jobs]))
    # both GPUs go one to each job (the long job's second worker would save more, but b starts first);
    # spare CPU then goes to PSs
    assert alloc_of(d, "a")[0] == 1 and alloc_of(d, "b")[0] == 1


def test_fewest_servers_even_spread():
    free = np.array([[8, 64, 100], [8, 64, 100], [8, 64, 100]], dtype=float)
    wv, pv = np.array([1.0, 2, 5]), np.array([0.0, 2, 5])
    assert spread_tasks(free, 4, 2, wv, pv) == ((0, 4, 2),)
    tasks = spread_tasks(free, 12, 5, wv, pv)
    assert (
        len(tasks) == 2
        and sorted(t[1] for t in tasks) == [6, 6]
        and sorted(t[2] for t in tasks) == [2, 3]
    )
    free[0, 0] = 7  # machine 1 and 2 have the most room now: chosen first
    assert spread_tasks(free, 8, 4, wv, pv) == ((1, 8, 4),)


def test_profiling_noise_is_seeded_and_bad_options_raise():
    j = job("n")
    a, b, c = (Optimus(noise=0.1, seed=s).model(j, "wfbp") for s in (3, 3, 4))
    assert a.fit.coef == b.fit.coef and a.fit.coef != c.fit.coef
    with pytest.raises(InvalidInput, match="noise"):
        Optimus(noise=-1)
    with pytest.raises(InvalidInput, match="tau"):
        fit_speed_model([1, 2], [1, 1], [0.1], 32)


# ---- the source's rules ------------------------------------------------------------------------


def test_diagonal_profiling_as_in_the_source():
    from smdlab.policies.ps.optimus import DIAGONAL_POINTS, DIAGONAL_RANGE, diagonal_profile

    j = job("d", max_workers=4, max_ps=4)
    m = diagonal_profile(j, "wfbp", seed=1)
    pts = sorted(m.measured)
    assert len(pts) == DIAGONAL_POINTS and all(w == p for w, p in pts)
    assert all(DIAGONAL_RANGE[0] <= w <= DIAGONAL_RANGE[1] for w, _ in pts)  # not limited by caps
    _, b, c, d, e = m.fit.coef
    assert b == c and d == e  # the diagonal fixes only b + c and d + e: split evenly
    w0 = pts[0][0]
    exact = 128 / iteration_time(j.replace(max_workers=10, max_ps=10), w0, w0, "wfbp")
    assert np.isclose(m.speed(w0, w0), exact)  # a measured point is used as measured
    assert diagonal_profile(j, "wfbp", seed=1) == m  # seeded


def test_source_divides_by_the_raw_amount_not_by_the_share():
    # One machine: 3 GPUs, 15.5 Gbps (room for one task more than (1, 1)). A worker's dominant
    # resource is its GPU (share 1/3, raw amount 1), a PS's its bandwidth (share 5/15.5, raw 5).
    cl = cluster(1, gpu=3, cpu=100, bw_gbps=3 * 5 + 0.5)
    a = job("a", samples=1e5)
    model = SpeedModel((1e-3, 0.01, 0.05, 0.0, 0.0), 128)
    st = state(cl, [queued(a)])
    g_w, g_p = _gains(model, 1e5, 1, 1, 1.0, 1.0)  # raw time savings
    assert 0 < g_w < g_p < 5 * g_w  # so the two normalisations disagree
    share_w, share_p = 1 / 3, 5 / 15.5
    assert g_p / share_p > g_w / share_w  # by shares: a PS
    assert g_w / 1 > g_p / 5  # the source's rule (raw amounts): a worker
    src = _Fixed({"a": model}, oracle=True).decide(st)
    assert alloc_of(src, "a") == (2, 1)
    apply_decision(st, src)


def test_source_stops_at_the_first_addition_that_does_not_fit():
    # a's best addition is a worker, and no GPU is left for it; b's PS would fit and help.
    cl = cluster(1, gpu=2, cpu=100, bw_gbps=100)
    big = SpeedModel((4e-2, 0.01, 0.001, 0.0, 0.0), 128)  # compute-bound: wants workers
    comm = SpeedModel((1e-4, 0.01, 0.5, 0.0, 0.0), 128)  # PS-bound: wants PSs
    jobs = [job("a", samples=1e8), job("b", arrival=1.0, samples=1e3)]
    st = state(cl, [queued(j) for j in jobs])
    models = {"a": big, "b": comm}
    src = _Fixed(models, oracle=True).decide(st)
    assert alloc_of(src, "a") == (1, 1) and alloc_of(src, "b") == (1, 1)  # b's PS is not tried
    apply_decision(st, src)


def test_source_places_smaller_jobs_first_and_the_rest_wait_after_a_misfit():
    from smdlab.policies.ps.optimus import place_source

    cl = cluster(2, gpu=4, cpu=32, bw_gbps=100)
    free = np.array([[4, 32, 100], [4, 32, 100]], dtype=float)
    jobs = [job("big"), job("small", arrival=1.0)]
    out = place_source(cl, free, jobs, [(8, 1), (1, 1)])
    # ascending task count: small first, then big finds 7 GPUs for its 8 workers and runs on
    # what fits task by task (PS and worker alternately, first fit)
    assert out["small"] == ((0, 1, 1),)
    assert sum(w for _, w, _ in out["big"]) == 7 and sum(p for _, _, p in out["big"]) == 1
    # a job that fits nowhere (its PS needs 40 CPUs) ends the placement: the larger job after it
    # waits although it would fit
    jobs = [
        job("ok"),
        job("huge_ps", arrival=1.0, ps={"cpu": 40, "bw_gbps": 5}),
        job("after", arrival=2.0),
    ]
    out = place_source(cl, free, jobs, [(1, 1), (1, 1), (2, 1)])
    assert set(out) == {"ok"}


def test_remaining_work_estimate_from_the_loss_curve():
    from smdlab.policies.ps._convergence import (
        FALLBACK_EPOCHS,
        ConvergenceEstimator,
        converged_epoch,
    )

    est = ConvergenceEstimator(seed=0)
    errs = {0.2: [], 0.8: []}
    for i in range(12):
        j = job(f"j{i}", samples=1e6)
        epochs, a, b, c, _ = est.curve(j)
        assert converged_epoch(a, b, c) == epochs  # the true curve converges at the job's end
        # too few losses: the source's fallback of 20 more epochs
        assert np.isclose(est.remaining(j, 1e6), FALLBACK_EPOCHS * 1e6 / epochs)
        for f in errs:
            errs[f].append(abs(est.remaining(j, 1e6 * (1 - f)) - 1e6 * (1 - f)) / 1e6)
    assert np.mean(errs[0.8]) < np.mean(errs[0.2])  # more losses, a better estimate
    again = ConvergenceEstimator(seed=0)
    j = job("j3", samples=1e6)
    assert again.remaining(j, 4e5) == est.remaining(j, 4e5)  # seeded
    opt = Optimus(oracle=True)
    assert opt.remaining_estimate(j, 4e5) == 4e5
    assert Optimus().remaining_estimate(j, 4e5) == est.remaining(j, 4e5)


def test_source_rebuilds_every_slot_and_leaves_unchanged_jobs_alone():
    cl = cluster(1)
    r = running(job("r", samples=1e6), [(0, 2, 2)], remaining=5e5)
    q = job("q", arrival=1.0, samples=1e6)
    st = state(cl, [queued(q)], [r], execution="elastic")
    opt = Optimus()
    d = opt.decide(st)
    assert alloc_of(d, "q") is not None
    apply_decision(st, d)
    # the same jobs on the placements just decided: the rebuild finds them again, nothing moves
    placed = {a.job: a.placement.tasks for a in d.allocations}
    again = state(
        cl,
        [],
        [
            running(r.job, placed.get("r", r.placement.tasks), remaining=5e5),
            running(q, placed["q"]),
        ],
        execution="elastic",
    )
    assert opt.decide(again).allocations == () and opt.decide(again).preempt == ()
    with pytest.raises(InvalidInput, match=r"Optimus: variant is a former option, removed in 0\.2"):
        Optimus(variant="smdlab")
    with pytest.raises(
        InvalidInput, match=r"Optimus: points is a former option.*use noise and seed"
    ):
        Optimus(points=[(1, 1)])
    with pytest.raises(InvalidInput, match="oracle"):
        Optimus(oracle="yes")


def test_loss_fit_matches_scipy_curve_fit_on_the_same_weighted_problem():
    import math

    from scipy.optimize import curve_fit

    from smdlab.policies.ps._convergence import NUM_SEGMENTS, _fit, loss_curve

    rng = np.random.default_rng(0)
    for _ in range(12):
        n = int(rng.integers(3, 90))
        k = np.arange(1, n + 1, dtype=float)
        truth = rng.uniform(0.01, 0.5), rng.uniform(0.17, 0.33), rng.uniform(0.1, 1.5)
        y = loss_curve(k, *truth) * (1 + 0.02 * rng.standard_normal(n))
        sigma = 4.0 ** -(np.arange(n) // math.ceil(n / NUM_SEGMENTS))
        ours = _fit(k, y)
        ref = curve_fit(loss_curve, k, y, sigma=sigma, bounds=([0, 0, 0], [np.inf] * 3))[0]
        assert ours is not None
        sse_ours, sse_ref = (
            float((((y - loss_curve(k, *p)) / sigma) ** 2).sum()) for p in (ours, ref)
        )
        assert sse_ours <= sse_ref * (1 + 1e-6)


def test_loss_fits_shared_across_estimators_change_no_estimate():
    from smdlab.caches import OPTIMUS_FITS
    from smdlab.policies.ps._convergence import ConvergenceEstimator

    def estimates(seed: int, noise: float) -> list[float]:
        est = ConvergenceEstimator(noise, seed)
        return [est.remaining(job(f"j{i}", samples=1e6), r) for i in range(6) for r in (7e5, 2e5)]

    OPTIMUS_FITS.clear()
    cold = estimates(0, 0.02)
    other = estimates(1, 0.05)  # another seed and noise: other curves, other entries
    hits = OPTIMUS_FITS.hits
    warm = estimates(0, 0.02)
    assert OPTIMUS_FITS.hits == hits + len(warm)  # every fit of the second run is shared
    assert warm == cold
    assert other != cold
    OPTIMUS_FITS.clear()
    assert estimates(1, 0.05) == other
