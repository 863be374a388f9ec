"""The solve layer: exact MILP, LP bound and rounding, SMD (sum-of-ratios decomposition), placement.

Imports only ``smdlab.model`` and ``smdlab.errors``; policies and the simulator build on it.
"""

from smdlab.solve.api import DEFAULT_KNAPSACK, METHODS, solve
from smdlab.solve.backends import BACKENDS, GUROBI_SIZE_LIMIT
from smdlab.solve.brute import BRUTE_MAX_COMBINATIONS
from smdlab.solve.instance import Instance, build_instance
from smdlab.solve.knapsack import KNAPSACKS
from smdlab.solve.placement import Placement, PlacementResult, place
from smdlab.solve.smd import SELECTIONS, IterationRecord, RatioResult, select_jobs, sum_of_ratios
from smdlab.solve.solution import Solution

__all__ = [
    "BACKENDS", "BRUTE_MAX_COMBINATIONS", "DEFAULT_KNAPSACK", "GUROBI_SIZE_LIMIT", "Instance", "IterationRecord",
    "KNAPSACKS", "METHODS", "Placement", "PlacementResult", "RatioResult", "SELECTIONS", "Solution", "build_instance", "place",
    "select_jobs", "solve", "sum_of_ratios",
]
