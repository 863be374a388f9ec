"""The numerical experiments behind the paper-style figures, and the ``smdlab reproduce`` pipeline.

Each experiment is a function ``(config) -> tidy DataFrame`` (one row per seed); each figure is
drawn from that frame by a builder in ``smdlab.viz.experiments``. ``reproduce`` runs them all and
writes PNG, SVG and CSV files. EXPERIMENTS.md maps every figure to its command and notebook.
"""

from smdlab.experiments.config import CONFIGS, ExperimentConfig, get_config
from smdlab.experiments.gap import optimality_gap
from smdlab.experiments.jct import (
    SWEEPS,
    jct_sweep,
    jct_vs_bandwidth,
    jct_vs_cluster,
    jct_vs_comm_ratio,
    jct_vs_jobs,
)
from smdlab.experiments.reproduce import (
    FIGURES,
    csv_bytes,
    figure,
    list_figures,
    make_figure,
    reproduce,
    run_experiment,
)
from smdlab.experiments.validation import model_validation

__all__ = [
    "CONFIGS",
    "FIGURES",
    "SWEEPS",
    "ExperimentConfig",
    "csv_bytes",
    "figure",
    "get_config",
    "jct_sweep",
    "jct_vs_bandwidth",
    "jct_vs_cluster",
    "jct_vs_comm_ratio",
    "jct_vs_jobs",
    "list_figures",
    "make_figure",
    "model_validation",
    "optimality_gap",
    "reproduce",
    "run_experiment",
]
