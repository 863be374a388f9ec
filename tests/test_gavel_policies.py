"""Gavel-style heterogeneity-aware policies: the LPs and round-based execution."""

from __future__ import annotations

import numpy as np
import pytest

from smdlab.errors import InvalidInput
from smdlab.model.cluster import Cluster
from smdlab.model.job import make_job
from smdlab.policies.heterogeneity.gavel_max_min import GavelMaxMin
from smdlab.policies.heterogeneity.gavel_max_sum import GavelMaxSum
from smdlab.policies.registry import get_policy
from smdlab.sim.simulator import simulate
from smdlab.solve.gavel_lp import equal_share, max_min_allocation, max_sum_allocation
from smdlab.solve.instance import job_speeds

NETS = ("resnet50", "lstm_lm", "bert_base", "densenet121", "vgg16")


def hetero_cluster() -> Cluster:
    """One 4-GPU machine each of K80, P100 and V100, each in its own rack."""
    return Cluster.groups(
        [{"name": t, "machines": 1, "gpu_type": t, "gpu": 4} for t in ("k80", "p100", "v100")]
    )


def workload(n: int = 24, seed: int = 1) -> list:
    """Single-GPU jobs over five networks, 0.5-3 h each on a V100, one arrival every 5 min."""
    rng = np.random.default_rng(seed)
    jobs = []
    for i in range(n):
        net = NETS[i % len(NETS)]
        kw = {"requested_workers": 1, "max_workers": 1, "max_ps": 1}
        v = float(job_speeds(make_job("probe", net, samples=1.0, **kw))[0, 0])
        dur = float(rng.uniform(0.5, 3.0)) * 3600
        jobs.append(make_job(f"j{i}", net, samples=v * dur, arrival=300.0 * i, **kw))
    return jobs


def test_max_sum_puts_the_most_sensitive_job_on_the_fast_type():
    T = np.array([[1.0, 4.0, 10.0], [1.0, 2.0, 3.0], [1.0, 1.5, 2.0]])
    X = max_sum_allocation(T, np.ones(3), np.ones(3))
    assert X[0].argmax() == 2 and X.sum(axis=1).max() <= 1 + 1e-9
    assert (X.sum(axis=0) <= 1 + 1e-9).all()
    assert float((T * X).sum()) == pytest.approx(10 + 2 + 1)


def test_max_min_equalises_identical_jobs():
    T = np.tile([1.0, 2.0, 4.0], (4, 1))
    G = np.array([2.0, 1.0, 1.0])
    X = max_min_allocation(T, np.ones(4), G)
    eff = (T * X).sum(axis=1)
    assert np.allclose(eff, eff[0], rtol=1e-6)
    # All capacity is used: 4 jobs share 2*1 + 1*2 + 1*4 = 8 units of throughput.
    assert eff.sum() == pytest.approx(8.0, rel=1e-6)
    assert equal_share(G, 4) == pytest.approx([0.5, 0.25, 0.25])


def test_lp_bad_input():
    with pytest.raises(InvalidInput, match="throughput must be"):
        max_sum_allocation(np.ones((2, 3)), np.ones(2), np.ones(2))


@pytest.mark.parametrize("policy", [GavelMaxMin, GavelMaxSum])
def test_heterogeneity_aware_beats_agnostic(policy):
    jobs, cluster = workload(), hetero_cluster()
    aware = simulate(jobs, cluster, policy(aware=True)).summary
    blind = simulate(jobs, cluster, policy(aware=False)).summary
    assert aware["jobs_completed"] == blind["jobs_completed"] == len(jobs)
    assert aware["mean_jct"] < blind["mean_jct"]


def test_runs_on_homogeneous_cluster_and_is_registered():
    jobs = workload(6)
    for name in ("gavel_max_sum", "gavel_max_min"):
        res = simulate(jobs, Cluster.homogeneous(1, gpu=4), get_policy(name))
        assert res.summary["jobs_completed"] == 6


def test_heterogeneity_gain_experiment_tiny():
    from smdlab.experiments.heterogeneity import gain_ratios, heterogeneity_gain

    df = heterogeneity_gain("tiny")
    assert set(df["allocation"]) == {"aware", "agnostic"}
    assert len(df) == 4 * df["seed"].nunique()
    for t in ("k80", "p100", "v100"):
        assert df[f"util_{t}"].between(0, 1).all()
    assert set(gain_ratios(df)) == {"gavel_max_min", "gavel_max_sum"}


def test_hetero_placement_prefers_fast_types_and_beats_fifo():
    from smdlab.policies.heterogeneity.hetero_placement import HeteroPlacement
    from smdlab.policies.ps.fifo import FIFO

    jobs, cluster = workload(12), hetero_cluster()
    res = simulate(jobs, cluster, HeteroPlacement(), record_history=True)
    assert res.summary["jobs_completed"] == 12
    first = simulate(jobs[:1], cluster, HeteroPlacement())
    # A lone job goes to the fastest type (V100: machine 2).
    assert first.jobs["jct"].iloc[0] == pytest.approx(
        simulate(jobs[:1], Cluster.racks(1, 1, "v100", gpu=4), FIFO()).jobs["jct"].iloc[0]
    )
    fifo = simulate(jobs, cluster, FIFO(backfill=True)).summary
    assert res.summary["mean_jct"] < fifo["mean_jct"]
    with pytest.raises(InvalidInput, match="patience"):
        HeteroPlacement(patience=2)
