"""The event-driven simulator: jobs + cluster + policy -> per-job outcomes and summary metrics."""

from smdlab.sim.policy_check import check_policy
from smdlab.sim.result import (
    HISTORY_COLUMNS,
    JOB_COLUMNS,
    SLO_JOB_COLUMNS,
    SLO_SUMMARY_KEYS,
    SUMMARY_KEYS,
    TIMING_KEYS,
    SimResult,
    summarize,
)
from smdlab.sim.simulator import UNFIT, CapacityExceeded, InvalidDecision, Stalled, simulate

__all__ = [
    "HISTORY_COLUMNS",
    "JOB_COLUMNS",
    "SLO_JOB_COLUMNS",
    "SLO_SUMMARY_KEYS",
    "SUMMARY_KEYS",
    "TIMING_KEYS",
    "UNFIT",
    "CapacityExceeded",
    "InvalidDecision",
    "SimResult",
    "Stalled",
    "check_policy",
    "simulate",
    "summarize",
]
