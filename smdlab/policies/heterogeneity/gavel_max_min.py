"""``gavel_max_min``: Gavel's heterogeneity-aware max-min fairness (LAS), in rounds.

Paper: Narayanan et al., "Heterogeneity-Aware Cluster Scheduling Policies for Deep Learning
Workloads", OSDI 2020, section 4.1: maximise ``min_j g_j * throughput(j, X) /
throughput(j, X^equal)``, where ``X^equal`` gives each of the n jobs ``G_t / n`` of every type
(scaled so a job's fractions sum to at most 1; Gavel's proportional policy) and ``g_j`` is the
job's scale factor (``smdlab.solve.gavel_lp.max_min_allocation``, an LP solved with HiGHS).
Job weights are all 1. Mode: preemptive, round-based (``smdlab.policies.heterogeneity._rounds``, which
lists every further assumption).
"""

from __future__ import annotations

from smdlab.policies.heterogeneity._rounds import GavelRounds
from smdlab.solve.gavel_lp import max_min_allocation


class GavelMaxMin(GavelRounds):
    """Gavel's heterogeneity-aware max-min fairness, executed in rounds."""

    name = "gavel_max_min"

    solve = staticmethod(max_min_allocation)
