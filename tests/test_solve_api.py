"""The solve entry point: options, errors, the Solution record, a quiet stdout."""

from __future__ import annotations

import dataclasses
import json
import math
import subprocess
import sys
import typing

import numpy as np
import pytest

from smdlab import Cluster
from smdlab.errors import Infeasible, InvalidInput
from smdlab.solve import (
    METHODS,
    OPTIONS,
    SOLVE_OPTIONS,
    Method,
    SmdOptions,
    Solution,
    build_instance,
    solve,
)
from smdlab.solve.cases import small_instance, small_job


def test_solution_record_and_frame():
    jobs, cluster = small_instance(11, jobs=3)
    sol = solve(jobs, cluster, "milp", backend="highs")
    assert isinstance(sol, Solution)
    with pytest.raises(AttributeError):
        sol.objective = 0.0  # frozen
    frame = sol.to_frame()
    assert list(frame["job"]) == [j.name for j in jobs]
    assert {"job", "workers", "ps", "duration", "cost", "started"} <= set(frame.columns)
    inst = build_instance(jobs, cluster, cluster.capacity_vector)
    for row, w, p in zip(frame.itertuples(), sol.workers, sol.ps):
        if w:
            assert row.duration == pytest.approx(inst.duration[row.Index, w - 1, p - 1])
        else:
            assert math.isnan(row.duration) and row.ps == 0
    assert sol.objective == pytest.approx(frame["cost"].sum())
    assert sol.gap == pytest.approx((sol.objective - sol.lower_bound) / sol.objective)
    assert sol.allocation == {j.name: (w, p) for j, w, p in zip(jobs, sol.workers, sol.ps)}
    assert sol.wall_time_s > 0 and "milp" in repr(sol)


def test_not_started_jobs_are_charged_the_deferral_cost():
    jobs, cluster = small_instance(0, jobs=4, tightness=0.15)
    sol = solve(jobs, cluster, "milp", backend="highs")
    inst = build_instance(jobs, cluster, cluster.capacity_vector)
    assert inst.allow_defer
    # the reference configuration and H, recomputed configuration by configuration
    cap = cluster.capacity_vector
    omega = sum(j.weight for j in jobs)
    ref_d, squashed = [], 0.0
    for i, j in enumerate(jobs):
        best = None
        for w in range(1, j.max_workers + 1):
            for p in range(1, j.max_ps + 1):
                use = w * inst.alpha[i] + p * inst.gamma[i]
                if np.any(use > cap + 1e-9):
                    continue
                d = inst.duration[i, w - 1, p - 1]
                f = max(use[r] / cap[r] for r in range(len(cap)) if cap[r] > 0)
                score = j.weight * d + (omega - j.weight) / 2 * f * d
                if best is None or score < best[0]:
                    best = (score, d, f)
        ref_d.append(best[1])
        squashed += best[1] * best[2]
    assert inst.horizon == pytest.approx(squashed / 2)
    left_out = [i for i, w in enumerate(sol.workers) if w == 0]
    assert left_out
    for i in left_out:
        expected = jobs[i].weight * (inst.horizon + ref_d[i])
        assert sol.costs[i] == pytest.approx(expected)


@pytest.mark.parametrize("method", METHODS)
def test_every_method_runs_on_a_pooled_cluster(method):
    jobs, cluster = small_instance(5, jobs=3)
    sol = solve(jobs, cluster, method)
    assert sol.method == method and sol.placement is None
    assert sol.lower_bound <= sol.objective * (1 + 1e-9)


def test_bad_inputs_name_the_field():
    jobs, cluster = small_instance(1, jobs=2)
    with pytest.raises(InvalidInput, match="method"):
        solve(jobs, cluster, "simplex")
    with pytest.raises(InvalidInput, match="mip_gap"):
        solve(jobs, cluster, "smd", mip_gap=0.1)
    with pytest.raises(InvalidInput, match="backend"):
        solve(jobs, cluster, "milp", backend="cplex")
    with pytest.raises(InvalidInput, match="time_limit"):
        solve(jobs, cluster, "milp", time_limit=-1)
    with pytest.raises(InvalidInput, match="mode"):
        solve(jobs, cluster, "smd", mode="async")
    with pytest.raises(InvalidInput, match="place=True"):
        solve(jobs, cluster, "smd", place=True)
    with pytest.raises(InvalidInput, match="free"):
        solve(jobs, cluster, "smd", free=np.ones(7))
    with pytest.raises(InvalidInput, match="at least one job"):
        solve([], cluster)
    with pytest.raises(InvalidInput, match="unique"):
        solve([jobs[0], jobs[0]], cluster)


def test_each_method_has_one_options_dataclass_that_checks_its_fields():
    assert typing.get_args(Method) == METHODS  # the allowed values come from the Literal
    assert set(OPTIONS) == set(SOLVE_OPTIONS) == set(METHODS)
    for method, cls in OPTIONS.items():
        assert SOLVE_OPTIONS[method] == {f.name for f in dataclasses.fields(cls)}
    assert SOLVE_OPTIONS["brute"] == frozenset()
    assert SmdOptions().knapsack == "hull" and SmdOptions().bound is True
    for bad, message in (
        ({"bound": 1}, "bound must be True or False, got 1"),
        ({"polish": "no"}, "polish must be True or False, got 'no'"),
        ({"max_iter": -1}, r"max_iter must be an integer in \[0, 10000\]"),
        ({"knapsack": "dp"}, "knapsack must be one of exact, lp_round, greedy, hull"),
    ):
        with pytest.raises(InvalidInput, match=message):
            SmdOptions(**bad)
    jobs, cluster = small_instance(1, jobs=2)
    with pytest.raises(InvalidInput, match="place must be True, False or None, got 'yes'"):
        solve(jobs, cluster, "smd", place="yes")


def test_brute_refuses_large_instances():
    rng = np.random.default_rng(0)
    jobs = [small_job(rng, f"j{i}", max_workers=8, max_ps=8) for i in range(5)]
    cluster = Cluster.pooled(gpu=100, cpu=1000, mem_gb=10000, bw_gbps=10000)
    with pytest.raises(InvalidInput, match="brute enumerates at most"):
        solve(jobs, cluster, "brute")


def test_job_larger_than_the_cluster_is_infeasible():
    rng = np.random.default_rng(0)
    job = small_job(rng, "huge").replace(
        worker_demand={"gpu": 9, "cpu": 1, "mem_gb": 1, "bw_gbps": 1}
    )
    cluster = Cluster.homogeneous(1)  # 8 GPUs
    with pytest.raises(Infeasible, match="huge"):
        solve([job], cluster, "milp")


def test_free_capacity_limits_the_allocation():
    jobs, cluster = small_instance(6, jobs=3, tightness=0.7)
    half = cluster.capacity_vector / 2
    sol = solve(jobs, cluster, "milp", free=half)
    inst = build_instance(jobs, cluster, half)
    assert np.all(inst.use(np.array(sol.workers), np.array(sol.ps)) <= half + 1e-9)


def test_stdout_stays_clean():
    # HiGHS prints a banner at its first construction; solve must keep it off stdout (--json output)
    code = (
        "import json; from smdlab.solve import solve; from smdlab.solve.cases import small_instance;"
        "jobs, c = small_instance(2); s = solve(jobs, c, 'milp', backend='highs');"
        "s2 = solve(jobs, c, 'lp', backend='highs'); print(json.dumps({'objective': s.objective}))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert json.loads(out)["objective"] > 0
