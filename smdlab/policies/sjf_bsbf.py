"""SJF-BSBF: shortest job first, with the best sharing benefit first (Luo et al., 2024).

Source: Luo et al., "Scheduling Deep Learning Jobs in Multi-Tenant GPU Clusters via Wise
Resource Sharing" (arXiv 2407.13088, 2024). Jobs are taken shortest first; a job runs alone when
its GPUs are free; when it does not fit, the scheduler picks the running partner and the
gradient-accumulation setting (sub-batch size, so that the global batch is unchanged while the
memory fits) with the best predicted benefit to the pair's job completion times, and shares only
if sharing beats waiting. The paper is preemption-free; execution ``non_elastic``.

Rule here (a reconstruction from the paper's description; the paper's exact theorem was not
available to us, so the benefit is computed directly): for the waiting job j and each candidate
group g with room (fewer members than the sharing degree, the same (workers, PSs)) and each
accumulation a in ``accumulations`` whose predicted memory fits, predict with the co-location
model the members' shared rates; simulate the pair forward (all share until the first finishes,
the rest then run at their solo rates) and compare the sum of their completion times with not
sharing: the members run alone and j waits for the earliest predicted completion in the cluster
(then runs alone). The option with the largest positive reduction wins; none: j waits.
Assumptions: job sizes are known (remaining samples / speed, as SJF); the waiting estimate is the
earliest predicted completion among running jobs; default sharing degree 2 (pairs, as in the
paper); accumulation steps 1, 2, 4.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from smdlab.errors import InvalidInput, check_int
from smdlab.policies.base import Allocation, ClusterState, Decision, Policy
from smdlab.policies.sharing import (
    Share,
    can_share,
    factors,
    place_alone,
    running_shares,
    sjf_order,
    solo_speed,
    take,
    try_join,
)


def completion_sum(
    remaining: Sequence[float], shared: Sequence[float], alone: Sequence[float]
) -> float:
    """Sum of completion times (from now) of jobs that share at ``shared`` rates until each
    finishes; the others then continue at the rates of the smaller group, approximated here by
    their ``alone`` rates once a member leaves (pairs: exact)."""
    rem = np.asarray(remaining, dtype=float)
    t_first = float(np.min(rem / np.asarray(shared)))
    total = 0.0
    for r, s, a in zip(rem, shared, alone, strict=True):
        left = r - s * t_first
        total += t_first + max(0.0, left) / a
    return total


class SJFBSBF(Policy):
    """Shortest job first; when a job does not fit, share with the partner of best predicted benefit."""

    name = "sjf_bsbf"
    execution = "non_elastic"
    executions = ("non_elastic",)

    def __init__(self, sharing_degree: int = 2, accumulations: Sequence[int] = (1, 2, 4)) -> None:
        self.sharing_degree = check_int("sharing_degree", sharing_degree, 1)
        acc = tuple(accumulations)
        if not acc:
            raise InvalidInput("accumulations must list at least one step count >= 1")
        self.accumulations = tuple(check_int("accumulations", a, 1) for a in acc)

    def decide(self, state: ClusterState) -> Decision:
        """Start SJF jobs that fit; pair the others where sharing beats waiting."""
        k = state.sharing_degree
        free = np.array(state.free, dtype=float)
        shares = running_shares(state) if k > 1 else []
        mode = state.mode
        # earliest predicted completion among running jobs (alone-rate estimate)
        wait = min(
            (r.remaining / solo_speed(r.job, r.workers, r.ps, mode) for r in state.running),
            default=math.inf,
        )
        out: list[Allocation] = []
        for q in sjf_order(state):
            job = q.job
            alone = place_alone(job, free, state)
            if alone is not None:
                w, p, pl = alone
                take(job, pl, free, state)
                label = f"bsbf:{job.name}"
                shares.append(Share(label, w, p, pl, [job], [1], [q.remaining]))
                out.append(Allocation(job.name, w, p, pl, group=label, sharing="space"))
                continue
            if k == 1 or not shares:
                continue
            best: tuple[float, Share, int] | None = None
            for s in shares:
                if len(s.jobs) >= k or not can_share(s, job):
                    continue
                w, p = s.workers, s.ps
                v_j = solo_speed(job, w, p, mode)
                alone_rates = [solo_speed(x, w, p, mode) for x in s.jobs]
                without = sum(r / v for r, v in zip(s.remaining, alone_rates, strict=True))
                without += wait + q.remaining / v_j
                for acc in self.accumulations:
                    f = factors([*s.jobs, job], [*s.accs, acc])
                    if f is None:
                        continue
                    rates = [v * x for v, x in zip([*alone_rates, v_j], f, strict=True)]
                    with_share = completion_sum(
                        [*s.remaining, q.remaining], rates, [*alone_rates, v_j]
                    )
                    gain = without - with_share
                    if gain > 0 and (best is None or gain > best[0]):
                        best = (gain, s, acc)
            if best is None or not try_join(best[1], job, free, state):
                continue
            _, s, acc = best
            s.jobs.append(job)
            s.accs.append(acc)
            s.remaining.append(q.remaining)
            out.append(
                Allocation(
                    job.name,
                    s.workers,
                    s.ps,
                    s.placement,
                    group=s.label,
                    sharing="space",
                    accumulation=acc,
                )
            )
        return Decision(tuple(out))
