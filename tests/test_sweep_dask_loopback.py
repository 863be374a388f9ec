"""The distributed path for real: `dask scheduler` and two `dask worker` processes on loopback."""

from __future__ import annotations

import io
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
ARGV = [
    "sweep",
    "--jobs",
    "8",
    "--policy",
    "fifo,smd",
    "--loads",
    "1.0",
    "--seeds",
    "1,2",
    "--machines",
    "2",
    "--no-progress",
]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _env() -> dict[str, str]:
    # The workers import this checkout's smdlab (the one under test), not an installed copy.
    return {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
    }


def _start(args: list[str], tmp: Path, name: str) -> subprocess.Popen:
    log = open(tmp / f"{name}.log", "wb")  # noqa: SIM115  (closed with the process below)
    return subprocess.Popen(
        [str(BIN / "dask"), *args],
        stdout=log,
        stderr=subprocess.STDOUT,
        env=_env(),
        cwd=tmp,
        start_new_session=True,  # its own process group: stopped with everything it started
    )


def _stop(procs: list[subprocess.Popen]) -> None:
    for p in procs:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGTERM)
    deadline = time.monotonic() + 15
    for p in procs:
        try:
            p.wait(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait(timeout=5)
        if p.stdout is not None:
            p.stdout.close()


def _sweep(extra: list[str]) -> pd.DataFrame:
    out = subprocess.run(
        [str(BIN / "smdlab"), *ARGV, *extra],
        capture_output=True,
        text=True,
        env=_env(),
        timeout=300,
        check=True,
    )
    return pd.read_csv(io.StringIO(out.stdout))


@pytest.mark.slow  # three Dask processes and two sweeps (about 20 s)
def test_sweep_on_a_dask_scheduler_and_two_workers_equals_the_serial_run(tmp_path):
    from distributed import Client

    from smdlab.sim.result import TIMING_KEYS

    port = _free_port()
    address = f"tcp://127.0.0.1:{port}"
    procs = [
        _start(
            ["scheduler", "--host", "127.0.0.1", "--port", str(port), "--no-dashboard"],
            tmp_path,
            "scheduler",
        )
    ]
    try:
        for i in range(2):
            procs.append(
                _start(
                    ["worker", address, "--nworkers", "1", "--nthreads", "1", "--no-dashboard",
                     "--local-directory", str(tmp_path / f"w{i}"), "--name", f"w{i}"],
                    tmp_path,
                    f"worker{i}",
                )
            )  # fmt: skip
        with Client(address, timeout="60s") as client:
            client.wait_for_workers(2, timeout=120)
            workers = client.scheduler_info()["workers"]
            assert len(workers) == 2
            assert all(w.startswith("tcp://127.0.0.1:") for w in workers)
        distributed = _sweep(["--scheduler", address])
        serial = _sweep(["--serial"])
    finally:
        _stop(procs)
    assert all(p.poll() is not None for p in procs)
    assert len(serial) == 4 and (serial["jobs_completed"] == 8).all()
    keep = [c for c in serial.columns if c not in TIMING_KEYS and "time" not in c]
    pd.testing.assert_frame_equal(distributed[keep], serial[keep])
