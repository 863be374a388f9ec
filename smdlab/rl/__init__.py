"""Learned schedulers: Gymnasium environments over the simulator (DL2's; the placement
environment of DeepRM-MM and SCHED²) and their agents (docs/rl.md).

Needs the ``gymnasium`` package; training needs the ``[rl]`` extra (PyTorch on CPU).
"""

from smdlab.rl.env import ENVIRONMENTS, DL2Env, make_env
from smdlab.rl.placement_env import PlacementEnv

__all__ = ["ENVIRONMENTS", "DL2Env", "PlacementEnv", "make_env"]
