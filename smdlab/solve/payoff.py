"""When SMD pays off: SMD beside the exact model on one instance, pooled or placement-aware.

One row per call, the quantities notebook 02 draws against instance size: both methods' wall and
CPU time, the exact model's status and proven bound, and SMD's objective above that bound. In
the pooled problem SMD and the MILP allocate without placement (``place=False``); in the
placement-aware problem SMD is followed by smdlab's placement and both are priced by the
simulator's speeds on their placements (``smdlab.solve.placement_milp``).
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from typing import Any

from smdlab.errors import check_choice
from smdlab.model.cluster import Cluster
from smdlab.model.job import Job
from smdlab.solve.api import solve
from smdlab.solve.instance import build_instance
from smdlab.solve.placement_milp import smd_placed, solve_placed

__all__ = ["PROBLEMS", "payoff_row"]

PROBLEMS = ("pooled", "placement")


def _timed(call, *args, **kwargs) -> tuple[Any, float, float]:
    c0, t0 = time.process_time(), time.perf_counter()
    out = call(*args, **kwargs)
    return out, time.perf_counter() - t0, time.process_time() - c0


def payoff_row(
    problem: str, jobs: Sequence[Job], cluster: Cluster, time_limit: float
) -> dict[str, Any]:
    """SMD and the exact model of ``problem`` (pooled or placement) on one instance, as one row.

    The speed tables are built before either clock starts (a scheduler holds them). Columns:
    problem, jobs, machines, SMD and exact wall and CPU seconds, exact status, exact bound, SMD
    objective, SMD above the exact model's bound (a share), the exact model's proven gap.
    """
    problem = check_choice("problem", problem, PROBLEMS)
    build_instance(jobs, cluster, cluster.capacity_vector)
    if problem == "pooled":
        a, a_wall, a_cpu = _timed(solve, jobs, cluster, "smd", place=False, bound=False)
        b, b_wall, b_cpu = _timed(solve, jobs, cluster, "milp", place=False, time_limit=time_limit)
        smd_obj, exact_obj, bound, status = a.objective, b.objective, b.lower_bound, b.status
    else:
        a, a_wall, a_cpu = _timed(smd_placed, jobs, cluster)
        b, b_wall, b_cpu = _timed(solve_placed, jobs, cluster, time_limit=time_limit)
        smd_obj, exact_obj, bound, status = a.objective, b.objective, b.bound, b.status
    finite = bound > 0 and math.isfinite(bound)
    return {
        "problem": problem,
        "jobs": len(jobs),
        "machines": len(cluster.machines),
        "SMD wall (s)": a_wall,
        "SMD CPU (s)": a_cpu,
        "exact wall (s)": b_wall,
        "exact CPU (s)": b_cpu,
        "exact status": status,
        "exact bound": bound,
        "SMD objective": smd_obj,
        "SMD above bound": (smd_obj - bound) / bound if finite else math.nan,
        "proven gap": (exact_obj - bound) / exact_obj if finite else math.nan,
    }
