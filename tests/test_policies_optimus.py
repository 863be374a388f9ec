"""Optimus: NNLS fit of its speed form, the marginal-gain rule, fewest-servers placement."""

from __future__ import annotations

import numpy as np
import pytest
from _policy_cases import alloc_of, cluster, job, queued, state

from smdlab import InvalidInput, Job, LayerProfile, iteration_time
from smdlab.model.optimus_form import SpeedModel, design_matrix, fit_speed_model
from smdlab.policies.optimus import DEFAULT_PROFILE_POINTS, Optimus, profile_job
from smdlab.policies.stages import apply_decision
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

    def __init__(self, models):
        super().__init__()
        self.fixed = models

    def model(self, job, mode):
        return self.fixed[job.name]


def _gains(model: SpeedModel, rem: float, w: int, p: int, du_w: float, du_p: float):
    t = lambda w_, p_: rem / float(model.speed(w_, p_))  # noqa: E731
    return (t(w, p) - t(w + 1, p)) / du_w, (t(w, p) - t(w, p + 1)) / du_p


def test_marginal_gain_picks_the_best_addition():
    # room for both jobs at (1, 1) plus exactly one more task (5 GPUs, 5 CPU-only PS slots)
    cl = cluster(1, gpu=3, cpu=100, bw_gbps=5 * 5 + 0.5)
    a = job("a", samples=1e5)
    b = job("b", arrival=1.0, samples=1e5)
    compute_bound = SpeedModel((4e-3, 0.01, 0.001, 0.0, 0.0), 128)
    comm_bound = SpeedModel((1e-4, 0.01, 0.5, 0.0, 0.0), 128)
    opt = _Fixed({"a": compute_bound, "b": comm_bound})
    st = state(cl, [queued(a), queued(b)])
    d = opt.decide(st)
    # by hand: dominant share of a worker = 1/3 (GPU), of a PS = 5/25.5 (bandwidth)
    du_w, du_p = 1 / 3, 5 / 25.5
    ga = _gains(compute_bound, 1e5, 1, 1, du_w, du_p)
    gb = _gains(comm_bound, 1e5, 1, 1, du_w, du_p)
    best = max(
        [("a", "w", ga[0]), ("a", "p", ga[1]), ("b", "w", gb[0]), ("b", "p", gb[1])],
        key=lambda x: x[2],
    )
    expect = {"a": [1, 1], "b": [1, 1]}
    expect[best[0]][0 if best[1] == "w" else 1] += 1
    assert best[:2] == ("b", "p")  # the case is built so that the answer is not the first job
    assert alloc_of(d, "a") == tuple(expect["a"]) and alloc_of(d, "b") == tuple(expect["b"])
    apply_decision(st, d)


def test_stops_when_no_addition_helps():
    flat = SpeedModel((1e-6, 0.01, 0.0, 0.5, 0.5), 128)  # every extra task slows the job down
    opt = _Fixed({"a": flat})
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
    a = Optimus(noise=0.1, seed=3).model(j, "wfbp")
    b = Optimus(noise=0.1, seed=3).model(j, "wfbp")
    c = Optimus(noise=0.1, seed=4).model(j, "wfbp")
    assert a.coef == b.coef and a.coef != c.coef
    with pytest.raises(InvalidInput, match="noise"):
        Optimus(noise=-1)
    with pytest.raises(InvalidInput, match="tau"):
        fit_speed_model([1, 2], [1, 1], [0.1], 32)
