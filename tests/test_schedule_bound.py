"""The lower bound on the mean JCT of any schedule: valid against the exact optimum of tiny batches and every policy."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from smdlab import InvalidInput
from smdlab.policies.registry import list_policies
from smdlab.sim import simulate
from smdlab.solve.cases import small_instance
from smdlab.solve.schedule_bound import mean_jct_lower_bound, optimal_batch_mean_jct

REL = 1e-7


def _batch(seed: int, n: int, arrivals: bool = False):
    jobs, cluster = small_instance(seed, jobs=n)
    rng = np.random.default_rng(1000 + seed)
    at = rng.uniform(0, 5000, n) if arrivals else np.zeros(n)
    return [j.replace(arrival=float(a), weight=1.0) for j, a in zip(jobs, at)], cluster


@pytest.mark.parametrize("seed", range(6))
def test_bound_is_below_the_exact_optimum_which_is_below_every_policy(seed):
    jobs, cluster = _batch(seed, 3 + seed % 2)
    bound = mean_jct_lower_bound(jobs, cluster, ratio=1.1).value
    optimum, order = optimal_batch_mean_jct(jobs, cluster)
    assert sorted(order) == sorted(j.name for j in jobs)
    assert bound <= optimum * (1 + REL)
    assert optimum / bound < 1.5  # and not trivially loose
    for policy in ("smd", "milp", "srtf", "fifo", "drf", "optimus", "tiresias", "tetris"):
        for execution in ("natural", "non_elastic") if seed % 2 else ("natural", "elastic"):
            try:
                res = simulate(jobs, cluster, policy, execution=execution, record_history=False)
            except InvalidInput:  # a mode the policy cannot run in
                continue
            assert res.summary["mean_jct"] >= optimum * (1 - REL), (policy, execution)


@pytest.mark.parametrize("seed", range(6))
def test_bound_in_simulation_results_never_exceeds_a_simulated_mean_jct(seed):
    # property test on random batches and workloads with release dates, every registered policy
    jobs, cluster = _batch(seed, 4, arrivals=seed % 2 == 1)
    seen = 0
    # OMRU's genetic search takes seconds per run: on one seed only
    policies = [p for p in list_policies() if seed == 0 or not p.startswith("omru")]
    for policy in policies:
        try:
            res = simulate(jobs, cluster, policy, record_history=False)
        except InvalidInput:  # a policy that needs resources this cluster lacks
            continue
        lb = res.summary["mean_jct_lower_bound"]
        if math.isnan(lb):  # the run left the bound's model (GPU sharing, per-worker CPU levels)
            continue
        seen += 1
        assert lb <= res.summary["mean_jct"] * (1 + REL), policy
    assert seen >= 8


def test_release_dates_count():
    jobs, cluster = _batch(2, 3)
    late = [jobs[0], *(j.replace(arrival=j.arrival + 1e5) for j in jobs[1:])]
    # jobs that arrive after the first one has finished run alone: the bound is their own best
    b0 = mean_jct_lower_bound(jobs, cluster).value
    b1 = mean_jct_lower_bound(late, cluster).value
    assert b1 <= b0 * (1 + REL)


def test_highs_and_gurobi_agree_and_large_models_fall_back():
    jobs, cluster = _batch(1, 3)
    h = mean_jct_lower_bound(jobs, cluster, backend="highs")
    a = mean_jct_lower_bound(jobs, cluster, backend="auto")
    assert h.backend == "highs"
    assert a.value == pytest.approx(h.value, rel=1e-6)
    if a.backend == "gurobi":
        assert a.variables <= 2000
    big = mean_jct_lower_bound(jobs, cluster, backend="auto", ratio=1.01)
    assert max(big.variables, big.constraints) > 2000
    assert big.backend == "highs" and "auto:" in big.note
    assert big.value >= h.value * (1 - 1e-6)  # a finer grid is at least as tight


def test_bad_input_gets_one_clear_line():
    jobs, cluster = _batch(0, 3)
    with pytest.raises(InvalidInput, match="ratio must be > 1"):
        mean_jct_lower_bound(jobs, cluster, ratio=1.0)
    with pytest.raises(InvalidInput, match="weights must be 3 finite numbers > 0"):
        mean_jct_lower_bound(jobs, cluster, weights=[1, 0, 1])
    with pytest.raises(InvalidInput, match="batch"):
        optimal_batch_mean_jct([jobs[0], jobs[1].replace(arrival=5.0)], cluster)
    six = [j.replace(name=f"{j.name}-{k}") for k in range(2) for j in jobs]
    with pytest.raises(InvalidInput, match="at most 5 jobs"):
        optimal_batch_mean_jct(six, cluster)


def test_cli_json_reports_the_bound(capfd):
    from smdlab.cli import main

    assert (
        main(["simulate", "--jobs", "6", "--machines", "2", "--policy", "fifo,smd", "--json"]) == 0
    )
    data = json.loads(capfd.readouterr()[0])
    for summary in data.values():
        lb = summary["mean_jct_lower_bound"]
        assert lb is not None and 0 < lb <= summary["mean_jct"] * (1 + REL)


def _drive(jobs, cluster, policy, **options):
    """The SimResult of ``simulate_steps`` driven by ``policy.decide``."""
    from smdlab.policies.registry import get_policy
    from smdlab.sim.simulator import simulate_steps

    pol = get_policy(policy)
    gen = simulate_steps(jobs, cluster, pol, record_history=False, **options)
    try:
        state = next(gen)
        while True:
            state = gen.send(pol.decide(state))
    except StopIteration as stop:
        return stop.value


def test_a_driver_may_skip_the_bound_and_nothing_else_changes():
    jobs, cluster = _batch(1, 4, arrivals=True)
    full = simulate(jobs, cluster, "fifo", record_history=False)
    with_bound = _drive(jobs, cluster, "fifo")
    without = _drive(jobs, cluster, "fifo", lower_bound=False)
    assert with_bound.summary["mean_jct_lower_bound"] == full.summary["mean_jct_lower_bound"]
    assert math.isfinite(full.summary["mean_jct_lower_bound"])
    assert math.isnan(without.summary["mean_jct_lower_bound"])
    for key in ("mean_jct", "makespan"):
        assert without.summary[key] == with_bound.summary[key] == full.summary[key]
