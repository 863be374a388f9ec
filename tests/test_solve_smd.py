"""SMD: Jong's parametric iteration (Dinkelbach for one ratio, global optimum for concave speeds),
the outer job selection and the smd method on realistic instances."""

from __future__ import annotations

import numpy as np
import pytest

from smdlab import Cluster
from smdlab.errors import InvalidInput
from smdlab.solve import build_instance, select_jobs, solve, sum_of_ratios
from smdlab.solve.cases import benchmark_instance, small_instance, small_job


def _dinkelbach(N, D, ok, q):
    """Dinkelbach's method for min N/D over the configurations where ``ok``; its q sequence."""
    qs = [q]
    for _ in range(100):
        val = np.where(ok, N - q * D, np.inf)
        i = np.unravel_index(np.argmin(val), val.shape)
        q_new = N[i] / D[i]
        qs.append(q_new)
        if q_new >= q * (1 - 1e-14):
            break
        q = q_new
    return qs


@pytest.mark.parametrize("seed", range(25))
def test_one_job_is_dinkelbach(seed):
    rng = np.random.default_rng(seed)
    W, P = 12, 10
    w = np.arange(1, W + 1)[:, None]
    p = np.arange(1, P + 1)[None, :]
    # a numerator that grows with the allocation and a non-concave denominator: several Dinkelbach steps
    D = (
        rng.uniform(1, 3) * np.log1p(w)
        + rng.uniform(0.2, 1) * np.sqrt(p)
        + rng.uniform(0, 1, (W, P))
    )
    N = (
        rng.uniform(2, 10)
        + rng.uniform(0, 1) * w
        + rng.uniform(0, 1) * p
        + rng.uniform(0, 0.5, (W, P))
    )
    alpha, gamma = np.array([[1.0, 2.0]]), np.array([[1.0, 0.5]])
    cap = np.array([rng.uniform(4, 14), rng.uniform(6, 20)])
    use = w[..., None] * alpha[0] + p[..., None] * gamma[0]
    ok = np.all(use <= cap, axis=-1)
    r = sum_of_ratios(
        N[None], D[None], alpha, gamma, cap, knapsack="exact", start=(np.array([1]), np.array([1]))
    )
    qs = _dinkelbach(N, D, ok, N[0, 0] / D[0, 0])
    betas = [t.beta[0] for t in r.trace]
    # Jong's parameters after each (full) Newton step are Dinkelbach's q_k, and both end at the optimum
    assert all(t.step == 1.0 for t in r.trace[1:])
    assert betas == pytest.approx(qs[: len(betas)], rel=1e-12)
    assert r.objective == pytest.approx(np.where(ok, N / D, np.inf).min(), rel=1e-12)
    assert r.converged


def _continuous_optimum(N, a, b, step, xmax, C):
    """min sum N_i / (a_i log(1 + b_i x_i)) s.t. sum x_i <= C, step <= x_i <= xmax, by KKT + bisection."""

    def g(x):  # -d/dx (N / S) per job: decreasing in x for concave increasing S
        return N * a * b / (1 + b * x) / (a * np.log1p(b * x)) ** 2

    def x_of(mu):  # each job's x with g(x) = mu, clipped to [step, xmax]
        lo, hi = np.full(len(N), step), np.full(len(N), xmax)
        for _ in range(100):
            mid = 0.5 * (lo + hi)
            right = g(mid) > mu
            lo, hi = np.where(right, mid, lo), np.where(right, hi, mid)
        return np.where(
            g(np.full(len(N), xmax)) >= mu, xmax, np.where(g(np.full(len(N), step)) <= mu, step, lo)
        )

    lo, hi = 1e-12, 1e12
    for _ in range(200):
        mid = np.sqrt(lo * hi)
        lo, hi = (mid, hi) if x_of(mid).sum() > C else (lo, mid)
    x = x_of(hi)
    return float(np.sum(N / (a * np.log1p(b * x)))), x


@pytest.mark.parametrize(
    ("seed", "knapsack"), [(s, "exact") for s in range(3)] + [(s, "hull") for s in range(8)]
)
def test_concave_speeds_reach_the_continuous_optimum(seed, knapsack):
    rng = np.random.default_rng(seed)
    n, step, W = 3, 0.05, 200  # x_i = step * w on a fine grid; one resource, PSs free
    N = rng.uniform(1, 10, n)
    a = rng.uniform(0.5, 2, n)
    b = rng.uniform(0.2, 3, n)
    C = float(rng.uniform(2, 6))
    x = step * np.arange(1, W + 1)
    D = (a[:, None] * np.log1p(b[:, None] * x[None, :]))[:, :, None]
    alpha = np.full((n, 1), step)
    gamma = np.zeros((n, 1))
    r = sum_of_ratios(N, D, alpha, gamma, np.array([C]), knapsack=knapsack, max_iter=60)
    best, xc = _continuous_optimum(N, a, b, step, x[-1], C)
    # the grid restricts the continuous problem; rounding its optimum down onto the grid is feasible
    grid = np.maximum(np.floor(xc / step + 1e-9), 1) * step
    rounded = float(np.sum(N / (a * np.log1p(b * grid))))
    assert best * (1 - 1e-9) <= r.objective <= rounded * (1 + 1e-9)


def test_trace_records_iterations():
    jobs, cluster = small_instance(8, jobs=4, tightness=0.6)
    sol = solve(jobs, cluster, "smd", knapsack="exact")
    assert sol.trace and sol.trace[0].iteration == 0
    assert [t.iteration for t in sol.trace] == list(range(len(sol.trace)))
    assert all(t.knapsack_time_s >= 0 and t.knapsack_solves >= 1 for t in sol.trace)
    assert (
        sol.objective <= min(t.objective for t in sol.trace) + 1e-9 * sol.objective
        or sol.placement is not None
    )
    frame = sol.trace_frame()
    assert list(frame.columns[:4]) == ["iteration", "psi_norm", "objective", "knapsack_time_s"]


@pytest.mark.parametrize("rule", ["smith", "objective"])
def test_outer_selection_is_the_optimal_knapsack(rule):
    rng = np.random.default_rng(3)
    jobs = [small_job(rng, f"j{i}", ("gpu", "bw_gbps")) for i in range(6)]
    # room for about three jobs at (1, 1) (each needs 1 or 2 GPUs per worker)
    cluster = Cluster.pooled(("gpu", "bw_gbps"), gpu=6, bw_gbps=1000)
    inst = build_instance(jobs, cluster, cluster.capacity_vector)
    chosen, _ = select_jobs(inst, rule=rule, backend="highs")
    if rule == "objective":
        # the jobs the rounded LP relaxation of (P) starts
        from smdlab.solve.knapsack import knapsack_lp_round

        r = knapsack_lp_round(
            inst.cost, inst.alpha, inst.gamma, inst.capacity, inst.defer_cost,
            backend="highs", mask=inst.pareto, fill=False,
        )  # fmt: skip
        assert tuple(chosen) == tuple(r.workers > 0)
        milp = solve(jobs, cluster, "milp", backend="highs")
        assert solve(jobs, cluster, "smd").objective <= milp.objective * 1.02
        return
    profit = inst.weight / inst.duration[:, 0, 0]
    best = -1.0
    for mask in range(1 << len(jobs)):
        pick = np.array([(mask >> i) & 1 for i in range(len(jobs))], dtype=bool)
        if np.all(inst.base_use[pick].sum(axis=0) <= inst.capacity):
            best = max(best, profit[pick].sum())
    assert profit[chosen].sum() == pytest.approx(best)
    sol = solve(jobs, cluster, "smd", selection=rule)
    assert tuple(w > 0 for w in sol.pooled_workers) == tuple(chosen)
    assert sol.selected == tuple(bool(c) for c in chosen)


def test_default_knapsack_and_bad_options():
    jobs, cluster = small_instance(2)
    assert solve(jobs, cluster, "smd").knapsack == "hull"
    with pytest.raises(InvalidInput, match="knapsack"):
        solve(jobs, cluster, "smd", knapsack="simplex")
    with pytest.raises(InvalidInput, match="xi and eps"):
        sum_of_ratios(
            np.ones(1), np.ones((1, 1, 1)), np.ones((1, 1)), np.ones((1, 1)), np.ones(1), xi=1.5
        )


def test_smd_on_bundled_networks_is_close_to_milp():
    from smdlab.solve.cases import benchmark_instance

    jobs, cluster = benchmark_instance(20, seed=1)
    milp = solve(jobs, cluster, "milp", backend="highs", place=False)
    smd = solve(jobs, cluster, "smd", place=False)
    assert milp.status == "optimal"
    assert milp.objective <= smd.objective <= 1.02 * milp.objective
    assert smd.lower_bound <= milp.objective * (1 + 1e-9)


@pytest.mark.parametrize("seed", range(6))
def test_hull_knapsack_equals_its_sequential_rule(seed):
    # the vectorised rounds must do exactly what the one-segment-at-a-time rule does
    from smdlab.solve.knapsack_hull import HullKnapsack

    rng = np.random.default_rng(seed)
    jobs = [small_job(rng, f"j{i}", max_workers=8, max_ps=8) for i in range(25)]
    # every job fits at (1, 1) at half this capacity; at full capacity most upgrades fit too
    cluster = Cluster.pooled(gpu=150, cpu=600, mem_gb=4000, bw_gbps=3000)
    inst = build_instance(jobs, cluster, cluster.capacity_vector * rng.uniform(0.5, 1.0))
    assert np.all(inst.base_use.sum(axis=0) <= inst.capacity)
    h = HullKnapsack(inst.speed, inst.pareto, inst.alpha, inst.gamma, inst.capacity)
    assert np.all(h.seg_duse >= 0)  # upgrades only add tasks
    for _ in range(10):
        lam = rng.uniform(0.1, 10, inst.n)
        w, p = h.solve(lam)
        order = np.argsort(-lam[h.seg_job] * h.seg_slope, kind="stable")
        used = inst.base_use.sum(axis=0)
        ref_w, ref_p, closed = np.ones(inst.n, int), np.ones(inst.n, int), set()
        for s in order:
            i = h.seg_job[s]
            if i in closed:
                continue
            if np.all(used + h.seg_duse[s] <= inst.capacity + h.tol):
                used = used + h.seg_duse[s]
                ref_w[i], ref_p[i] = h.seg_w[s], h.seg_p[s]
            else:
                closed.add(i)
        assert np.array_equal(w, ref_w) and np.array_equal(p, ref_p)
        assert np.all(inst.use(w, p) <= inst.capacity + 1e-9)


def test_greedy_takes_single_steps_by_gain_per_resource():
    # one resource, two jobs, concave gains: the greedy of the specification is then optimal
    from smdlab.solve.knapsack import knapsack_greedy

    x = np.arange(1, 9, dtype=float)
    obj = np.stack([10 / np.sqrt(x), 4 / np.log1p(x)])[:, :, None]
    r = knapsack_greedy(obj, np.ones((2, 1)), np.zeros((2, 1)), np.array([9.0]))
    best = min(obj[0, a - 1, 0] + obj[1, 9 - a - 1, 0] for a in range(1, 9))
    assert r.workers.sum() == 9 and r.objective == pytest.approx(best)


def test_objective_selection_matches_the_milp_on_tight_instances():
    from smdlab.solve.cases import benchmark_instance

    jobs, cluster = benchmark_instance(20, seed=2, fraction=0.04)
    assert build_instance(jobs, cluster, cluster.capacity_vector).allow_defer
    milp = solve(jobs, cluster, "milp", backend="highs", place=False)
    smith = solve(jobs, cluster, "smd", place=False)
    objective = solve(jobs, cluster, "smd", selection="objective", place=False)
    assert milp.objective <= objective.objective <= 1.02 * milp.objective
    assert milp.objective <= smith.objective  # Smith's rule optimises another criterion


def _mixed_caps_jobs(n: int, fraction: float, seed: int = 3):
    """``n`` benchmark jobs with caps 1, 2, 4 or 8 (tables of four shapes) and their cluster."""
    jobs, cl = benchmark_instance(n, seed=seed, fraction=fraction, caps=8)
    caps = [1, 2, 4, 8]
    jobs = [j.replace(max_workers=caps[i % 4], max_ps=caps[i % 4]) for i, j in enumerate(jobs)]
    return jobs, cl


def test_reference_and_horizon_equal_the_dense_grid_formula():
    jobs, cl = _mixed_caps_jobs(24, 0.3)
    inst = build_instance(jobs, cl, cl.capacity_vector)
    # the definition on the instance's padded (n, W, P) grids
    d = inst.duration
    others = (inst.weight.sum() - inst.weight) / 2.0
    score = inst.weight[:, None, None] * d + others[:, None, None] * inst.share * d
    flat = np.where(inst.fits_alone, score, np.inf).reshape(inst.n, -1)
    k = np.argmin(flat, axis=1)
    k = np.where(np.isfinite(flat[np.arange(inst.n), k]), k, 0)
    P = d.shape[2]
    w, p = inst.reference
    np.testing.assert_array_equal(w, k // P + 1)
    np.testing.assert_array_equal(p, k % P + 1)
    assert len(set(w.tolist())) > 1  # not every job at (1, 1)
    rows = np.arange(inst.n)
    np.testing.assert_array_equal(inst.reference_duration, d[rows, w - 1, p - 1])
    assert inst.horizon == float(
        0.5 * np.sum(inst.share[rows, w - 1, p - 1] * d[rows, w - 1, p - 1])
    )


def test_slack_capacity_gives_every_job_its_fastest_configuration(monkeypatch):
    import smdlab.solve.smd as smd_module

    n = smd_module.SLACK_JOBS + 8
    jobs, cl = _mixed_caps_jobs(n, 1.0)  # the fastest configurations of all jobs fit at once
    fast = solve(jobs, cl, "smd", place=False, bound=False)
    inst = build_instance(jobs, cl, cl.capacity_vector)
    fastest = np.array([np.unravel_index(np.argmax(t), t.shape) for t in inst.tables]) + 1
    assert list(zip(fast.workers, fast.ps)) == [tuple(x) for x in fastest.tolist()]
    monkeypatch.setattr(smd_module, "SLACK_JOBS", 10**9)  # the full method on the same instance
    full = solve(jobs, cl, "smd", place=False, bound=False)
    assert fast.objective <= full.objective * (1 + 1e-12)  # the fast path is (P)'s optimum here
    monkeypatch.undo()
    tight_jobs, tight = _mixed_caps_jobs(n, 0.4)  # they do not fit: the method runs as before
    res = solve(tight_jobs, tight, "smd", place=False, bound=False)
    assert res.trace  # Jong's iteration ran


@pytest.mark.parametrize("seed", range(3))
def test_hull_segments_kept_per_job_row_are_those_of_one_pass(seed):
    from smdlab.caches import HULL_SEGMENTS
    from smdlab.solve.instance import pareto_mask
    from smdlab.solve.knapsack_hull import HullKnapsack, _hull_segments

    rng = np.random.default_rng(seed)
    n, W, P, K = 9, 6, 5, 3
    speed = np.cumsum(rng.uniform(0.0, 2.0, (n, W, P)), axis=1).cumsum(axis=2) + 1.0
    speed[rng.random((n, W, P)) < 0.15] = -np.inf
    speed[:, 0, 0] = 1.0
    ratio = -rng.uniform(1.0, 5.0, n)[:, None, None] / np.where(speed > 0, speed, np.nan)
    ratio = np.where(np.isfinite(ratio), ratio, -np.inf)
    mask = pareto_mask(np.where(speed > 0, -speed, np.inf))
    alpha = rng.uniform(0.5, 3.0, (n, K))
    gamma = rng.uniform(0.0, 2.0, (n, K))
    cap = rng.uniform(10.0, 30.0, K)
    scale = np.where(cap > 0, cap, 1.0)
    HULL_SEGMENTS.clear()
    # a subset first, so the full call below mixes kept rows and new ones
    HullKnapsack.several([speed[::2]], mask[::2], alpha[::2], gamma[::2], cap)
    for table, h in zip(
        (speed, ratio), HullKnapsack.several([speed, ratio], mask, alpha, gamma, cap)
    ):
        want = _hull_segments(table, mask, alpha, gamma, scale)
        got = (h.seg_job, h.seg_from, h.seg_to, h.seg_slope)
        assert all(np.array_equal(a, b) for a, b in zip(want, got))
        assert len(want[0]) > n
        for lam in (np.ones(n), rng.uniform(0.1, 3.0, n)):
            w, p = h.solve(lam)
            plain = HullKnapsack(table, mask, alpha, gamma, cap).solve(lam)
            assert w.tolist() == plain[0].tolist() and p.tolist() == plain[1].tolist()
