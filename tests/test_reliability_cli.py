"""The command line's contract, in real processes: exit 2 and one line for a user error, exit 1
and a traceback for a bug, and ``--json`` stdout that is only JSON whatever a library prints.

The table of user errors (each through the library and the CLI) is tests/test_reliability_inputs.py.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

from smdlab.cli import main


def _run(code: str, *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code), *args],
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def test_user_error_is_one_line_and_exit_2_in_a_real_process(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text("[cluster]\nmachines = 2\ngpu = -4\n")
    proc = subprocess.run(
        [sys.executable, "-m", "smdlab.cli", "simulate", "--scenario", str(bad)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr
    assert proc.stderr.startswith(
        f"smdlab: error: {bad}: cluster.gpu must be >= 0 and finite, got -4"
    )


def test_a_bug_exits_1_with_its_traceback():
    # A defect inside a command (here a ZeroDivisionError planted in the simulation runner) is not
    # a user error: Python's traceback is printed so that it can be reported, and the status is 1.
    proc = _run("""
        import sys
        import smdlab.sim.runner as runner
        import smdlab.cli as cli

        def broken(*args, **kwargs):
            return 1 / 0

        runner.run_policies = broken
        sys.exit(cli.main(["simulate", "--jobs", "3", "--machines", "1", "--policy", "fifo"]))
    """)
    assert proc.returncode == 1 and proc.stdout == ""
    assert (
        "Traceback (most recent call last)" in proc.stderr
        and "ZeroDivisionError: division by zero" in proc.stderr
    )
    assert "smdlab: error" not in proc.stderr


@pytest.mark.parametrize(
    "exc", [ValueError("plain"), KeyError("k"), TypeError("t"), RuntimeError("r")]
)
def test_only_smdlab_errors_become_exit_2(exc, monkeypatch, capfd):
    # InvalidInput is a ValueError, but a plain ValueError is a bug: it propagates (exit 1 above).
    import smdlab.sim.runner as runner

    def broken(*args, **kwargs):
        raise exc

    monkeypatch.setattr(runner, "run_policies", broken)
    with pytest.raises(type(exc)):
        main(["simulate", "--jobs", "3", "--machines", "1", "--policy", "fifo"])
    assert "smdlab: error" not in capfd.readouterr().err


def test_json_stdout_is_only_json_whatever_a_library_prints(tmp_path):
    # Solvers print banners on file descriptor 1 (HiGHS does at its first model in a process);
    # the run below adds Python and C-level (os.write) noise of its own around the real run of smd
    # and milp on HiGHS, and --json must still leave nothing but one JSON document on stdout.
    scenario = tmp_path / "s.toml"
    scenario.write_text(
        '[policy_options.smd]\nbackend = "highs"\nbound = true\n[policy_options.milp]\nbackend = "highs"\n'
    )
    proc = _run(
        """
        import os, sys
        import smdlab.sim.runner as runner
        import smdlab.cli as cli

        real = runner.run_policies

        def noisy(*args, **kwargs):
            os.write(1, b"Running HiGHS 1.x (banner on fd 1)\\n")
            print("a library's print()")
            import highspy
            highspy.Highs()  # its own banner, if this build prints one
            return real(*args, **kwargs)

        runner.run_policies = noisy
        sys.exit(cli.main(["simulate", "--scenario", sys.argv[1], "--jobs", "4", "--machines", "1",
                           "--policy", "smd,milp", "--json"]))
    """,
        str(scenario),
    )
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)  # the whole of stdout is one JSON document
    assert set(data) == {"smd", "milp"} and all(v["jobs_completed"] == 4 for v in data.values())
    assert (
        "banner on fd 1" in proc.stderr and "a library's print()" in proc.stderr
    )  # diverted, not lost
