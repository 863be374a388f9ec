"""Provisioners: when to submit the next link of a chain while the current one still runs.

At every decision point (every ``step_s`` and at a link's end) the simulator shows a provisioner
the chains whose running link has no successor yet (``ProvisionState``); it returns the names of
the chains whose successor to submit now. A successor submitted at t starts after its queue wait
w; the chain is interrupted if t + w is later than the end of its running link (``time_left``
after t). Waiting one more step is safe only if the wait then is at most ``time_left - step_s``,
so the predictive provisioners submit once the (predicted) wait reaches that.

Rules (Mirage: Ding et al., "Mirage: Towards Low-interruption Services on Batch GPU Clusters with
Reinforcement Learning", HPDC 2023, arXiv 2306.14086, proposes the proactive idea and the
learned predictors; the rules below are ours, as no code is public):
- ``reactive``: submit when the running link ends (time_left <= 0);
- ``fixed_lead``: submit ``lead_s`` before the end;
- ``oracle``: the simulator forks itself, defers the successor to the next decision point and
  runs on (other chains provisioned reactively in the fork); the oracle submits now if that
  deferral would interrupt the chain: the decision a perfect predictor of the future would make;
- ``learned``: a fitted regressor (scikit-learn's API: ``predict``) of log(1 + wait) from
  ``FEATURES`` (smdlab.experiments.batch trains it on an earlier part of a trace).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from smdlab.errors import InvalidInput, check_positive

# What a wait predictor reads: the job's own request, then the queue and running set it joins.
FEATURES: tuple[str, ...] = (
    "gpus",
    "requested_s",
    "queued_jobs",
    "queued_gpus",
    "queued_gpu_s",
    "running_gpus",
    "running_gpu_s_left",
    "free_gpus",
)


@dataclass(frozen=True)
class ChainView:
    """A chain awaiting a decision: its name, GPUs, links so far, seconds its running link has
    left, the wall time its successor would request, and (oracle only) a probe: would the chain
    be interrupted if its successor were deferred to the next decision point?"""

    name: str
    gpus: int
    links: int
    time_left: float
    requested_s: float
    probe: Callable[[], bool] | None = None


@dataclass(frozen=True)
class ProvisionState:
    """What a provisioner sees: time, decision step, chains awaiting a decision and the queue.

    queue: ``FEATURES[2:]`` of the queue and running set now (the same for every chain).
    """

    time: float
    step_s: float
    chains: Sequence[ChainView]
    queue: tuple[float, ...]

    def features(self, view: ChainView) -> list[float]:
        """The predictor's feature vector (``FEATURES``) of a successor of ``view`` submitted now."""
        return [float(view.gpus), view.requested_s, *self.queue]


class Provisioner:
    """Base provisioner: ``submit`` per chain; ``decide`` asks it of every chain shown."""

    name = "provisioner"
    needs_probe = False

    def reset(self) -> None:
        """Nothing to forget between runs by default."""

    def submit(self, view: ChainView, state: ProvisionState) -> bool:
        """Submit this chain's successor now? (Overridden by every provisioner.)"""
        raise NotImplementedError

    def decide(self, state: ProvisionState) -> tuple[str, ...]:
        """Names of the chains whose successor to submit now."""
        return tuple(v.name for v in state.chains if self.submit(v, state))


class Reactive(Provisioner):
    """Submit the successor when the running link ends."""

    name = "reactive"

    def submit(self, view: ChainView, state: ProvisionState) -> bool:
        """True once the running link has ended."""
        return view.time_left <= 0


class FixedLead(Provisioner):
    """Submit the successor ``lead_s`` seconds before the running link's end."""

    def __init__(self, lead_s: float) -> None:
        self.lead_s = check_positive("lead_s", lead_s, allow_zero=True)
        self.name = f"lead_{self.lead_s / 3600:g}h"

    def submit(self, view: ChainView, state: ProvisionState) -> bool:
        """True once at most ``lead_s`` seconds are left."""
        return view.time_left <= self.lead_s


def _late(wait: float, view: ChainView, step_s: float) -> bool:
    """Would waiting one more decision step risk an interruption, given this wait?"""
    return wait >= view.time_left - step_s


class Oracle(Provisioner):
    """Submit when deferring the successor to the next decision point would interrupt the chain
    (the simulator measures it in a fork of itself)."""

    name = "oracle"
    needs_probe = True

    def submit(self, view: ChainView, state: ProvisionState) -> bool:
        """True once deferring would interrupt the chain."""
        if view.time_left <= 0:
            return True
        if view.probe is None:
            raise TypeError("the oracle provisioner needs the simulator's probe")
        return view.probe()


class Learned(Provisioner):
    """Submit when a regressor's predicted wait (times ``margin``) reaches the time left less
    one step. model: fitted, with ``predict`` on rows of ``FEATURES`` returning log(1 + wait)."""

    def __init__(self, model: Any, *, margin: float = 1.0, name: str = "learned") -> None:
        if not callable(getattr(model, "predict", None)):
            raise TypeError(f"model must have predict(X), got {model!r}")
        self.model = model
        self.margin = check_positive("margin", margin)
        self.name = name

    def predicted_wait(self, rows: Sequence[Sequence[float]]) -> np.ndarray:
        """Predicted waits (s) of feature rows."""
        return np.expm1(np.asarray(self.model.predict(np.asarray(rows, dtype=float)), dtype=float))

    def decide(self, state: ProvisionState) -> tuple[str, ...]:
        """Names of the chains whose predicted wait says the next step would be too late."""
        views = [v for v in state.chains if v.time_left > state.step_s]
        now = [v.name for v in state.chains if v.time_left <= state.step_s]
        if views:
            waits = self.predicted_wait([state.features(v) for v in views]) * self.margin
            now += [
                v.name
                for v, w in zip(views, waits, strict=True)
                if _late(float(w), v, state.step_s)
            ]
        return tuple(now)

    def submit(self, view: ChainView, state: ProvisionState) -> bool:
        """Submit this chain's successor now (one chain's ``decide``)."""
        one = ProvisionState(state.time, state.step_s, (view,), state.queue)
        return bool(self.decide(one))


def log_wait(waits: np.ndarray) -> np.ndarray:
    """The learned provisioners' regression target: log(1 + wait)."""
    return np.log1p(np.maximum(np.asarray(waits, dtype=float), 0.0))


def provisioner(name: str) -> Provisioner:
    """A baseline provisioner by name: ``reactive``, ``oracle`` or ``lead_<hours>h``."""
    if name == "reactive":
        return Reactive()
    if name == "oracle":
        return Oracle()
    if name.startswith("lead_") and name.endswith("h"):
        try:
            hours = float(name[5:-1])
        except ValueError:
            hours = math.nan
        if math.isfinite(hours):
            return FixedLead(hours * 3600)
    raise InvalidInput(f"provisioner must be reactive, oracle or lead_<hours>h; got {name!r}")
