"""The ``[rl]`` extra's packages, imported on demand with one line saying how to install them."""

from __future__ import annotations

import importlib
from typing import Any

from smdlab.errors import InvalidInput


def rl_import(module: str, attr: str | None, field: str, what: str) -> Any:
    """``module`` (or its ``attr``), or InvalidInput naming ``field`` and the extra to install."""
    try:
        found = importlib.import_module(module)
    except ImportError:
        raise InvalidInput(
            f"{field}: {what} needs the rl extra: pip install -e '.[rl]' "
            "(stable-baselines3, sb3-contrib, torch CPU)"
        ) from None
    return found if attr is None else getattr(found, attr)
