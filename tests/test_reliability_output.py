"""Reproducibility and no lost work: same seed, same bytes; never touch a file smdlab did not
write; an interrupted write leaves no half-written file.

Also tested elsewhere (not repeated here): the reproduce pipeline's CSVs are byte-identical
across two runs (tests/test_reproduce_pipeline.py::test_csvs_are_byte_identical_across_runs);
``reproduce`` refuses foreign and changed files before any work (same file); ``simulate --out``
refuses a foreign file of the same name and ``--force`` replaces it
(tests/test_cli_simulate.py::test_out_writes_csvs_and_never_clobbers_foreign_files).
"""

from __future__ import annotations

import functools
import importlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from _cli_output import without_workload_line

from smdlab import SmdlabError
from smdlab.cli import main
from smdlab.sim import output
from smdlab.sim.output import MANIFEST, write_files

ARGS = ["simulate", "--jobs", "12", "--machines", "2", "--policy", "fifo,tetris", "--seed", "5"]
OURS = {
    f"{kind}_{p}.csv" for kind in ("jobs", "history", "utilization") for p in ("fifo", "tetris")
} | {"summary.csv", "timings.csv"}


def _snapshot(folder: Path) -> dict[str, tuple[bytes, int]]:
    """Every file under ``folder``: relative path -> (content, modification time in ns)."""
    return {
        str(p.relative_to(folder)): (p.read_bytes(), p.stat().st_mtime_ns)
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


@pytest.fixture(scope="module")
def reference(tmp_path_factory) -> dict[str, bytes]:
    """The files of one clean ``simulate --out`` run."""
    out = tmp_path_factory.mktemp("ref") / "out"
    assert main([*ARGS, "--out", str(out)]) == 0
    return {p.name: p.read_bytes() for p in out.iterdir()}


def test_simulate_csvs_are_byte_identical_across_processes(tmp_path, reference):
    # Two fresh interpreters with different string-hash seeds (set and dict orders of names differ).
    outs = []
    for seed in ("1", "2"):
        out = tmp_path / f"out{seed}"
        env = {**os.environ, "PYTHONHASHSEED": seed}
        proc = subprocess.run(
            [sys.executable, "-m", "smdlab.cli", *ARGS, "--out", str(out)],
            capture_output=True,
            text=True,
            env=env,
            timeout=180,
        )
        assert proc.returncode == 0, proc.stderr
        outs.append({p.name: p.read_bytes() for p in out.iterdir()})
    assert set(outs[0]) == set(outs[1]) == set(reference) == OURS | {MANIFEST}
    for name in sorted(OURS - {"timings.csv"}):  # timings.csv holds wall-clock seconds, by design
        assert outs[0][name] == outs[1][name] == reference[name], name
    timings = pd.read_csv(pd.io.common.StringIO(outs[0]["timings.csv"].decode()))
    assert list(timings.columns) == [
        "policy",
        "scheduler_time_s",
        "scheduler_time_per_decision_s",
        "scheduler_time_max_s",
        "sim_wall_s",
    ]
    summary = pd.read_csv(pd.io.common.StringIO(reference["summary.csv"].decode()))
    assert not {"scheduler_time_s", "sim_wall_s"} & set(summary.columns) and summary[
        "jobs_completed"
    ].tolist() == [12, 12]


def test_out_never_deletes_or_changes_files_it_did_not_write(tmp_path, capfd):
    out = tmp_path / "out"
    (out / "notes").mkdir(parents=True)
    (out / "notes" / "draft.md").write_text("my notes\n")
    (out / "README.txt").write_text("results of last week\n")
    (out / "jobs_fifo.csv").write_text("a file of the same name, not smdlab's\n")
    before = _snapshot(out)
    assert main([*ARGS, "--out", str(out)]) == 2
    assert "refusing to overwrite" in capfd.readouterr().err
    assert _snapshot(out) == before  # refused before writing anything: nothing new, nothing changed
    (out / "jobs_fifo.csv").unlink()  # the user moves their file away
    assert main([*ARGS, "--out", str(out)]) == 0
    after = _snapshot(out)
    kept = set(before) - {"jobs_fifo.csv"}
    assert {k: after[k] for k in kept} == {
        k: before[k] for k in kept
    }  # same bytes, same modification time
    assert set(after) == (set(before) - {"jobs_fifo.csv"}) | OURS | {MANIFEST}
    assert main([*ARGS, "--out", str(out)]) == 0  # smdlab's own files are replaced, the others kept
    again = _snapshot(out)
    assert (
        again["README.txt"] == before["README.txt"]
        and again["notes/draft.md"] == before["notes/draft.md"]
    )


def test_unreadable_manifest_protects_everything(tmp_path, capfd):
    out = tmp_path / "out"
    assert main([*ARGS, "--out", str(out)]) == 0
    (out / MANIFEST).write_text("{ not json")
    assert (
        main([*ARGS, "--out", str(out)]) == 2
    )  # nothing counts as smdlab's any more: nothing is replaced
    assert "refusing to overwrite" in capfd.readouterr().err


class Interrupt:
    """Replaces ``os.replace``: the ``at``-th call raises ``exc`` (the calls before it go through)."""

    def __init__(self, at: int, exc: BaseException):
        self.at, self.exc, self.calls = at, exc, 0
        self.real = os.replace

    def __call__(self, src, dst):
        self.calls += 1
        if self.calls == self.at:
            raise self.exc
        return self.real(src, dst)


def _check_no_half_files(out: Path, reference: dict[str, bytes]) -> set[str]:
    """No temporary file left; every result file present is complete; return the names present."""
    names = {p.name for p in out.iterdir()}
    assert not [n for n in names if n.endswith(".tmp")], names
    for n in names - {MANIFEST, "timings.csv"}:
        assert (out / n).read_bytes() == reference[n], n  # complete, never a prefix
    manifest = json.loads((out / MANIFEST).read_text()) if MANIFEST in names else {}
    assert names - {MANIFEST} <= set(manifest)  # every file written is recorded ...
    assert len(set(manifest) - names) <= 1  # ... and at most the one about to be written besides
    return names


@pytest.mark.parametrize("at", [1, 2, 5, 8, 17])
def test_interrupted_simulate_out_leaves_whole_files_and_can_be_rerun(
    at, tmp_path, reference, monkeypatch, capfd
):
    # os.replace fails at call ``at``: the manifest is replaced before each file (calls 1, 3, 5,
    # ...), the files at calls 2, 4, ..., the manifest once more at the end (call 17 for 8 files).
    # The run stops with one error line.
    out = tmp_path / "out"
    stop = Interrupt(at, OSError(28, "No space left on device"))
    monkeypatch.setattr(output.os, "replace", stop)
    assert main([*ARGS, "--out", str(out)]) == 2
    err = without_workload_line(capfd.readouterr().err)
    assert (
        err.startswith("smdlab: error: cannot write")
        and "No space left on device" in err
        and err.count("\n") == 1
    )
    monkeypatch.undo()
    present = _check_no_half_files(out, reference) if out.exists() else set()
    assert len(present - {MANIFEST}) == min(
        (at - 1) // 2, len(OURS)
    )  # the files completed before the failure
    assert (
        main([*ARGS, "--out", str(out)]) == 0
    )  # no --force needed: what was written is known to be smdlab's
    assert _check_no_half_files(out, reference) == OURS | {MANIFEST}


def test_interrupt_during_the_data_write_keeps_the_old_file(tmp_path, monkeypatch):
    out = tmp_path / "out"
    write_files(out, {"a.csv": "old,complete\n1,2\n"})

    def crash(fd):
        raise KeyboardInterrupt  # Ctrl-C after the bytes were written, before the rename

    monkeypatch.setattr(output.os, "fsync", crash)
    with pytest.raises(KeyboardInterrupt):
        write_files(out, {"a.csv": "new,content\n" * 1000})
    monkeypatch.undo()
    assert (out / "a.csv").read_text() == "old,complete\n1,2\n"
    assert sorted(p.name for p in out.iterdir()) == [
        MANIFEST,
        "a.csv",
    ]  # the temporary file is gone
    assert write_files(out, {"a.csv": "new\n"}) == [out / "a.csv"]  # and the old one is still ours


def test_written_files_get_the_usual_permissions(tmp_path):
    umask = os.umask(0o022)
    os.umask(umask)
    (path,) = write_files(tmp_path / "out", {"a.csv": "x\n"})
    assert (
        path.stat().st_mode & 0o777 == 0o666 & ~umask
    )  # not the 0o600 of a private temporary file


def test_output_errors_are_smdlab_errors(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(SmdlabError, match="cannot create output folder"):
        write_files(blocker / "sub", {"a.csv": "x\n"})
    with pytest.raises(SmdlabError, match="plain file name"):
        write_files(tmp_path / "out", {"../escape.csv": "x\n"})


def test_interrupted_reproduce_leaves_whole_csvs_and_can_be_rerun(tmp_path, monkeypatch):
    rep = importlib.import_module(
        "smdlab.experiments.reproduce"
    )  # the module (the package exports a function of that name)

    frames = {
        name: pd.DataFrame({"x": [1.0, 2.0], "name": [name, name]}) for name in rep.list_figures()
    }
    monkeypatch.setattr(rep, "run_experiment", lambda name, cfg, workers=1: frames[name].copy())
    names = rep.list_figures()[:3]
    out = tmp_path / "figs"
    # renames per figure: manifest, CSV, manifest, then the same for the inputs record; the 8th
    # is the second figure's CSV
    monkeypatch.setattr(output.os, "replace", Interrupt(8, OSError(5, "Input/output error")))
    with pytest.raises(SmdlabError, match="cannot write"):
        rep.reproduce(out, "tiny", only=names, formats=["csv"], log=None)
    monkeypatch.setattr(output.os, "replace", os.replace)
    present = sorted(p.name for p in out.iterdir())
    assert present == [
        rep.INPUTS,
        MANIFEST,
        f"{names[0]}.csv",
    ]  # the first CSV complete, the second never half-written
    assert (out / f"{names[0]}.csv").read_bytes() == rep.csv_bytes(frames[names[0]])
    written = rep.reproduce(out, "tiny", only=names, formats=["csv"], log=None)  # no --force needed
    # the rerun continues where the first stopped: the first figure is up to date
    assert sorted(p.name for p in written) == sorted(f"{n}.csv" for n in names[1:])
    assert all((out / f"{n}.csv").read_bytes() == rep.csv_bytes(frames[n]) for n in names)
    again = rep.reproduce(out, "tiny", only=names, formats=["csv"], log=None, recompute=True)
    assert sorted(p.name for p in again) == sorted(f"{n}.csv" for n in names)


def test_reproduce_skips_figures_whose_inputs_and_files_are_unchanged(tmp_path, monkeypatch):
    rep = importlib.import_module("smdlab.experiments.reproduce")
    calls: list[str] = []

    def compute(name, cfg, workers=1):
        calls.append(name)
        return pd.DataFrame({"x": [1.0, 2.0], "seeds": [len(cfg.seeds)] * 2})

    monkeypatch.setattr(rep, "run_experiment", compute)
    names = rep.list_figures()[:3]
    out = tmp_path / "figs"
    run = functools.partial(rep.reproduce, out, only=names, formats=["csv"], log=None)
    assert len(run("tiny")) == 3 and calls == names
    calls.clear()
    assert run("tiny") == [] and calls == []  # nothing changed: nothing computed
    (out / f"{names[1]}.csv").unlink()
    assert [p.name for p in run("tiny")] == [f"{names[1]}.csv"] and calls == [names[1]]
    calls.clear()
    (out / f"{names[2]}.csv").write_text("edited by hand\n")  # not smdlab's any more
    with pytest.raises(SmdlabError, match="refusing to overwrite"):
        run("tiny")
    (out / f"{names[2]}.csv").unlink()
    calls.clear()
    tiny = rep.get_config("tiny")
    assert len(run(tiny.replace(seeds=(7, 8, 9)))) == 3 and calls == names  # new configuration
    calls.clear()
    assert len(run(tiny.replace(seeds=(7, 8, 9)), recompute=True)) == 3 and calls == names
