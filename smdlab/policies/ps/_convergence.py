"""Optimus' remaining-work estimate: a 1/k-style loss curve fitted to a job's noisy validation losses.

The source (pengyanghua/optimus, ``scheduler/estimator.py``, ``Estimator.est_epoch`` and
``_loss_curve_fitting``; constants in ``scheduler/params.py``) fits loss(k) = 1/(a*k + b) + c to the
validation loss after each finished epoch k, by bounded least squares with later points weighted
more (the points are cut into 3 segments; segment s has sigma 4**-s; smdlab solves the same
weighted problem by variable projection, ``_fit``), and calls the job converged
at the first epoch e whose fitted loss is within ``LOSS_CONVERGENCE`` = 0.05 of each of the
``LOSS_LITTLE_CHANGE_EPOCH_NUM`` = 10 epochs before it, looking no further than epoch 100. With
fewer than 3 losses, or when the fit fails or finds no such epoch, it assumes 20 more epochs.

smdlab's jobs have a fixed amount of work (``samples``), not a loss, so the loss a job reports is
modelled (docs/baselines.md, "Optimus: the convergence-curve model"); every number below is a
modelling assumption of this workbench, seeded so a run is reproducible:
- A job trains for ``E`` epochs, E drawn uniformly from ``EPOCHS_RANGE`` (the source stops at
  100); its epoch is ``samples / E`` samples (the dataset size, which a scheduler knows).
- Its true loss is 1/(a*k + b) + c with floor c drawn from ``FLOOR_RANGE`` and initial excess
  1/b from ``EXCESS_RANGE``; a is chosen so the source's convergence rule holds first at epoch E,
  so a perfect fit would predict the job's true length.
- After each finished epoch the job reports its loss times (1 + ``noise`` * N(0, 1)).
"""

from __future__ import annotations

import math
import zlib

import numpy as np

from smdlab.caches import OPTIMUS_FITS
from smdlab.errors import check_int, check_positive
from smdlab.model.job import Job

LOSS_WINDOW = 10  # LOSS_LITTLE_CHANGE_EPOCH_NUM in the source's params.py
LOSS_CONVERGENCE = 0.05  # LOSS_CONVERGENCE in params.py
MAX_EPOCHS = 100  # est_epoch gives up beyond epoch 100
FALLBACK_EPOCHS = 20  # _update_util_queue: end = progress + 20 when no estimate
MIN_POINTS = 3  # est_epoch fits only with at least 3 losses
NUM_SEGMENTS = 3  # _loss_curve_fitting's weighting segments
EPOCHS_RANGE = (20, 100)
FLOOR_RANGE = (0.1, 1.5)
EXCESS_RANGE = (3.0, 6.0)  # with E <= 100, an excess >= 3 lets the rule hold first at E
DEFAULT_NOISE = 0.02


def loss_curve(k, a: float, b: float, c: float):
    """The source's loss form 1 / (a*k + b) + c."""
    return 1.0 / (a * np.asarray(k, dtype=float) + b) + c


def converged_epoch(a: float, b: float, c: float, start: int = 0) -> int | None:
    """First epoch e >= max(start, window - 1) where loss(e - i) - loss(e) <= 0.05 for i < 10; None past epoch 100."""
    lo = max(int(start), LOSS_WINDOW - 1)
    if lo > MAX_EPOCHS:
        return None
    e = np.arange(lo, MAX_EPOCHS + 1, dtype=float)
    # the loss decreases, so the widest gap (i = window - 1) decides
    drop = loss_curve(e - (LOSS_WINDOW - 1), a, b, c) - loss_curve(e, a, b, c)
    ok = np.flatnonzero(drop <= LOSS_CONVERGENCE)
    return int(e[ok[0]]) if ok.size else None


def slope_for(epochs: int, b: float) -> float:
    """The a for which the convergence rule first holds at epoch ``epochs`` (the gap equals 0.05 at epochs - 0.5)."""
    u, v = epochs - LOSS_WINDOW + 0.5, epochs - 0.5  # gap(e) = 9a / ((a*u + b)(a*v + b)) at e - 0.5
    g = LOSS_WINDOW - 1
    d = LOSS_CONVERGENCE
    # d*u*v*a^2 + (d*b*(u + v) - g)*a + d*b^2 = 0; the larger root is the one on the decreasing side
    qa, qb, qc = d * u * v, d * b * (u + v) - g, d * b * b
    disc = qb * qb - 4 * qa * qc
    return float((-qb + math.sqrt(max(disc, 0.0))) / (2 * qa))


def _sse(r: np.ndarray, k: np.ndarray, loss: np.ndarray, wt: np.ndarray):
    """For each ratio r = a/b: the best (c, s = 1/b) >= 0 of loss ~ c + s / (r*k + 1) and its weighted squared error."""
    g = 1.0 / (r[:, None] * k[None, :] + 1.0)
    sw, sg, sgg = wt.sum(), g @ wt, (g * g) @ wt
    sy, sgy = wt @ loss, (g * loss) @ wt
    det = sw * sgg - sg * sg
    with np.errstate(divide="ignore", invalid="ignore"):
        s_ = np.where(det > 0, (sw * sgy - sg * sy) / det, 0.0)
        c = np.where(det > 0, (sy - s_ * sg) / sw, sy / sw)
        # bounds: c >= 0 and s >= 0 (the source fits with lower bounds 0)
        s_c0 = np.maximum(sgy / sgg, 0.0)
        s_ = np.where(c < 0, s_c0, s_)
        c = np.where(c < 0, 0.0, c)
        bad = s_ < 0
        c = np.where(bad, max(sy / sw, 0.0), c)
        s_ = np.where(bad, 0.0, s_)
    resid = loss[None, :] - c[:, None] - s_[:, None] * g
    return (resid * resid) @ wt, c, s_


_RATIO_GRID = np.geomspace(1e-5, 1e3, 97)  # a/b, the first pass of the one-dimensional search


def _fit(k: np.ndarray, loss: np.ndarray) -> tuple[float, float, float] | None:
    """The source's weighted least-squares fit of loss = 1/(a*k + b) + c with a, b, c >= 0.

    Solved by variable projection: for a fixed ratio a/b the model is linear in c and 1/b (solved
    exactly under the bounds), leaving a one-dimensional search over a/b (a log grid refined
    three times). The source calls scipy's ``curve_fit`` on the same problem.
    """
    seg = math.ceil(k.size / NUM_SEGMENTS)
    sigma = 4.0 ** -(np.arange(k.size) // seg)  # later segments weigh more (sigma / 4 per segment)
    wt = 1.0 / sigma**2
    grid = _RATIO_GRID
    for _ in range(3):  # a log grid, then twice a finer one around the best point
        i = int(np.argmin(_sse(grid, k, loss, wt)[0]))
        lo, hi = np.log(grid[max(i - 1, 0)]), np.log(grid[min(i + 1, grid.size - 1)])
        grid = np.exp(np.linspace(lo, hi, 41))
    r = grid[[int(np.argmin(_sse(grid, k, loss, wt)[0]))]]
    _, c, s_ = _sse(r, k, loss, wt)
    if not s_[0] > 0:
        return None  # a flat curve: no b (the source's fit would fail or give no estimate)
    b = 1.0 / float(s_[0])
    return float(r[0]) * b, b, float(c[0])


def _fit_end(losses: np.ndarray, n: int) -> tuple[tuple[float, float, float] | None, float | None]:
    """(fitted (a, b, c) or None, estimated end epoch or None) from the losses at epochs 1..n."""
    params = _fit(np.arange(1, n + 1, dtype=float), losses)
    e = None if params is None else converged_epoch(*params, start=n)
    return params, None if e is None else float(e)


class ConvergenceEstimator:
    """Seeded loss curves per job and Optimus' estimate of each job's remaining samples from them."""

    def __init__(self, noise: float = DEFAULT_NOISE, seed: int = 0):
        self.noise = check_positive("noise", noise, allow_zero=True)
        self.seed = check_int("seed", seed, 0)
        self.reset()

    def reset(self) -> None:
        """Forget the curves and fits (the simulator calls the policy's reset before a run)."""
        self._curves: dict[str, tuple[int, float, float, float, np.ndarray]] = {}
        # (job name, losses seen) -> (fitted (a, b, c) or None, estimated end epoch or None)
        self._fits: dict[
            tuple[str, int], tuple[tuple[float, float, float] | None, float | None]
        ] = {}

    def curve(self, job: Job) -> tuple[int, float, float, float, np.ndarray]:
        """(epochs, a, b, c, observed losses at epochs 0..100) of ``job`` (drawn once per job name)."""
        hit = self._curves.get(job.name)
        if hit is None:
            rng = np.random.default_rng([self.seed, zlib.crc32(job.name.encode())])
            epochs = int(rng.integers(EPOCHS_RANGE[0], EPOCHS_RANGE[1] + 1))
            c = float(rng.uniform(*FLOOR_RANGE))
            b = 1.0 / float(rng.uniform(*EXCESS_RANGE))
            a = slope_for(epochs, b)
            k = np.arange(MAX_EPOCHS + 1, dtype=float)
            observed = loss_curve(k, a, b, c) * (1 + self.noise * rng.standard_normal(k.size))
            hit = self._curves[job.name] = (epochs, a, b, c, observed)
        return hit

    def remaining(self, job: Job, remaining: float) -> float:
        """Optimus' estimate of the samples ``job`` still needs, given that ``remaining`` of ``samples`` are left."""
        epochs, _, _, _, observed = self.curve(job)
        epoch_size = job.samples / epochs
        done = max(job.samples - remaining, 0.0) / epoch_size
        n = min(math.floor(done + 1e-9), MAX_EPOCHS)  # finished epochs: losses at 1..n
        end: float | None = None
        if n >= MIN_POINTS:
            key = (job.name, n)
            if key not in self._fits:
                # The same curve gives the same fit in every run (the schedule panels of one
                # kernel simulate the same job names again and again): shared across estimators.
                shared = (self.seed, self.noise, job.name, n)
                self._fits[key] = OPTIMUS_FITS.get_or_compute(
                    shared, lambda: _fit_end(observed[1 : n + 1], n)
                )
            end = self._fits[key][1]
        if end is None:
            end = done + FALLBACK_EPOCHS
        # A curve that says "converged already" still leaves the running epoch to finish.
        return max(end - done, 1.0) * epoch_size
