"""Sweeps that lose nothing: rows stream to disk, an interrupted sweep resumes to the same bytes,
a failing cell is listed while the others finish, and a lost Dask worker loses no cell."""

from __future__ import annotations

import csv
import io
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pandas as pd
import pytest

from smdlab.cli import main
from smdlab.errors import InvalidInput
from smdlab.sim import sweep as sweep_module
from smdlab.sim.sweep import SweepInterrupted, run_sweep
from smdlab.workloads.scenario import load_scenario

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
GRID = {"policies": ["fifo", "srtf", "drf"], "seeds": list(range(1, 9)), "machines": [2]}
ARGV = ["sweep", "--jobs", "6", "--policy", "fifo,srtf,drf", "--seeds", "1,2,3,4,5,6,7,8",
        "--machines", "2", "--no-progress"]  # fmt: skip


@pytest.fixture
def scenario():
    return load_scenario(None).with_changes(workload={"jobs": 6})


def _counting_cells(monkeypatch) -> list[tuple]:
    calls: list[tuple] = []
    real = sweep_module._cell

    def counted(base, *cell):
        calls.append(cell)
        return real(base, *cell)

    monkeypatch.setattr(sweep_module, "_cell", counted)
    return calls


def _stop_after(n: int):
    seen = []

    def on_row(row):
        seen.append(row)
        if len(seen) == n:
            raise KeyboardInterrupt

    return on_row


def test_an_interrupted_sweep_resumes_only_its_missing_cells_to_the_same_bytes(
    scenario, tmp_path, monkeypatch
):
    part, full = tmp_path / "part.csv", tmp_path / "full.csv"
    with pytest.raises(SweepInterrupted) as stop:
        run_sweep(scenario, **GRID, serial=True, out=part, on_row=_stop_after(8))
    assert (stop.value.kept, stop.value.missing) == (8, 16)
    streamed = pd.read_csv(part)  # a valid CSV with its header while unfinished
    assert len(streamed) == 8 and list(streamed.columns[:4]) == [
        "policy",
        "load",
        "seed",
        "machines",
    ]
    calls = _counting_cells(monkeypatch)
    df = run_sweep(scenario, **GRID, serial=True, resume=part)
    assert len(calls) == 16 and len(df) == 24
    run_sweep(scenario, **GRID, serial=True, out=full)
    assert part.read_bytes() == full.read_bytes()
    assert "sim_wall_s" in df.columns and "sim_wall_s" not in pd.read_csv(full).columns


def test_a_torn_last_line_is_computed_again(scenario, tmp_path, monkeypatch):
    part, full = tmp_path / "part.csv", tmp_path / "full.csv"
    with pytest.raises(SweepInterrupted):
        run_sweep(scenario, **GRID, serial=True, out=part, on_row=_stop_after(5))
    with open(part, "a", encoding="utf-8") as fh:  # a run killed in the middle of a write
        fh.write("drf,,8,2,6,6")
    calls = _counting_cells(monkeypatch)
    run_sweep(scenario, **GRID, serial=True, resume=part)
    assert len(calls) == 19
    run_sweep(scenario, **GRID, serial=True, out=full)
    assert part.read_bytes() == full.read_bytes()


def test_a_failing_cell_is_listed_and_the_others_finish(tmp_path, monkeypatch, capfd):
    real = sweep_module._cell

    def flaky(base, policy, load, seed, machines, registered=None):
        if seed == 2 and policy == "srtf":
            raise ValueError("no capacity left on seed 2")
        return real(base, policy, load, seed, machines, registered)

    monkeypatch.setattr(sweep_module, "_cell", flaky)
    out = tmp_path / "sw.csv"
    assert main([*ARGV, "--serial", "--out", str(out)]) == 1
    err = capfd.readouterr().err.strip().splitlines()
    assert len(err) == 2 and err[0].startswith("wrote 23 rows")
    assert "1 of 24 cells failed" in err[1] and "srtf load=scenario seed=2" in err[1]
    assert "ValueError: no capacity left on seed 2" in err[1]
    assert len(pd.read_csv(out)) == 23
    failures = pd.read_csv(tmp_path / "sw.failures.csv")
    assert failures[["policy", "seed"]].values.tolist() == [["srtf", 2]]
    # the failed cell, and only it, runs again on a resume
    monkeypatch.setattr(sweep_module, "_cell", real)
    calls = _counting_cells(monkeypatch)
    assert main([*ARGV, "--serial", "--out", str(out), "--resume"]) == 0
    assert calls == [("srtf", None, 2, 2)]
    assert len(pd.read_csv(out)) == 24 and len(pd.read_csv(tmp_path / "sw.failures.csv")) == 0
    # --fail-fast: the first error ends the sweep, as it always did
    monkeypatch.setattr(sweep_module, "_cell", flaky)
    with pytest.raises(ValueError, match="no capacity"):
        run_sweep(
            load_scenario(None).with_changes(workload={"jobs": 6}),
            **GRID,
            serial=True,
            fail_fast=True,
        )


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (["--seeds", "1,2,3"], "grid.seeds ([1, 2, 3, 4, 5, 6, 7, 8] in the file, [1, 2, 3] now)"),
        (["--jobs", "7"], "scenario.workload.jobs (6 in the file, 7 now)"),
    ],
)
def test_resume_refuses_another_sweeps_file_and_names_the_difference(
    scenario, tmp_path, capfd, change, message
):
    out = tmp_path / "sw.csv"
    with pytest.raises(SweepInterrupted):
        run_sweep(scenario, **GRID, serial=True, out=out, on_row=_stop_after(1))
    before = out.read_bytes()
    assert main([*ARGV, *change, "--serial", "--out", str(out), "--resume"]) == 2
    err = capfd.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "comes from another sweep" in err and message in err
    assert out.read_bytes() == before


def test_resume_needs_a_sweeps_own_file(tmp_path, capfd):
    assert main([*ARGV, "--serial", "--resume"]) == 2
    assert "--resume needs --out" in capfd.readouterr().err
    other = tmp_path / "mine.csv"
    other.write_text("policy,load,seed,machines\n", encoding="utf-8")
    assert main([*ARGV, "--serial", "--out", str(other), "--resume"]) == 2
    err = capfd.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "is not a sweep's output" in err
    assert other.read_text(encoding="utf-8") == "policy,load,seed,machines\n"
    with pytest.raises(InvalidInput, match="is not a sweep's output"):
        run_sweep(load_scenario(None), policies=["fifo"], serial=True, resume=other)


def test_the_streamed_file_is_in_the_manifest_at_every_row(scenario, tmp_path):
    """A rerun without --force may replace an interrupted run's file: it is smdlab's."""
    out = tmp_path / "sw.csv"
    with pytest.raises(SweepInterrupted):
        run_sweep(scenario, **GRID, serial=True, out=out, on_row=_stop_after(3))
    df = run_sweep(scenario, policies=["fifo"], seeds=[1], machines=[2], serial=True, out=out)
    assert len(df) == 1 and len(pd.read_csv(out)) == 1


def _rows(path: Path) -> int:
    try:
        return max(0, len(list(csv.reader(io.StringIO(path.read_text(encoding="utf-8"))))) - 1)
    except FileNotFoundError:
        return 0


@pytest.mark.slow  # a local Dask cluster of two worker processes, stopped by SIGTERM
def test_sigterm_on_a_dask_sweep_keeps_its_rows_and_resume_matches_serial(tmp_path):
    out, ref = tmp_path / "dask.csv", tmp_path / "serial.csv"
    argv = [str(BIN / "smdlab"), *ARGV[:2], "40", *ARGV[3:], "--out", str(out)]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(
        [*argv, "--workers", "2"], cwd=tmp_path, env=env, stderr=subprocess.PIPE, text=True
    )
    deadline = time.monotonic() + 240
    while _rows(out) < 4 and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.2)
    proc.send_signal(signal.SIGTERM)
    err = proc.communicate(timeout=120)[1].strip()
    assert proc.returncode == 130, err
    assert len(err.splitlines()) == 1 and "interrupted:" in err and "--resume" in err
    kept = _rows(out)
    assert 4 <= kept < 24
    subprocess.run([*argv, "--serial", "--resume"], cwd=tmp_path, env=env, check=True)
    subprocess.run(
        [*argv[:-1], str(ref), "--serial"], cwd=tmp_path, env=env, check=True, capture_output=True
    )
    assert out.read_bytes() == ref.read_bytes()


KILLER = textwrap.dedent(
    '''
    import os

    from smdlab.policies import Policy
    from smdlab.policies.registry import get_policy


    class DieOnce(Policy):
        """FIFO, except that the first process to decide anything dies on the spot."""

        name = "die_once"

        def __init__(self):
            self.fifo = get_policy("fifo")

        def decide(self, state):
            try:
                os.close(os.open(os.environ["SMDLAB_DIE_ONCE"], os.O_CREAT | os.O_EXCL))
            except FileExistsError:
                return self.fifo.decide(state)
            os._exit(1)  # a worker lost in the middle of a cell
    '''
)


@pytest.mark.slow  # a local Dask cluster of two worker processes, one of which dies
def test_a_worker_killed_mid_cell_loses_no_cell_and_doubles_none(tmp_path, monkeypatch):
    (tmp_path / "smdlab_die_once.py").write_text(KILLER, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(tmp_path), str(ROOT)]))
    marker = tmp_path / "died"
    monkeypatch.setenv("SMDLAB_DIE_ONCE", str(marker))
    scenario = load_scenario(None).with_changes(workload={"jobs": 6})
    grid = {"policies": ["smdlab_die_once:DieOnce", "fifo"], "seeds": [1, 2, 3], "machines": [2]}
    out, ref = tmp_path / "dask.csv", tmp_path / "serial.csv"
    run_sweep(scenario, **grid, workers=2, out=out)
    assert marker.exists()  # a worker did die
    run_sweep(scenario, **grid, serial=True, out=ref)  # the marker exists: nobody dies now
    assert out.read_bytes() == ref.read_bytes()
    sys.modules.pop("smdlab_die_once", None)
