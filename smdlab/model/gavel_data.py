"""Gavel's measured throughputs (the project's copies): solo rates per GPU type, co-located pairs.

Source: Narayanan et al., "Heterogeneity-Aware Cluster Scheduling Policies for Deep Learning
Workloads", OSDI 2020; ``scheduler/simulation_throughputs.json`` in stanford-futuredata/gavel
(MIT licence), converted as data/measurements/README.md says. GPU
types (``smdlab.model.gpu_types``) and GPU sharing (``smdlab.model.colocation``) both read them.
"""

from __future__ import annotations

import pandas as pd

from smdlab.paths import data_dir

__all__ = ["load_gavel_pairs", "load_gavel_solo"]


def load_gavel_solo() -> pd.DataFrame:
    """Return Gavel's measured solo throughputs (the project's copy)."""
    return pd.read_csv(data_dir() / "measurements" / "gavel_solo_throughputs.csv")


def load_gavel_pairs() -> pd.DataFrame:
    """Return Gavel's measured co-located pair throughputs (the project's copy)."""
    return pd.read_csv(data_dir() / "measurements" / "gavel_colocated_throughputs.csv")
