"""The two beyond-GPU experiments run on the tiny configuration and give every policy's row."""

from __future__ import annotations

import numpy as np

from smdlab.experiments.config import get_config
from smdlab.experiments.multiresource import (
    CPU_POLICIES,
    MURI_POLICIES,
    cpu_cluster,
    jct_ratio,
    jct_vs_cpu_per_gpu,
    muri_jct_vs_load,
)


def test_cpu_sweep_runs_every_policy_on_the_same_jobs():
    df = jct_vs_cpu_per_gpu("tiny")
    assert set(df["policy"]) == set(CPU_POLICIES)
    assert (df["jobs_completed"] == df["jobs"]).all()
    assert np.isfinite(
        jct_ratio(df, "cpu_per_gpu", "gpu_proportional", "synergy_tune")["ratio"]
    ).all()
    cl = cpu_cluster(get_config("tiny"), 3.0)
    assert cl.capacity["cpu"] == 3.0 * cl.capacity["gpu"]


def test_muri_sweep_runs_every_policy():
    df = muri_jct_vs_load("tiny")
    assert set(df["policy"]) == set(MURI_POLICIES)
    assert (df["jobs_completed"] == df["jobs"]).all()
