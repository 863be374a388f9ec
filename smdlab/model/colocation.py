"""Co-location (GPU sharing) model fitted to Gavel's measured pair throughputs.

Data (``data/measurements/gavel_*.csv``, Gavel, OSDI 2020, MIT): each job type's solo steps per
second per GPU type, and for pairs of job types sharing the same GPUs each job's co-located steps
per second (0: the pair did not fit in GPU memory). A job type is a network at one batch size.

**Throughput model (factorised, per GPU type g).** Each job type j has four parameters on g: a
compute demand ``u_j`` (the fraction of the GPU it keeps busy alone), a sensitivity ``s_j`` (how
much it suffers from a partner's presence), a pressure ``p_j`` (how much it disturbs a partner)
and a sharing overhead ``c_j`` (what sharing at all costs it, whoever the partner is).
Co-located with partner k, job j keeps the fraction

    r_j / solo_j = exp(-c_j - log(max(1, u_j + u_k)) - exp(s_j + p_k))

of its solo rate: ``c_j`` is the partner-independent cost of sharing a GPU (switching between
CUDA contexts, lost cache and launch-queue state: a job that leaves the GPU idle part of the time
pays it whatever it is paired with), the second term is time-sharing of the GPU's compute when the
two demands exceed one GPU, the third an interference term (memory bandwidth, caches, kernel
launch contention) that factorises into the victim's sensitivity and the aggressor's pressure.
``kind="factorised_no_overhead"`` is the same model with ``c_j = 0``; 5-fold cross-validation on
the training pairs (``cross_validate_colocation``) prefers the overhead term (docs/model.md).
Why factorised: a pair model needs per-pair numbers, which do not exist for unseen pairs; with per-job parameters, every
job type is seen in training with other partners, so any pair of seen types is predicted. The
compute term captures the saturation that the baseline cannot (two light jobs barely slow each
other, two heavy ones halve each other), which is where the baseline's errors concentrate.

**Memory (fit / no fit).** Each job type has a footprint ``m_j`` (GB-like units, one per job type,
so a batch size's effect on activation memory is part of the type); a GPU type has a usable
capacity ``C_g``; a pair fits iff ``m_j + m_k <= C_g``. Fitted by logistic regression on the sign
of ``C_g - m_j - m_k``. Gavel measured space sharing only for single-GPU jobs: every multi-GPU
pair in the data is 0, so the model predicts "does not fit" for scale factors never seen fitting.

**Baseline (log-additive).** ``log(r_j / solo_j) = a_{g,j} + b_{g,k}`` (own and partner effects),
least squares; same memory rule (the comparison is about throughput).

Metrics (``evaluate_colocation``): MAPE of the co-located rates on pairs that fit and accuracy of
the fit call, on a seeded hold-out of job-type pairs (split by unordered pair, all GPU types of a
pair on the same side), for both models.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from scipy.optimize import least_squares, minimize
from scipy.sparse import coo_matrix

from smdlab.caches import COLOCATION, memoize
from smdlab.errors import InvalidInput, check_choice, check_int, check_positive
from smdlab.model.gavel_data import load_gavel_pairs, load_gavel_solo  # re-exported
from smdlab.model.gpu_types import GPU_TYPES

SOLO_COLUMNS: tuple[str, ...] = ("gpu_type", "placement", "job_type", "scale_factor", "steps_per_s")
PAIR_COLUMNS: tuple[str, ...] = (
    "gpu_type",
    "placement",
    "job_a",
    "scale_factor_a",
    "job_b",
    "scale_factor_b",
    "steps_per_s_a",
    "steps_per_s_b",
)
COLOCATION_MODELS = ("factorised", "factorised_no_overhead", "log_additive")
_PARAMS: dict[str, tuple[str, ...]] = {
    "factorised": ("log_demand", "sensitivity", "pressure", "overhead"),
    "factorised_no_overhead": ("log_demand", "sensitivity", "pressure"),
    "log_additive": ("own", "partner"),
}
_REG = 0.01  # ridge weight on the parameters (keeps rarely seen job types near neutral)
_MEM_SHARPNESS = 10.0  # logistic slope of the memory rule (units of 1/footprint)


def _check_columns(df: pd.DataFrame, columns: Sequence[str], name: str) -> None:
    if not isinstance(df, pd.DataFrame):
        raise InvalidInput(f"{name} must be a pandas DataFrame, got {type(df).__name__}")
    missing = [c for c in columns if c not in df.columns]
    if missing:
        raise InvalidInput(f"{name} lacks columns {', '.join(missing)}")


def _solo_index(solo: pd.DataFrame) -> pd.Series:
    _check_columns(solo, SOLO_COLUMNS, "solo")
    rate = pd.to_numeric(solo["steps_per_s"], errors="coerce")
    if rate.isna().any() or (rate < 0).any():
        raise InvalidInput("solo.steps_per_s must be numbers >= 0 (0: did not run)")
    key = ["gpu_type", "placement", "job_type", "scale_factor"]
    if solo.duplicated(key).any():
        row = solo[solo.duplicated(key)].iloc[0]
        raise InvalidInput(f"solo has duplicate rows for {tuple(row[key])}")
    return pd.Series(rate.to_numpy(), index=pd.MultiIndex.from_frame(solo[key]))


def _solo_rates(pairs: pd.DataFrame, solo_ix: pd.Series, side: str) -> np.ndarray:
    keys = list(
        zip(
            pairs["gpu_type"],
            pairs["placement"],
            pairs[f"job_{side}"],
            pairs[f"scale_factor_{side}"],
            strict=True,
        )
    )
    missing = [k for k in keys if k not in solo_ix.index]
    if missing:
        raise InvalidInput(
            f"pairs.job_{side} {missing[0][2]!r} on {missing[0][:2]} has no solo row"
        )
    return solo_ix.loc[keys].to_numpy(dtype=float)


def check_pairs(pairs: pd.DataFrame, *, rates: bool = True) -> None:
    """Raise InvalidInput on a malformed pair table (columns, negative rates, duplicate pairs)."""
    cols = PAIR_COLUMNS if rates else PAIR_COLUMNS[:6]
    _check_columns(pairs, cols, "pairs")
    if rates:
        for c in ("steps_per_s_a", "steps_per_s_b"):
            v = pd.to_numeric(pairs[c], errors="coerce")
            if v.isna().any() or (v < 0).any():
                raise InvalidInput(f"pairs.{c} must be numbers >= 0 (0: did not fit)")
        # an unordered pair counts once: (a, b) and (b, a) on the same GPUs are duplicates
        a = pairs["job_a"].astype(str) + "|" + pairs["scale_factor_a"].astype(str)
        b = pairs["job_b"].astype(str) + "|" + pairs["scale_factor_b"].astype(str)
        lo, hi = np.minimum(a, b), np.maximum(a, b)
        key = pairs["gpu_type"].astype(str) + "|" + pairs["placement"].astype(str) + "|" + lo + hi
        dup = key.duplicated()
        if dup.any():
            r = pairs[dup].iloc[0]
            raise InvalidInput(
                f"pairs has duplicate pair ({r['job_a']!r}, {r['job_b']!r}) on "
                f"{r['gpu_type']}/{r['placement']}"
            )


@dataclass(frozen=True)
class ColocationModel:
    """A fitted co-location model: per-job-type parameters per GPU type and a memory rule."""

    kind: str
    jobs: tuple[str, ...]
    gpus: tuple[str, ...]
    params: dict[str, np.ndarray]  # name -> (len(gpus), len(jobs)) array
    memory: np.ndarray  # footprint per job type
    capacity: dict[str, float]  # usable memory per GPU type
    sharing_scales: frozenset[int]  # scale factors seen fitting in training
    solo: pd.Series = field(repr=False)
    fit_seconds: float = 0.0

    def _ix(self, names: pd.Series, what: str) -> np.ndarray:
        lookup = {j: i for i, j in enumerate(self.jobs if what == "job" else self.gpus)}
        out = names.map(lookup)
        if out.isna().any():
            bad = names[out.isna()].iloc[0]
            raise InvalidInput(f"pairs has {what} {bad!r} the model was not fitted on")
        return out.to_numpy(dtype=int)

    def log_ratio(self, own: np.ndarray, partner: np.ndarray, gpu: np.ndarray) -> np.ndarray:
        """Return predicted log(co-located rate / solo rate) of job types ``own`` beside ``partner``."""
        return _log_ratio(self.kind, self.params, own, partner, gpu)

    def fits(self, a: np.ndarray, b: np.ndarray, gpu: np.ndarray) -> np.ndarray:
        """Return whether pairs of job types (indices) fit together in one GPU's memory."""
        cap = np.array([self.capacity[g] for g in self.gpus])[gpu]
        return self.memory[a] + self.memory[b] <= cap

    def predict(self, pairs: pd.DataFrame) -> pd.DataFrame:
        """Return predicted ``steps_per_s_a``, ``steps_per_s_b`` per row (0: predicted not to fit)."""
        check_pairs(pairs, rates=False)
        a = self._ix(pairs["job_a"].reset_index(drop=True), "job")
        b = self._ix(pairs["job_b"].reset_index(drop=True), "job")
        g = self._ix(pairs["gpu_type"].reset_index(drop=True), "gpu")
        solo_a = _solo_rates(pairs, self.solo, "a")
        solo_b = _solo_rates(pairs, self.solo, "b")
        scale_ok = (
            pairs["scale_factor_a"].isin(self.sharing_scales).to_numpy()
            & pairs["scale_factor_b"].isin(self.sharing_scales).to_numpy()
        )
        ok = self.fits(a, b, g) & scale_ok
        ra = np.where(ok, solo_a * np.exp(self.log_ratio(a, b, g)), 0.0)
        rb = np.where(ok, solo_b * np.exp(self.log_ratio(b, a, g)), 0.0)
        return pd.DataFrame({"steps_per_s_a": ra, "steps_per_s_b": rb}, index=pairs.index)


def _log_ratio(
    kind: str, params: dict[str, np.ndarray], own: np.ndarray, partner: np.ndarray, g: np.ndarray
) -> np.ndarray:
    if kind == "log_additive":
        return params["own"][g, own] + params["partner"][g, partner]
    u = np.exp(params["log_demand"])
    interference = np.exp(params["sensitivity"][g, own] + params["pressure"][g, partner])
    out = -np.log(np.maximum(1.0, u[g, own] + u[g, partner])) - interference
    return out - params["overhead"][g, own] if "overhead" in params else out


def _training_rows(
    d: pd.DataFrame, jobs: dict[str, int]
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Both directions of every fitting pair: (own, partner, log ratio)."""
    a = d["job_a"].map(jobs).to_numpy(dtype=int)
    b = d["job_b"].map(jobs).to_numpy(dtype=int)
    ya = np.log(d["steps_per_s_a"].to_numpy() / d["solo_a"].to_numpy())
    yb = np.log(d["steps_per_s_b"].to_numpy() / d["solo_b"].to_numpy())
    return np.r_[a, b], np.r_[b, a], np.r_[ya, yb]


def _fit_rates(kind: str, own: np.ndarray, partner: np.ndarray, y: np.ndarray, n: int) -> dict:
    """Least squares on log ratios for one GPU type; returns (1, n) parameter rows."""
    names = _PARAMS[kind]
    k = len(names)
    g0 = np.zeros(len(y), dtype=int)

    def unpack(th: np.ndarray) -> dict[str, np.ndarray]:
        return {nm: th[i * n : (i + 1) * n][None, :] for i, nm in enumerate(names)}

    def resid(th: np.ndarray) -> np.ndarray:
        return np.r_[_log_ratio(kind, unpack(th), own, partner, g0) - y, _REG * th]

    m = len(y)
    rows = np.arange(m)
    reg_rows = np.arange(m, m + k * n)

    def jac(th: np.ndarray) -> coo_matrix:
        # analytic and sparse: each residual touches the parameters of its two job types only
        if kind == "log_additive":
            vals = [np.ones(m), np.ones(m)]
            cols = [own, n + partner]
        else:
            u = np.exp(th[:n])
            tot = u[own] + u[partner]
            sat = tot > 1.0
            e = np.exp(th[n + own] + th[2 * n + partner])
            vals = [
                -np.where(sat, u[own] / tot, 0.0),
                -np.where(sat, u[partner] / tot, 0.0),
                -e,
                -e,
            ]
            cols = [own, partner, n + own, 2 * n + partner]
            if k == 4:
                vals.append(-np.ones(m))
                cols.append(3 * n + own)
        data = np.r_[np.concatenate(vals), np.full(k * n, _REG)]
        r = np.r_[np.tile(rows, len(vals)), reg_rows]
        c = np.r_[np.concatenate(cols), np.arange(k * n)]
        return coo_matrix((data, (r, c)), shape=(m + k * n, k * n)).tocsr()

    x0 = (
        np.zeros(k * n)
        if kind == "log_additive"
        else np.r_[np.full(n, -0.7), np.full(2 * n, -1.5), np.zeros((k - 3) * n)]
    )
    # a sharing overhead is a cost (>= 0): sharing never speeds a job up (no measured pair does)
    lower = np.full(k * n, -np.inf)
    if "overhead" in names:
        lower[names.index("overhead") * n : (names.index("overhead") + 1) * n] = 0.0
        x0[lower == 0.0] = 1e-3
    res = least_squares(resid, x0, jac=jac, method="trf", bounds=(lower, np.inf))
    return unpack(res.x)


def _fit_memory(
    a: np.ndarray, b: np.ndarray, g: np.ndarray, fit: np.ndarray, n: int, ng: int
) -> tuple[np.ndarray, np.ndarray]:
    """Logistic regression of fit on C_g - m_a - m_b; returns (footprints, capacities)."""
    y = fit.astype(float)

    def loss(th: np.ndarray) -> tuple[float, np.ndarray]:
        m, cap = np.exp(th[:n]), th[n:]
        z = _MEM_SHARPNESS * (cap[g] - m[a] - m[b])
        p = 1.0 / (1.0 + np.exp(-z))
        val = (
            np.mean(np.logaddexp(0, -z) * y + np.logaddexp(0, z) * (1 - y)) + 1e-3 * th[:n] @ th[:n]
        )
        dz = (p - y) / len(y) * _MEM_SHARPNESS
        grad = np.zeros_like(th)
        np.add.at(grad, n + g, dz)
        np.add.at(grad, a, -dz * m[a])
        np.add.at(grad, b, -dz * m[b])
        grad[:n] += 2e-3 * th[:n]
        return float(val), grad

    res = minimize(loss, np.r_[np.zeros(n), np.full(ng, 2.0)], jac=True, method="L-BFGS-B")
    return np.exp(res.x[:n]), res.x[n:]


def fit_colocation_model(
    pairs: pd.DataFrame, solo: pd.DataFrame, *, kind: str = "factorised"
) -> ColocationModel:
    """Fit a co-location model (``kind``: one of COLOCATION_MODELS) to pair and solo tables."""
    import time

    t0 = time.perf_counter()
    check_choice("kind", kind, COLOCATION_MODELS)
    solo_ix = _solo_index(solo)
    check_pairs(pairs)
    if len(pairs) == 0:
        raise InvalidInput("pairs must have at least one row")
    d = pairs.reset_index(drop=True).copy()
    d["solo_a"] = _solo_rates(d, solo_ix, "a")
    d["solo_b"] = _solo_rates(d, solo_ix, "b")
    d["fit"] = (d["steps_per_s_a"] > 0) & (d["steps_per_s_b"] > 0)
    d = d[~d["fit"] | ((d["solo_a"] > 0) & (d["solo_b"] > 0))]  # no ratio without a solo rate
    jobs = tuple(sorted(set(solo["job_type"]) | set(d["job_a"]) | set(d["job_b"])))
    gpus = tuple(sorted(set(d["gpu_type"])))
    jx = {j: i for i, j in enumerate(jobs)}
    n, ng = len(jobs), len(gpus)
    single = d[(d["scale_factor_a"] == d["scale_factor_b"])]
    scales = frozenset(int(s) for s in single.loc[single["fit"], "scale_factor_a"].unique())
    # placement does not matter for a pair on the same GPUs; fit on the distinct measurements
    rate_rows = d[d["fit"]].drop_duplicates(["gpu_type", "job_a", "job_b", "scale_factor_a"])
    per_gpu: list[dict[str, np.ndarray]] = []
    for gpu in gpus:
        own, partner, y = _training_rows(rate_rows[rate_rows["gpu_type"] == gpu], jx)
        per_gpu.append(_fit_rates(kind, own, partner, y, n))
    params = {k: np.vstack([p[k] for p in per_gpu]) for k in per_gpu[0]}
    mem_rows = d[d["scale_factor_a"].isin(scales) & d["scale_factor_b"].isin(scales)]
    mem_rows = mem_rows.drop_duplicates(["gpu_type", "job_a", "job_b", "scale_factor_a"])
    gx = {g: i for i, g in enumerate(gpus)}
    memory, cap = _fit_memory(
        mem_rows["job_a"].map(jx).to_numpy(dtype=int),
        mem_rows["job_b"].map(jx).to_numpy(dtype=int),
        mem_rows["gpu_type"].map(gx).to_numpy(dtype=int),
        mem_rows["fit"].to_numpy(),
        n,
        ng,
    )
    return ColocationModel(
        kind=kind,
        jobs=jobs,
        gpus=gpus,
        params=params,
        memory=memory,
        capacity={g: float(c) for g, c in zip(gpus, cap, strict=True)},
        sharing_scales=scales,
        solo=solo_ix,
        fit_seconds=time.perf_counter() - t0,
    )


def split_pairs(pairs: pd.DataFrame, holdout: float = 0.2, seed: int = 0) -> np.ndarray:
    """Return a boolean mask of hold-out rows: a seeded fraction of unordered job-type pairs."""
    check_positive("holdout", holdout)
    if holdout >= 1:
        raise InvalidInput(f"holdout must be in (0, 1), got {holdout!r}")
    check_int("seed", seed, 0)
    a, b = pairs["job_a"].astype(str), pairs["job_b"].astype(str)
    key = pd.Series(np.minimum(a, b) + "|" + np.maximum(a, b), index=pairs.index)
    uniq = np.array(sorted(set(key)))
    rng = np.random.default_rng(seed)
    chosen = set(rng.choice(uniq, size=max(1, round(holdout * len(uniq))), replace=False))
    return key.isin(chosen).to_numpy()


def colocation_metrics(model: ColocationModel, pairs: pd.DataFrame) -> dict[str, float]:
    """Return MAPE (%) on pairs that fit, fit/no-fit accuracy, both also on single-GPU rows only."""
    pred = model.predict(pairs)
    fit = ((pairs["steps_per_s_a"] > 0) & (pairs["steps_per_s_b"] > 0)).to_numpy()
    called = (pred["steps_per_s_a"] > 0).to_numpy()
    # MAPE over every measured pair that fits, from the rate model (even if the fit call is wrong)
    m = pairs.reset_index(drop=True)
    a = model._ix(m["job_a"], "job")
    b = model._ix(m["job_b"], "job")
    g = model._ix(m["gpu_type"], "gpu")
    ra = _solo_rates(m, model.solo, "a") * np.exp(model.log_ratio(a, b, g))
    rb = _solo_rates(m, model.solo, "b") * np.exp(model.log_ratio(b, a, g))
    ya, yb = m["steps_per_s_a"].to_numpy(), m["steps_per_s_b"].to_numpy()
    err = np.r_[np.abs(ra - ya)[fit] / ya[fit], np.abs(rb - yb)[fit] / yb[fit]]
    err = err[np.isfinite(err)]
    single = ((m["scale_factor_a"] == 1) & (m["scale_factor_b"] == 1)).to_numpy()
    return {
        "mape_pct": float(100 * err.mean()) if err.size else float("nan"),
        "fit_accuracy": float(np.mean(called == fit)),
        "fit_accuracy_single_gpu": float(np.mean((called == fit)[single])),
        "pairs": float(len(m)),
        "fitting_pairs": float(fit.sum()),
    }


def _group_folds(pairs: pd.DataFrame, folds: int, seed: int) -> np.ndarray:
    a, b = pairs["job_a"].astype(str), pairs["job_b"].astype(str)
    key = pd.Series(np.minimum(a, b) + "|" + np.maximum(a, b), index=pairs.index)
    uniq = np.array(sorted(set(key)))
    np.random.default_rng(seed).shuffle(uniq)
    fold = dict(zip(uniq, np.arange(len(uniq)) % folds, strict=True))
    return key.map(fold).to_numpy(dtype=int)


def cross_validate_colocation(
    pairs: pd.DataFrame,
    solo: pd.DataFrame,
    *,
    folds: int = 5,
    seed: int = 0,
    kinds: Sequence[str] = COLOCATION_MODELS,
) -> pd.DataFrame:
    """Return each model kind's k-fold cross-validated MAPE (%) on ``pairs`` (folds by pair).

    Model selection uses this on the training pairs only, never on the hold-out split.
    """
    folds = check_int("folds", folds, 2)
    check_int("seed", seed, 0)
    for kind in kinds:
        check_choice("kind", kind, COLOCATION_MODELS)
    fold = _group_folds(pairs, folds, seed)
    rows = []
    for kind in kinds:
        errs, weights = [], []
        for f in range(folds):
            model = fit_colocation_model(pairs[fold != f], solo, kind=kind)
            met = colocation_metrics(model, pairs[fold == f])
            if met["fitting_pairs"] > 0:
                errs.append(met["mape_pct"] * met["fitting_pairs"])
                weights.append(met["fitting_pairs"])
        rows.append(
            {"model": kind, "folds": folds, "seed": seed, "cv_mape_pct": sum(errs) / sum(weights)}
        )
    return pd.DataFrame(rows)


def evaluate_colocation(
    pairs: pd.DataFrame | None = None,
    solo: pd.DataFrame | None = None,
    *,
    holdout: float = 0.2,
    seed: int = 0,
) -> pd.DataFrame:
    """Return train and hold-out metrics of both models (split by job-type pair, seeded)."""
    pairs = load_gavel_pairs() if pairs is None else pairs
    solo = load_gavel_solo() if solo is None else solo
    test = split_pairs(pairs, holdout, seed)
    rows = []
    for kind in COLOCATION_MODELS:
        model = fit_colocation_model(pairs[~test], solo, kind=kind)
        for part, mask in (("train", ~test), ("holdout", test)):
            rows.append(
                {"model": kind, "split": part, **colocation_metrics(model, pairs[mask])}
                | {"fit_seconds": model.fit_seconds}
            )
    return pd.DataFrame(rows)


# ---- smdlab jobs -> Gavel job types ---------------------------------------------------------
# Assumption (docs/model.md, "GPU sharing"): a job shares a GPU like the Gavel job type of the
# same architecture family and nearest per-GPU batch size. Features: the profile's family
# (profile_info) and parameter count; CNNs under RESNET18_MAX_PARAMS parameters behave like
# ResNet-18 (11.7 M), larger ones like ResNet-50 (25.6 M); transformers like Transformer, RNN
# language models like LM. Profiles of an unknown family count as CNNs.
RESNET18_MAX_PARAMS = 15e6
GAVEL_BATCHES: dict[str, tuple[int, ...]] = {
    "ResNet-18": (16, 32, 64, 128, 256),
    "ResNet-50": (16, 32, 64, 128),
    "Transformer": (16, 32, 64, 128, 256),
    "LM": (5, 10, 20, 40, 80),
}
DEFAULT_SHARING_GPU = "v100"  # smdlab's profiles are V100 profiles


def gavel_job_type(job, accumulation: int = 1) -> str:
    """Return the Gavel job type an smdlab ``Job`` is assumed to share a GPU like (see above).

    accumulation: gradient-accumulation steps; the per-GPU batch runs as sub-batches of
    batch / accumulation (the global batch is unchanged, the footprint is the sub-batch's).
    """
    accumulation = check_int("accumulation", accumulation, 1)
    per_gpu = job.per_worker_batch if job.batch_mode == "per_worker" else job.global_batch
    return _gavel_type(
        job.profile.network, float(job.profile.total_param_bytes), float(per_gpu), accumulation
    )


@memoize(COLOCATION)
def _gavel_type(network: str, param_bytes: float, per_gpu: float, accumulation: int) -> str:
    from smdlab.model.profiles import list_profiles, profile_info

    if network in list_profiles():
        info = profile_info(network)
        family, params = str(info["family"]), float(info["params"])
    else:
        family, params = "cnn", param_bytes / 4.0
    if family == "transformer":
        kind = "Transformer"
    elif family == "rnn":
        kind = "LM"
    else:
        kind = "ResNet-18" if params < RESNET18_MAX_PARAMS else "ResNet-50"
    sub = max(1.0, per_gpu / accumulation)
    batch = min(GAVEL_BATCHES[kind], key=lambda b: abs(np.log(b) - np.log(sub)))
    return f"{kind} (batch size {batch})"


# Training state per parameter: ZeRO (Rajbhandari et al., SC 2020, section 3.1) counts 16 bytes
# for mixed-precision Adam (fp16 weights and gradients, fp32 weights, momentum and variance);
# fp32 training with Adam needs the same 16 (weights, gradients, two moments).
TRAINING_BYTES_PER_PARAM = 16.0


def gpu_memory_floor_gb(job) -> float:
    """Return a lower bound of one worker's GPU memory (GB): training state, activations not counted.

    16 bytes per parameter (``TRAINING_BYTES_PER_PARAM``). The bundled profiles give no
    activation memory, so this is a floor: a job above a GPU's memory cannot run on it, one below
    may still not fit.
    """
    from smdlab.model.profiles import BYTES_PER_PARAM

    params = float(job.profile.total_param_bytes) / BYTES_PER_PARAM
    return params * TRAINING_BYTES_PER_PARAM / 1e9


def largest_gpu_memory(cluster) -> tuple[str, float] | None:
    """Return (GPU type, GB) of the largest GPU memory in ``cluster`` (None: no GPUs).

    Untyped machines count as V100 (16 GB; the profiles' device). Datasheet memory per GPU type:
    ``smdlab.model.gpu_types.GPU_TYPES``.
    """
    mems = {
        m.gpu_type or DEFAULT_SHARING_GPU: GPU_TYPES[m.gpu_type or DEFAULT_SHARING_GPU].memory_gb
        for m in cluster.machines
        if m.capacity.get("gpu", 0) > 0
    }
    return max(mems.items(), key=lambda kv: kv[1]) if mems else None


def too_large_for_gpus(job, cluster, largest: tuple[str, float] | None = None) -> str | None:
    """Return why ``job`` cannot fit in the memory of any GPU of ``cluster`` even alone (else None).

    largest: ``largest_gpu_memory(cluster)`` when the caller has it already.
    """
    largest = largest_gpu_memory(cluster) if largest is None else largest
    if largest is None:
        return None
    gpu, cap = largest
    need = gpu_memory_floor_gb(job)
    if need <= cap:
        return None
    params = need / TRAINING_BYTES_PER_PARAM * 1e9
    return (
        f"job {job.name!r} needs at least {need:.1f} GB of GPU memory per worker "
        f"({params / 1e6:,.0f} M parameters x {TRAINING_BYTES_PER_PARAM:g} bytes of training "
        f"state), more than the largest GPU in the cluster ({gpu}, {cap:g} GB)"
    )


@memoize(COLOCATION)
def default_colocation_model() -> ColocationModel:
    """Return the factorised model fitted on every bundled Gavel pair (fitted once per process)."""
    return fit_colocation_model(load_gavel_pairs(), load_gavel_solo())


def shared_rate_factors(
    types: Sequence[str], gpu_type: str = DEFAULT_SHARING_GPU, model: ColocationModel | None = None
) -> np.ndarray | None:
    """Return each job type's fraction of its solo rate when all share one GPU (None: no fit).

    The pair model extended to k jobs: compute demands add, interference terms add over partners,
    each sharing job pays its overhead once, footprints add against the GPU's capacity. One job
    alone keeps its full rate.
    """
    m = default_colocation_model() if model is None else model
    if gpu_type not in m.gpus:
        raise InvalidInput(f"gpu_type must be one of {', '.join(m.gpus)}, got {gpu_type!r}")
    ix = np.array([m.jobs.index(t) for t in types], dtype=int)
    if len(ix) <= 1:
        return np.ones(len(ix))
    g = m.gpus.index(gpu_type)
    if m.memory[ix].sum() > m.capacity[gpu_type]:
        return None
    own = np.repeat(ix, len(ix))
    partner = np.tile(ix, len(ix))
    keep = np.repeat(np.arange(len(ix)), len(ix)) != np.tile(np.arange(len(ix)), len(ix))
    if m.kind == "log_additive":
        lr = m.log_ratio(own[keep], partner[keep], np.full(keep.sum(), g))
        return np.exp(lr.reshape(len(ix), len(ix) - 1).sum(axis=1))
    u = np.exp(m.params["log_demand"][g, ix])
    sens, press = m.params["sensitivity"][g, ix], m.params["pressure"][g, ix]
    inter = np.exp(sens[:, None] + press[None, :])
    np.fill_diagonal(inter, 0.0)
    # the sharing overhead is paid once by a job that shares, whatever the number of partners
    cost = m.params["overhead"][g, ix] if "overhead" in m.params else 0.0
    return np.exp(-cost - np.log(max(1.0, float(u.sum()))) - inter.sum(axis=1))


def accumulation_efficiency(job, accumulation: int, gpu_type: str = DEFAULT_SHARING_GPU) -> float:
    """Return samples/s with ``accumulation`` sub-batches over samples/s without (Gavel's solo data).

    Measured single-GPU throughputs of the two Gavel types (steps/s x batch): a smaller sub-batch
    usually uses the GPU less efficiently, which is the price of the smaller footprint.
    """
    full, sub = gavel_job_type(job), gavel_job_type(job, accumulation)
    return 1.0 if full == sub else _samples_ratio(full, sub, gpu_type)


@memoize(COLOCATION)
def _samples_ratio(full: str, sub: str, gpu_type: str) -> float:
    solo = default_colocation_model().solo

    def samples(t: str) -> float:
        batch = float(t.rsplit(" ", 1)[1].rstrip(")"))
        return float(solo.loc[(gpu_type, "consolidated", t, 1)]) * batch

    return samples(sub) / samples(full)


@memoize(COLOCATION)
def pair_tables(gpu_type: str = DEFAULT_SHARING_GPU) -> tuple[np.ndarray, np.ndarray]:
    """Return (F, fits) of the default model on ``gpu_type``: F[a, b] the fraction of its solo
    rate job type a keeps beside b, fits[a, b] whether the pair fits in memory (type indices of
    ``default_colocation_model().jobs``)."""
    m = default_colocation_model()
    if gpu_type not in m.gpus:
        raise InvalidInput(f"gpu_type must be one of {', '.join(m.gpus)}, got {gpu_type!r}")
    n = len(m.jobs)
    a, b = np.meshgrid(np.arange(n), np.arange(n), indexing="ij")
    g = np.full(a.size, m.gpus.index(gpu_type))
    f = np.exp(m.log_ratio(a.ravel(), b.ravel(), g)).reshape(n, n)
    fits = m.memory[:, None] + m.memory[None, :] <= m.capacity[gpu_type]
    f.setflags(write=False)
    fits.setflags(write=False)
    return f, fits
