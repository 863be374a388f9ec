"""CBA's closed-form split against brute force, and AutoCBA against its exact program."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from smdlab.errors import InvalidInput
from smdlab.solve.storage import (
    AutoCBAProblem,
    autocba_bound,
    autocba_exact,
    autocba_greedy,
    autocba_solve,
    cba_split,
    split_cost,
)


def _brute_split(d, a, cap, pool, pc, pb):
    """Minimum cost over every vertex of the split's LP (at most two variables off their bounds)."""
    n = len(d)
    best = math.inf
    for free in itertools.chain.from_iterable(
        itertools.combinations(range(n), r) for r in (0, 1, 2)
    ):
        rest = [k for k in range(n) if k not in free]
        for corner in itertools.product((0, 1), repeat=len(rest)):
            c = np.zeros(n)
            for k, on in zip(rest, corner):
                c[k] = d[k] * on
            # tight rows to fix the free variables: capacity sum c = cap, need sum a(1-c/d) = pool
            rows = []
            if math.isfinite(cap):
                rows.append((np.ones(n), cap))
            if math.isfinite(pool):
                rows.append((-a / d, pool - a.sum()))
            for tight in itertools.combinations(rows, len(free)):
                if free:
                    m = np.array([[r[0][k] for k in free] for r in tight])
                    rhs = np.array([r[1] - sum(r[0][k] * c[k] for k in rest) for r in tight])
                    if abs(np.linalg.det(m)) < 1e-12:
                        continue
                    c[list(free)] = np.linalg.solve(m, rhs)
                tol = 1e-9 * max(1.0, float(d.max()))
                if np.any(c < -tol) or np.any(c > d + tol) or c.sum() > cap + tol:
                    continue
                cost, need = split_cost(np.clip(c, 0, d), d, a, pc, pb)
                if need > pool + 1e-9 * max(1.0, pool):
                    continue
                best = min(best, cost)
    return best


@pytest.mark.parametrize("seed", range(60))
def test_cba_split_equals_brute_force(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 6))
    d = rng.uniform(1, 200, n)
    a = rng.uniform(0, 5, n)
    cap = float(rng.uniform(0, d.sum() * 1.2)) if seed % 5 else math.inf
    total = float(a.sum())
    pool = float(rng.uniform(0.3, 1.2) * total) if seed % 3 else math.inf
    pc, pb = float(rng.uniform(0, 0.1)), float(rng.uniform(0, 5))
    split = cba_split(d, a, cap, pool, pc, pb)
    brute = _brute_split(d, a, cap, pool, pc, pb)
    if math.isinf(brute):
        assert not split.feasible
        return
    assert split.feasible
    assert np.all(split.cache_gb >= 0) and np.all(split.cache_gb <= d + 1e-9)
    assert split.cache_gb.sum() <= cap + 1e-9
    assert split.remote_gbps <= pool + 1e-9
    assert split.cost == pytest.approx(brute, rel=1e-9, abs=1e-12)


def test_cba_split_is_a_corner_without_limits():
    d, a = np.array([100.0, 50.0]), np.array([2.0, 0.1])
    split = cba_split(d, a, math.inf, math.inf, cache_price=0.01, remote_price=1.0)
    # 2 GB/s over 100 GB saves 0.02 per GB-hour > 0.01: cache whole; 0.1/50 = 0.002 < 0.01: none
    assert split.cache_gb.tolist() == [100.0, 0.0]


def _problem(rng, n, k, budget_scale=0.5):
    gpus, value, remote = [], [], []
    for _ in range(n):
        opts = np.array([1, 2, 4])
        speed = opts ** float(rng.uniform(0.6, 0.95))
        kind = rng.integers(3)
        x = speed / speed[-1]
        v = x if kind == 0 else (np.sqrt(x) if kind == 1 else np.log1p(x) / math.log(2))
        gpus.append(opts)
        value.append(v * rng.uniform(0.5, 2))
        remote.append(speed * rng.uniform(0.05, 0.3))
    dataset = rng.integers(-1, k, n)
    sizes = rng.uniform(10, 100, k)
    full = 4 * n * 1.0 + sum(r[-1] for r in remote) * 0.5
    return AutoCBAProblem(
        tuple(gpus), tuple(value), tuple(remote), dataset, np.zeros(n, dtype=bool), sizes,
        1.0, 0.005, 0.5, budget_scale * full, float(rng.integers(n, 3 * n)), float(sizes.sum() * 0.6),
        math.inf,
    )  # fmt: skip


def _enumerate(p):
    best = -math.inf
    opts = [range(-1, len(g)) for g in p.gpus]
    for cached in itertools.product((False, True), repeat=len(p.sizes)):
        cached = np.array(cached)
        for choice in itertools.product(*opts):
            from smdlab.solve.storage import _evaluate

            w, _, ok = _evaluate(p, np.array(choice), cached)
            if ok:
                best = max(best, w)
    return best


@pytest.mark.parametrize("seed", range(6))
def test_autocba_exact_program_matches_enumeration(seed):
    p = _problem(np.random.default_rng(seed), 4, 2)
    assert autocba_exact(p).welfare == pytest.approx(_enumerate(p), rel=1e-9)


@pytest.mark.parametrize("seed", range(20))
def test_autocba_within_one_percent_of_exact(seed):
    rng = np.random.default_rng(100 + seed)
    p = _problem(
        rng, int(rng.integers(5, 25)), int(rng.integers(1, 4)), float(rng.uniform(0.2, 0.8))
    )
    exact = autocba_exact(p)
    got = autocba_solve(p)
    assert got.welfare >= exact.welfare * 0.99 - 1e-12
    assert got.cost <= p.budget * (1 + 1e-9) + 1e-9


@pytest.mark.parametrize("seed", range(8))
def test_autocba_bound_is_above_the_exact_optimum(seed):
    rng = np.random.default_rng(200 + seed)
    p = _problem(
        rng, int(rng.integers(4, 16)), int(rng.integers(1, 4)), float(rng.uniform(0.2, 0.8))
    )
    bound = autocba_bound(p)
    exact = autocba_exact(p).welfare
    assert bound >= exact * (1 - 1e-9) - 1e-9
    assert autocba_greedy(p).welfare <= bound * (1 + 1e-9) + 1e-9


def test_autocba_budget_below_minimum_names_it():
    rng = np.random.default_rng(7)
    p = _problem(rng, 4, 2)
    p = AutoCBAProblem(**{**p.__dict__, "required": np.ones(4, dtype=bool), "budget": 0.5})
    with pytest.raises(InvalidInput, match=r"autocba budget must be at least .* per hour; got 0.5"):
        autocba_greedy(p)
