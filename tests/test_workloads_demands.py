"""Per-network task demands (smdlab.model.demands) and their use by the workloads and scenarios."""

from __future__ import annotations

import numpy as np
import pytest

from smdlab import Cluster, InvalidInput, LayerProfile
from smdlab.model.demands import (
    CORPUS_CACHE_GB,
    FAMILIES,
    INPUT_CPU_S_PER_SAMPLE,
    WORKER_CPU_MAX,
    WORKER_CPU_MIN,
    demand_table,
    network_family,
    task_demands,
)
from smdlab.model.job import DEFAULT_PS_DEMAND, DEFAULT_WORKER_DEMAND, make_job
from smdlab.workloads import Scenario, load_csv, load_philly, offered_load, synthetic

NETS = ["resnet50", "alexnet", "bert_base", "lstm_lm", "vgg16"]


def _key(jobs):
    return [
        (
            j.name,
            j.profile.network,
            j.samples,
            j.arrival,
            j.max_workers,
            j.max_ps,
            j.requested_workers,
            dict(j.worker_demand),
            dict(j.ps_demand),
        )
        for j in jobs
    ]


def _hand_built(kind: str, params: float = 1e6) -> LayerProfile:
    f = np.full(2, 1e-4)
    return LayerProfile(
        ["a", "b"], f, 2 * f, np.full(2, params), network="custom", kinds=(kind, "fc")
    )


def test_demands_differ_across_families():
    d = {n: task_demands(LayerProfile.load(n)) for n in ("resnet50", "bert_base", "lstm_lm")}
    assert len({(w["cpu"], w["mem_gb"]) for w, _ in d.values()}) == 3
    # An image CNN needs input-pipeline cores; text models read pre-tokenised data.
    assert (
        d["resnet50"][0]["cpu"]
        > d["bert_base"][0]["cpu"]
        == d["lstm_lm"][0]["cpu"]
        == WORKER_CPU_MIN
    )
    # A transformer caches its tokenised corpus in host memory.
    assert d["bert_base"][0]["mem_gb"] > d["lstm_lm"][0]["mem_gb"]
    for w, p in d.values():
        assert w["gpu"] == 1 and p["gpu"] == 0 and w["bw_gbps"] == p["bw_gbps"] == 10
        assert WORKER_CPU_MIN <= w["cpu"] <= WORKER_CPU_MAX
    table = demand_table()
    assert set(table["family"]) == {"cnn", "transformer", "rnn"}
    assert table["worker_cpu"].nunique() > 2 and table["ps_cpu"].nunique() > 2
    # On the default machine some networks are CPU-bound and others NIC-bound.
    fit = demand_table(machine={"gpu": 8, "cpu": 64, "mem_gb": 256, "bw_gbps": 100}).set_index(
        "network"
    )
    assert fit.loc["alexnet", "binding"] == "cpu" and fit.loc["bert_base", "binding"] == "bw_gbps"
    assert (
        fit.loc["alexnet", "bundles_per_machine"] == 64 // (16 + 4)
        and fit.loc["bert_base", "bundles_per_machine"] == 5
    )


def test_worker_cpu_follows_the_input_rate():
    # Within a family, a network that processes more samples per second needs more input cores.
    table = demand_table().set_index("network")
    cnn = table[table["family"] == "cnn"].sort_values("samples_per_s")
    assert np.all(np.diff(cnn["worker_cpu"].to_numpy()) >= 0)
    assert cnn["worker_cpu"].iloc[0] < cnn["worker_cpu"].iloc[-1] == WORKER_CPU_MAX
    # On a faster device the same network needs at least as many cores.
    for n in ("resnet50", "vgg16", "inception_v3"):
        assert (
            task_demands(LayerProfile.load(n, "a100"))[0]["cpu"]
            >= task_demands(LayerProfile.load(n))[0]["cpu"]
        )


def test_ps_memory_and_cpu_grow_with_parameters():
    base = LayerProfile.load("resnet50")
    rows = [task_demands(base.scaled(params=k)) for k in (1, 4, 16, 64)]
    ps_mem = [p["mem_gb"] for _, p in rows]
    ps_cpu = [p["cpu"] for _, p in rows]
    wk_mem = [w["mem_gb"] for w, _ in rows]
    assert all(np.diff(ps_mem) > 0) and all(np.diff(ps_cpu) > 0) and all(np.diff(wk_mem) > 0)
    # Transformers keep Adam's two optimiser slots: more PS memory per parameter than a CNN.
    bert = LayerProfile.load("bert_base")
    assert task_demands(bert)[1]["mem_gb"] > task_demands(bert, family="cnn")[1]["mem_gb"]
    # Compute time does not enter the PS demand.
    assert task_demands(base.scaled(compute=3))[1] == task_demands(base)[1]


def test_family_inference_and_bad_arguments():
    assert network_family(LayerProfile.load("gpt2_small")) == "transformer"
    for kind, family in (
        ("conv", "cnn"),
        ("attention", "transformer"),
        ("lstm", "rnn"),
        ("other", "other"),
    ):
        assert network_family(_hand_built(kind)) == family
    assert set(FAMILIES) == set(INPUT_CPU_S_PER_SAMPLE) == set(CORPUS_CACHE_GB)
    w, p = task_demands(_hand_built("conv"), family="rnn", bw_gbps=25)
    assert w["bw_gbps"] == p["bw_gbps"] == 25 and w["cpu"] == WORKER_CPU_MIN
    with pytest.raises(
        InvalidInput, match="family must be one of cnn, transformer, rnn, other; got 'mlp'"
    ):
        task_demands(_hand_built("fc"), family="mlp")
    with pytest.raises(InvalidInput, match="bw_gbps must be > 0"):
        task_demands(_hand_built("fc"), bw_gbps=0)
    with pytest.raises(InvalidInput, match="profile must be a LayerProfile"):
        task_demands("resnet50")


def test_make_job_uses_the_rule_and_keeps_explicit_demands():
    job = make_job("a", "vgg16", 1e6)
    w, p = task_demands(LayerProfile.load("vgg16"))
    assert dict(job.worker_demand) == w and dict(job.ps_demand) == p
    mine = {"gpu": 2, "cpu": 1, "bw_gbps": 5}
    other = make_job("b", "vgg16", 1e6, worker_demand=mine)
    assert dict(other.worker_demand) == mine and dict(other.ps_demand) == p


@pytest.mark.parametrize("load", [0.4, 1.5])
@pytest.mark.parametrize("resource", [None, "cpu", "gpu"])
def test_realised_load_equals_the_requested_load(load, resource):
    cl = Cluster.homogeneous(6)
    jobs = synthetic(80, cl, load=load, seed=4, networks=NETS, load_resource=resource)
    assert len(
        {tuple(j.worker_demand.values()) + tuple(j.ps_demand.values()) for j in jobs}
    ) == len(NETS)
    assert offered_load(jobs, cl, resource=resource) == pytest.approx(load, rel=1e-9)
    # The load counts each job's own bundle: a uniform-bundle reading of the same jobs differs.
    uniform = [
        j.replace(worker_demand=DEFAULT_WORKER_DEMAND, ps_demand=DEFAULT_PS_DEMAND) for j in jobs
    ]
    assert offered_load(uniform, cl, resource="cpu") != pytest.approx(
        offered_load(jobs, cl, resource="cpu")
    )


def test_philly_load_counts_each_jobs_demands():
    cl = Cluster.homogeneous(8)
    jobs = load_philly(first=150, networks=NETS, seed=2, load=0.7, cluster=cl)
    assert offered_load(jobs, cl) == pytest.approx(0.7, rel=1e-9)
    assert offered_load(
        load_philly(first=150, networks=NETS, seed=2, load=0.7, cluster=cl, load_resource="cpu"),
        cl,
        resource="cpu",
    ) == pytest.approx(0.7, rel=1e-9)
    for j in jobs:
        assert (dict(j.worker_demand), dict(j.ps_demand)) == task_demands(j.profile)


def test_uniform_option_reproduces_the_single_bundle_workloads():
    """``demands="uniform"`` equals the former behaviour: every job the DEFAULT bundle (the explicit-bundle path)."""
    cl = Cluster.homogeneous(3)
    legacy = {"worker_demand": DEFAULT_WORKER_DEMAND, "ps_demand": DEFAULT_PS_DEMAND}
    for make in (
        lambda **kw: synthetic(120, cl, load=1.2, seed=5, networks=NETS, **kw),
        lambda **kw: load_philly(first=200, networks=NETS, seed=5, load=0.8, cluster=cl, **kw),
    ):
        uniform = make(demands="uniform")
        assert _key(uniform) == _key(make(**legacy))
        assert {(tuple(j.worker_demand.items()), tuple(j.ps_demand.items())) for j in uniform} == {
            (tuple({**DEFAULT_WORKER_DEMAND}.items()), tuple({**DEFAULT_PS_DEMAND}.items()))
        }
        assert _key(make()) != _key(uniform)
    # Explicit demands override the rule for every job, whichever rule is named.
    assert _key(synthetic(30, cl, seed=1, networks=NETS, **legacy)) == _key(
        synthetic(30, cl, seed=1, networks=NETS, demands="uniform")
    )
    # The task bandwidth applies to both rules.
    for rule in ("uniform", "per_network"):
        jobs = synthetic(20, cl, seed=1, networks=NETS, demands=rule, task_bw_gbps=25)
        assert {j.worker_bw_bytes for j in jobs} == {j.ps_bw_bytes for j in jobs} == {25e9 / 8}


def test_requests_are_clipped_per_network_and_unfit_networks_are_named():
    cl = Cluster.homogeneous(1, cpu=40)
    jobs = synthetic(200, cl, seed=3, networks=["alexnet", "lstm_lm"], gpu_mix={8: 1.0})
    got = {j.profile.network: j.max_workers for j in jobs}
    assert got == {
        "alexnet": 2,
        "lstm_lm": 5,
    }  # alexnet: 20 CPU per bundle; lstm_lm: 6 CPU, NIC-bound at 5
    with pytest.raises(
        InvalidInput, match="cluster cannot hold even one worker\\+PS bundle of network 'alexnet'"
    ):
        synthetic(5, Cluster.homogeneous(2, cpu=16), networks=["alexnet", "lstm_lm"])
    # A network with weight 0 is never drawn, so it need not fit.
    assert {
        j.profile.network
        for j in synthetic(
            5, Cluster.homogeneous(2, cpu=16), networks=["alexnet", "lstm_lm"], mix={"lstm_lm": 1}
        )
    } == {"lstm_lm"}
    with pytest.raises(
        InvalidInput, match="demands must be one of per_network, uniform, gpu_only; got 'fixed'"
    ):
        synthetic(5, cl, demands="fixed")
    with pytest.raises(InvalidInput, match="task_bw_gbps must be > 0"):
        load_philly(first=5, task_bw_gbps=-1)


def test_job_tables_and_scenarios_take_the_demands_key(tmp_path):
    table = tmp_path / "jobs.csv"
    table.write_text("network,arrival,samples\nalexnet,0,1e6\nbert_base,5,1e6\n")
    per = load_csv(table)
    assert [dict(j.worker_demand) for j in per] == [task_demands(j.profile)[0] for j in per]
    assert {j.worker_demand["cpu"] for j in load_csv(table, demands="uniform")} == {
        DEFAULT_WORKER_DEMAND["cpu"]
    }
    sc = Scenario(workload={"kind": "synthetic", "jobs": 30, "load": 1.0, "networks": NETS})
    cl = sc.build_cluster()
    default = sc.build_jobs(cl)
    uniform = sc.with_changes(workload={"demands": "uniform"}).build_jobs(cl)
    assert _key(default) == _key(
        sc.with_changes(workload={"demands": "per_network"}).build_jobs(cl)
    )
    assert _key(uniform) == _key(
        synthetic(30, cl, load=1.0, seed=sc.seed, networks=NETS, demands="uniform")
    )
    # The demand rule is part of the job shape: kept when the workload kind changes.
    switched = sc.with_changes(workload={"demands": "uniform", "task_bw_gbps": 20}).with_changes(
        workload={"kind": "philly"}
    )
    assert switched.workload["demands"] == "uniform" and switched.workload["task_bw_gbps"] == 20
    for bad, match in (
        (
            {"demands": "fixed"},
            "workload.demands must be one of per_network, uniform, gpu_only; got 'fixed'",
        ),
        ({"demands": 3}, "workload.demands must be a string, got 3"),
        ({"task_bw_gbps": 0}, "workload.task_bw_gbps must be > 0"),
    ):
        with pytest.raises(InvalidInput, match=match):
            Scenario(workload={"kind": "synthetic", "jobs": 5, **bad})
