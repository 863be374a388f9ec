"""A lower bound on the mean weighted JCT of any schedule of jobs known in advance, and the exact optimum of tiny batches.

``mean_jct_lower_bound`` solves an interval-indexed configuration LP (docs/bound.md): time is cut
into geometric intervals (and at every release date); x_{i,c,l} is the time job i spends in
configuration c during interval l; the pooled capacity bounds the resource-time of each
interval; every job does exactly its work; and its completion time is at least its mean busy
time, bounded below by the interval starts, plus half its shortest duration. Every schedule
that gives a running job one (workers, PS) configuration at a time with its own demand vectors,
whatever its mode (non-elastic, elastic, preemptive) and restart cost, maps to a feasible point
of no larger value, so the LP optimum bounds them all.

``optimal_batch_mean_jct`` is the exact optimum of a tiny batch (every job released at the same
time) over all such schedules with free reconfiguration: per completion order, an LP over the
time spent in each joint allocation between consecutive completions.
"""

from __future__ import annotations

import itertools
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from smdlab.errors import InvalidInput, check_positive
from smdlab.model.cluster import Cluster
from smdlab.model.job import Job
from smdlab.solve.backends import Backend, solve_lp
from smdlab.solve.instance import build_instance, check_cluster, check_jobs, pareto_mask

BOUND_MAX_JOBS = 400  # above this the LP (jobs x configurations x intervals) is not worth its time
EXACT_MAX_JOBS = 5


@dataclass(frozen=True)
class ScheduleBound:
    """A lower bound on sum_i omega_i (C_i - a_i) / sum_i omega_i over every schedule.

    value: the bound on the mean weighted JCT (s); with unit weights, on the mean JCT.
    intervals: finite intervals of the time grid (plus one unbounded tail).
    variables, constraints: size of the LP.
    backend: the solver (highs or gurobi); note: fallback or size remarks.
    wall_time_s: seconds spent.
    """

    value: float
    intervals: int
    variables: int
    constraints: int
    backend: str
    note: str
    wall_time_s: float


def _configurations(inst):
    """Per job: (workers, ps, speed, use) of the configurations that fit the cluster and that the LP needs.

    Dropped: a configuration a smaller one is at least as fast as, and one that a faster
    configuration run part of the time (idle the rest) replaces with no more of any resource.
    """
    neg = np.where(inst.fits_alone, -inst.speed, np.inf)
    keep = pareto_mask(neg)
    out = []
    for i in range(inst.n):
        wi, pi = np.nonzero(keep[i])
        w, p = wi + 1, pi + 1
        s = inst.speed[i, wi, pi]
        use = np.outer(w, inst.alpha[i]) + np.outer(p, inst.gamma[i])
        # c is redundant when a faster c' run a fraction theta = S(c) / S(c') of the time does
        # the same work with no more of any resource (the rest of the time idle)
        theta = s[:, None] / s[None, :]  # (c, c')
        scaled = theta[:, :, None] * use[None, :, :]
        dom = (theta < 1) & np.all(scaled <= use[:, None, :] * (1 + 1e-12), axis=2)
        k = ~dom.any(axis=1)
        out.append((w[k], p[k], s[k], use[k]))
    return out


def _grid(release: np.ndarray, dmin: np.ndarray, serial: float, ratio: float) -> np.ndarray:
    """Interval boundaries: geometric from the first release, plus every release date."""
    t0 = float(release.min())
    first = max(float(dmin.min()) / 4.0, 1e-6)
    span = float(release.max() - t0) + serial
    k = math.ceil(math.log(max(span / first, 1.0)) / math.log(ratio)) + 1
    pts = t0 + first * ratio ** np.arange(k + 1)
    pts = np.concatenate([[t0], pts, release])
    pts = np.unique(np.round(pts, 9))
    return pts


def mean_jct_lower_bound(
    jobs: Sequence[Job],
    cluster: Cluster,
    *,
    mode: str = "wfbp",
    weights: Sequence[float] | None = None,
    ratio: float = 1.1,
    backend: Backend = "auto",
    time_limit: float | None = None,
) -> ScheduleBound:
    """Lower bound on the mean weighted JCT of every schedule of ``jobs`` (arrivals known) on ``cluster``.

    weights: per job (default: the jobs' weights); ``[1] * n`` bounds the plain mean JCT.
    ratio: growth factor of the geometric time intervals (> 1; smaller is tighter and larger).
    """
    t0 = time.perf_counter()
    jobs = check_jobs(jobs)
    check_cluster(cluster)
    check_positive("ratio", ratio)
    if not ratio > 1:
        raise InvalidInput(f"ratio must be > 1 (growth of the time intervals), got {ratio!r}")
    n = len(jobs)
    if n > BOUND_MAX_JOBS:
        raise InvalidInput(f"mean_jct_lower_bound takes at most {BOUND_MAX_JOBS} jobs, got {n}")
    omega = np.array([j.weight for j in jobs] if weights is None else weights, dtype=float)
    if omega.shape != (n,) or np.any(~np.isfinite(omega)) or np.any(omega <= 0):
        raise InvalidInput(f"weights must be {n} finite numbers > 0, got {weights!r:.80}")
    cap = np.asarray(cluster.capacity_vector, dtype=float)
    inst = build_instance(jobs, cluster, cap, mode)
    if not np.all(inst.fits_alone[:, 0, 0]):
        bad = int(np.argmin(inst.fits_alone[:, 0, 0]))
        raise InvalidInput(
            f"job {jobs[bad].name!r} does not fit the cluster even at (1 worker, 1 PS): no schedule runs it"
        )
    confs = _configurations(inst)
    release = np.array([j.arrival for j in jobs], dtype=float)
    work = inst.samples
    dmin = np.array([work[i] / c[2].max() for i, c in enumerate(confs)])
    serial = float(inst.base_duration.sum())
    tau = _grid(release, dmin, serial, ratio)
    L = len(tau) - 1  # finite intervals (tau[l], tau[l+1]]; interval L is the tail (tau[L], inf)
    length = np.diff(tau)
    K = len(cap)
    # columns: (job, configuration, interval) for intervals the job is released in, then C_i
    cj, cc, cl = [], [], []
    for i, (_, _, s, _) in enumerate(confs):
        first = int(np.searchsorted(tau, release[i], side="right")) - 1  # interval holding r_i
        ls = np.arange(max(first, 0), L + 1)
        m = len(s)
        cj.append(np.full(m * len(ls), i))
        cc.append(np.tile(np.arange(m), len(ls)))
        cl.append(np.repeat(ls, m))
    jj, kk, ll = np.concatenate(cj), np.concatenate(cc), np.concatenate(cl)
    nx = len(jj)
    speed = np.array([confs[i][2][k] for i, k in zip(jj.tolist(), kk.tolist())])
    use = np.array([confs[i][3][k] for i, k in zip(jj.tolist(), kk.tolist())]).reshape(nx, K)
    start = tau[np.minimum(ll, L)]  # work in interval l is done after tau[l]
    rows, cols, vals, ub = [], [], [], []
    r = 0
    # a job runs in one configuration at a time: time in interval l <= the part after its release
    fin = ll < L
    key = jj[fin] * (L + 1) + ll[fin]
    uniq, inv = np.unique(key, return_inverse=True)
    rows.append(r + inv)
    cols.append(np.flatnonzero(fin))
    vals.append(np.ones(int(fin.sum())))
    ui, ul = uniq // (L + 1), uniq % (L + 1)
    ub.append(tau[ul + 1] - np.maximum(tau[ul], release[ui]))
    r += len(uniq)
    # pooled capacity: resource-time per interval
    for k in range(K):
        rows.append(r + ll[fin])
        cols.append(np.flatnonzero(fin))
        vals.append(use[fin, k])
        ub.append(cap[k] * length)
        r += L
    # completion: sum_l (work in l / W_i) tau_l - C_i <= -d_i / 2
    rows.append(r + jj)
    cols.append(np.arange(nx))
    vals.append(speed * start / work[jj])
    rows.append(r + np.arange(n))
    cols.append(nx + np.arange(n))
    vals.append(-np.ones(n))
    ub.append(-dmin / 2.0)
    r += n
    n_ub = r
    a_ub = sp.csr_matrix(
        (np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))), shape=(n_ub, nx + n)
    )
    a_eq = sp.csr_matrix((speed, (jj, np.arange(nx))), shape=(n, nx + n))  # the work, exactly
    cost = np.concatenate([np.zeros(nx), omega / omega.sum()])
    lo = np.concatenate([np.zeros(nx), release + dmin])
    res = solve_lp(
        cost, a_ub, np.concatenate(ub), a_eq, work, lo, backend=backend, time_limit=time_limit,
        primal=True,
    )  # fmt: skip
    value = res.objective - float(omega @ release) / omega.sum()
    return ScheduleBound(
        value=value,
        intervals=L,
        variables=nx + n,
        constraints=n_ub + n,
        backend=res.backend,
        note=res.note,
        wall_time_s=time.perf_counter() - t0,
    )


def optimal_batch_mean_jct(
    jobs: Sequence[Job],
    cluster: Cluster,
    *,
    mode: str = "wfbp",
    weights: Sequence[float] | None = None,
) -> tuple[float, tuple[str, ...]]:
    """(optimal mean weighted JCT, completion order) of a tiny batch over every schedule with free reconfiguration.

    Every job must arrive at the same time. For each completion order, an LP chooses how long
    each joint allocation (a configuration or nothing per unfinished job, fitting the pooled
    capacity) runs between consecutive completions; the best order is the optimum over all
    preemptive, elastic and non-elastic schedules without restart cost (the pooled capacity
    relaxes placement on machines, so it is at most what any policy achieves on the cluster).
    """
    from scipy.optimize import linprog

    jobs = check_jobs(jobs)
    check_cluster(cluster)
    n = len(jobs)
    if n > EXACT_MAX_JOBS:
        raise InvalidInput(f"optimal_batch_mean_jct takes at most {EXACT_MAX_JOBS} jobs, got {n}")
    release = {j.arrival for j in jobs}
    if len(release) != 1:
        raise InvalidInput("optimal_batch_mean_jct needs a batch: every job with the same arrival")
    omega = np.array([j.weight for j in jobs] if weights is None else weights, dtype=float)
    cap = np.asarray(cluster.capacity_vector, dtype=float)
    inst = build_instance(jobs, cluster, cap, mode)
    confs = _configurations(inst)
    tol = 1e-9 * np.maximum(1.0, cap)
    joint: dict[frozenset[int], tuple[np.ndarray, ...]] = {}

    def allocations(active: frozenset[int]) -> np.ndarray:
        """(A, n) speeds of every joint allocation of ``active`` that fits (idle allowed)."""
        if active not in joint:
            act = sorted(active)
            opts = [range(-1, len(confs[i][2])) for i in act]
            rows = []
            for combo in itertools.product(*opts):
                u = np.zeros(len(cap))
                s = np.zeros(n)
                for i, k in zip(act, combo):
                    if k >= 0:
                        u += confs[i][3][k]
                        s[i] = confs[i][2][k]
                if np.all(u <= cap + tol) and s.any():
                    rows.append(s)
            joint[active] = (np.array(rows),)
        return joint[active][0]

    best = math.inf
    best_order: tuple[str, ...] = ()
    for order in itertools.permutations(range(n)):
        blocks = [allocations(frozenset(order[k:])) for k in range(n)]
        sizes = [len(b) for b in blocks]
        offs = np.concatenate([[0], np.cumsum(sizes)])
        tail_weight = np.array([omega[list(order[k:])].sum() for k in range(n)])
        c = np.concatenate([np.full(sizes[k], tail_weight[k]) for k in range(n)])
        a_eq = np.zeros((n, offs[-1]))
        for m, i in enumerate(order):  # job i completes at the end of phase m
            for k in range(m + 1):
                a_eq[m, offs[k] : offs[k + 1]] = blocks[k][:, i]
        b_eq = np.array([inst.samples[i] for i in order])
        # later jobs may not finish before their phase: their work by phase m stays <= W
        a_ub = np.zeros((n, offs[-1]))
        for m, i in enumerate(order):
            for k in range(m):
                a_ub[m, offs[k] : offs[k + 1]] = blocks[k][:, i]
        res = linprog(c, A_ub=a_ub, b_ub=b_eq, A_eq=a_eq, b_eq=b_eq, method="highs")
        if res.status == 0 and res.fun < best:
            best, best_order = float(res.fun), tuple(jobs[i].name for i in order)
    return best / omega.sum(), best_order
