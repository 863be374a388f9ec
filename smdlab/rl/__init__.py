"""Learned schedulers: Gymnasium environments over the simulator (DL2's; the placement
environment of DeepRM-MM and SCHED²), their agents' state builders, networks and weights
(docs/rl.md).

The environments need the ``gymnasium`` package and training needs the ``[rl]`` extra (PyTorch
on CPU); they load on first use, so the learned policies can import the pure modules here
(``slot_builder``, ``placement_builder``, ``networks``, ``weights``) without the simulator.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from smdlab.rl.env import ENVIRONMENTS, DL2Env, make_env
    from smdlab.rl.placement_env import PlacementEnv

_LAZY = {
    "ENVIRONMENTS": "smdlab.rl.env",
    "DL2Env": "smdlab.rl.env",
    "make_env": "smdlab.rl.env",
    "PlacementEnv": "smdlab.rl.placement_env",
}

__all__ = ["ENVIRONMENTS", "DL2Env", "PlacementEnv", "make_env"]


def __getattr__(name: str) -> Any:
    """The environments, imported on first use (they import the simulator and gymnasium)."""
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'smdlab.rl' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
