"""Epoch-time models of all-reduce training, fitted to measured epoch times (OMRU's V100 table).

The table (``data/measurements/epoch_times_v100.csv``; columns ``model, task, num_gpus,
epoch_time``) gives each network's time per epoch on 1..8 V100 GPUs with ring all-reduce. The
unit is the source's (it appears to be minutes); every prediction is in the table's unit.

``fit_epoch_model`` fits, per network, the all-reduce layered model (``smdlab.model.allreduce``)
on a generic profile: ``GENERIC_LAYERS`` equal layers holding ``GENERIC_BYTES`` of parameters,
so that DDP's 25 MB buckets make one bucket per layer; an epoch is ``STEPS_PER_EPOCH`` steps of
one per-GPU mini-batch at 1 GPU (linear scaling rule: the per-GPU batch stays fixed, so g GPUs
take STEPS_PER_EPOCH / g iterations). Three parameters per network, all in the table's unit:

- ``compute``: forward + backward time of one epoch on 1 GPU;
- ``intra_comm``: time one epoch's worth of full-model transfers takes on the intra-machine link
  (a ring of g <= gpus_per_machine GPUs moves 2 (g-1)/g of it per iteration);
- ``inter_comm``: the same over the NIC (a ring that crosses machines); the ring runs at the
  slower of the two links, so the effective value is max(intra_comm, inter_comm).

epoch(g) = (STEPS_PER_EPOCH / g) * tau(g), tau in ``wfbp`` mode (buckets overlap the backward
pass). Least squares on log epoch time, parameters in log space, best of a few starts.
``fit_layered_epoch_model`` does the same with a bundled profile's real layers and 25 MB buckets
(a compute scale and two link bandwidths fitted) for the networks that have one.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType

import numpy as np
import pandas as pd
from scipy.optimize import least_squares

from smdlab.errors import InvalidInput, check_choice, check_int, check_positive
from smdlab.model.allreduce import ring_tau, uniform_profile
from smdlab.model.job import Job
from smdlab.model.profiles import LayerProfile
from smdlab.paths import data_dir

EPOCH_COLUMNS: tuple[str, ...] = ("model", "task", "num_gpus", "epoch_time")
GENERIC_LAYERS = 4
GENERIC_BYTES = 100e6  # 4 x 25 MB: one DDP bucket per layer
STEPS_PER_EPOCH = 10_000  # a normalisation (only steps x step time enters an epoch time) that gives
# step times of 0.1-2 s and effective link bandwidths of 1-13 Gbps for the fitted jobs
DEFAULT_UNIT_S = 60.0  # the table's unit in seconds (the source appears to give minutes)
DEFAULT_GPUS_PER_MACHINE = 4  # OMRU's cluster: 8 nodes of 4 V100
# Networks of the table with a bundled profile (the table's name -> bundled profile).
BUNDLED_MATCH: Mapping[str, str] = MappingProxyType(
    {
        "alexnet": "alexnet",
        "resnet50": "resnet50",
        "resnext50": "resnext",
        "googlenet": "googlenet",
        "vgg16": "vgg16",
    }
)
# Layered fit on bundled profiles: ImageNet-1k's training set and an assumed per-GPU batch.
IMAGENET_TRAIN_IMAGES = 1_281_167
DEFAULT_PER_GPU_BATCH = 32


def epoch_times_path():
    """Path of the bundled epoch-time table."""
    return data_dir() / "measurements" / "epoch_times_v100.csv"


def load_epoch_times() -> pd.DataFrame:
    """OMRU's measured epoch times of 11 networks on 1..8 V100 GPUs (see the data README)."""
    return check_epoch_table(pd.read_csv(epoch_times_path()))


def check_epoch_table(table: pd.DataFrame, required_gpus: Sequence[int] = ()) -> pd.DataFrame:
    """The table if valid: the columns, integer GPU counts >= 1, positive finite times, no duplicate
    (model, num_gpus), every model with each of ``required_gpus``; else InvalidInput."""
    if not isinstance(table, pd.DataFrame):
        raise InvalidInput(f"table must be a pandas DataFrame, got {type(table).__name__}")
    missing = [c for c in ("model", "num_gpus", "epoch_time") if c not in table.columns]
    if missing:
        raise InvalidInput(
            f"table is missing column {missing[0]!r}; needed: model, num_gpus, epoch_time"
        )
    if table.empty:
        raise InvalidInput("table must have at least one row, got 0")
    g = pd.to_numeric(table["num_gpus"], errors="coerce").to_numpy(dtype=float)
    if not np.all(np.isfinite(g)) or np.any(g < 1) or np.any(g != np.round(g)):
        bad = table["num_gpus"].iloc[
            int(np.flatnonzero(~(np.isfinite(g) & (g >= 1)) | (g != np.round(g)))[0])
        ]
        raise InvalidInput(f"num_gpus must be integers >= 1, got {bad!r}")
    t = pd.to_numeric(table["epoch_time"], errors="coerce").to_numpy(dtype=float)
    if not np.all(np.isfinite(t) & (t > 0)):
        bad = table["epoch_time"].iloc[int(np.flatnonzero(~(np.isfinite(t) & (t > 0)))[0])]
        raise InvalidInput(f"epoch_time must be positive and finite, got {bad!r}")
    dup = table.duplicated(subset=["model", "num_gpus"])
    if dup.any():
        row = table[dup].iloc[0]
        raise InvalidInput(
            f"table has duplicate rows for model {row['model']!r} at num_gpus={int(row['num_gpus'])}"
        )
    out = table.copy()
    out["num_gpus"] = g.astype(int)
    out["epoch_time"] = t
    for model, rows in out.groupby("model", sort=True):
        have = set(rows["num_gpus"])
        lack = [int(x) for x in required_gpus if int(x) not in have]
        if lack:
            raise InvalidInput(
                f"table is missing GPU counts {lack} for model {model!r} (needed: {list(required_gpus)})"
            )
    return out


def _train_gpus(train_gpus: Sequence[int]) -> tuple[int, ...]:
    try:
        gpus = tuple(check_int("train_gpus", int(x), 1, 4096) for x in train_gpus)
    except (TypeError, ValueError):
        raise InvalidInput(f"train_gpus must be GPU counts >= 1, got {train_gpus!r}") from None
    if len(set(gpus)) < 3:
        raise InvalidInput(
            f"train_gpus must give at least 3 distinct GPU counts (3 parameters), got {train_gpus!r}"
        )
    return tuple(sorted(set(gpus)))


def _generic_epoch(
    params: np.ndarray, g: np.ndarray, gpus_per_machine: int, mode: str = "wfbp"
) -> np.ndarray:
    """Epoch times at GPU counts g for (compute, intra_comm, inter_comm) rows broadcast over g."""
    compute, intra, inter = (np.asarray(x, dtype=float) for x in params)
    g = np.asarray(g, dtype=float)
    prof = _GENERIC
    per_step = compute / STEPS_PER_EPOCH  # one step's compute, table unit
    comm = np.where(g <= gpus_per_machine, intra, np.maximum(intra, inter))
    bw = GENERIC_BYTES * STEPS_PER_EPOCH / comm  # bytes per table unit
    tau = ring_tau(
        prof.forward_s,
        prof.backward_s,
        prof.param_bytes,
        GENERIC_BYTES / GENERIC_LAYERS,
        per_step / prof_compute(),
        g,
        bw,
        0.0,
        mode,
    )
    return STEPS_PER_EPOCH / g * tau


_GENERIC = uniform_profile(GENERIC_LAYERS, 1.0, GENERIC_BYTES, name="generic")


def prof_compute() -> float:
    """Compute time per sample of the generic profile (1 by construction)."""
    return float(_GENERIC.forward_s.sum() + _GENERIC.backward_s.sum())


@dataclass(frozen=True)
class EpochModel:
    """Per-network fitted parameters (``params``: model -> {name: value}) and how to predict.

    form: ``generic`` (``fit_epoch_model``) or ``layered`` (``fit_layered_epoch_model``).
    train_gpus: GPU counts the fit used. gpus_per_machine: GPUs one machine holds (rings of more
    cross machines). mode: timing overlap mode. notes: what the fit assumed.
    """

    form: str
    params: Mapping[str, Mapping[str, float]]
    train_gpus: tuple[int, ...]
    gpus_per_machine: int = DEFAULT_GPUS_PER_MACHINE
    mode: str = "wfbp"
    per_gpu_batch: int = DEFAULT_PER_GPU_BATCH
    unit_s: float = DEFAULT_UNIT_S
    notes: tuple[str, ...] = field(default=(), compare=False)

    @property
    def models(self) -> list[str]:
        """Networks the model was fitted on."""
        return sorted(self.params)

    def epoch_time(self, model: str, gpus: Sequence[int] | np.ndarray | int) -> np.ndarray:
        """Epoch time of ``model`` at each GPU count (table unit; beyond the table: extrapolated)."""
        check_choice("model", model, self.models)
        g = np.atleast_1d(np.asarray(gpus, dtype=float))
        if g.size and (np.any(g < 1) or np.any(g != np.round(g))):
            raise InvalidInput(f"gpus must be integers >= 1, got {gpus!r}")
        p = self.params[model]
        if self.form == "generic":
            return _generic_epoch(
                np.array([p["compute"], p["intra_comm"], p["inter_comm"]])[:, None]
                * np.ones((1, g.size)),
                g,
                self.gpus_per_machine,
                self.mode,
            )
        return _layered_epoch(
            BUNDLED_MATCH[model],
            np.array([p["compute_scale"], p["intra_gbps"], p["nic_gbps"]]),
            g,
            self.gpus_per_machine,
            self.per_gpu_batch,
            self.unit_s,
            self.mode,
        )

    def predict(self, table: pd.DataFrame) -> np.ndarray:
        """Epoch time for each row of ``table`` (its ``model`` and ``num_gpus``), in order."""
        t = check_epoch_table_rows(table)
        out = np.empty(len(t))
        for model, idx in t.groupby("model", sort=False).indices.items():
            out[idx] = self.epoch_time(str(model), t["num_gpus"].to_numpy()[idx])
        return out

    def job(
        self,
        model: str,
        epochs: float,
        *,
        name: str | None = None,
        max_workers: int = 32,
        arrival: float = 0.0,
        worker_demand: Mapping[str, float] | None = None,
    ) -> Job:
        """An all-reduce Job that trains ``model`` for ``epochs`` epochs; its duration at g GPUs is
        ``epochs * epoch_time(model, g) * unit_s`` seconds (``generic`` form only)."""
        if self.form != "generic":
            raise InvalidInput("job() needs the generic form (fit_epoch_model)")
        check_choice("model", model, self.models)
        epochs = check_positive("epochs", epochs)
        p = self.params[model]
        unit = self.unit_s
        prof = uniform_profile(
            GENERIC_LAYERS,
            p["compute"] * unit / STEPS_PER_EPOCH,
            GENERIC_BYTES,
            name=str(model),
        )
        intra_bytes_s = GENERIC_BYTES * STEPS_PER_EPOCH / (p["intra_comm"] * unit)
        nic_bytes_s = GENERIC_BYTES * STEPS_PER_EPOCH / (p["inter_comm"] * unit)
        demand = dict(worker_demand or {"gpu": 1, "cpu": 4, "mem_gb": 16})
        demand["bw_gbps"] = nic_bytes_s * 8 / 1e9
        return Job(
            name or str(model),
            prof,
            epochs * STEPS_PER_EPOCH,
            1,
            demand,
            {},
            arrival=arrival,
            max_workers=max_workers,
            batch_mode="per_worker",
            per_worker_batch=1,
            arch="allreduce",
            bucket_mb=GENERIC_BYTES / GENERIC_LAYERS / 1e6,
            intra_link=intra_bytes_s * 8 / 1e9,
            gpus_per_machine=self.gpus_per_machine,
        )


def check_epoch_table_rows(table: pd.DataFrame) -> pd.DataFrame:
    """Rows to predict: columns model and num_gpus (integers >= 1)."""
    if not isinstance(table, pd.DataFrame):
        raise InvalidInput(f"table must be a pandas DataFrame, got {type(table).__name__}")
    for c in ("model", "num_gpus"):
        if c not in table.columns:
            raise InvalidInput(f"table is missing column {c!r}; needed: model, num_gpus")
    g = pd.to_numeric(table["num_gpus"], errors="coerce").to_numpy(dtype=float)
    if not np.all(np.isfinite(g) & (g >= 1) & (g == np.round(g))):
        raise InvalidInput("num_gpus must be integers >= 1")
    return table.reset_index(drop=True)


def _fit_one(residual, x0s: Sequence[np.ndarray], lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    best = None
    for x0 in x0s:
        r = least_squares(residual, np.clip(x0, lo + 1e-9, hi - 1e-9), bounds=(lo, hi))
        if best is None or r.cost < best.cost:
            best = r
    assert best is not None
    return best.x


def fit_epoch_model(
    table: pd.DataFrame,
    train_gpus: Sequence[int] = (1, 2, 4, 8),
    *,
    gpus_per_machine: int = DEFAULT_GPUS_PER_MACHINE,
    mode: str = "wfbp",
    unit_s: float = DEFAULT_UNIT_S,
) -> EpochModel:
    """Fit the generic all-reduce epoch model of every network on the rows at ``train_gpus``."""
    gpus = _train_gpus(train_gpus)
    check_choice("mode", mode, ("sequential", "wfbp"))
    gpm = check_int("gpus_per_machine", gpus_per_machine, 1, 4096)
    unit_s = check_positive("unit_s", unit_s)
    t = check_epoch_table(table, gpus)
    params: dict[str, Mapping[str, float]] = {}
    for model, rows in t.groupby("model", sort=True):
        rows = rows[rows["num_gpus"].isin(gpus)]
        g = rows["num_gpus"].to_numpy(dtype=float)
        y = rows["epoch_time"].to_numpy(dtype=float)
        y1 = float(y[np.argmin(g)] * g.min())

        def residual(x, g=g, y=y):
            e = np.exp(x)[:, None] * np.ones((1, g.size))
            return np.log(_generic_epoch(e, g, gpm, mode)) - np.log(y)

        lo, hi = np.log([y1 * 1e-3] * 3), np.log([y1 * 1e3] * 3)
        starts = [np.log([y1, y1 * s1, y1 * s2]) for s1, s2 in ((0.3, 1), (0.05, 0.3), (1, 3))]
        x = np.exp(_fit_one(residual, starts, lo, hi))
        params[str(model)] = MappingProxyType(
            {"compute": float(x[0]), "intra_comm": float(x[1]), "inter_comm": float(x[2])}
        )
    return EpochModel("generic", MappingProxyType(params), gpus, gpm, mode, unit_s=unit_s)


def _layered_epoch(
    network: str,
    x: np.ndarray,
    g: np.ndarray,
    gpus_per_machine: int,
    per_gpu_batch: int,
    unit_s: float,
    mode: str,
) -> np.ndarray:
    prof = LayerProfile.load(network)
    scale, intra_gbps, nic_gbps = (float(v) for v in x)
    g = np.asarray(g, dtype=float)
    bw = np.where(g <= gpus_per_machine, intra_gbps, min(intra_gbps, nic_gbps)) * 1e9 / 8
    tau = ring_tau(
        prof.forward_s * scale,
        prof.backward_s * scale,
        prof.param_bytes,
        25e6,
        np.full_like(g, float(per_gpu_batch)),
        g,
        bw,
        0.0,
        mode,
    )
    return IMAGENET_TRAIN_IMAGES / (g * per_gpu_batch) * tau / unit_s


def fit_layered_epoch_model(
    table: pd.DataFrame,
    train_gpus: Sequence[int] = (1, 2, 4, 8),
    *,
    gpus_per_machine: int = DEFAULT_GPUS_PER_MACHINE,
    per_gpu_batch: int = DEFAULT_PER_GPU_BATCH,
    unit_s: float = DEFAULT_UNIT_S,
    mode: str = "wfbp",
) -> EpochModel:
    """Fit the layered all-reduce model on the bundled profiles of the table's networks that have
    one (``BUNDLED_MATCH``): compute scale, intra-machine and NIC bandwidth per network."""
    gpus = _train_gpus(train_gpus)
    check_choice("mode", mode, ("sequential", "wfbp"))
    gpm = check_int("gpus_per_machine", gpus_per_machine, 1, 4096)
    batch = check_int("per_gpu_batch", per_gpu_batch, 1, 1 << 16)
    unit_s = check_positive("unit_s", unit_s)
    t = check_epoch_table(table, gpus)
    t = t[t["model"].isin(BUNDLED_MATCH)]
    if t.empty:
        raise InvalidInput(
            f"table has no network with a bundled profile (any of {', '.join(BUNDLED_MATCH)})"
        )
    params: dict[str, Mapping[str, float]] = {}
    for model, rows in t.groupby("model", sort=True):
        rows = rows[rows["num_gpus"].isin(gpus)]
        g = rows["num_gpus"].to_numpy(dtype=float)
        y = rows["epoch_time"].to_numpy(dtype=float)
        net = BUNDLED_MATCH[str(model)]

        def residual(x, g=g, y=y, net=net):
            return np.log(_layered_epoch(net, np.exp(x), g, gpm, batch, unit_s, mode)) - np.log(y)

        lo, hi = np.log([1e-3, 0.1, 0.01]), np.log([1e3, 1e5, 1e5])
        starts = [np.log([1.0, b1, b2]) for b1, b2 in ((1200, 100), (100, 10), (1000, 1))]
        x = np.exp(_fit_one(residual, starts, lo, hi))
        params[str(model)] = MappingProxyType(
            {"compute_scale": float(x[0]), "intra_gbps": float(x[1]), "nic_gbps": float(x[2])}
        )
    notes = (
        f"epoch = {IMAGENET_TRAIN_IMAGES} ImageNet-1k images / (g x {batch} per GPU) iterations "
        "(per-GPU batch assumed); 25 MB buckets; table unit taken as minutes",
    )
    return EpochModel("layered", MappingProxyType(params), gpus, gpm, mode, batch, unit_s, notes)


def holdout_report(
    table: pd.DataFrame | None = None,
    train_gpus: Sequence[int] = (1, 2, 4, 8),
    form: str = "generic",
) -> pd.DataFrame:
    """MAPE (%) per network on the rows not in ``train_gpus``, and the mean (last row ``mean``)."""
    check_choice("form", form, ("generic", "layered"))
    t = load_epoch_times() if table is None else check_epoch_table(table)
    fitted = (fit_epoch_model if form == "generic" else fit_layered_epoch_model)(t, train_gpus)
    test = t[~t["num_gpus"].isin(fitted.train_gpus) & t["model"].isin(fitted.models)]
    test = test.reset_index(drop=True)
    pred = fitted.predict(test)
    err = np.abs(pred - test["epoch_time"].to_numpy()) / test["epoch_time"].to_numpy() * 100
    df = (
        pd.DataFrame({"model": test["model"], "ape": err})
        .groupby("model", sort=True)
        .agg(mape=("ape", "mean"), n_test=("ape", "size"))
        .reset_index()
    )
    mean = pd.DataFrame({"model": ["mean"], "mape": [df["mape"].mean()], "n_test": [len(test)]})
    return pd.concat([df, mean], ignore_index=True)


__all__ = [
    "BUNDLED_MATCH",
    "EPOCH_COLUMNS",
    "GENERIC_BYTES",
    "GENERIC_LAYERS",
    "STEPS_PER_EPOCH",
    "EpochModel",
    "check_epoch_table",
    "epoch_times_path",
    "fit_epoch_model",
    "fit_layered_epoch_model",
    "holdout_report",
    "load_epoch_times",
]
