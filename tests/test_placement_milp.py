"""The placement-aware exact model: brute force, the simulator's evaluation, capacity, bad input."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from smdlab.errors import InvalidInput
from smdlab.model.cluster import Cluster
from smdlab.model.profiles import LayerProfile, list_profiles
from smdlab.policies.base import Allocation, Decision
from smdlab.sim.simulator import simulate_steps
from smdlab.solve.instance import build_instance, task_vectors
from smdlab.solve.placement import TOL, Placement
from smdlab.solve.placement_milp import evaluate, smd_placed, solve_placed
from smdlab.testing import random_job


def _jobs(seed: int, n: int, caps: int = 2):
    rng = np.random.default_rng(seed)
    nets = list_profiles()
    return [
        random_job(
            rng,
            f"j{i}",
            profile=LayerProfile.load(nets[int(rng.integers(len(nets)))], "v100"),
            max_workers=caps,
            max_ps=caps,
            worker_demand={"gpu": 1, "cpu": 2, "bw_gbps": float(rng.uniform(5, 29))},
            ps_demand={"cpu": 2, "bw_gbps": float(rng.uniform(5, 29))},
        )
        for i in range(n)
    ]


def _flat(machines: int) -> Cluster:
    return Cluster.homogeneous(machines, gpu=2, cpu=6, mem_gb=64, bw_gbps=60)


def _racked_typed(per_rack: int = 1) -> Cluster:
    """Two racks of ``per_rack`` machines, K80 and V100, whose uplinks bind (50 Gbps for 60 Gbps NICs)."""
    group = {
        "machines": per_rack,
        "gpu": 2,
        "cpu": 6,
        "mem_gb": 64,
        "bw_gbps": 60,
        "uplink_gbps": 50,
    }
    return Cluster.groups([{**group, "gpu_type": "k80"}, {**group, "gpu_type": "v100"}])


def _placements_of(job, H: int):
    """Every placement of one job on H machines (and none), each (w, p) within its caps."""
    out = [Placement(())]
    for w in range(1, job.max_workers + 1):
        for p in range(1, job.max_ps + 1):
            for xs in itertools.product(range(w + 1), repeat=H):
                if sum(xs) != w:
                    continue
                for ys in itertools.product(range(p + 1), repeat=H):
                    if sum(ys) == p:
                        tasks = tuple((m, xs[m], ys[m]) for m in range(H) if xs[m] or ys[m])
                        out.append(Placement(tasks))
    return out


def _brute(jobs, cluster) -> float:
    """The least simulator-priced objective over every joint placement that fits every machine."""
    inst = build_instance(jobs, cluster, cluster.capacity_vector)
    H, cap = len(cluster.machines), cluster.machine_matrix
    options = []
    for i, job in enumerate(jobs):
        wv, pv = task_vectors(job, cluster.resources)
        pls = _placements_of(job, H)
        use = np.zeros((len(pls), H, len(cluster.resources)))
        for k, pl in enumerate(pls):
            for m, w, p in pl.tasks:
                use[k, m] += w * wv + p * pv
        costs = []
        for pl in pls:
            one = [Placement(())] * len(jobs)
            one[i] = pl
            costs.append(evaluate(inst, cluster, one)[i])
        options.append((use, np.array(costs)))
    best = np.inf
    for combo in itertools.product(*(range(len(c)) for _, c in options)):
        use = sum(options[i][0][k] for i, k in enumerate(combo))
        if np.all(use <= cap + TOL):
            best = min(best, sum(options[i][1][k] for i, k in enumerate(combo)))
    return float(best)


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("kind", ["flat", "racked_typed"])
def test_the_exact_model_equals_brute_force(seed, kind):
    cluster = _flat(2) if kind == "flat" else _racked_typed()
    jobs = _jobs(seed, 3 if kind == "flat" else 2)
    r = solve_placed(jobs, cluster, time_limit=60)
    assert r.status == "optimal"
    assert r.objective == pytest.approx(_brute(jobs, cluster), rel=1e-6)


@pytest.mark.parametrize("seed", [3, 4])
def test_the_objective_is_the_simulators_evaluation_of_the_placement(seed):
    cluster = _racked_typed(per_rack=2)
    jobs = _jobs(seed, 3)
    r = solve_placed(jobs, cluster, time_limit=60)
    assert r.model_objective == pytest.approx(r.objective, rel=1e-6)
    run = [k for k, w in enumerate(r.workers) if w]
    assert run, "some job starts on this instance"
    # Hand the placement of the started jobs to the simulator at t = 0 (a job's speed does not
    # depend on the other jobs there): each job's JCT is its duration on its placement.
    started = [jobs[k] for k in run]
    steps = simulate_steps(started, cluster, "fifo")
    steps.send(None)
    allocs = tuple(Allocation(jobs[k].name, r.workers[k], r.ps[k], r.placements[k]) for k in run)
    try:
        steps.send(Decision(allocs))
        while True:
            steps.send(Decision())
    except StopIteration as stop:
        result = stop.value
    jct = result.jobs.set_index("job")["jct"]
    simulated = sum(j.weight * jct[j.name] for j in started)
    assert simulated == pytest.approx(sum(r.costs[k] for k in run), rel=1e-9)


@settings(max_examples=15, deadline=None, derandomize=True)
@given(
    seed=st.integers(0, 10_000),
    n=st.integers(1, 5),
    machines=st.integers(1, 3),
    racked=st.booleans(),
)
def test_capacity_holds_on_every_machine(seed, n, machines, racked):
    cluster = _flat(machines) if not racked else _racked_typed()
    jobs = _jobs(seed, n, caps=3)
    for r in (solve_placed(jobs, cluster, time_limit=30), smd_placed(jobs, cluster)):
        use = np.zeros_like(cluster.machine_matrix, dtype=float)
        for job, pl, w, p in zip(jobs, r.placements, r.workers, r.ps, strict=True):
            wv, pv = task_vectors(job, cluster.resources)
            assert (w == 0) == (p == 0) and w <= job.max_workers and p <= job.max_ps
            for m, a, b in pl.tasks:
                use[m] += a * wv + b * pv
        assert np.all(use <= cluster.machine_matrix + TOL)
        assert r.bound <= r.objective * (1 + 1e-9)


def test_smd_is_priced_like_the_exact_model_and_never_below_its_optimum():
    cluster = _racked_typed()
    jobs = _jobs(5, 2)
    exact, smd = solve_placed(jobs, cluster), smd_placed(jobs, cluster)
    assert exact.status == "optimal"
    assert smd.objective >= exact.objective * (1 - 1e-6)
    inst = build_instance(jobs, cluster, cluster.capacity_vector)
    assert smd.objective == pytest.approx(float(evaluate(inst, cluster, smd.placements).sum()))


@pytest.mark.parametrize("limit", [0, -1.0, float("nan")])
def test_a_time_limit_of_zero_or_below_is_refused_in_one_line(limit):
    with pytest.raises(InvalidInput, match=r"^time_limit must be > 0") as err:
        solve_placed(_jobs(0, 1), _flat(1), time_limit=limit)
    assert "\n" not in str(err.value)


@pytest.mark.parametrize("gap", [-0.1, 1.0, 2.0])
def test_a_gap_tolerance_outside_zero_one_is_refused_in_one_line(gap):
    with pytest.raises(InvalidInput, match=r"^mip_gap must be") as err:
        solve_placed(_jobs(0, 1), _flat(1), mip_gap=gap)
    assert "\n" not in str(err.value)


def test_all_reduce_jobs_and_pooled_clusters_are_refused():
    rng = np.random.default_rng(0)
    ring = random_job(rng, "r", arch="allreduce", max_ps=0, ps_demand=None)
    with pytest.raises(InvalidInput, match="arch must be 'ps'"):
        solve_placed([ring], _flat(1))
    with pytest.raises(InvalidInput, match="cluster must have machines"):
        solve_placed(_jobs(0, 1), Cluster.pooled(gpu=8, cpu=64, mem_gb=256, bw_gbps=100))
