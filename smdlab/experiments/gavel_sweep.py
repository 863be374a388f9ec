"""Gavel's heterogeneity gain against the arrival rate: smdlab's Gavel mode beside Gavel's simulator.

For each Gavel trace of the configuration (``ExperimentConfig.gavel_traces``: traces drawn by
Gavel's own continuous-arrival generator, shipped in ``data/traces/gavel/``), smdlab's Gavel mode
(``smdlab.sim.gavel_mode``) runs Gavel's agnostic ``max_min_fairness`` (LAS) and its
heterogeneity-aware ``max_min_fairness_perf`` with the trace's scheduler seed and cluster, and the
ratio of their window-average JCTs (agnostic over aware, Gavel's ``get_average_jct`` over the
trace's measurement window) is computed here. Gavel's own simulator's window averages on the same
traces are read from ``data/traces/gavel/reference/rate_sweep.csv`` (a reference run of
stanford-futuredata/gavel c4fa400, MIT licence, Copyright (c) 2020 Stanford Future Data Systems;
provenance in ``data/traces/README.md``), never recomputed. Gavel's paper (Narayanan et al.,
OSDI 2020) reports the aware policy cutting average JCT by up to 3.5x (the figure's line,
``smdlab.viz.gavel_sweep.PAPER_GAIN``).

LPs are solved with ECOS when cvxpy and ECOS are installed (Gavel's solver; every job then matches
Gavel's), else with HiGHS; the CSV's ``solver`` column says which.
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import pandas as pd

from smdlab.errors import InvalidInput
from smdlab.experiments.config import ExperimentConfig, get_config
from smdlab.paths import data_dir
from smdlab.viz.gavel_sweep import GAVEL, SMDLAB

AGNOSTIC = "max_min_fairness"  # Gavel's LAS, blind to GPU types
AWARE = "max_min_fairness_perf"  # Gavel's heterogeneity-aware LAS
REFERENCE_COLUMNS = (
    "trace",
    "rate_jobs_per_h",
    "seed",
    "jobs",
    "v100",
    "p100",
    "k80",
    "window_start",
    "window_end",
    "policy",
    "avg_jct_window_s",
    "solver",
)
COLUMNS = (
    "rate_jobs_per_h",
    "seed",
    "source",
    "jobs",
    "gpus_per_type",
    "window_first_job",
    "window_last_job",
    "agnostic_avg_jct_h",
    "aware_avg_jct_h",
    "ratio",
    "solver",
    "trace",
)


def gavel_dir() -> Path:
    """The folder of the shipped Gavel traces (``data/traces/gavel``)."""
    return data_dir() / "traces" / "gavel"


def gavel_reference(path: str | Path | None = None) -> pd.DataFrame:
    """Gavel's own window-average JCTs per trace and policy (default: the shipped rate_sweep.csv)."""
    p = Path(path) if path is not None else gavel_dir() / "reference" / "rate_sweep.csv"
    try:
        df = pd.read_csv(p)
    except OSError as e:
        raise InvalidInput(f"gavel reference {p}: cannot read ({e.strerror})") from None
    missing = [c for c in REFERENCE_COLUMNS if c not in df.columns]
    if missing:
        raise InvalidInput(f"gavel reference {p}: column {missing[0]!r} missing")
    return df


def _trace_meta(ref: pd.DataFrame, stem: str) -> dict[str, dict[str, Any]]:
    """Policy -> its reference row (rate, seed, cluster, window, Gavel's average) for trace ``stem``."""
    rows: dict[str, dict[str, Any]] = {
        str(r["policy"]): {str(k): v for k, v in r.items()}
        for r in ref[ref["trace"] == f"{stem}.trace"].to_dict("records")
    }
    if set(rows) != {AGNOSTIC, AWARE}:
        known = sorted({str(t).removesuffix(".trace") for t in ref["trace"]})
        raise InvalidInput(f"gavel_traces entry {stem!r}: must be one of {', '.join(known)}")
    return rows


def _run(task: tuple[str, str, int, dict[str, int], int, int]) -> tuple[float, str]:
    """One Gavel-mode run: (window-average JCT in s, solver used)."""
    from smdlab.sim.gavel_mode import simulate_gavel_mode, window_average
    from smdlab.solve.gavel_lp import ecos_available
    from smdlab.workloads.gavel import read_gavel_trace

    stem, policy, seed, spec, start, stop = task
    jobs = read_gavel_trace(gavel_dir() / f"{stem}.trace")
    solver = "ecos" if ecos_available() else "highs"
    res = simulate_gavel_mode(jobs, spec, policy, seed=seed, solver=solver)
    return window_average(res, range(start, stop)), res.solver


def gavel_rate_sweep(config: str | ExperimentConfig = "quick", *, workers: int = 1) -> pd.DataFrame:
    """Agnostic/aware window-average JCT ratio per trace (arrival rate): smdlab's Gavel mode and Gavel's."""
    from smdlab.experiments.jct import run_tasks
    from smdlab.solve.gavel_lp import ecos_available

    cfg = get_config(config)
    ref = gavel_reference()
    metas = {stem: _trace_meta(ref, stem) for stem in cfg.gavel_traces}
    if not ecos_available():
        warnings.warn(
            "gavel_rate_sweep: cvxpy/ecos not installed, Gavel's LPs solved with HiGHS; smdlab's "
            "ratios can then differ slightly from Gavel's (pip install 'smdlab[gavel]')",
            stacklevel=2,
        )
    tasks = []
    for stem, meta in metas.items():
        m = meta[AGNOSTIC]
        spec = {t: int(m[t]) for t in ("k80", "p100", "v100")}
        for policy in (AGNOSTIC, AWARE):
            tasks.append(
                (stem, policy, int(m["seed"]), spec, int(m["window_start"]), int(m["window_end"]))
            )
    results = dict(zip(((t[0], t[1]) for t in tasks), run_tasks(_run, tasks, workers), strict=True))
    rows = []
    for stem, meta in metas.items():
        m = meta[AGNOSTIC]
        common = {
            "rate_jobs_per_h": float(m["rate_jobs_per_h"]),
            "seed": int(m["seed"]),
            "jobs": int(m["jobs"]),
            "gpus_per_type": "/".join(str(int(m[t])) for t in ("v100", "p100", "k80")),
            "window_first_job": int(m["window_start"]),
            "window_last_job": int(m["window_end"]) - 1,
            "trace": f"{stem}.trace",
        }
        (ag, solver_ag), (aw, solver_aw) = results[stem, AGNOSTIC], results[stem, AWARE]
        solver = solver_ag if solver_ag == solver_aw else f"{solver_ag}/{solver_aw}"
        for source, agnostic, aware, used in (
            (SMDLAB, ag, aw, solver),
            (
                GAVEL,
                float(meta[AGNOSTIC]["avg_jct_window_s"]),
                float(meta[AWARE]["avg_jct_window_s"]),
                str(m["solver"]),
            ),
        ):
            rows.append(
                {
                    **common,
                    "source": source,
                    "agnostic_avg_jct_h": agnostic / 3600,
                    "aware_avg_jct_h": aware / 3600,
                    "ratio": agnostic / aware,
                    "solver": used,
                }
            )
    df = pd.DataFrame(rows, columns=list(COLUMNS))
    df = df.sort_values(["rate_jobs_per_h", "seed", "source"], kind="stable", ignore_index=True)
    df.attrs.update(experiment="gavel_rate_sweep", config=cfg.name)
    return df
