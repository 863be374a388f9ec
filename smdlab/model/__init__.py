"""The model layer: profiles, jobs, clusters and the layered timing model (imports nothing higher)."""

from smdlab.model.cluster import DEFAULT_RESOURCES, Cluster, Machine
from smdlab.model.demands import task_demands
from smdlab.model.input_pipeline import InputPipeline, bundled_pipeline
from smdlab.model.interleave import stage_times
from smdlab.model.job import BATCH_MODES, DEFAULT_PS_DEMAND, DEFAULT_WORKER_DEMAND, Job, make_job
from smdlab.model.profiles import BYTES_PER_PARAM, LayerProfile, list_profiles, profile_info
from smdlab.model.timing import (
    MODES,
    ActivePiece,
    active_piece,
    duration,
    duration_grid,
    iteration_time,
    iteration_time_grid,
    iteration_time_table,
    layer_timeline,
    layered_iteration_time,
    speed,
    speed_grid,
    speed_table,
)

__all__ = [
    "BATCH_MODES",
    "BYTES_PER_PARAM",
    "DEFAULT_PS_DEMAND",
    "DEFAULT_RESOURCES",
    "DEFAULT_WORKER_DEMAND",
    "MODES",
    "ActivePiece",
    "Cluster",
    "InputPipeline",
    "Job",
    "LayerProfile",
    "Machine",
    "active_piece",
    "bundled_pipeline",
    "duration",
    "duration_grid",
    "iteration_time",
    "iteration_time_grid",
    "iteration_time_table",
    "layer_timeline",
    "layered_iteration_time",
    "list_profiles",
    "make_job",
    "profile_info",
    "speed",
    "speed_grid",
    "speed_table",
    "stage_times",
    "task_demands",
]
