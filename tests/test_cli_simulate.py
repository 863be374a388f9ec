"""The command line: JSON and table output, safe --out, sweeps, and one-line errors (exit 2)."""

from __future__ import annotations

import io
import json
import subprocess
import sys

import pandas as pd
import pytest
from _cli_output import without_workload_line

from smdlab.cli import COMMANDS, main

SMALL = ["--jobs", "12", "--machines", "2"]


def test_json_output_is_only_json(capfd):
    assert main(["simulate", *SMALL, "--policy", "fifo,srtf", "--json"]) == 0
    out, _err = capfd.readouterr()
    data = json.loads(out)
    assert set(data) == {"fifo", "srtf"}
    for summary in data.values():
        for key in (
            "jobs_completed",
            "mean_jct",
            "median_jct",
            "p95_jct",
            "makespan",
            "utilization",
            "scheduler_time_s",
        ):
            assert key in summary
        assert summary["jobs_completed"] == 12
        assert set(summary["utilization"]) == {"gpu", "cpu", "mem_gb", "bw_gbps"}


def test_table_output(capfd):
    assert main(["simulate", *SMALL, "--policy", "fifo", "--seed", "3"]) == 0
    out, _ = capfd.readouterr()
    assert "mean_jct_s" in out and "fifo" in out and "12 jobs" in out


def test_simulate_says_what_it_runs_on_stderr(capfd):
    from smdlab.workloads.scenario import load_scenario

    assert main(["simulate", *SMALL, "--policy", "fifo", "--seed", "3", "--json"]) == 0
    err = capfd.readouterr().err
    scenario = load_scenario(None).with_changes(
        cluster={"machines": 2}, workload={"jobs": 12}, seed=3
    )
    arrivals = [j.arrival for j in scenario.build_jobs(scenario.build_cluster())]
    window = f"[{min(arrivals):,.0f}, {max(arrivals):,.0f}] s"
    assert (
        err == f"smdlab: workload: 12 synthetic jobs arriving in {window} on 2 machines (16 GPUs)\n"
    )


def test_a_trace_without_jobs_runs_the_scenario_window_and_says_so(tmp_path, capfd):
    from smdlab.cli import _scenario_from, _workload_line, build_parser
    from smdlab.workloads.trace import trace_size

    total = trace_size()
    # the default scenario's 200 jobs, with --workload philly and no --jobs: said, not silent
    args = build_parser().parse_args(["simulate", "--workload", "philly"])
    scenario = _scenario_from(args)
    cluster = scenario.build_cluster()
    jobs = scenario.build_jobs(cluster)
    assert len(jobs) == 200
    line = _workload_line(scenario, jobs, cluster, jobs_given=False)
    assert line.startswith("workload: 200 philly jobs arriving in [0, ")
    assert line.endswith(
        f"200 of the trace's {total:,} jobs (the scenario's workload.jobs; "
        f"--jobs {total} runs the whole trace)"
    )
    # end to end: a scenario file's window of the bundled trace
    p = tmp_path / "window.toml"
    p.write_text(
        'policies = ["fifo"]\n[cluster]\nmachines = 2\n[workload]\nkind = "philly"\njobs = 6\n'
    )
    assert main(["simulate", "--scenario", str(p), "--json"]) == 0
    err = capfd.readouterr().err
    assert f"6 of the trace's {total:,} jobs (the scenario's workload.jobs; --jobs {total}" in err
    assert main(["simulate", "--scenario", str(p), "--jobs", "4", "--start", "100", "--json"]) == 0
    err = capfd.readouterr().err
    assert f"4 of the trace's {total:,} jobs (--jobs; --jobs {total} runs every job the" in err


def test_out_writes_csvs_and_never_clobbers_foreign_files(tmp_path, capfd):
    out = tmp_path / "res"
    assert main(["simulate", *SMALL, "--policy", "fifo", "--out", str(out)]) == 0
    jobs = pd.read_csv(out / "jobs_fifo.csv")
    assert len(jobs) == 12 and {
        "job",
        "arrival",
        "start",
        "finish",
        "jct",
        "queueing_delay",
    } <= set(jobs.columns)
    assert (out / "history_fifo.csv").exists() and (out / "summary.csv").exists()
    assert main(["simulate", *SMALL, "--policy", "fifo", "--out", str(out)]) == 0  # ours: replaced
    (out / "jobs_fifo.csv").write_text("my notes\n")
    capfd.readouterr()
    assert main(["simulate", *SMALL, "--policy", "fifo", "--out", str(out)]) == 2
    err = without_workload_line(capfd.readouterr().err)
    assert err.count("\n") == 1 and err.startswith("smdlab: error: refusing to overwrite")
    assert (out / "jobs_fifo.csv").read_text() == "my notes\n"
    assert main(["simulate", *SMALL, "--policy", "fifo", "--out", str(out), "--force"]) == 0
    assert len(pd.read_csv(out / "jobs_fifo.csv")) == 12
    assert not [p for p in out.iterdir() if p.name.endswith(".tmp")]


@pytest.mark.parametrize(
    "argv, text",
    [
        (["simulate", "--policy", "nope"], "policy must be one of"),
        (["simulate", "--jobs", "0"], "workload.jobs must be an integer"),
        (["simulate", "--workload", "/no/such.csv"], "not found"),
        (["simulate", "--scenario", "/no/such.toml"], "scenario file not found"),
        (["simulate", "--machines", "x"], "invalid int value"),
        (["simulate", "--bogus"], "unrecognized arguments"),
        (["sweep", "--loads", "a,b"], "comma-separated list of float"),
        (["sweep", "--serial", "--scheduler", "tcp://x:1"], "not both"),
    ],
)
def test_bad_input_exits_2_with_one_line(argv, text, capfd):
    try:
        rc = main(argv)
    except SystemExit as exc:  # argparse usage errors
        rc = exc.code
    out, err = capfd.readouterr()
    err = without_workload_line(err)
    assert rc == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith("smdlab: error:") and text in err


def test_workload_path_job_table(tmp_path, capfd):
    p = tmp_path / "jobs.csv"
    p.write_text("network,arrival,samples,max_workers\nalexnet,0,100000,2\nresnet50,10,50000,1\n")
    assert main(["simulate", "--workload", str(p), "--policy", "fifo", "--json"]) == 0
    assert json.loads(capfd.readouterr().out)["fifo"]["jobs_completed"] == 2


def test_malformed_scenario_reports_the_line(tmp_path, capfd):
    p = tmp_path / "bad.toml"
    p.write_text("seed = 1\n\n[cluster\n")
    assert main(["simulate", "--scenario", str(p)]) == 2
    err = capfd.readouterr().err
    assert "line 3" in err and err.count("\n") == 1


def test_installed_entry_point_exit_status():
    proc = subprocess.run(
        [sys.executable, "-m", "smdlab.cli", "simulate", "--jobs", "-1"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2 and proc.stdout == ""
    assert (
        proc.stderr.strip().startswith("smdlab: error:")
        and len(proc.stderr.strip().splitlines()) == 1
    )


def test_sweep_serial_tidy_csv(tmp_path, capfd):
    out = tmp_path / "sweep.csv"
    argv = [
        "sweep",
        "--jobs",
        "10",
        "--policy",
        "fifo,srtf",
        "--loads",
        "0.5,1.5",
        "--seeds",
        "1,2",
        "--machines",
        "2,3",
        "--serial",
        "--out",
        str(out),
        "--no-progress",
    ]
    assert main(argv) == 0
    df = pd.read_csv(out)
    assert len(df) == 2 * 2 * 2 * 2
    assert list(df.columns[:4]) == ["policy", "load", "seed", "machines"]
    assert not df.duplicated(["policy", "load", "seed", "machines"]).any()
    assert (df["jobs_completed"] == 10).all() and "util_gpu" in df.columns
    out.write_text("foreign\n")
    assert main(argv) == 2 and out.read_text() == "foreign\n"


@pytest.mark.slow  # starts a local Dask cluster of 2 processes (about 10 s)
def test_sweep_on_local_dask_matches_serial(capfd):
    argv = [
        "sweep",
        "--jobs",
        "8",
        "--policy",
        "fifo",
        "--loads",
        "1.0",
        "--seeds",
        "1,2",
        "--machines",
        "2",
        "--no-progress",
    ]
    assert main([*argv, "--serial"]) == 0
    serial = capfd.readouterr().out
    assert main([*argv, "--workers", "2"]) == 0
    dask = capfd.readouterr().out
    cols = ["policy", "load", "seed", "machines", "jobs_completed", "mean_jct", "makespan"]
    a = pd.read_csv(io.StringIO(serial))[cols]
    b = pd.read_csv(io.StringIO(dask))[cols]
    pd.testing.assert_frame_equal(a, b)


def test_subcommands_are_a_registry():
    assert {"simulate", "sweep"} <= set(COMMANDS)
    assert all(callable(c.add_arguments) and callable(c.run) for c in COMMANDS.values())
