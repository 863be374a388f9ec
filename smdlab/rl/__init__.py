"""Learned schedulers: DL2's Gymnasium environment over the simulator and its agent (docs/rl.md).

Needs the ``gymnasium`` package; training needs the ``[rl]`` extra (PyTorch on CPU).
"""

from smdlab.rl.env import DL2Env, make_env

__all__ = ["DL2Env", "make_env"]
