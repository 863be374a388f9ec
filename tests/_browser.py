"""Shared pieces of the real-browser tests: Jupyter servers on loopback and headless chromium."""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

CHROMIUM = shutil.which("chromium")
# Flags from docs/toolchain notes: headless Debian chromium as root, no network side traffic.
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _jupyter_env(tmp: Path) -> dict[str, str]:
    """Environment with every Jupyter folder inside ``tmp``, and JupyterLab's news/update pop-ups off."""
    env = dict(os.environ)
    for var, sub in (
        ("JUPYTER_CONFIG_DIR", "config"),
        ("JUPYTER_DATA_DIR", "data"),
        ("JUPYTER_RUNTIME_DIR", "runtime"),
        ("JUPYTERLAB_SETTINGS_DIR", "settings"),
        ("JUPYTERLAB_WORKSPACES_DIR", "workspaces"),
    ):
        (tmp / sub).mkdir(parents=True, exist_ok=True)
        env[var] = str(tmp / sub)
    notif = tmp / "settings" / "@jupyterlab" / "apputils-extension"
    notif.mkdir(parents=True, exist_ok=True)
    settings = {"fetchNews": "false", "checkForUpdates": False}
    (notif / "notification.jupyterlab-settings").write_text(json.dumps(settings))
    env.pop("JUPYTER_TOKEN", None)
    env["PYTHONUNBUFFERED"] = "1"
    return env


def _wait_http(url: str, proc: subprocess.Popen, log: Path, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(
                f"server exited with {proc.returncode}; log:\n{log.read_text()[-3000:]}"
            )
        try:
            with urllib.request.urlopen(url, timeout=2) as resp:
                if resp.status == 200:
                    return
        except OSError:
            pass
        time.sleep(0.25)
    raise RuntimeError(
        f"server not ready at {url} after {timeout} s; log:\n{log.read_text()[-3000:]}"
    )


def _stop(proc: subprocess.Popen) -> None:
    """Stop the server we started and everything in its process group (its kernels)."""
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=15)
    with contextlib.suppress(ProcessLookupError):  # kernels left behind by a slow shutdown
        os.killpg(proc.pid, signal.SIGKILL)
    if proc.poll() is None:
        proc.wait(timeout=10)


def _start(cmd: list[str], cwd: Path, env: dict[str, str], log: Path) -> subprocess.Popen:
    with open(log, "wb") as fh:
        return subprocess.Popen(
            cmd, cwd=cwd, env=env, stdout=fh, stderr=subprocess.STDOUT, start_new_session=True
        )


@contextlib.contextmanager
def jupyter_lab(
    root: Path, env: dict[str, str], log: Path, start_s: float, *extra: str
) -> Iterator[tuple[str, str]]:
    """JupyterLab serving ``root`` on loopback with a random token: yields (base URL, token)."""
    port, token = _free_port(), secrets.token_hex(16)
    cmd = [
        sys.executable,
        "-m",
        "jupyter",
        "lab",
        "--no-browser",
        "--allow-root",
        "--ip=127.0.0.1",
        f"--port={port}",
        f"--IdentityProvider.token={token}",
        f"--ServerApp.root_dir={root}",
        "--ServerApp.port_retries=0",
        *extra,
    ]
    proc = _start(cmd, root, env, log)
    try:
        base = f"http://127.0.0.1:{port}"
        _wait_http(f"{base}/api/status?token={token}", proc, log, start_s)
        yield base, token
    finally:
        _stop(proc)
