"""The exact MILP, the LP bound and LP rounding against brute-force enumeration (ground truth)."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from smdlab import Cluster
from smdlab.errors import SolverError
from smdlab.solve import GUROBI_SIZE_LIMIT, build_instance, solve
from smdlab.solve.backends import FlatModel, solve_flat
from smdlab.solve.cases import small_instance
from smdlab.solve.instance import fits

SEEDS = range(60)
REL = 1e-9


def _gurobi_works() -> bool:
    try:
        import gurobipy as gp

        with gp.Env(empty=True) as env:
            env.setParam("OutputFlag", 0)
            env.start()
        return True
    except Exception:
        return False


GUROBI = _gurobi_works()


def _use(jobs, cluster, workers, ps) -> np.ndarray:
    return sum(
        w * cluster.vector(j.worker_demand) + p * cluster.vector(j.ps_demand)
        for j, w, p in zip(jobs, workers, ps)
    )


@pytest.mark.parametrize("seed", SEEDS)
def test_milp_equals_brute_and_orders_bounds(seed):
    jobs, cluster = small_instance(seed)
    brute = solve(jobs, cluster, "brute")
    milp = solve(jobs, cluster, "milp", mip_gap=0, backend="highs")
    lp = solve(jobs, cluster, "lp", backend="highs")
    assert milp.status == "optimal"
    assert milp.objective == pytest.approx(brute.objective, rel=REL)
    assert lp.objective <= milp.objective * (1 + REL)
    assert milp.lower_bound <= milp.objective * (1 + REL)
    cap = cluster.capacity_vector
    heuristics = [
        solve(jobs, cluster, "lp_round", backend="highs"),
        *(
            solve(jobs, cluster, "smd", knapsack=k, backend="highs")
            for k in ("exact", "lp_round", "greedy", "hull")
        ),
    ]
    for sol in (brute, milp, *heuristics):
        assert sol.objective >= milp.objective * (1 - REL), sol.method
        assert sol.lower_bound <= milp.objective * (1 + REL), sol.method
        use = _use(jobs, cluster, sol.workers, sol.ps)
        assert np.all(use <= cap + 1e-9), (sol.method, use, cap)
        for j, w, p in zip(jobs, sol.workers, sol.ps):
            assert (w == 0) == (p == 0) and w <= j.max_workers and p <= j.max_ps


def test_instances_cover_both_regimes():
    # the seeds above include instances where every job fits at (1, 1) and where some must wait
    tight = []
    for s in SEEDS:
        jobs, cluster = small_instance(s)
        inst = build_instance(jobs, cluster, cluster.capacity_vector)
        tight.append(not fits(inst.base_use.sum(axis=0), inst.capacity))
    assert 10 <= sum(tight) <= len(tight) - 10


@pytest.mark.parametrize("seed", SEEDS)
def test_no_job_waits_when_all_fit_at_their_largest_configuration(seed):
    jobs, tight = small_instance(seed)
    inst = build_instance(jobs, tight, tight.capacity_vector)
    caps_w = np.array([j.max_workers for j in jobs])
    caps_p = np.array([j.max_ps for j in jobs])
    top = caps_w @ inst.alpha + caps_p @ inst.gamma
    # every job can take any configuration at once: waiting (H + a duration) never pays
    cluster = Cluster.pooled(
        tight.resources, **{r: float(np.ceil(b)) + 1 for r, b in zip(tight.resources, top)}
    )
    for method in ("brute", "milp", "lp_round", "smd"):
        assert all(w > 0 for w in solve(jobs, cluster, method).workers), method


@pytest.mark.parametrize("seed", SEEDS)
def test_lp_round_additive_bound(seed):
    jobs, cluster = small_instance(seed)
    sol = solve(jobs, cluster, "lp_round", backend="highs")
    lp = solve(jobs, cluster, "lp", backend="highs")
    inst = build_instance(jobs, cluster, cluster.capacity_vector)
    fractional = [
        i
        for i, entries in enumerate(lp.fractional)
        if len(entries) > 1 or (entries and entries[0][2] < 1 - 1e-6)
    ]
    # a simplex vertex has at most K fractional jobs (n convexity rows + K capacity rows)
    assert len(fractional) <= inst.K
    assert sol.objective <= sol.lower_bound + sol.rounding_bound + 1e-9 * sol.objective
    # and the bound is the sum of at most K single-job cost increases over their LP cost
    fallback = inst.defer_cost if inst.allow_defer else inst.cost[:, 0, 0]
    assert sol.rounding_bound <= sum(fallback[i] for i in fractional) + 1e-9 * sol.objective


def test_lp_fractional_solution_is_consistent():
    jobs, cluster = small_instance(3)
    lp = solve(jobs, cluster, "lp", backend="highs")
    inst = build_instance(jobs, cluster, cluster.capacity_vector)
    value = 0.0
    use = np.zeros(inst.K)
    for i, entries in enumerate(lp.fractional):
        share = sum(v for _, _, v in entries)
        assert share <= 1 + 1e-9
        if not inst.allow_defer:
            assert share == pytest.approx(1.0)
        value += (
            sum(v * inst.cost[i, w - 1, p - 1] for w, p, v in entries)
            + (1 - share) * inst.defer_cost[i]
        )
        use += sum(v * (w * inst.alpha[i] + p * inst.gamma[i]) for w, p, v in entries)
    assert value == pytest.approx(lp.objective, rel=1e-9)
    assert np.all(use <= inst.capacity + 1e-6)


@pytest.mark.skipif(not GUROBI, reason="gurobipy not usable here")
@pytest.mark.parametrize("seed", range(12))
def test_gurobi_and_highs_agree(seed):
    jobs, cluster = small_instance(seed)
    g = solve(jobs, cluster, "milp", backend="gurobi", mip_gap=0)
    h = solve(jobs, cluster, "milp", backend="highs", mip_gap=0)
    assert g.backend == "gurobi" and h.backend == "highs" and not g.fallback
    assert g.objective == pytest.approx(h.objective, rel=1e-9)
    gl = solve(jobs, cluster, "lp", backend="gurobi")
    hl = solve(jobs, cluster, "lp", backend="highs")
    assert gl.objective == pytest.approx(hl.objective, rel=1e-9)
    assert solve(jobs, cluster, "milp").backend == "gurobi"  # auto picks Gurobi for a small model


def _big_model(m: int = 2600, n: int = 200, K: int = 3) -> FlatModel:
    rng = np.random.default_rng(7)
    group = np.sort(rng.integers(0, n, m))
    group[:n] = np.arange(n)  # every row has a column
    use = rng.uniform(0.1, 1.0, (m, K))
    return FlatModel(rng.uniform(1, 10, m), use, group, n, np.full(K, 0.6 * n), eq=True)


def test_gurobi_size_limit_falls_back_to_highs():
    model = _big_model()
    assert model.size[0] > GUROBI_SIZE_LIMIT
    forced = solve_flat(model, integral=False, backend="gurobi")
    assert forced.backend == "highs"
    assert forced.note.startswith("fallback to HiGHS")
    if GUROBI:
        assert "10010" in forced.note  # the size-limited pip licence refuses the model
    auto = solve_flat(model, integral=False, backend="auto")
    assert auto.backend == "highs" and "over the gurobipy pip licence limit" in auto.note
    assert forced.objective == pytest.approx(auto.objective, rel=1e-9)


def test_solution_records_the_fallback():
    # a solve-level model over 2000 columns: 120 jobs with many undominated configurations
    from smdlab.solve.cases import small_job

    rng = np.random.default_rng(5)
    jobs = [small_job(rng, f"j{i}", max_workers=16, max_ps=16) for i in range(120)]
    cluster = Cluster.pooled(gpu=200, cpu=1200, mem_gb=8000, bw_gbps=4000)
    inst = build_instance(jobs, cluster, cluster.capacity_vector)
    assert inst.pareto.sum() > GUROBI_SIZE_LIMIT
    sol = solve(jobs, cluster, "lp", backend="gurobi")
    assert sol.backend == "highs" and sol.fallback and "fallback to HiGHS" in sol.note


def test_time_limit_without_incumbent_raises():
    with pytest.raises(SolverError):
        solve_flat(_big_model(6000, 1500), integral=True, backend="highs", time_limit=1e-6)


def test_time_limit_reports_incumbent_and_bound():
    jobs, cluster = small_instance(4, jobs=4)
    sol = solve(jobs, cluster, "milp", backend="highs", time_limit=1e-6)
    assert sol.status in ("optimal", "time_limit")
    assert sol.lower_bound <= sol.objective
    if sol.status == "time_limit":
        assert "time limit" in sol.note


@pytest.mark.parametrize("bound", [-math.inf, 1.0])
def test_a_stopped_milp_notes_the_limit_and_keeps_a_valid_bound(monkeypatch, bound):
    """The time-limit branch, forced (a 1e-6 s limit reaches it only on a loaded machine)."""
    import smdlab.solve.api as api

    real = api.knapsack_exact

    def stopped(*args, **kwargs):
        r = real(*args, **kwargs)
        return dataclasses.replace(r, status="time_limit", bound=min(bound, r.objective))

    monkeypatch.setattr(api, "knapsack_exact", stopped)
    jobs, cluster = small_instance(4, jobs=4)
    sol = solve(jobs, cluster, "milp", backend="highs", time_limit=5.0)
    assert sol.status == "time_limit"
    assert "MILP stopped by its time limit" in sol.note
    assert 0 < sol.lower_bound <= sol.objective
    assert ("Lagrangian" in sol.note) == (bound == -math.inf)
