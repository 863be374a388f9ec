"""Tetris: multi-resource packing by alignment score, a remaining-work preference and a fairness knob (docs/baselines.md)."""

from __future__ import annotations

import math

import numpy as np

from smdlab.errors import FORMER_VARIANT, InvalidInput, check_positive, reject_former
from smdlab.policies.base import Allocation, ClusterState, Decision, Policy
from smdlab.policies.toolkit import inverse_capacity, queued_jobs, running_by_arrival
from smdlab.solve.instance import base_speeds, demand_kinds, demand_matrices
from smdlab.solve.ledger import Ledger
from smdlab.solve.placement import TOL, capacity_matrix, rack_preference


def _in_racks(free, inv, near, a, g, mw: int, mp: int) -> tuple[int, int]:
    """A worker+PS of best alignment within the job's racks (``near``) if both fit there, else (mw, mp)."""
    fit_w = near & np.all(free + TOL >= a, axis=1)
    if not fit_w.any():
        return mw, mp
    score = np.where(fit_w, (free * inv * inv) @ a, -np.inf)
    w = int(np.argmax(score))
    left = free.copy()
    left[w] -= a
    fit_p = near & np.all(left + TOL >= g, axis=1)
    if not fit_p.any():
        return mw, mp
    return w, int(np.argmax(np.where(fit_p, (left * inv * inv) @ g, -np.inf)))


def _second_task(free, inv, urows, m1_u, D1, D2, a2, fit2):
    """Alignment and fit of a second task (demands ``D2`` per kind) once the first (``D1``) sits on ``m1_u``; and its best machine."""
    a2 = a2.copy()
    fit2 = fit2.copy()
    left = free[m1_u] - D1  # kinds x K: machine m1 after the first task
    fit2[urows, m1_u] = np.all(left + TOL >= D2, axis=1)
    a2[urows, m1_u] = np.einsum("jk,jk->j", left * inv[m1_u] ** 2, D2)
    a2 = np.where(fit2, a2, -np.inf)
    return a2, fit2, np.argmax(a2, axis=1)


class Tetris(Policy):
    """Tetris (Grandl et al., SIGCOMM 2014) for parameter-server jobs.

    Every rule, whether it follows the paper, and why: docs/baselines.md (section Tetris).

    The paper's section 3:
    - Alignment of a task on machine m is dot(free_m / cap_m, demand / cap_m): both vectors
      normalised by that machine's capacity (resources a machine lacks count 0). A bundle is one
      worker and one PS (a worker alone once the job has ``max_ps`` PSs); its worker goes to the
      machine of best alignment among those it fits, its PS then likewise (on the capacity left
      after the worker), and the bundle's alignment is the sum of the two tasks' alignments. If the
      PS then fits nowhere, the PS goes first (best alignment) and the worker second.
    - Racked cluster (our addition, ``smdlab.solve.placement.rack_preference``): a job's next
      bundle goes to the machines of best alignment within the racks it already uses when it
      fits there.
    - Remaining work (section 3.3): a job's remaining duration times its resources, here the
      remaining samples / speed at (1, 1) under the exact model times the bundle's demand summed
      over resources as fractions of the cluster's capacity. Less remaining work is preferred:
      score = alignment - eps * remaining work, eps = ``weight`` * mean(alignment) / mean(remaining
      work) over the candidates of this step (the paper's scaling; weight 1).
    - Fairness knob f (section 3.4, ``fairness``): only the ceil((1 - f) * n) of the n candidate
      jobs furthest below their fair share (smallest dominant share of the pooled capacity, ties
      by arrival) compete in each step; f = 0 is pure packing, f -> 1 hands the next bundle to the
      job of smallest share. Default 0.25 (our reading of the value the paper recommends).
    - Execution: natural mode ``non_elastic``: Tetris packs tasks when they start and never
      resizes them (in the paper, tasks are packed onto a machine when they start and run there to
      completion); the elastic mode (growing running jobs) is a controlled-comparison option.
    - Ties go to the earlier arrival. A job whose bundle fits nowhere is skipped for the rest of
      the decision. Non-elastic: only queued jobs receive bundles. Elastic: running jobs may also
      grow (never shrink), so Tetris never preempts.
    """

    name = "tetris"
    execution = "non_elastic"
    executions = ("non_elastic", "elastic")
    DEFAULT_FAIRNESS = 0.25

    def __init__(self, weight: float = 1.0, fairness: float | None = None, variant: None = None):
        if variant is not None:  # a former option: one line naming what replaces it
            reject_former("Tetris", {"variant": variant}, FORMER_VARIANT)
        self.weight = check_positive("weight", weight, allow_zero=True)
        f = (
            self.DEFAULT_FAIRNESS
            if fairness is None
            else check_positive("fairness", fairness, allow_zero=True)
        )
        if not f < 1:
            raise InvalidInput(f"fairness must be in [0, 1), got {fairness!r}")
        self.fairness = f

    def decide(self, state: ClusterState) -> Decision:
        """Bundles to the (job, machines) of best blended score, until none fits."""
        cluster = state.cluster
        ledger = Ledger(state.free)
        cap = capacity_matrix(cluster)
        inv = inverse_capacity(cap)
        queued = queued_jobs(state)
        jobs = [q.job for q in queued]
        remaining = [q.remaining for q in queued]
        ws, ps = [0] * len(jobs), [0] * len(jobs)
        if state.execution == "elastic":
            for r in running_by_arrival(state):
                ledger.preload(r.job.name, r.placement.tasks)
                jobs.append(r.job)
                ws.append(r.workers)
                ps.append(r.ps)
                remaining.append(r.remaining)
        if not jobs:
            return Decision()
        start = list(zip(ws, ps))
        alpha, gamma = demand_matrices(jobs, cluster)
        # Everything per machine depends on a job only through its demands: compute it once per
        # demand kind (traces have a handful) and look it up per job.
        kind = demand_kinds(alpha, gamma)
        _, first_of = np.unique(kind, return_index=True)  # a job of each kind 0..U-1
        A, G = alpha[first_of], gamma[first_of]
        urows = np.arange(first_of.size)
        work = np.asarray(remaining, dtype=float) / base_speeds(jobs, state.mode)
        pooled = cluster.capacity_vector.astype(float)
        pinv = np.where(pooled > 0, 1.0 / np.where(pooled > 0, pooled, 1.0), 0.0)
        work = work * ((alpha + gamma) * pinv).sum(axis=1)  # duration x resources (the paper's)
        arrival_rank = np.argsort(
            np.argsort([j.arrival for j in jobs], kind="stable"), kind="stable"
        )
        w_arr = np.array(ws, dtype=int)
        p_arr = np.array(ps, dtype=int)
        max_w = np.array([j.max_workers for j in jobs], dtype=int)
        max_p = np.array([j.ps_slots for j in jobs], dtype=int)
        active = w_arr < max_w
        while active.any():
            free = ledger.free
            free_n = free * inv
            # worker alignment and fit, kinds x machines
            a_w = A @ (free_n * inv).T
            fit_w = np.all(free[None] + TOL >= A[:, None], axis=2)
            a_w = np.where(fit_w, a_w, -np.inf)
            mw_u = np.argmax(a_w, axis=1)
            # PS alignment on the capacity left once the worker sits on mw
            a_p0 = G @ (free_n * inv).T
            fit_p0 = np.all(free[None] + TOL >= G[:, None], axis=2)
            a_p, fit_p, mp_u = _second_task(free, inv, urows, mw_u, A, G, a_p0, fit_p0)
            pair_ok = fit_w[urows, mw_u] & fit_p[urows, mp_u]
            pair_align = a_w[urows, mw_u] + a_p[urows, mp_u]
            if not pair_ok.all():
                # The PS first where the worker-first pair fails: for one worker and one PS, one of
                # the two orders places them whenever they fit at all.
                a_p0m = np.where(fit_p0, a_p0, -np.inf)
                mp2_u = np.argmax(a_p0m, axis=1)
                a_w2, fit_w2, mw2_u = _second_task(free, inv, urows, mp2_u, G, A, a_w, fit_w)
                ok2 = ~pair_ok & fit_p0[urows, mp2_u] & fit_w2[urows, mw2_u]
                mw_pair = np.where(ok2, mw2_u, mw_u)
                mp_u = np.where(ok2, mp2_u, mp_u)
                pair_align = np.where(ok2, a_w2[urows, mw2_u] + a_p0[urows, mp2_u], pair_align)
                pair_ok |= ok2
            else:
                mw_pair = mw_u
            need_ps = p_arr < max_p
            mw = np.where(need_ps, mw_pair[kind], mw_u[kind])
            mp = mp_u[kind]
            ok = active & np.where(need_ps, pair_ok[kind], fit_w[urows, mw_u][kind])
            active &= ok  # a bundle that fits nowhere now fits nowhere later in this decision
            if not ok.any():
                break
            align = np.where(need_ps, pair_align[kind], a_w[urows, mw_u][kind])
            cand = ok
            if self.fairness > 0:
                # the ceil((1 - f) n) candidates of smallest dominant share compete
                share = ((w_arr[:, None] * alpha + p_arr[:, None] * gamma) * pinv).max(axis=1)
                idx = np.flatnonzero(ok)
                keep = math.ceil((1 - self.fairness) * idx.size - 1e-9)
                order = np.lexsort((arrival_rank[idx], share[idx]))
                cand = np.zeros_like(ok)
                cand[idx[order[:keep]]] = True
            mean_work = work[cand].mean()
            eps = self.weight * align[cand].mean() / mean_work if mean_work > 0 else 0.0
            score = np.where(cand, align - eps * work, -np.inf)
            best = score.max()
            tied = np.flatnonzero(score >= best - 1e-12 * max(1.0, abs(best)))
            i = int(tied[np.argmin(arrival_rank[tied])])
            name = jobs[i].name
            near = rack_preference(free.shape[0], (m for m, _, _ in ledger.tasks(name)))
            if near is not None and not (near[mw[i]] and (not need_ps[i] or near[mp[i]])):
                mw[i], mp[i] = _in_racks(free, inv, near, alpha[i], gamma[i], mw[i], mp[i])
            ledger.put_task(name, "worker", int(mw[i]), alpha[i])
            w_arr[i] += 1
            if need_ps[i]:
                ledger.put_task(name, "ps", int(mp[i]), gamma[i])
                p_arr[i] += 1
            if w_arr[i] >= max_w[i]:
                active[i] = False
        ws, ps = w_arr.tolist(), p_arr.tolist()
        allocations = tuple(
            Allocation(j.name, w, p, ledger.placement(j.name))
            for j, w, p, s in zip(jobs, ws, ps, start)
            if w > 0 and (w, p) != s
        )
        return Decision(allocations)
