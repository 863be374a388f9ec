"""``smdlab batch``: a Philly window on a batch queue, its files, and one-line bad input."""

from __future__ import annotations

import pandas as pd
import pytest

from smdlab.cli import main
from smdlab.sim.batch import simulate_batch
from smdlab.workloads.batch import batch_trace

WINDOW = ["batch", "--start", "30000", "--jobs", "300", "--gpus", "32", "--limit-h", "12"]


def test_batch_command_matches_the_library_and_writes_its_files(tmp_path, capsys):
    out = tmp_path / "run"
    args = [*WINDOW, "--queue", "conservative", "--chains", "2", "--provisioner", "lead_2h"]
    assert main([*args, "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "queue: conservative" in text and "provisioner: lead_2h" in text
    jobs = pd.read_csv(out / "jobs.csv")
    chains = pd.read_csv(out / "chains.csv")
    assert len(chains) == 2 and (chains["links"] >= 4).all()
    background = batch_trace(limit_s=12 * 3600, start=30000, first=300)
    ref = simulate_batch(background, 32, 12 * 3600, "conservative")
    bg = jobs[jobs["chain"].isna()].set_index("name")
    assert len(bg) == 300
    # the chains change the background's schedule, so compare a run without them
    assert main([*WINDOW, "--queue", "conservative", "--out", str(tmp_path / "plain")]) == 0
    plain = pd.read_csv(tmp_path / "plain" / "jobs.csv").set_index("name")
    assert plain["start"].to_numpy() == pytest.approx(ref.jobs.set_index("name")["start"])
    first = (out / "jobs.csv").read_bytes()
    assert main([*args, "--out", str(out)]) == 0  # smdlab's own files: replaced, same bytes
    assert (out / "jobs.csv").read_bytes() == first


def test_batch_fair_share_and_load(capsys):
    assert main([*WINDOW, "--fair-share", "--load", "0.9"]) == 0
    captured = capsys.readouterr()
    assert "queue: fair_easy" in captured.out and "offered load 0.90" in captured.err


def _status(argv: list[str]) -> int:
    """main's exit status, also when argparse exits (a usage error)."""
    try:
        return main(argv)
    except SystemExit as exc:
        return int(exc.code or 0)


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--limit-h", "0"], "--limit-h must be > 0"),
        (["--jobs", "0"], "--jobs must be an integer"),
        (["--load", "-1"], "--load must be > 0"),
        (["--chains", "1", "--provisioner", "soon"], "provisioner must be reactive, oracle or"),
        (["--chains", "1", "--chain-length-h", "1000"], "over max_links 64"),
        (["--gpus", "4"], "gpus must be at most the cluster's 4"),
        (["--requested-column", "nope"], "no column 'nope' (requested_column)"),
        (["--queue", "lifo"], "invalid choice: 'lifo'"),
    ],
)
def test_batch_bad_input_is_one_line_exit_2(extra, message, capsys):
    assert _status([*WINDOW, *extra]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("smdlab: error:") and message in err[-1]
    assert not any("Traceback" in line for line in err)
