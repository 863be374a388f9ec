"""``smdlab reproduce``: deterministic CSVs, the manifest, refusal to clobber foreign files, the CLI."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

from smdlab.cli import main
from smdlab.errors import InvalidInput, SmdlabError
from smdlab.experiments import list_figures, reproduce
from smdlab.experiments.reproduce import INPUTS, csv_bytes

MANIFEST = ".smdlab-manifest.json"


@pytest.fixture(scope="module")
def tiny_csv_run(tmp_path_factory) -> Path:
    """One tiny CSV-only run of every figure (shared by the tests that only read it)."""
    out = tmp_path_factory.mktemp("figs") / "out"
    reproduce(out, "tiny", formats=["csv"], log=None)
    return out


def test_every_figure_gets_a_csv_and_a_manifest_entry(tiny_csv_run):
    names = sorted(p.name for p in tiny_csv_run.iterdir())
    assert names == sorted([MANIFEST, INPUTS, *(f"{n}.csv" for n in list_figures())])
    manifest = json.loads((tiny_csv_run / MANIFEST).read_text())
    assert set(manifest) == {INPUTS, *(f"{n}.csv" for n in list_figures())}
    # what each CSV was computed from: the next run skips figures whose inputs are unchanged
    assert set(json.loads((tiny_csv_run / INPUTS).read_text())) == set(list_figures())
    assert len(list_figures()) >= 6


def test_csvs_are_byte_identical_across_runs(tiny_csv_run, tmp_path):
    # A second run in a fresh process (another hash seed), through the installed entry point's module.
    again = tmp_path / "again"
    env = {**os.environ, "PYTHONHASHSEED": "12345"}
    cmd = [
        sys.executable,
        "-m",
        "smdlab.cli",
        "reproduce",
        "--tiny",
        "--formats",
        "csv",
        "--out",
        str(again),
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr
    for name in list_figures():
        assert (again / f"{name}.csv").read_bytes() == (
            tiny_csv_run / f"{name}.csv"
        ).read_bytes(), name


def test_rerun_into_the_same_folder_replaces_own_files(tmp_path):
    out = tmp_path / "out"
    reproduce(out, "tiny", only=["jct_vs_jobs"], formats=["csv"], log=None)
    before = (out / "jct_vs_jobs.csv").read_bytes()
    again = reproduce(out, "tiny", only=["jct_vs_jobs"], formats=["csv"], log=None, recompute=True)
    assert [p.name for p in again] == ["jct_vs_jobs.csv"]
    assert (out / "jct_vs_jobs.csv").read_bytes() == before
    assert not [
        p for p in out.iterdir() if p.name.startswith(".") and p.name not in (MANIFEST, INPUTS)
    ]  # no temp files left


def test_foreign_file_is_refused_untouched_and_others_kept(tmp_path, capsys):
    out = tmp_path / "out"
    out.mkdir()
    (out / "jct_vs_jobs.csv").write_text("mine\n")
    (out / "notes.txt").write_text("keep me\n")
    with pytest.raises(SmdlabError, match=r"jct_vs_jobs\.csv"):
        reproduce(out, "tiny", only=["jct_vs_jobs"], formats=["csv"], log=None)
    assert (out / "jct_vs_jobs.csv").read_text() == "mine\n"
    # Through the CLI: one error line, exit status 2, nothing written.
    rc = main(
        ["reproduce", "--tiny", "--only", "jct_vs_jobs", "--formats", "csv", "--out", str(out)]
    )
    err = capsys.readouterr().err
    assert rc == 2 and "smdlab: error:" in err and "jct_vs_jobs.csv" in err and "--force" in err
    assert (out / "jct_vs_jobs.csv").read_text() == "mine\n"
    assert not (out / MANIFEST).exists()
    # --force overwrites it; the unrelated file stays.
    assert (
        main(
            [
                "reproduce",
                "--tiny",
                "--only",
                "jct_vs_jobs",
                "--formats",
                "csv",
                "--out",
                str(out),
                "--force",
            ]
        )
        == 0
    )
    assert (out / "jct_vs_jobs.csv").read_text().startswith("n_jobs,seed,policy")
    assert (out / "notes.txt").read_text() == "keep me\n"


def test_file_changed_after_smdlab_wrote_it_is_refused(tmp_path):
    out = tmp_path / "out"
    reproduce(out, "tiny", only=["optimality_gap"], formats=["csv"], log=None)
    with open(out / "optimality_gap.csv", "a") as fh:
        fh.write("edited by hand\n")
    with pytest.raises(SmdlabError, match=r"optimality_gap\.csv"):
        reproduce(out, "tiny", only=["optimality_gap"], formats=["csv"], log=None)
    assert (out / "optimality_gap.csv").read_text().endswith("edited by hand\n")


def test_refusal_comes_before_any_work(tmp_path, monkeypatch):
    out = tmp_path / "out"
    out.mkdir()
    (out / "optimality_gap.csv").write_text("x\n")
    import importlib

    rp = importlib.import_module(
        "smdlab.experiments.reproduce"
    )  # the attribute is the function of that name

    def boom(*a, **k):
        raise AssertionError("an experiment ran before the output check")

    monkeypatch.setattr(rp, "run_experiment", boom)
    with pytest.raises(SmdlabError):
        reproduce(out, "tiny", only=["jct_vs_jobs", "optimality_gap"], formats=["csv"], log=None)
    assert sorted(p.name for p in out.iterdir()) == ["optimality_gap.csv"]


def test_out_that_is_a_file_is_refused(tmp_path):
    f = tmp_path / "f"
    f.write_text("x")
    with pytest.raises(SmdlabError, match="not a folder"):
        reproduce(f, "tiny", only=["jct_vs_jobs"], formats=["csv"], log=None)


def test_bad_names_and_formats_raise():
    with pytest.raises(InvalidInput, match="figure must be among"):
        reproduce("unused", "tiny", only=["nope"], formats=["csv"], log=None)
    with pytest.raises(InvalidInput, match="formats must be among"):
        reproduce("unused", "tiny", only=["jct_vs_jobs"], formats=["gif"], log=None)
    assert not Path("unused").exists()


def test_cli_list_names_every_figure(capsys):
    assert main(["reproduce", "--list"]) == 0
    out = capsys.readouterr().out
    assert all(name in out for name in list_figures())


def test_csv_bytes_fixed_format_and_zero_noise():
    import pandas as pd

    text = csv_bytes(pd.DataFrame({"a": [1, 2], "g": [-5.9e-17, 0.123456789012345]})).decode()
    assert text == "a,g\n1,0\n2,0.123457\n"  # \n line ends whatever the platform


def test_worker_warnings_shown_once_per_figure():
    # warnings.warn as the task: picklable, so the forkserver workers issue the warnings
    from smdlab.experiments.jct import run_tasks
    from smdlab.experiments.reproduce import each_warning_once

    shown: list[str] = []
    with warnings.catch_warnings():
        warnings.simplefilter("always")
        warnings.showwarning = lambda m, c, f, n, file=None, line=None: shown.append(str(m))
        with each_warning_once():
            out = run_tasks(warnings.warn, ["needs 17.7 GB", "other", "needs 17.7 GB"], workers=2)
            warnings.warn(
                "needs 17.7 GB", stacklevel=1
            )  # the parent's own: the same text, not shown again
    assert out == [None, None, None]
    assert shown == ["needs 17.7 GB", "other"]
