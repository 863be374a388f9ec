"""The options that move Synergy's and Muri's worlds towards smdlab's, and the ablation figure's data."""

from __future__ import annotations

import itertools
import math

import pytest

from smdlab.errors import InvalidInput
from smdlab.experiments import ablation
from smdlab.experiments.ablation import STEPS, AblationInputs, ablation_steps
from smdlab.model.cluster import Cluster
from smdlab.model.demands import task_demands
from smdlab.model.interleave import solo_iteration_time
from smdlab.model.measured_speed import REFERENCE_SHARE, synergy_throughputs
from smdlab.model.modelled_throughput import layered_throughput
from smdlab.model.profiles import LayerProfile
from smdlab.model.timing import speed_table
from smdlab.paths import data_dir
from smdlab.workloads.base import offered_load
from smdlab.workloads.muri import load_muri, read_muri_trace
from smdlab.workloads.synergy import SYNERGY_NETWORKS, read_synergy

SYNERGY = data_dir() / "traces" / "synergy" / "jobs_seed7_load2.25.csv"
TRACE3 = data_dir() / "muri" / "trace3.csv"


@pytest.fixture(scope="module")
def synergy_cluster() -> Cluster:
    return Cluster.homogeneous(4, gpu=8, cpu=24, mem_gb=500, bw_gbps=40)


@pytest.fixture(scope="module")
def muri_cluster() -> Cluster:
    return Cluster.homogeneous(8, gpu=8, cpu=92, mem_gb=520, bw_gbps=100)


def test_load_scales_arrivals_to_the_offered_load(synergy_cluster):
    jobs = read_synergy(SYNERGY, cluster=synergy_cluster, first=30)
    scaled = read_synergy(SYNERGY, cluster=synergy_cluster, first=30, load=0.5, load_resource="gpu")
    assert offered_load(scaled, synergy_cluster, resource="gpu") == pytest.approx(0.5)
    factor = scaled[-1].arrival / jobs[-1].arrival
    assert [s.arrival for s in scaled] == pytest.approx([j.arrival * factor for j in jobs])
    assert [s.samples for s in scaled] == [j.samples for j in jobs]


def test_synergy_ps_jobs_reserve_smdlab_ps_demand_and_keep_their_speed(synergy_cluster):
    plain = read_synergy(SYNERGY, cluster=synergy_cluster, first=12)
    ps = read_synergy(SYNERGY, cluster=synergy_cluster, first=12, ps_demand="per_network")
    for a, b in zip(plain, ps, strict=True):
        assert a.max_ps == 0 and a.ps_demand == {}
        assert b.arch == "ps" and b.max_ps == b.max_workers
        want = task_demands(LayerProfile.load(SYNERGY_NETWORKS[b.throughput.model]))[1]
        assert b.ps_demand["cpu"] == want["cpu"] and b.ps_demand["mem_gb"] == want["mem_gb"]
        # The measured table times the job: its PS adds no communication.
        assert speed_table(b)[0, 0] == pytest.approx(speed_table(a)[0, 0])


def test_smdlab_profiles_keep_the_grid_and_the_reference_duration():
    like = synergy_throughputs()["res50"]
    t = layered_throughput(like, LayerProfile.load("resnet50"), 256)
    assert (t.cpu_levels, t.mem_levels, t.iter_time_s) == (
        like.cpu_levels,
        like.mem_levels,
        like.iter_time_s,
    )
    assert t.relative_at(*REFERENCE_SHARE) == pytest.approx(1.0)
    peak = max(max(r) for r in t.relative)
    assert t.speedup == pytest.approx(peak)
    # An image network's input pipeline wants more than the 3 cores of the reference share.
    assert t.best_cpu > REFERENCE_SHARE[0] and t.speedup > 1.0


def test_synergy_profiles_option(synergy_cluster):
    jobs = read_synergy(SYNERGY, cluster=synergy_cluster, first=12, profiles="smdlab")
    theirs = synergy_throughputs()
    for j in jobs:
        assert j.throughput.iter_time_s == theirs[j.throughput.model].iter_time_s
        assert j.worker_demand["cpu"] == j.throughput.best_cpu


def test_muri_options(muri_cluster):
    rows = read_muri_trace(TRACE3, first=10)
    base = load_muri(TRACE3, cluster=muri_cluster, first=10)
    ps = load_muri(TRACE3, cluster=muri_cluster, first=10, ps_demand="per_network")
    pre = load_muri(TRACE3, cluster=muri_cluster, first=10, job_model="prefetch", stages="smdlab")
    free = load_muri(TRACE3, cluster=muri_cluster, first=10, restart_overheads=False)
    for r, b, p, s, f in zip(rows, base, ps, pre, free, strict=True):
        assert b.gpu_only and b.gang and b.restart_s == r.restart_s
        assert not p.gpu_only and p.gang and p.gang_allocation == (r.num_gpu, r.num_gpu)
        assert p.ps_demand["cpu"] > 0 and p.stage_times_s == r.stages_s
        assert f.restart_s is None
        # smdlab's stage shape, scaled so the solo iteration is the trace's under the job model.
        assert s.stage_times_s != r.stages_s
        assert solo_iteration_time(s.stage_times_s, "prefetch") == pytest.approx(
            solo_iteration_time(r.stages_s, "prefetch")
        )


def test_muri_s_authors_rules_place_ps_jobs_beside_their_workers(muri_cluster):
    from smdlab.policies.multiresource.muri import MuriS
    from smdlab.sim import simulate

    jobs = load_muri(TRACE3, cluster=muri_cluster, first=6, ps_demand="per_network")
    res = simulate(jobs, muri_cluster, MuriS(rules="authors"), record_history=True)
    assert res.summary["jobs_completed"] == len(jobs)
    # One PS per worker (the simulator checks each placement against its allocation).
    ran = res.history[res.history["workers"] > 0]
    assert len(ran) and (ran["ps"] == ran["workers"]).all()


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"ps_demand": "some"}, r"workload\.ps_demand"),
        ({"stages": "paper"}, r"workload\.stages"),
        ({"load": 0}, r"workload\.load"),
    ],
)
def test_bad_muri_options_name_the_field(muri_cluster, kwargs, field):
    with pytest.raises(InvalidInput, match=field):
        load_muri(TRACE3, cluster=muri_cluster, first=4, **kwargs)


def test_bad_synergy_options_name_the_field(synergy_cluster):
    with pytest.raises(InvalidInput, match=r"workload\.profiles"):
        read_synergy(SYNERGY, cluster=synergy_cluster, first=4, profiles="theirs")
    with pytest.raises(InvalidInput, match=r"workload\.ps_demand"):
        read_synergy(SYNERGY, cluster=synergy_cluster, first=4, ps_demand="all")


def test_steps_are_cumulative_scenario_options():
    for system in ("synergy", "muri"):
        steps = ablation_steps(system, "tiny")
        assert [s["step"] for s in steps] == list(STEPS)
        assert steps[0]["changes"] == {"workload": {}, "simulation": {}, "cluster": {}}
        for before, after in itertools.pairwise(steps):
            for section, values in before["changes"].items():
                assert values.items() <= after["changes"][section].items()
    syn = {s["step"]: s for s in ablation_steps("synergy", "tiny")}
    assert syn["prefetch"]["changes"] == syn["ps"]["changes"]  # no stages in measured tables
    muri = {s["step"]: s for s in ablation_steps("muri", "tiny")}
    assert muri["prefetch"]["changes"]["workload"]["job_model"] == "prefetch"


def test_figure_data_shape(tmp_path, monkeypatch):
    # Three short Synergy jobs (the fixture's models) and three Muri rows: seconds, every step.
    jobs = tmp_path / "jobs.csv"
    jobs.write_text(
        "job_id,model,arrival_s,iterations,gpus,measured\n"
        "0,gnmt,0,900,1,1\n1,res18,60,400,1,1\n2,alexnet,120,500,1,1\n"
    )
    monkeypatch.setitem(ablation.INPUTS, "small", AblationInputs(str(jobs), 1, None, 3))
    df = ablation.multiresource_ablation("tiny")
    assert list(df.columns) == ablation.COLUMNS
    pairs = {"synergy": len(ablation.SYNERGY_PAIRS), "muri": len(ablation.MURI_PAIRS)}
    assert len(df) == len(STEPS) * sum(pairs.values())
    for system, n in pairs.items():
        part = df[df["system"] == system]
        assert list(part["step_index"]) == sorted(part["step_index"])
        assert part.groupby("step").size().eq(n).all()
        assert (part["jobs_measured"] == 3).all()
    assert all(math.isfinite(r) and r > 0 for r in df["ratio"])
    assert (df["ratio"] == df["mean_jct_baseline_s"] / df["mean_jct_policy_s"]).all()
    again = ablation.multiresource_ablation("tiny")
    assert again.equals(df)
