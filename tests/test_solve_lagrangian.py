"""The Lagrangian lower bound: valid (never above the LP relaxation or the optimum) and close to the LP."""

from __future__ import annotations

import numpy as np
import pytest

from smdlab.errors import InvalidInput
from smdlab.solve import build_instance, solve
from smdlab.solve.api import SmdOptions
from smdlab.solve.cases import small_instance, tight_instance
from smdlab.solve.knapsack import knapsack_lp
from smdlab.solve.lagrangian import lagrangian_bound


def _instance(seed: int, tightness: float):
    jobs, cluster = small_instance(seed, tightness=tightness)
    return jobs, cluster, build_instance(jobs, cluster, cluster.capacity_vector)


@pytest.mark.parametrize("seed", range(30))
def test_bound_is_below_the_lp_and_the_optimum_and_close_to_the_lp(seed):
    tightness = (0.15, 0.3, 0.5, 0.8)[seed % 4]
    jobs, cluster, inst = _instance(seed, tightness)
    args = (inst.cost, inst.pareto, inst.alpha, inst.gamma, inst.capacity, inst.defer_cost)
    lp = knapsack_lp(
        inst.cost, inst.alpha, inst.gamma, inst.capacity, inst.defer_cost, mask=inst.pareto
    ).bound
    brute = solve(jobs, cluster, "brute").objective
    lag = lagrangian_bound(*args)
    scale = max(abs(lp), 1.0)
    assert lag.bound <= lp + 1e-9 * scale
    assert lag.bound <= brute + 1e-9 * scale
    assert lag.bound >= lp - 1e-3 * scale
    # any prices give a valid bound: the ones found, doubled, and none at all
    for prices in (2 * lag.prices, np.zeros(inst.K)):
        other = lagrangian_bound(*args, start=prices, max_evaluations=1)
        assert other.evaluations == 1 and other.bound <= lp + 1e-9 * scale


@pytest.mark.parametrize("seed", range(8))
def test_bound_without_deferral_is_below_the_lp(seed):
    *_, inst = _instance(seed, 0.6)
    capacity = np.maximum(inst.capacity, inst.base_use.sum(axis=0))  # every job fits at (1, 1)
    lp = knapsack_lp(inst.cost, inst.alpha, inst.gamma, capacity, mask=inst.pareto).bound
    lag = lagrangian_bound(inst.cost, inst.pareto, inst.alpha, inst.gamma, capacity)
    assert lp - 1e-3 * abs(lp) <= lag.bound <= lp + 1e-9 * abs(lp)


def test_smd_reports_the_lp_bound_by_default_and_the_lagrangian_on_request():
    jobs, cluster = tight_instance(40, 101)
    lag = solve(jobs, cluster, "smd", place=False, bound_method="lagrangian")
    lp = solve(jobs, cluster, "smd", place=False, backend="highs")
    assert lp.lower_bound == solve(jobs, cluster, "lp", backend="highs").objective
    milp = solve(jobs, cluster, "milp", place=False, backend="highs")
    assert lag.objective == lp.objective  # the bound never changes the allocation
    assert lag.lower_bound <= lp.lower_bound * (1 + 1e-9) <= milp.objective * (1 + 1e-9)
    assert lag.lower_bound >= lp.lower_bound * (1 - 1e-3)
    assert 0 <= lag.gap < 0.05


def test_bad_bound_method_and_settings_are_one_line_each():
    with pytest.raises(InvalidInput, match="bound_method must be one of lp, lagrangian"):
        SmdOptions(bound_method="dual")
    z = np.zeros((1, 1, 1))
    with pytest.raises(InvalidInput, match="rtol"):
        lagrangian_bound(z + 1, z > -1, np.ones((1, 1)), np.ones((1, 1)), np.ones(1), rtol=0)
    with pytest.raises(InvalidInput, match="max_evaluations"):
        lagrangian_bound(
            z + 1, z > -1, np.ones((1, 1)), np.ones((1, 1)), np.ones(1), max_evaluations=0
        )
