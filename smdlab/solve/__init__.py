"""The solve layer: exact MILP, LP bound and rounding, SMD (sum-of-ratios decomposition), placement.

Imports only ``smdlab.model`` and ``smdlab.errors``; policies and the simulator build on it.
Names are loaded on first use, so that importing ``smdlab.solve.placement`` (every policy does)
does not import the solver back-ends.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

_EXPORTS: dict[str, str] = {
    "DEFAULT_KNAPSACK": "api",
    "METHODS": "api",
    "OPTIONS": "api",
    "SOLVE_OPTIONS": "api",
    "BruteOptions": "api",
    "LpOptions": "api",
    "Method": "api",
    "MilpOptions": "api",
    "SmdOptions": "api",
    "solve": "api",
    "solve_pooled": "api",
    "PooledSolve": "api",
    "BACKENDS": "backends",
    "GUROBI_SIZE_LIMIT": "backends",
    "BRUTE_MAX_COMBINATIONS": "brute",
    "Instance": "instance",
    "build_instance": "instance",
    "InstanceRows": "instance",
    "demand_matrices": "instance",
    "task_vectors": "instance",
    "KNAPSACKS": "knapsack",
    "Placement": "placement",
    "PlacementResult": "shrink_placement",
    "place": "shrink_placement",
    "RULES": "placement",
    "ScheduleBound": "schedule_bound",
    "mean_jct_lower_bound": "schedule_bound",
    "optimal_batch_mean_jct": "schedule_bound",
    "SELECTIONS": "smd",
    "IterationRecord": "smd",
    "RatioResult": "smd",
    "select_jobs": "smd",
    "sum_of_ratios": "smd",
    "Solution": "solution",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'smdlab.solve' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"smdlab.solve.{module}"), name)
    globals()[name] = value  # later look-ups skip this function
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


if TYPE_CHECKING:  # static tools see the real names
    from smdlab.solve.api import (
        DEFAULT_KNAPSACK as DEFAULT_KNAPSACK,
        METHODS as METHODS,
        OPTIONS as OPTIONS,
        SOLVE_OPTIONS as SOLVE_OPTIONS,
        BruteOptions as BruteOptions,
        LpOptions as LpOptions,
        Method as Method,
        MilpOptions as MilpOptions,
        PooledSolve as PooledSolve,
        SmdOptions as SmdOptions,
        solve as solve,
        solve_pooled as solve_pooled,
    )
    from smdlab.solve.backends import (
        BACKENDS as BACKENDS,
        GUROBI_SIZE_LIMIT as GUROBI_SIZE_LIMIT,
    )
    from smdlab.solve.brute import (
        BRUTE_MAX_COMBINATIONS as BRUTE_MAX_COMBINATIONS,
    )
    from smdlab.solve.instance import (
        Instance as Instance,
        InstanceRows as InstanceRows,
        build_instance as build_instance,
        demand_matrices as demand_matrices,
        task_vectors as task_vectors,
    )
    from smdlab.solve.knapsack import (
        KNAPSACKS as KNAPSACKS,
    )
    from smdlab.solve.placement import (
        RULES as RULES,
        Placement as Placement,
    )
    from smdlab.solve.schedule_bound import (
        ScheduleBound as ScheduleBound,
        mean_jct_lower_bound as mean_jct_lower_bound,
        optimal_batch_mean_jct as optimal_batch_mean_jct,
    )
    from smdlab.solve.shrink_placement import (
        PlacementResult as PlacementResult,
        place as place,
    )
    from smdlab.solve.smd import (
        SELECTIONS as SELECTIONS,
        IterationRecord as IterationRecord,
        RatioResult as RatioResult,
        select_jobs as select_jobs,
        sum_of_ratios as sum_of_ratios,
    )
    from smdlab.solve.solution import (
        Solution as Solution,
    )
