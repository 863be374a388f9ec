"""Workloads: synthetic Poisson jobs, the Philly trace, job tables, and scenario files."""

from smdlab.workloads.base import DEFAULT_CUSTOM_BATCH, Network, offered_load, resolve_networks
from smdlab.workloads.scenario import WORKLOAD_KINDS, Scenario, default_scenario_path, load_scenario
from smdlab.workloads.synthetic import DEFAULT_GPU_MIX, cluster_bundle_limit, synthetic
from smdlab.workloads.trace import load_csv, load_job_table, load_philly, philly_path

__all__ = [
    "DEFAULT_CUSTOM_BATCH",
    "DEFAULT_GPU_MIX",
    "WORKLOAD_KINDS",
    "Network",
    "Scenario",
    "cluster_bundle_limit",
    "default_scenario_path",
    "load_csv",
    "load_job_table",
    "load_philly",
    "load_scenario",
    "offered_load",
    "philly_path",
    "resolve_networks",
    "synthetic",
]
