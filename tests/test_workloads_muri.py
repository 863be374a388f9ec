"""Muri's traces as a workload, its job model, the every-event restart rule, and per-job parity
with its authors' simulator on small held-out inputs (tests/data/muri, with its licence)."""

from __future__ import annotations

import csv
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from _cli_output import without_workload_line

from smdlab.cli import main
from smdlab.errors import InvalidInput
from smdlab.experiments.muri_parity import agreement, muri_scenario, run_muri
from smdlab.model.cluster import Cluster
from smdlab.model.interleave import packing_time, solo_iteration_time
from smdlab.policies.registry import get_policy
from smdlab.sim.engine import Engine
from smdlab.sim.runner import simulation_options
from smdlab.sim.simulator import simulate
from smdlab.solve.instance import job_speeds
from smdlab.workloads.muri import load_muri, read_muri_trace, restart_overhead_s

DATA = Path(__file__).parent / "data" / "muri"
HEADER = (
    "job_id,num_gpu,submit_time,iterations,model_name,batch_size,duration,interval,"
    "iteration_time,resource_time_0,resource_time_1,resource_time_2,priority"
)
N8G8 = Cluster.homogeneous(8, gpu=8, cpu=92, mem_gb=520, bw_gbps=100)


def _trace(tmp_path: Path, *rows: str) -> Path:
    p = tmp_path / "t.csv"
    p.write_text("\n".join([HEADER, *rows]) + "\n")
    return p


def test_reader_names_times_and_job_model():
    rows = read_muri_trace(DATA / "trace2_first100.csv")
    jobs = load_muri(DATA / "trace2_first100.csv", cluster=N8G8)
    assert [j.name for j in jobs] == [r.job_id for r in rows]
    first = next(csv.DictReader((DATA / "trace2_first100.csv").open()))
    j, r = jobs[0], rows[0]
    assert j.name == first["job_id"] and j.arrival == float(first["submit_time"]) / 1000
    assert j.gpu_only and j.gang and j.gang_allocation == (int(first["num_gpu"]), 1)
    assert j.iteration_s == pytest.approx(float(first["iteration_time"]) * 1.015 / 1000)
    assert j.stage_times_s == tuple(float(first[f"resource_time_{k}"]) / 1000 for k in range(3))
    assert j.restart_s == restart_overhead_s(r.model, r.num_gpu)
    # alone on its GPUs it runs its iterations at the measured iteration time
    w, p = j.gang_allocation
    run_s = j.samples / float(job_speeds(j, "wfbp")[w - 1, p - 1])
    assert run_s == pytest.approx(r.iterations * j.iteration_s, rel=1e-9)


@pytest.mark.parametrize("job_model", ["measured", "sequential"])
def test_jobs_built_in_one_construction_equal_calibrated_then_replaced(job_model):
    # the rule replaced: calibrated_jobs, then Job.replace with the trace's measured fields
    from smdlab.workloads.base import calibrated_jobs, network_demands, resolve_networks
    from smdlab.workloads.muri import MURI_NETWORKS, trace_iteration_s

    path = DATA / "trace4_first100.csv"
    rows = read_muri_trace(path)
    names = sorted({MURI_NETWORKS[r.model] for r in rows})
    nets = resolve_networks(names)
    its = [trace_iteration_s(r, job_model, 1.015) for r in rows]
    jobs = calibrated_jobs(
        [r.job_id for r in rows],
        np.array([r.submit_s for r in rows]),
        np.array([r.num_gpu for r in rows]),
        np.array([r.iterations * it for r, it in zip(rows, its, strict=True)]),
        np.array([names.index(MURI_NETWORKS[r.model]) for r in rows]),
        nets,
        demands=network_demands(nets, "gpu_only"),
        gpu_only=True,
        gang=True,
    )
    old = [
        j.replace(
            restart_s=r.restart_s, stage_times_s=r.stages_s, iteration_s=it, duration_s=r.duration_s
        )
        for j, r, it in zip(jobs, rows, its, strict=True)
    ]
    new = load_muri(path, job_model=job_model)
    assert [j.value_key for j in new] == [j.value_key for j in old]
    assert [j.model_key for j in new] == [j.model_key for j in old]
    with pytest.raises(InvalidInput, match="may not set 'arrival'"):
        calibrated_jobs(
            ["a"],
            np.array([0.0]),
            np.array([1]),
            np.array([1.0]),
            np.array([0]),
            nets,
            demands=network_demands(nets, "gpu_only"),
            gpu_only=True,
            fields=[{"arrival": 1.0}],
        )


def test_jobs_differing_in_measured_times_share_speed_tables_equal_to_their_own():
    # the rule replaced: each job's speed table keyed by all its model fields (its own table)
    from smdlab.caches import clear_caches
    from smdlab.model.timing import speed_table

    jobs = load_muri(DATA / "trace4_first100.csv", cluster=N8G8)
    clear_caches()
    shared = [job_speeds(j, "wfbp") for j in jobs]
    assert len({id(t) for t in shared}) < len(jobs) / 4
    for j, t in zip(jobs, shared, strict=True):
        own = speed_table(j, "wfbp")
        assert own.dtype == t.dtype and own.tobytes() == t.tobytes()
        other = j.replace(stage_times_s=(1.0, 2.0, 3.0), iteration_s=9.0, duration_s=7.0)
        assert other.model_key == j.model_key and other.value_key != j.value_key
        assert speed_table(other, "wfbp").tobytes() == own.tobytes()


def test_job_models_and_overheads():
    st = (0.117, 0.068, 0.0)
    assert solo_iteration_time(st, "sequential") == pytest.approx(0.185)
    assert solo_iteration_time(st, "prefetch") == pytest.approx(0.117)
    assert solo_iteration_time(st, "measured", 0.107, 1.015) == pytest.approx(0.107 * 1.015)
    with pytest.raises(InvalidInput, match="job_model"):
        solo_iteration_time(st, "other")
    with pytest.raises(InvalidInput, match="measured_s"):
        solo_iteration_time(st, "measured")
    seq = load_muri(DATA / "trace4_first100.csv", job_model="sequential", solo_scale=1.0)
    rows = read_muri_trace(DATA / "trace4_first100.csv")
    assert seq[3].iteration_s == pytest.approx(sum(rows[3].stages_s))
    assert restart_overhead_s("a2c", 8) == 46 and restart_overhead_s("vgg16", 3) == 8


def test_packing_time_is_the_authors_table():
    prof = {
        r["profile"]: (float(r["rt0_s"]), float(r["rt1_s"]), float(r["rt2_s"]))
        for r in csv.DictReader((DATA / "trace3_profiles.csv").open())
    }
    rows = list(csv.DictReader((DATA / "trace3_packings_sample.csv").open()))
    assert len(rows) > 100
    for r in rows:
        got = packing_time([prof[p] for p in r["profiles"].split("+")])
        assert math.isclose(got, float(r["tt_scaled_s"]), rel_tol=1e-9), r


@pytest.mark.parametrize(
    "row, field",
    [
        ("0,1,0,100,resnet50,32,1000,0,10,1,1,1,0", "model_name"),
        ("0,1,-5,100,vgg16,32,1000,0,10,1,1,1,0", "submit_time"),
        ("0,1,,100,vgg16,32,1000,0,10,1,1,1,0", "submit_time"),
        ("0,1,0,-1,vgg16,32,1000,0,10,1,1,1,0", "iterations"),
        ("0,1,0,,vgg16,32,1000,0,10,1,1,1,0", "iterations"),
        ("0,128,0,100,vgg16,32,1000,0,10,1,1,1,0", "num_gpu"),
    ],
)
def test_bad_rows_name_line_and_field(tmp_path, row, field):
    p = _trace(tmp_path, "9,1,0,100,vgg16,32,1000,0,10,1,1,1,0", row.replace("0,", "7,", 1))
    with pytest.raises(InvalidInput, match=rf"line 3 \(job_id '7'\): field {field} must be"):
        load_muri(p, cluster=N8G8)


def test_cli_bad_trace_exits_2_with_one_line(tmp_path, capfd):
    p = _trace(tmp_path, "0,1,0,100,nomodel,32,1000,0,10,1,1,1,0")
    rc = main(["simulate", "--policy", "srtf", "--workload", f"muri:{p}"])
    out, err = capfd.readouterr()
    err = without_workload_line(err)
    assert rc == 2 and out == ""
    assert err.count("\n") == 1 and "field model_name must be" in err


def test_every_event_rule_charges_each_running_job_at_each_event(tmp_path):
    # A (1 GPU, 1000 s alone) runs; B arrives at 100 s and ends at 150 s: two events for A.
    p = _trace(
        tmp_path,
        "A,1,0,1000,vgg16,32,1000000,0,985.2216748768473,1,1,1,0",
        "B,1,100000,50,vgg16,32,50000,0,985.2216748768473,1,1,1,0",
    )
    jobs = load_muri(p)
    oh = restart_overhead_s("vgg16", 1)
    res = simulate(jobs, N8G8, "srtf", restart_s=10, restart_rule="every_event")
    jct = dict(zip(res.jobs["job"], res.jobs["jct"], strict=True))
    assert jct["B"] == pytest.approx(50.0)  # its own completion is not an event for it
    assert jct["A"] == pytest.approx(1000.0 + 2 * oh)
    once = simulate(jobs, N8G8, "srtf", restart_s=10)  # on_restart: nothing is restarted
    assert dict(zip(once.jobs["job"], once.jobs["jct"], strict=True))["A"] == pytest.approx(1000)


@pytest.mark.parametrize("policy", ["srtf", "tiresias", "muri_s"])
def test_every_event_charge_inline_closes_segments_as_the_recorder_does(policy, monkeypatch):
    # The charge closes every running job's segment inline; the Recorder's close is the rule.
    sc = muri_scenario(DATA / "trace2_first100.csv")
    cluster = sc.build_cluster()
    jobs = sc.build_jobs(cluster)
    pol = get_policy(policy, **sc.policy_options.get(policy, {}))
    opts = {**simulation_options(sc), "policy": pol, "lower_bound": False}
    inline = simulate(jobs, cluster, **opts)
    monkeypatch.setattr(Engine, "inline_close", False)
    ref = simulate(jobs, cluster, **opts)
    assert len(inline.history) > 2 * len(jobs)  # a pause and a run per job and event
    for table in ("jobs", "history", "utilization", "decisions"):
        a, b = getattr(inline, table), getattr(ref, table)
        if table == "decisions":
            a, b = a.drop(columns="scheduler_s"), b.drop(columns="scheduler_s")
        pd.testing.assert_frame_equal(a, b, check_exact=True)


@pytest.mark.parametrize(
    "trace, policies, within, mean_tol",
    [
        # SRTF and Tiresias follow the authors' simulator job by job
        ("trace2_first100", ("srtf", "tiresias"), 1.0, 1e-3),
        # Muri-S/L too: the same matching among equal-weight ones (smdlab.solve.blossom)
        ("trace4_first100", ("muri_s", "muri_l"), 1.0, 1e-6),
        ("trace2_first100", ("muri_s", "muri_l"), 1.0, 1e-6),
        # every job at t=0: packings form, lose members and re-form at most events
        ("trace2_pr_first50", ("srtf", "tiresias", "muri_s", "muri_l"), 1.0, 1e-6),
    ],
)
def test_parity_with_the_authors_simulator(trace, policies, within, mean_tol):
    ref = pd.read_csv(DATA / f"{trace}__jct.csv")
    runs = run_muri(muri_scenario(DATA / f"{trace}.csv"), policies)
    for name, (table, _) in runs.items():
        a = agreement(name, table, ref[["job_id", name]].rename(columns={name: "jct_s"}))
        assert a.jobs == len(ref)
        assert a.within >= within, a
        assert abs(a.mean_error) <= mean_tol, a
