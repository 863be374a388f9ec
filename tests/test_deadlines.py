"""Job classes (SLOs), their metrics, the Chronus trace format, the deadline generator and the
deadline-aware policies (EDF, LSF, Chronus, UniSched), with Chronus beside the artifact's output
on hand-made traces (tests/data/chronus: the artifact's per-job output, MIT licence, notices
beside the files)."""

from __future__ import annotations

import math
import re
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from smdlab import Cluster
from smdlab.errors import InvalidInput
from smdlab.model.slo import SLO, make_slo
from smdlab.policies.deadline import _lease
from smdlab.policies.deadline.chronus import Chronus
from smdlab.policies.deadline.unisched import UniSched
from smdlab.sim import JOB_COLUMNS, SLO_JOB_COLUMNS, SLO_SUMMARY_KEYS, SUMMARY_KEYS, simulate
from smdlab.workloads import synthetic
from smdlab.workloads.chronus import chronus_restart_s, load_chronus
from smdlab.workloads.deadlines import isolated_duration, with_deadlines
from smdlab.workloads.trace import load_csv

DATA = Path(__file__).parent / "data" / "chronus"
HEADER = "job_id,user,num_gpu,submit_time,iterations,model_name,duration,interval,expect_time_list,expect_value_list,best_effort,job_type\n"


def _trace(tmp_path: Path, rows: list[str], name: str = "t.csv") -> Path:
    p = tmp_path / name
    p.write_text(HEADER + "".join(r + "\n" for r in rows))
    return p


def _gpu_cluster(gpus: int, machines: int = 1) -> Cluster:
    return Cluster.homogeneous(machines, gpu=gpus, cpu=128, mem_gb=256, bw_gbps=100)


# ---- the model ---------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "args, words",
    [
        (((100.0, 200.0), (10.0,)), "same length"),
        (((0.0,), (10.0,)), "deadlines_s[0]"),
        (((100.0, 200.0), (5.0, 5.0)), "strictly decreasing"),
        (((100.0, 200.0), (5.0, 8.0)), "strictly decreasing"),
        (((200.0, 100.0), (10.0, 5.0)), "strictly increasing"),
    ],
)
def test_a_bad_slo_is_one_line_naming_the_field(args, words):
    with pytest.raises(InvalidInput, match=re.escape(words)) as exc:
        SLO(*args)
    assert "\n" not in str(exc.value)


def test_value_earned_is_the_first_option_met():
    slo = make_slo("soft", [100.0, 200.0, 300.0], [10.0, 8.0, 2.0])
    assert [slo.earned(50.0, f) for f in (150.0, 151.0, 250.0, 350.0, 351.0)] == [10, 8, 8, 2, 0]
    assert make_slo("best", [1.0]) is None
    with pytest.raises(InvalidInput, match="job_type"):
        make_slo("gold", [1.0])


def test_a_job_without_deadline_is_best_effort_and_a_run_keeps_its_columns():
    cluster = Cluster.homogeneous(2)
    jobs = synthetic(6, cluster, load=1.0, seed=3, networks=["resnet50"])
    assert all(j.slo is None and j.job_class == "best_effort" for j in jobs)
    res = simulate(jobs, cluster, "fifo")
    assert tuple(res.jobs.columns) == JOB_COLUMNS
    assert not set(SLO_SUMMARY_KEYS) & set(res.summary)
    assert set(SUMMARY_KEYS) <= set(res.summary)


def test_slo_metrics_by_hand(tmp_path):
    # One GPU, FIFO, three 10-minute jobs submitted together: a (met), b (its second option), c.
    p = _trace(tmp_path, [
        "a,u,1,5,1,alexnet,10,5,15,10,0,strict",
        "b,u,1,5,1,alexnet,10,5,15-25,10-4,0,soft",
        "c,u,1,5,1,alexnet,10,5,5,10,1,best",
    ])  # fmt: skip
    res = simulate(load_chronus(p), _gpu_cluster(1), "fifo")
    t = res.jobs.set_index("job")
    assert list(t["job_class"]) == ["slo", "slo", "best_effort"]
    assert t.loc["a", "deadline_met"] == 1 and t.loc["a", "value"] == 10
    assert t.loc["b", "deadline_met"] == 0 and t.loc["b", "value"] == 4
    assert t.loc["b", "lateness"] == pytest.approx(5 * 60.0)
    assert math.isnan(t.loc["c", "deadline_met"])
    s = res.summary
    assert s["slo_jobs"] == 2 and s["best_effort_jobs"] == 1
    assert s["hard_miss_rate"] == pytest.approx(0.5)
    assert s["weighted_miss_rate"] == pytest.approx((0 + (1 - 4 / 10)) / 2)
    assert s["best_effort_mean_jct"] == pytest.approx(30 * 60.0)
    assert set(SLO_JOB_COLUMNS) <= set(res.jobs.columns)


# ---- the Chronus trace format ----------------------------------------------------------------------
def test_chronus_trace_by_kind_and_by_columns(tmp_path):
    p = _trace(tmp_path, [
        "7,u,2,10,1,alexnet,30,5,100-200,10-5,0,soft",
        "3,u,1,5,1,resnet101,20,5,60,10,0,strict",
        "9,u,1,5,1,vgg16,10,5,5,10,1,best",
    ])  # fmt: skip
    jobs = load_chronus(p)
    same = load_csv(p)
    assert [j.name for j in jobs] == [j.name for j in same] == ["3", "9", "7"]  # submit order
    a = {j.name: j for j in jobs}
    assert a["7"].arrival == 600 and a["7"].slo.deadlines_s == (6000.0, 12000.0)
    assert a["7"].slo.values == (10.0, 5.0) and a["7"].slo.kind == "soft"
    assert a["9"].slo is None and a["3"].profile.network == "resnet50"  # the stand-in
    assert a["7"].restart_s == pytest.approx(chronus_restart_s(2)) == pytest.approx(60.0)
    assert isolated_duration(a["7"]) == pytest.approx(30 * 60.0)


@pytest.mark.parametrize(
    "row, words",
    [
        ("1,u,1,5,1,alexnet,20,5,60-90,10,0,soft", "same length"),
        ("1,u,1,5,1,alexnet,20,5,0,10,0,strict", "deadlines > 0"),
        ("1,u,1,5,1,alexnet,20,5,60-90,5-8,0,soft", "strictly decreasing"),
        ("1,u,1,5,1,alexnet,20,5,60,10,0,gold", "job_type must be one of"),
        ("1,u,1,5,1,alexnet,20,5,60,10,1,strict", "best_effort must be 1 exactly"),
    ],
)
def test_a_bad_chronus_row_is_one_line(tmp_path, row, words):
    p = _trace(tmp_path, [row])
    with pytest.raises(InvalidInput, match=re.escape(words)) as exc:
        load_chronus(p)
    assert "\n" not in str(exc.value) and "line 2" in str(exc.value)


def test_rows_with_no_gpu_are_skipped_with_a_warning_that_counts_them(tmp_path):
    p = _trace(tmp_path, [
        "1,u,0,5,1,alexnet,20,5,60,10,0,strict",
        "2,u,0,5,1,alexnet,20,5,60,10,0,strict",
        "3,u,1,5,1,alexnet,20,5,60,10,0,strict",
    ])  # fmt: skip
    with pytest.warns(UserWarning, match="skipped 2 job"):
        jobs = load_chronus(p)
    assert [j.name for j in jobs] == ["3"]


def test_cli_reads_a_chronus_trace_and_rejects_a_bad_one(tmp_path, capsys):
    from smdlab.cli import main

    good = _trace(tmp_path, ["1,u,1,5,1,alexnet,20,5,60,10,0,strict"], "good.csv")
    assert main(["simulate", "--workload", f"chronus:{good}", "--policy", "edf", "--json"]) == 0
    out = capsys.readouterr().out
    assert '"hard_miss_rate": 0.0' in out
    bad = _trace(tmp_path, ["1,u,1,5,1,alexnet,20,5,60,10,0,gold"], "bad.csv")
    assert main(["simulate", "--workload", str(bad), "--policy", "edf"]) == 2
    err = capsys.readouterr().err.strip()
    assert "job_type must be one of" in err and "\n" not in err and "Traceback" not in err


# ---- the deadline generator ------------------------------------------------------------------------
def test_deadlines_are_seeded_and_within_the_slack_range():
    cluster = Cluster.homogeneous(2)
    jobs = synthetic(20, cluster, load=1.0, seed=1, networks=["resnet50", "alexnet"])
    a = with_deadlines(jobs, slack=(1.5, 3.0), fraction=0.5, seed=4)
    b = with_deadlines(jobs, slack=(1.5, 3.0), fraction=0.5, seed=4)
    assert [j.slo for j in a] == [j.slo for j in b]
    assert [j.slo for j in a] != [j.slo for j in with_deadlines(jobs, fraction=0.5, seed=5)]
    slo = [j for j in a if j.slo is not None]
    assert 0 < len(slo) < len(jobs)
    for j in slo:
        assert 1.5 - 1e-9 <= j.slo.first_deadline_s / isolated_duration(j) <= 3.0 + 1e-9
    soft = with_deadlines(
        jobs, slack=2.0, distribution="fixed", soft_factors=[1.5], soft_values=[5]
    )
    assert soft[0].slo.kind == "soft" and soft[0].slo.values == (10.0, 5.0)
    with pytest.raises(InvalidInput, match="soft_factors and soft_values"):
        with_deadlines(jobs, soft_factors=[1.5])


def test_a_scenario_draws_deadlines_for_any_workload(tmp_path):
    from smdlab.workloads.scenario import load_scenario

    p = tmp_path / "s.toml"
    p.write_text(
        'policies = ["edf"]\n[cluster]\nmachines = 2\n[workload]\nkind = "synthetic"\njobs = 8\n'
        "load = 1.0\n[workload.deadlines]\nslack = [2.0, 2.5]\nfraction = 1.0\n"
    )
    jobs = load_scenario(p).build_jobs()
    assert all(j.slo is not None for j in jobs)
    p.write_text('[workload]\nkind = "synthetic"\njobs = 8\n[workload.deadlines]\nslak = 2\n')
    with pytest.raises(InvalidInput, match="unknown key 'slak'"):
        load_scenario(p)


def test_bundled_chronus_scenarios_load():
    from smdlab.paths import data_dir
    from smdlab.workloads.scenario import load_scenario

    for name in ("chronus_philly_slo", "chronus_philly_mix1", "chronus_philly_mix2"):
        sc = load_scenario(data_dir() / "scenarios" / f"{name}.toml")
        assert sc.workload["kind"] == "chronus" and "chronus" in sc.policies


# ---- deadline-aware policies -----------------------------------------------------------------------
@pytest.mark.parametrize("policy", ["edf", "lsf"])
def test_deadline_policies_run_the_tightest_slo_job_first_and_best_effort_last(tmp_path, policy):
    p = _trace(tmp_path, [
        "late_deadline,u,1,5,1,alexnet,10,5,100,10,0,strict",
        "best,u,1,5,1,alexnet,10,5,5,10,1,best",
        "early_deadline,u,1,5,1,alexnet,10,5,20,10,0,strict",
    ])  # fmt: skip
    res = simulate(load_chronus(p), _gpu_cluster(1), policy)
    order = list(res.jobs.sort_values("finish")["job"])
    assert order == ["early_deadline", "late_deadline", "best"]
    assert res.summary["hard_miss_rate"] == 0.0


def test_lease_milp_beats_or_ties_the_greedy_and_its_shortcut_is_exact():
    rows = [
        _lease.Row("a", 0, 2, 2, 3, 10.0),
        _lease.Row("b", 0, 1, 2, 2, 10.0),
        _lease.Row("b", 1, 1, 2, 4, 4.0),
        _lease.Row("c", 0, 1, 1, 1, 10.0),
    ]
    plan, status = _lease.milp_selection(rows, [3, 3, 3, 3], 3, time_limit=10)
    assert status == "optimal" and set(plan) == {"a", "b", "c"}
    value = {(r.job, r.vid): r.value for r in rows}
    greedy = _lease.greedy_selection(rows, [3, 3, 3, 3], 3)
    assert sum(value[(j, v)] for j, (v, _) in plan.items()) >= sum(
        value[(j, v)] for j, (v, _) in greedy.items()
    )
    for j, (v, cols) in plan.items():  # every plan within its deadline, lease GPUs respected
        r = next(r for r in rows if (r.job, r.vid) == (j, v))
        assert len(cols) == r.req and max(cols) < r.maxl
    use = np.zeros(4)
    for j, (_, cols) in plan.items():
        use[cols] += next(r.res for r in rows if r.job == j)
    assert np.all(use <= 3)
    # no lease binds: the closed form, the same value as the model
    loose, _ = _lease.milp_selection(rows, [10] * 4, 10)
    assert {j: v for j, (v, _) in loose.items()} == {"a": 0, "b": 0, "c": 0}
    assert all(0 in cols for _, cols in loose.values())
    assert _lease.packable(rows[:2], [3, 3, 3], 3) and not _lease.packable(rows[:2], [1, 1, 1], 1)


def _micro_runs():
    for ref in sorted((DATA / "micro").glob("*.csv")):
        m = re.match(r"(.*)_(\d+)x(\d+)_(mip|greedy)$", ref.stem)
        assert m is not None, ref.stem
        yield pytest.param(m.group(1), int(m.group(2)), int(m.group(3)), m.group(4), id=ref.stem)


@pytest.mark.parametrize("trace, nodes, gpus, mode", list(_micro_runs()))
def test_chronus_beside_the_artifact_on_hand_made_traces(trace, nodes, gpus, mode):
    from smdlab.experiments.chronus_parity import chronus_parity

    res = chronus_parity(
        DATA / "inputs" / f"{trace}.csv",
        DATA / "micro" / f"{trace}_{nodes}x{gpus}_{mode}.csv",
        nodes=nodes,
        gpus_per_node=gpus,
        solver="milp" if mode == "mip" else "greedy",
    )
    # The MILP breaks a tie between two jobs differently from CBC in m2 (docs/deadlines.md).
    assert res["within_lease"] >= (0.5 if trace == "m2_two_strict" and mode == "mip" else 1.0)
    for k in ("hard_miss_rate", "weighted_miss_rate"):
        a, b = res["artifact"][k], res["smdlab"][k]
        assert (math.isnan(a) and math.isnan(b)) or abs(a - b) <= (
            0.5 if trace == "m2_two_strict" else 1e-9
        )


def test_unisched_learns_durations_from_finished_jobs(tmp_path):
    rows = [f"{i},u,1,{100 * i},1,alexnet,{30},5,{600},10,0,strict" for i in range(4)]
    jobs = load_chronus(_trace(tmp_path, rows))
    pol = UniSched(prior_min=5.0)
    simulate(jobs, _gpu_cluster(1), pol)
    est = {name: (e, a) for name, e, a in pol.estimates}
    assert est["0"][0] == 5.0  # nothing finished yet: the prior
    # job 1 arrived after job 0 finished: its estimate is job 0's duration
    assert est["1"][0] == pytest.approx(30.0) and est["1"][1] == pytest.approx(30.0)


def test_chronus_runs_any_workload_and_reports_its_lease_solves():
    cluster = Cluster.homogeneous(2)
    jobs = with_deadlines(synthetic(12, cluster, load=1.2, seed=2, networks=["resnet50"]), seed=2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pol = Chronus(time_limit=1.0)
        res = simulate(jobs, cluster, pol)
    assert res.summary["jobs_completed"] == len(jobs)
    assert all(
        s in ("optimal", "time_limit", "infeasible", "greedy") for _, s, _, _ in pol.lease_solves
    )
    assert 0.0 <= res.summary["hard_miss_rate"] <= 1.0
    df = pd.DataFrame(pol.lease_solves, columns=["t", "status", "rows", "s"])
    assert (df["rows"] > 0).all()


# ---- SMD with deadlines --------------------------------------------------------------------------
def test_slo_weight_is_value_times_the_share_of_the_deadline_window_needed(tmp_path):
    from smdlab.policies.deadline.smd_slo import SMDSLO, slo_weight

    jobs = load_chronus(_trace(tmp_path, [
        "s,u,1,0,1,alexnet,20,5,40-80,10-4,0,soft",
        "b,u,1,0,1,alexnet,20,5,5,10,1,best",
    ]))  # fmt: skip
    s, b = jobs
    assert slo_weight(s, 1200.0, 0.0) == pytest.approx(1 + 10 * 1200 / 2400)
    assert slo_weight(s, 1200.0, 1800.0, kappa=2.0) == pytest.approx(1 + 2 * 4 * 1200 / 3000)
    assert slo_weight(s, 1200.0, 4000.0) == 1.0  # no option left: as best-effort
    assert slo_weight(b, 1200.0, 0.0) == 1.0
    with pytest.raises(InvalidInput, match="kappa"):
        SMDSLO(kappa=-1.0)


def test_smd_with_deadlines_runs_the_slo_job_first_where_smd_misses_it(tmp_path):
    p = _trace(tmp_path, [
        "best,u,1,5,1,alexnet,10,5,5,10,1,best",
        "slo,u,1,5,1,alexnet,20,5,25,10,0,strict",
    ])  # fmt: skip
    smd = simulate(load_chronus(p), _gpu_cluster(1), "smd").jobs.set_index("job")
    ours = simulate(load_chronus(p), _gpu_cluster(1), "smd_slo").jobs.set_index("job")
    assert smd.loc["slo", "deadline_met"] == 0 and ours.loc["slo", "deadline_met"] == 1
    assert ours.loc["slo", "finish"] < ours.loc["best", "finish"]


# ---- the slo_vs_load figure -----------------------------------------------------------------------
def test_at_load_scales_arrivals_to_the_offered_load():
    from smdlab.experiments.deadlines import at_load, slo_cluster, slo_window
    from smdlab.workloads.base import offered_load

    cluster = slo_cluster(2)
    jobs = slo_window(0, 30)
    for load in (0.5, 3.0):
        scaled = at_load(jobs, cluster, load)
        assert offered_load(scaled, cluster) == pytest.approx(load)
        assert scaled[0].arrival == jobs[0].arrival
        assert [j.slo for j in scaled] == [j.slo for j in jobs]
    with pytest.raises(InvalidInput, match="load"):
        at_load(jobs, cluster, 0.0)


def test_slo_vs_load_tiny_and_its_figure_from_the_csv():
    import io

    from smdlab.experiments import csv_bytes, get_config, make_figure, run_experiment
    from smdlab.experiments.deadlines import SLO_COLUMNS
    from smdlab.viz.deadlines import SLO_PANELS

    cfg = get_config("tiny")
    df = run_experiment("slo_vs_load", cfg)
    assert list(df.columns) == list(SLO_COLUMNS)
    assert len(df) == len(cfg.slo_load_values) * len(cfg.slo_windows) * len(cfg.slo_policies)
    assert (df["jobs_completed"] == df["jobs"]).all()
    assert df["hard_miss_rate"].between(0, 1).all()
    assert (df["weighted_miss_rate"] <= df["hard_miss_rate"] + 1e-12).all()
    back = pd.read_csv(io.BytesIO(csv_bytes(df)))
    fig = make_figure("slo_vs_load", back)
    assert len(fig.data) == len(SLO_PANELS) * len(cfg.slo_policies)
    hard = {t.name: t.y[0] for t in fig.data if t.xaxis == "x"}
    fifo = df.loc[df["policy"] == "fifo", "hard_miss_rate"].iloc[0]
    assert hard["FIFO"] == pytest.approx(fifo, rel=1e-5)  # the CSV keeps 6 digits


@pytest.mark.parametrize(
    "field, value", [("slo_load_values", (0.0,)), ("slo_jobs", 1), ("slo_windows", (-1,))]
)
def test_a_bad_slo_sweep_setting_is_one_line(field, value):
    from smdlab.experiments import get_config

    with pytest.raises(InvalidInput, match=field) as exc:
        get_config("tiny").replace(**{field: value})
    assert "\n" not in str(exc.value)


def test_slo_takeaway_follows_its_table():
    from smdlab.viz.takeaways import slo_tradeoff

    rows = [  # load, policy, hard miss, best-effort JCT (s)
        (1.0, "fifo", 0.0, 3600.0), (1.0, "edf", 0.0, 3600.0), (1.0, "chronus", 0.0, 3600.0),
        (2.0, "fifo", 0.4, 7200.0), (2.0, "edf", 0.1, 14400.0), (2.0, "chronus", 0.2, 3600.0),
    ]  # fmt: skip
    df = pd.DataFrame(rows, columns=["load", "policy", "hard_miss_rate", "best_effort_mean_jct_s"])
    df["label"] = df["policy"]
    text = slo_tradeoff(df)
    assert "Up to offered load 1 every policy meets every first deadline" in text
    assert "EDF misses the fewest first deadlines (10.0%)" in text
    assert "Chronus gives best-effort jobs the shortest mean JCT (1.00 h)" in text
    assert "EDF 0.50x and 4.00x" in text and "FIFO 2.00x and 2.00x" in text
    df.loc[(df["load"] == 2.0) & (df["policy"] == "chronus"), "hard_miss_rate"] = 0.05
    assert "Chronus misses the fewest first deadlines (5.0%)" in slo_tradeoff(df)
    assert "one policy wins both" in slo_tradeoff(df)
    with pytest.raises(InvalidInput, match="reference"):
        slo_tradeoff(df, reference="smd_slo")


def test_drift_by_starts_fits_the_end_time_differences():
    from smdlab.experiments.chronus_parity import drift_by_starts

    # diff = 2 + 0.5 resume + 4 fill starts, fill starts = preempt + 1 - resume
    resume = np.array([1, 2, 3, 1, 2, 4])
    fill = np.array([0, 1, 0, 2, 2, 1])
    table = pd.DataFrame(
        {"resume": resume, "preempt": resume + fill - 1, "diff": 2 + 0.5 * resume + 4 * fill}
    )
    out = drift_by_starts({"jobs_table": table})
    assert out["const"] == pytest.approx(2) and out["per_resume"] == pytest.approx(0.5)
    assert out["per_fill"] == pytest.approx(4) and out["later"] == 1.0
    with pytest.raises(InvalidInput, match="resume and preempt"):
        drift_by_starts({"jobs_table": table.drop(columns="preempt")})


def test_parity_restart_scale_zero_removes_the_restart_pauses():
    from smdlab.experiments.chronus_parity import chronus_parity

    trace = DATA / "inputs" / "m1_single.csv"
    ref = DATA / "micro" / "m1_single_1x1_greedy.csv"
    paid = chronus_parity(trace, ref, nodes=1, gpus_per_node=1, solver="greedy")
    free = chronus_parity(trace, ref, nodes=1, gpus_per_node=1, solver="greedy", restart_scale=0.0)
    assert free["jobs_table"]["ours_end"].iloc[0] < paid["jobs_table"]["ours_end"].iloc[0]
    with pytest.raises(InvalidInput, match="restart_scale"):
        chronus_parity(trace, ref, nodes=1, solver="greedy", restart_scale=-1.0)


# ---- the value term of (P) -------------------------------------------------------------------------
def _value_term_jobs():
    from smdlab.solve.instance import build_instance
    from smdlab.widgets.scenario import ExplorerSettings, build_cluster, build_jobs

    s = ExplorerSettings(machines=1, n_jobs=2, max_tasks=4)
    jobs, cluster = build_jobs(s), build_cluster(s)
    d = build_instance(jobs, cluster, cluster.capacity_vector).duration[0]
    due = float(np.sqrt(d[np.isfinite(d)].min() * d[0, 0]))  # met by fast configurations only
    slo = SLO((due, 1.5 * due), (10.0, 4.0), "soft")
    return [jobs[0].replace(slo=slo), jobs[1]], cluster, due


def test_value_term_charges_each_configuration_the_share_of_value_it_loses():
    from smdlab.solve.instance import ValueTerm, build_instance

    jobs, cluster, due = _value_term_jobs()
    plain = build_instance(jobs, cluster, cluster.capacity_vector)
    inst = build_instance(jobs, cluster, cluster.capacity_vector, value_term=ValueTerm(0.0, 2.0))
    assert np.array_equal(plain.cost, plain.weight[:, None, None] * plain.duration)
    H = inst.horizon
    d = inst.duration[0]
    ok = np.isfinite(d)
    kept = np.where(d <= due, 10.0, np.where(d <= 1.5 * due, 4.0, 0.0))
    expected = 2.0 * H * (1.0 - kept / 10.0)
    assert np.allclose((inst.cost - plain.cost)[0][ok], expected[ok])
    assert (kept[ok] == 10.0).any() and (kept[ok] < 10.0).any()  # both met and missed occur
    assert np.allclose((inst.cost - plain.cost)[1][np.isfinite(inst.duration[1])], 0.0)
    wait = H + inst.reference_duration[0]
    lost = 0.0 if wait <= due else (0.6 if wait <= 1.5 * due else 1.0)
    assert inst.defer_cost[0] == pytest.approx(plain.defer_cost[0] + 2.0 * H * lost)
    assert inst.defer_cost[1] == pytest.approx(plain.defer_cost[1])
    cost = inst.job_cost(np.array([1, 0]), np.array([1, 0]))
    assert cost[0] == pytest.approx(inst.cost[0, 0, 0]) and cost[1] == inst.defer_cost[1]
    # A later decision time leaves less of the deadline window: never less value lost.
    later = build_instance(
        jobs, cluster, cluster.capacity_vector, value_term=ValueTerm(0.5 * due, 2.0)
    )
    assert np.all(later.cost[0][ok] >= inst.cost[0][ok] - 1e-9)


def test_value_term_in_solve_and_smd_slo_and_its_bad_input():
    from smdlab.policies.deadline.smd_slo import SMDSLO
    from smdlab.solve import solve
    from smdlab.solve.instance import ValueTerm, build_instance

    jobs, cluster, _ = _value_term_jobs()
    term = ValueTerm(0.0, 1.0)
    sol = solve(jobs, cluster, "smd", value_term=term)
    inst = build_instance(jobs, cluster, cluster.capacity_vector, value_term=term)
    assert sol.objective == pytest.approx(inst.objective(np.array(sol.workers), np.array(sol.ps)))
    res = simulate(jobs, cluster, SMDSLO(value_kappa=1.0))
    assert res.summary["jobs_completed"] == 2 and res.summary["slo_jobs"] == 1
    with pytest.raises(InvalidInput, match=r"value_term\.kappa"):
        ValueTerm(0.0, 0.0)
    with pytest.raises(InvalidInput, match=r"value_term\.now"):
        ValueTerm(math.nan)
    with pytest.raises(InvalidInput, match="value_term must be a ValueTerm"):
        build_instance(jobs, cluster, cluster.capacity_vector, value_term=1.0)  # type: ignore[arg-type]
    with pytest.raises(InvalidInput, match="value_kappa"):
        SMDSLO(value_kappa=-1.0)
