"""smdlab against Muri's own simulator, job by job, on the same trace (docs/multiresource.md).

The reference per-job files hold one row per job with at least ``job_id`` and ``jct_s``, as
produced by running Rivendile/Muri's simulator (Apache-2.0) outside this tree; smdlab runs the
same trace (``--workload muri:PATH``) in the ``muri_n8g8`` scenario's setting. The policies map
one to one: ``srtf`` = its ``shortest``, ``muri_s`` = ``multi-resource-blossom-same-gpu``,
``tiresias`` = ``dlas-gpu``, ``muri_l`` = ``multi-resource-blossom-same-gpu-unaware``.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from smdlab.errors import InvalidInput
from smdlab.paths import data_dir
from smdlab.workloads.scenario import Scenario, load_scenario

__all__ = [
    "AUTHOR_POLICIES",
    "Agreement",
    "agreement",
    "muri_scenario",
    "parity_table",
    "run_muri",
]

# smdlab policy -> the ``--schedule`` of Muri's simulator it stands for.
AUTHOR_POLICIES: Mapping[str, str] = {
    "srtf": "shortest",
    "muri_s": "multi-resource-blossom-same-gpu",
    "tiresias": "dlas-gpu",
    "muri_l": "multi-resource-blossom-same-gpu-unaware",
}


@dataclass(frozen=True)
class Agreement:
    """Per-job agreement of one policy's JCTs with the reference's.

    jobs: jobs compared; within: share of jobs whose JCT is within ``tol`` of the reference's;
    mean_smdlab, mean_ref: mean JCTs (s); mean_error: mean_smdlab / mean_ref - 1.
    """

    policy: str
    jobs: int
    within: float
    tol: float
    mean_smdlab: float
    mean_ref: float

    @property
    def mean_error(self) -> float:
        """Relative error of smdlab's mean JCT against the reference's."""
        return self.mean_smdlab / self.mean_ref - 1.0


def muri_scenario(trace: str | os.PathLike | None = None) -> Scenario:
    """The bundled ``muri_n8g8`` scenario, on ``trace`` (a Muri trace CSV) if given."""
    sc = load_scenario(data_dir() / "scenarios" / "muri_n8g8.toml")
    if trace is not None:
        sc = sc.with_changes(workload={"path": str(Path(trace).resolve())})
    return sc


def run_muri(
    scenario: Scenario, policies: Sequence[str] = tuple(AUTHOR_POLICIES)
) -> dict[str, tuple[pd.DataFrame, float]]:
    """Per policy: smdlab's per-job table (job_id, jct_s) and the run's wall seconds."""
    from smdlab.sim.runner import run_policies, simulation_options

    cluster = scenario.build_cluster()
    jobs = scenario.build_jobs(cluster)
    out = {}
    for name in policies:
        t0 = time.perf_counter()
        res = run_policies(
            jobs,
            cluster,
            [name],
            policy_options=scenario.policy_options,
            **simulation_options(scenario),
        )[name]
        wall = time.perf_counter() - t0
        df = res.jobs
        table = pd.DataFrame({"job_id": df["job"].astype(str), "jct_s": df["jct"].astype(float)})
        out[name] = (table, wall)
    return out


def agreement(
    policy: str, smdlab_jobs: pd.DataFrame, ref_jobs: pd.DataFrame, tol: float = 0.05
) -> Agreement:
    """Join both per-job tables on ``job_id`` and measure their agreement (``Agreement``)."""
    ref = ref_jobs.assign(job_id=ref_jobs["job_id"].astype(str))
    both = smdlab_jobs.merge(ref[["job_id", "jct_s"]], on="job_id", suffixes=("", "_ref"))
    if len(both) != len(ref) or len(both) != len(smdlab_jobs):
        raise InvalidInput(
            f"{policy}: the per-job tables do not join one to one on job_id "
            f"(smdlab {len(smdlab_jobs)}, reference {len(ref)}, joined {len(both)})"
        )
    rel = np.abs(both["jct_s"].to_numpy() / both["jct_s_ref"].to_numpy() - 1.0)
    return Agreement(
        policy,
        len(both),
        float(np.mean(rel <= tol)),
        tol,
        float(both["jct_s"].mean()),
        float(both["jct_s_ref"].mean()),
    )


def parity_table(
    trace: str | os.PathLike,
    ref_dir: str | os.PathLike,
    policies: Sequence[str] = tuple(AUTHOR_POLICIES),
    tol: float = 0.05,
) -> pd.DataFrame:
    """One row per policy: agreement with ``ref_dir/<trace stem>__<policy>.csv`` and wall seconds."""
    stem = Path(trace).stem
    runs = run_muri(muri_scenario(trace), policies)
    rows = []
    for name, (table, wall) in runs.items():
        ref_path = Path(ref_dir) / f"{stem}__{name}.csv"
        if not ref_path.is_file():
            raise InvalidInput(f"reference per-job file {str(ref_path)!r} does not exist")
        a = agreement(name, table, pd.read_csv(ref_path), tol)
        rows.append(
            {
                "policy": name,
                "authors": AUTHOR_POLICIES.get(name, ""),
                "jobs": a.jobs,
                f"within_{tol:g}": a.within,
                "mean_jct_smdlab_s": a.mean_smdlab,
                "mean_jct_authors_s": a.mean_ref,
                "mean_error": a.mean_error,
                "wall_s": wall,
            }
        )
    return pd.DataFrame(rows)
