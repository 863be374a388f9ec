"""Where smdlab finds its bundled data (``data/`` at the repository root, or $SMDLAB_DATA)."""

from __future__ import annotations

import os
from pathlib import Path


def data_dir() -> Path:
    """Return the folder of bundled data: $SMDLAB_DATA if set, else the repository's ``data/``."""
    env = os.environ.get("SMDLAB_DATA")
    return Path(env) if env else Path(__file__).resolve().parents[1] / "data"


def package_version() -> str:
    """smdlab's version as installed (its distribution metadata), or ``"unknown"``."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("smdlab")
    except PackageNotFoundError:
        return "unknown"
