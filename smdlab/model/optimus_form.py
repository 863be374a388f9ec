"""Optimus' synchronous speed form, 1 / (a*M/w + b + c*w/p + d*w + e*p), and its NNLS fit.

Peng et al., "Optimus: An Efficient Dynamic Resource Scheduler for Deep Learning Clusters"
(EuroSys 2018). The Optimus policy and the model validation both use it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike
from scipy.optimize import nnls

from smdlab.errors import InvalidInput, check_choice, check_positive
from smdlab.model.job import BATCH_MODES

COEFFICIENTS = ("a", "b", "c", "d", "e")


def design_matrix(workers, ps, batch, batch_mode: str = "global") -> np.ndarray:
    """Rows [cs, 1, w/p, w, p] of Optimus' form, cs = M/w (global batch) or m (per-worker batch)."""
    check_choice("batch_mode", batch_mode, BATCH_MODES)
    w = np.asarray(workers, dtype=float).reshape(-1)
    p = np.asarray(ps, dtype=float).reshape(-1)
    if w.shape != p.shape:
        raise InvalidInput(f"workers and ps must have the same length, got {w.size} and {p.size}")
    if np.any(w < 1) or np.any(p < 1):
        raise InvalidInput("workers and ps must be >= 1 at every point")
    cs = (
        batch / w
        if batch_mode == "global"
        else np.broadcast_to(np.asarray(batch, dtype=float), w.shape)
    )
    return np.column_stack([cs, np.ones_like(w), w / p, w, p])


@dataclass(frozen=True)
class SpeedModel:
    """Optimus' speed form f(p, w) = S(w) / (a*cs + b + c*w/p + d*w + e*p), coefficients >= 0.

    coef: (a, b, c, d, e); the denominator is the iteration time in seconds.
    batch: M (global mode: cs = M / w and S(w) = M) or m (per-worker mode: cs = m, S(w) = w * m).
    batch_mode: ``global`` or ``per_worker``.
    rel_error: mean relative error of the fitted iteration time at the profiling points.
    """

    coef: tuple[float, float, float, float, float]
    batch: float
    batch_mode: str = "global"
    rel_error: float = 0.0

    def iteration_time(self, workers, ps) -> np.ndarray:
        """Predicted iteration time (s) at (workers, ps); array-valued."""
        w, p = np.broadcast_arrays(np.asarray(workers, dtype=float), np.asarray(ps, dtype=float))
        a, b, c, d, e = self.coef
        cs = self.batch / w if self.batch_mode == "global" else self.batch
        return np.maximum(a * cs + b + c * w / p + d * w + e * p, 1e-300)

    def speed(self, workers, ps) -> np.ndarray:
        """Predicted training speed (samples/s) at (workers, ps); array-valued."""
        w = np.asarray(workers, dtype=float)
        per_iter = self.batch if self.batch_mode == "global" else w * self.batch
        return per_iter / self.iteration_time(workers, ps)


def fit_speed_model(
    workers: Sequence[int],
    ps: Sequence[int],
    tau: ArrayLike,
    batch: float,
    batch_mode: str = "global",
    relative: bool = True,
) -> SpeedModel:
    """Fit Optimus' five coefficients to measured iteration times by non-negative least squares.

    With ``relative`` the rows are scaled by 1 / tau, so the fit minimises relative errors (the
    points span an order of magnitude in tau; an absolute fit would ignore the fast ones).
    """
    check_positive("batch", batch)
    X = design_matrix(workers, ps, batch, batch_mode)
    y = np.asarray(tau, dtype=float).reshape(-1)
    if y.size != X.shape[0]:
        raise InvalidInput(f"tau must have one value per point ({X.shape[0]}), got {y.size}")
    if np.any(~np.isfinite(y)) or np.any(y <= 0):
        raise InvalidInput("tau must be finite and > 0 at every point")
    scale = 1.0 / y if relative else np.ones_like(y)
    # Columns are rescaled to unit norm so NNLS is well conditioned whatever the units.
    A = X * scale[:, None]
    norms = np.linalg.norm(A, axis=0)
    norms[norms == 0] = 1.0
    sol, _ = nnls(A / norms, y * scale)
    coef = sol / norms
    a, b, c, d, e = (float(c) for c in coef)
    model = SpeedModel((a, b, c, d, e), float(batch), batch_mode)
    err = float(np.mean(np.abs(model.iteration_time(X[:, 3], X[:, 4]) - y) / y))
    return SpeedModel(model.coef, model.batch, batch_mode, err)
