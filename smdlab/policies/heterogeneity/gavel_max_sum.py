"""``gavel_max_sum``: Gavel's heterogeneity-aware maximum total throughput, in rounds.

Paper: Narayanan, Santhanam, Kazhamiaka, Phanishayee, Zaharia, "Heterogeneity-Aware Cluster
Scheduling Policies for Deep Learning Workloads", OSDI 2020 (MIT-licensed code
stanford-futuredata/gavel, read, not copied), section 4.2: maximise
``sum_j sum_t T[j, t] X[j, t]`` over time fractions X under Gavel's base constraints
(``smdlab.solve.gavel_lp.max_sum_allocation``, solved with HiGHS). Mode: preemptive, round-based
(``smdlab.policies.heterogeneity._rounds``, where every further assumption is listed). Throughputs are in
samples/s of each job's own network, as Gavel sums each job's steps/s.
"""

from __future__ import annotations

from smdlab.policies.heterogeneity._rounds import GavelRounds
from smdlab.solve.gavel_lp import max_sum_allocation


class GavelMaxSum(GavelRounds):
    """Gavel's max-sum-throughput allocation, executed in rounds."""

    name = "gavel_max_sum"

    solve = staticmethod(max_sum_allocation)
