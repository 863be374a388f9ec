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
from smdlab.model.colocation import (
    accumulation_efficiency,
    default_colocation_model,
    gavel_job_type,
    pair_tables,
)
from smdlab.model.job import Job
from smdlab.policies.base import Allocation, ClusterState, Decision, Policy
from smdlab.policies.ps.srtf import request
from smdlab.policies.sharing._groups import (
    Share,
    can_share,
    factors,
    place_alone,
    running_shares,
    sjf_order,
    solo_speed,
    start_alone,
    try_join,
)
from smdlab.solve.instance import job_speeds


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
        self._meta: dict[str, tuple[int, float]] = {}
        self._arrays: tuple | None = None
        self._joined = False
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
                start_alone(q, alone, "bsbf", free, state, shares, out)
                continue
            if k == 1 or not shares:
                continue
            best = self._pair_options(job, q.remaining, shares, k, wait, mode)
            best += self._group_options(job, q.remaining, shares, k, wait, mode)
            best.sort(key=lambda o: -o[0])
            for _, s, acc in best[:8]:  # the best few: a join may lack CPU or memory room
                if not try_join(s, job, free, state):
                    continue
                s.jobs.append(job)
                self._joined = True
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
                break
        return Decision(tuple(out))

    def _pair_options(
        self, job: Job, rem: float, shares: list[Share], k: int, wait: float, mode: str
    ) -> list[tuple[float, Share, int]]:
        """Options with a partner running alone, vectorised over those partners: the best
        accumulation per partner, with a positive gain."""
        if k < 2:
            return []
        m = default_colocation_model()
        table, fits = pair_tables()
        cache = self._arrays
        if cache is None or cache[0] != len(shares):  # rebuilt when a share was added
            single = [s for s in shares if len(s.jobs) == 1]
            for s in single:
                if s.label not in self._meta:
                    x = s.jobs[0]
                    self._meta[s.label] = (
                        m.jobs.index(gavel_job_type(x)),
                        solo_speed(x, s.workers, s.ps, mode),
                    )
            cache = self._arrays = (
                len(shares),
                single,
                np.array([self._meta[s.label][0] for s in single], dtype=int),
                np.array([self._meta[s.label][1] for s in single]),
                np.array([s.remaining[0] for s in single]),
                np.array([s.workers for s in single], dtype=int),
                np.array([s.ps for s in single], dtype=int),
            )
        _, single, tk, ak, rk, ws, ps = cache
        if not single:
            return []
        still = np.array([len(s.jobs) == 1 for s in single]) if self._joined else True
        w, p = request(job)
        if job.gang or job.arch == "allreduce":
            ok = (ws == w) & (ps == p) & still
        else:
            ok = (ws == ps) & (ws <= w) & still
        idx = np.flatnonzero(ok)
        if not idx.size:
            return []
        single = [single[i] for i in idx]
        tk, ak, rk, ws, ps = tk[idx], ak[idx], rk[idx], ws[idx], ps[idx]
        vj = job_speeds(job, mode)[ws - 1, np.maximum(ps, 1) - 1]
        without = rk / ak + wait + rem / vj
        best_gain = np.full(len(single), -np.inf)
        best_acc = np.ones(len(single), dtype=int)
        for acc in self.accumulations:
            tj = m.jobs.index(gavel_job_type(job, acc))
            eff = accumulation_efficiency(job, acc) if acc > 1 else 1.0
            sj = vj * table[tj, tk] * eff
            sk = ak * table[tk, tj]
            t1 = np.minimum(rk / sk, rem / sj)
            shared = (
                2 * t1 + np.maximum(0.0, rk - sk * t1) / ak + np.maximum(0.0, rem - sj * t1) / vj
            )
            gain = np.where(fits[tj, tk], without - shared, -np.inf)
            better = gain > best_gain
            best_gain = np.where(better, gain, best_gain)
            best_acc = np.where(better, acc, best_acc)
        good = np.flatnonzero(best_gain > 0)
        return [(float(best_gain[i]), single[i], int(best_acc[i])) for i in good]

    def _group_options(
        self, job: Job, rem: float, shares: list[Share], k: int, wait: float, mode: str
    ) -> list[tuple[float, Share, int]]:
        """Options with groups of two or more (sharing degree above 2), one by one."""
        out: list[tuple[float, Share, int]] = []
        for s in shares:
            if len(s.jobs) < 2 or len(s.jobs) >= k or not can_share(s, job):
                continue
            w, p = s.workers, s.ps
            v_j = solo_speed(job, w, p, mode)
            alone_rates = [solo_speed(x, w, p, mode) for x in s.jobs]
            without = sum(r / v for r, v in zip(s.remaining, alone_rates, strict=True))
            without += wait + rem / v_j
            for acc in self.accumulations:
                f = factors([*s.jobs, job], [*s.accs, acc])
                if f is None:
                    continue
                rates = [v * x for v, x in zip([*alone_rates, v_j], f, strict=True)]
                gain = without - completion_sum([*s.remaining, rem], rates, [*alone_rates, v_j])
                if gain > 0:
                    out.append((gain, s, acc))
        return out
