"""Horus: interference-aware placement from a predicted GPU utilisation of each job.

Source: Yeung et al., "Horus: An Interference-Aware Resource Manager for Deep Learning Systems"
(ICA3PP 2020) and "Horus: Interference-Aware and Prediction-Based Scheduling in Deep Learning
Systems" (IEEE TPDS 33(1), 2022): a regressor predicts each job's GPU utilisation from features
of its model graph; a job is placed on the GPU whose predicted combined utilisation, with the
job, is lowest, provided it stays below a threshold (so co-located jobs interfere little). Horus
does not preempt; execution ``non_elastic``.

Reconstruction here:
- **Regressor** (``UtilisationRegressor``): ridge least squares of the log compute demand that
  the co-location model fits per Gavel job type on V100 (``log_demand``: the fraction of the GPU
  a job keeps busy alone, ``smdlab.model.colocation``), on features both Gavel's job types and
  smdlab's profiles have: the architecture family (CNN, transformer, RNN, other), the log of the
  per-GPU batch, and for CNNs the log of the parameter count. Gavel's CNNs are ResNet-18
  (11,689,512 parameters, torchvision) and ResNet-50 (25,557,032, the bundled profile); other
  CNN sizes are clipped to that range (no extrapolation). Horus
  uses richer graph features (FLOPs, layer counts) with gradient boosting; those are not
  measured for Gavel's jobs, so the feature set is reduced (assumption).
- **Placement:** queued jobs in arrival order; each goes where the predicted combined
  utilisation is lowest among free GPUs (alone: its own utilisation) and running sharing groups
  with room (the sharing degree, the same counts, a predicted memory fit, capacity for the
  group's other resources), if that total is at most ``threshold`` (default 1.0: one GPU's
  compute); else it waits. Default sharing degree 2.
"""

from __future__ import annotations

import math

import numpy as np

from smdlab.errors import check_int, check_positive
from smdlab.model.colocation import DEFAULT_SHARING_GPU, default_colocation_model
from smdlab.model.job import Job
from smdlab.model.profiles import list_profiles, profile_info
from smdlab.policies.base import Allocation, ClusterState, Decision, Policy
from smdlab.policies.sharing._groups import (
    Share,
    can_share,
    factors,
    place_alone,
    running_shares,
    start_alone,
    take,
    try_join,
)

FAMILIES = ("cnn", "transformer", "rnn")  # anything else: "other"
# Gavel job type prefix -> (family, parameter count or None when not a CNN)
GAVEL_FEATURES: dict[str, tuple[str, float | None]] = {
    "ResNet-18": ("cnn", 11_689_512.0),
    "ResNet-50": ("cnn", 25_557_032.0),
    "Transformer": ("transformer", None),
    "LM": ("rnn", None),
    "Recommendation": ("other", None),
    "A3C": ("other", None),
    "CycleGAN": ("other", None),
}
_RIDGE = 1e-2


def features(family: str, params: float | None, batch: float | None) -> np.ndarray:
    """Regressor features: family one-hot (3 + other), log2 batch, CNN log10 params (centred)."""
    fam = [1.0 if family == f else 0.0 for f in FAMILIES]
    fam.append(0.0 if family in FAMILIES else 1.0)
    lb = math.log2(batch) if batch else 0.0
    # CNN sizes clipped to the trained range (ResNet-18..ResNet-50): no extrapolation
    lo, hi = GAVEL_FEATURES["ResNet-18"][1], GAVEL_FEATURES["ResNet-50"][1]
    size = min(max(params, lo or 0.0), hi or math.inf) if params else None
    lp = math.log10(size) - 7.0 if (family == "cnn" and size) else 0.0
    return np.array([*fam, lb, lp])


class UtilisationRegressor:
    """Predicted GPU utilisation (compute demand) of a job from family, batch and size."""

    def __init__(self, gpu_type: str = DEFAULT_SHARING_GPU) -> None:
        m = default_colocation_model()
        g = m.gpus.index(gpu_type)
        rows, target = [], []
        for j, name in enumerate(m.jobs):
            prefix = name.split(" (")[0]
            family, params = GAVEL_FEATURES.get(prefix, ("other", None))
            batch = float(name.rsplit(" ", 1)[1].rstrip(")")) if "batch size" in name else None
            rows.append(features(family, params, batch))
            target.append(m.params["log_demand"][g, j])
        x, y = np.array(rows), np.array(target)
        self.coef = np.linalg.solve(x.T @ x + _RIDGE * np.eye(x.shape[1]), x.T @ y)
        self.train_rmse = float(np.sqrt(np.mean((x @ self.coef - y) ** 2)))

    def predict(self, job: Job) -> float:
        """The job's predicted utilisation of one GPU (fraction; may exceed 1 for heavy jobs)."""
        net = job.profile.network
        if net in list_profiles():
            info = profile_info(net)
            family, params = str(info["family"]), float(info["params"])
        else:
            family, params = "cnn", float(job.profile.total_param_bytes) / 4.0
        batch = job.per_worker_batch if job.batch_mode == "per_worker" else job.global_batch
        return float(np.exp(features(family, params, float(batch or 1)) @ self.coef))


class Horus(Policy):
    """Place each job where the predicted combined GPU utilisation is lowest, under a threshold."""

    name = "horus"
    execution = "non_elastic"
    executions = ("non_elastic",)

    def __init__(self, threshold: float = 1.0, sharing_degree: int = 2) -> None:
        self.threshold = check_positive("threshold", threshold)
        self.sharing_degree = check_int("sharing_degree", sharing_degree, 1)
        self._regressor: UtilisationRegressor | None = None
        self._util: dict[str, float] = {}

    def reset(self) -> None:
        """Forget per-job predictions (the regressor depends on bundled data only and stays)."""
        self._util = {}

    def utilisation(self, job: Job) -> float:
        """The job's predicted GPU utilisation (memoised per job name within a run)."""
        if self._regressor is None:
            self._regressor = UtilisationRegressor()
        u = self._util.get(job.name)
        if u is None:
            u = self._util[job.name] = self._regressor.predict(job)
        return u

    def decide(self, state: ClusterState) -> Decision:
        """Each queued job, in arrival order, to the lowest predicted combined utilisation."""
        k = state.sharing_degree
        free = np.array(state.free, dtype=float)
        shares = running_shares(state) if k > 1 else []
        out: list[Allocation] = []
        for q in state.queued:
            job = q.job
            u = self.utilisation(job)
            alone = place_alone(job, free, state)
            if alone is not None and u <= self.threshold:
                start_alone(q, alone, "horus", free, state, shares, out)
                continue
            cands = sorted(
                (
                    (sum(self.utilisation(x) for x in s.jobs) + u, i)
                    for i, s in enumerate(shares)
                    if len(s.jobs) < k and can_share(s, job)
                ),
            )
            placed = False
            for total, i in cands:
                s = shares[i]
                if total > self.threshold:
                    break
                if factors([*s.jobs, job]) is None or not try_join(s, job, free, state):
                    continue
                s.jobs.append(job)
                out.append(
                    Allocation(
                        job.name, s.workers, s.ps, s.placement, group=s.label, sharing="space"
                    )
                )
                placed = True
                break
            if not placed and alone is not None:  # heavier than the threshold: it runs alone
                w, p, pl = alone
                take(job, pl, free, state)
                label = f"horus:{job.name}"
                shares.append(Share(label, w, p, pl, [job], [1], [q.remaining]))
                out.append(Allocation(job.name, w, p, pl, group=label, sharing="space"))
        return Decision(tuple(out))
