"""An "optimal" that is optimal, and a time limit that limits the whole call."""

from __future__ import annotations

import dataclasses
import math
import sys
import time

import pytest

from smdlab.errors import InvalidInput, SolverError
from smdlab.solve import api, backends, knapsack, solve
from smdlab.solve.cases import benchmark_instance, tight_instance
from smdlab.solve.solution import OPTIMAL_GAP
from smdlab.viz.solution import exact_label


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("fraction", [0.3, 0.6])
def test_no_result_called_optimal_is_worse_than_smd_on_the_same_evaluation(seed, fraction):
    jobs, cluster = benchmark_instance(12, seed=seed, fraction=fraction)
    exact = solve(jobs, cluster, "milp", backend="highs")
    smd = solve(jobs, cluster, "smd", bound=False, backend="highs")
    # both placed on the same machines and priced by the same model
    assert exact.placement is not None and smd.placement is not None
    if exact.proven_optimal:
        assert exact.objective <= smd.objective * (1 + 1e-9)
        assert exact.gap <= OPTIMAL_GAP * (1 + 1e-9) and exact_label(exact) == "optimal"
    else:
        assert exact.gap > OPTIMAL_GAP and "above its bound" in exact_label(exact)
    pooled = solve(jobs, cluster, "milp", backend="highs", place=False)
    assert pooled.proven_optimal  # without placement the MILP's optimum is the problem's
    assert pooled.objective <= smd.objective * (1 + 1e-9)


def test_a_shrunk_or_stopped_exact_result_says_what_it_proved():
    jobs, cluster = benchmark_instance(8, seed=0)
    exact = solve(jobs, cluster, "milp", backend="highs", place=False)
    shrunk = dataclasses.replace(exact, gap=0.004, shrink_steps=3)
    assert not shrunk.proven_optimal
    assert exact_label(shrunk) == "pooled optimum, 0.400% above its bound (after placement)"
    stopped = dataclasses.replace(exact, status="time_limit", gap=0.02)
    assert exact_label(stopped) == "time limit, not proven optimal: 2.000% above its bound"


def test_the_time_limit_counts_the_time_spent_before_the_solver(monkeypatch):
    seen = []
    real_build, real_flat = api.build_instance, knapsack.solve_flat

    def slow_build(*args, **kwargs):
        time.sleep(0.3)  # building the instance takes its share of the budget
        return real_build(*args, **kwargs)

    def spy(model, **kwargs):
        seen.append(kwargs["time_limit"])
        return real_flat(model, **kwargs)

    monkeypatch.setattr(api, "build_instance", slow_build)
    monkeypatch.setattr(knapsack, "solve_flat", spy)
    jobs, cluster = benchmark_instance(8, seed=1)
    solve(jobs, cluster, "milp", backend="highs", time_limit=5.0)
    assert len(seen) == 1 and seen[0] <= 5.0 - 0.3


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"time_limit": 0}, "time_limit"),
        ({"time_limit": -1.0}, "time_limit"),
        ({"mip_gap": 1.0}, r"mip_gap must be a relative gap in \[0, 1\)"),
        ({"mip_gap": -0.1}, "mip_gap"),
    ],
)
def test_bad_limits_are_one_line(options, message):
    jobs, cluster = benchmark_instance(4, seed=0)
    with pytest.raises(InvalidInput, match=message):
        solve(jobs, cluster, "milp", **options)


def test_a_milp_stopped_by_its_limit_reports_it_and_the_gap_proven_then():
    jobs, cluster = tight_instance(200, 0, machines=50)
    # the smallest limit: HiGHS stops at once, with the warm start as its incumbent
    s = solve(jobs, cluster, "milp", backend="highs", place=False, time_limit=1e-3)
    assert s.status == "time_limit" and s.time_limit_reached and not s.proven_optimal
    assert math.isfinite(s.lower_bound) and s.lower_bound <= s.objective
    assert 0 <= s.gap < 1
    assert "time limit" in exact_label(s)


def test_a_milp_solved_in_a_child_process_gives_the_in_process_answer(monkeypatch):
    jobs, cluster = benchmark_instance(8, seed=2)
    here = solve(jobs, cluster, "milp", backend="highs", place=False, time_limit=60)
    monkeypatch.setattr(backends, "ISOLATE_COLUMNS", 0)
    child = solve(jobs, cluster, "milp", backend="highs", place=False, time_limit=60)
    assert "child process" in child.note and "child process" not in here.note
    assert child.allocation == here.allocation and child.status == here.status == "optimal"


def test_a_child_stopped_at_its_limit_reports_the_warm_start_and_a_proven_gap(monkeypatch):
    monkeypatch.setattr(backends, "ISOLATE_COLUMNS", 0)
    monkeypatch.setattr(backends, "_highs_isolated", lambda req, limit: None)  # as if stopped
    jobs, cluster = tight_instance(60, 1, machines=15)
    s = solve(jobs, cluster, "milp", backend="highs", place=False, time_limit=5)
    assert s.status == "time_limit" and s.time_limit_reached
    assert "was stopped" in s.note and "Lagrangian" in s.note
    assert math.isfinite(s.lower_bound) and 0 <= s.gap < 1


def test_a_child_that_overruns_is_stopped():
    argv = [sys.executable, "-c", "import time; time.sleep(60)"]
    assert backends.run_isolated(argv, b"", 0.2) is None
    assert backends.run_isolated([sys.executable, "-c", "print(1)"], b"", 30) == b"1\n"
    with pytest.raises(SolverError, match="exit 3"):
        backends.run_isolated([sys.executable, "-c", "raise SystemExit(3)"], b"", 30)
