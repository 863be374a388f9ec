"""OMRU's GA and its baselines (SeqEx, Parallel, Optimus-like, OMRU without reuse)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from smdlab import InvalidInput
from smdlab.policies.allreduce import EpochTable, epoch_table
from smdlab.policies.allreduce.omru import OMRU, evaluate, ga, plan_from_genes
from smdlab.policies.registry import get_policy
from smdlab.sim import simulate
from smdlab.workloads.omru import omru_cluster, omru_jobs


def _table(seed: int, n: int, G: int) -> EpochTable:
    rng = np.random.default_rng(seed)
    t1 = rng.uniform(1, 10, n)
    g = np.arange(1, G + 1)
    # speed-up with diminishing returns, random per job
    eff = rng.uniform(0.5, 1.0, n)[:, None]
    t = np.full((n, G + 1), np.inf)
    t[:, 1:] = t1[:, None] / (1 + eff * (g[None, :] - 1)) ** rng.uniform(0.6, 1.0, n)[:, None]
    return EpochTable(tuple(f"j{i}" for i in range(n)), rng.integers(5, 50, n).astype(float), t)


def _reference(genes, table: EpochTable, reuse: bool) -> float:
    """Plain-Python OMRU evaluation, written from the rules in the module docstring."""
    n, G, T, E = len(genes), table.gpus, table.epoch_time, table.epochs
    c1 = [E[i] * T[i, 1] for i in range(n)]
    order = sorted(range(n), key=lambda i: (genes[i], c1[i], i))
    batches = []
    for _, grp in itertools.groupby(order, key=lambda i: genes[i]):
        grp = list(grp)
        batches += [grp[k : k + G] for k in range(0, len(grp), G)]
    g = {i: 1 for i in range(n)}
    left = {i: float(E[i]) for i in range(n)}
    for b in batches:
        for _ in range(G - len(b)):
            can = [i for i in b if g[i] < G and np.isfinite(T[i, g[i] + 1])]
            if not can:
                break
            i = max(can, key=lambda k: (left[k] * T[k, g[k]], -k))
            g[i] += 1
    comp = lambda i: left[i] * T[i, g[i]]  # noqa: E731
    if reuse:
        for cur, nxt in itertools.pairwise(batches):
            longest = max(comp(i) for i in cur)
            slices = sorted([i for i in cur if longest - comp(i) > 0], key=lambda i: (comp(i), i))
            takers = sorted(nxt, key=lambda i: (-comp(i), i))
            for s, j in zip(slices, takers):
                pre = np.floor((longest - comp(s)) / T[j, g[s]]) if np.isfinite(T[j, g[s]]) else 0
                left[j] -= min(pre, left[j])
    return sum(max(comp(i) for i in b) for b in batches)


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("reuse", [True, False])
def test_vectorised_fitness_matches_reference(seed, reuse):
    rng = np.random.default_rng(seed)
    n, G = int(rng.integers(2, 12)), int(rng.integers(2, 10))
    table = _table(seed, n, G)
    genes = rng.integers(0, n, size=(20, n))
    got = evaluate(genes, table, reuse).makespan
    want = [_reference(list(row), table, reuse) for row in genes]
    assert got == pytest.approx(want, rel=1e-9)


@pytest.mark.parametrize("seed", range(6))
def test_reuse_never_lengthens_a_plan(seed):
    table = _table(seed, 9, 6)
    genes = np.random.default_rng(seed).integers(0, 9, size=(40, 9))
    assert np.all(
        evaluate(genes, table, True).makespan <= evaluate(genes, table, False).makespan + 1e-9
    )


def test_ga_is_deterministic_and_elitist():
    table = _table(3, 11, 8)
    a = ga(table, population=20, generations=60, seed=5)
    b = ga(table, population=20, generations=60, seed=5)
    assert np.array_equal(a[0], b[0]) and a[1] == b[1]
    assert np.all(np.diff(a[2]) <= 0)  # (mu + lambda): the best never gets worse
    assert plan_from_genes(a[0], table).makespan == pytest.approx(a[1])


@pytest.mark.parametrize(
    "kwargs, field",
    [
        ({"population": 1}, "population"),
        ({"generations": 0}, "generations"),
        ({"seed": -1}, "seed"),
    ],
)
def test_bad_ga_parameters(kwargs, field):
    with pytest.raises(InvalidInput, match=field):
        get_policy("omru", **kwargs)
    with pytest.raises(InvalidInput, match=field):
        ga(_table(0, 3, 4), **kwargs)


def test_policies_on_omru_image():
    cluster = omru_cluster(2, 4)
    jobs = omru_jobs("omru-image", gpus_per_machine=4)
    out = {}
    for name in ("omru", "omru_noreuse", "seqex", "parallel", "optimus_like"):
        opts = {"generations": 200} if name.startswith("omru") else {}
        r = simulate(jobs, cluster, get_policy(name, **opts))
        assert r.summary["jobs_completed"] == len(jobs)
        assert (r.jobs["ps"] == 0).all()
        assert 0 < r.summary["utilization"]["gpu"] <= 1 + 1e-9
        out[name] = r.summary["makespan"]
    # OMRU plans beat running each job alone on the whole cluster on this workload
    assert out["omru"] < out["seqex"] and out["omru_noreuse"] < out["seqex"]


def test_seqex_plan_is_sum_of_full_cluster_runs():
    jobs = omru_jobs("omru-action", gpus_per_machine=4)
    table = epoch_table(jobs, [j.samples for j in jobs], 8, "wfbp")
    plan = get_policy("seqex").plan(table)
    assert len(plan.batches) == len(jobs) and all(e.gpus == 8 for b in plan.batches for e in b)
    r = simulate(jobs, omru_cluster(2, 4), "seqex")
    assert r.summary["makespan"] == pytest.approx(plan.makespan, rel=1e-9)


def test_more_jobs_than_gpus_uses_list_scheduling():
    jobs = omru_jobs("omru-image", gpus_per_machine=2)
    cluster = omru_cluster(1, 2)
    for name in ("parallel", "optimus_like"):
        r = simulate(jobs, cluster, name)
        assert r.summary["jobs_completed"] == len(jobs)
        assert (r.jobs["workers"] == 1).all()
    assert isinstance(get_policy("omru", generations=5), OMRU)


def test_a_move_that_fails_keeps_resources_no_new_job_took() -> None:
    """Regression: a barrier move that cannot be placed must not lose its old resources to a new
    job placed earlier in the same decision (OMRU once exceeded a machine's CPU this way)."""
    from smdlab.policies.allreduce._batch_plan import BatchPlan, BatchPlanPolicy, Entry
    from smdlab.solve.instance import task_vectors
    from smdlab.solve.placement import usage
    from tests._policy_cases import cluster, job, queued, running, state

    cl = cluster(1, gpu=4, cpu=8)
    r = job(
        "r", worker={"gpu": 1, "cpu": 4, "bw_gbps": 5}, ps={"cpu": 0.0}, arch="allreduce", max_ps=0
    )
    q = job(
        "q", worker={"gpu": 1, "cpu": 2, "bw_gbps": 5}, ps={"cpu": 0.0}, arch="allreduce", max_ps=0
    )

    class Fixed(BatchPlanPolicy):
        name = "fixed"

        def plan(self, table: EpochTable) -> BatchPlan:
            return BatchPlan(((Entry("r", 2), Entry("q", 3)),))

    pol = Fixed()
    pol._planned.add("r")  # r started under an earlier plan; the new plan moves it to 2 GPUs
    st = state(cl, [queued(q)], [running(r, [(0, 1, 0)])], execution="preemptive")
    d = pol.decide(st)
    free = st.free.copy()
    if "r" in d.preempt:
        free += usage(((0, 1, 0),), *task_vectors(r, cl.resources), 1)
    for a in d.allocations:
        free -= usage(a.placement.tasks, *task_vectors({"r": r, "q": q}[a.job], cl.resources), 1)
    assert np.all(free >= -1e-9), f"decision over capacity: {free}"
    assert d.allocations, "the decision starts or moves something"
