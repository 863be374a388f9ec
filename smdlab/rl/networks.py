"""The agents' network: a fully connected net evaluated with numpy (no torch needed to run one).

A net is a list of layers ``(weight (out x in), bias (out,))``; DL2's actor and the placement
agents' row and wait scorers are all of this form, written and read by ``smdlab.rl.weights``.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

Layers = list[tuple[np.ndarray, np.ndarray]]


def mlp(layers: Sequence[tuple[np.ndarray, np.ndarray]], x: np.ndarray) -> np.ndarray:
    """A fully connected network: ReLU between layers, raw outputs at the end."""
    for k, (w, b) in enumerate(layers):
        x = x @ w.T + b
        if k < len(layers) - 1:
            x = np.maximum(x, 0.0)
    return x
