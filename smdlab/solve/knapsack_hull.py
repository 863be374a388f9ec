"""Convex-hull greedy for the multiple-choice knapsack with profits lambda_i * V_i(c) (SMD's fast subproblem).

Each job's configurations are reduced to its upper concave hull of (size, value); the segments
of all jobs are taken in decreasing order of lambda_i * slope while they fit (``HullKnapsack``).
"""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np

from smdlab.caches import HULL_CHAINS, HULL_SEGMENTS


def _first_over(cum: np.ndarray, cap: np.ndarray) -> int:
    """First column where any resource row of ``cum`` (K x m) exceeds ``cap`` (K x 1); m if none."""
    if not cum.shape[1]:
        return 0
    over = np.any(cum > cap, axis=0)
    k = int(over.argmax())
    return k if bool(over.flat[k]) else cum.shape[1]


def _hull_segments(value, mask, alpha, gamma, scale, guess=None):
    """Upper-hull segments (job, from, to flat index, slope) of every job, job-major in hull order.

    guess: per row, None or the flat indices believed to be its hull's vertices after (1, 1)
    (the row's hull in an earlier call): every guessed vertex is checked at once, and a row
    continues vertex by vertex from its first wrong guess, so a guess changes no result.
    """
    n, W, P = value.shape
    wg = np.repeat(np.arange(1, W + 1), P)
    pg = np.tile(np.arange(1, P + 1), W)
    keep = mask.reshape(n, W * P).copy()
    keep[:, 0] = True  # (1, 1) is every job's start vertex
    # gather each job's kept configurations into a narrow padded table (flat index 0 first)
    counts = keep.sum(axis=1)
    width = int(counts.max())
    jr, fc = np.nonzero(keep)  # row-major: each job's kept flat indices, ascending
    pos = np.arange(len(jr)) - np.repeat(np.cumsum(counts) - counts, counts)
    cols = np.zeros((n, width), dtype=int)
    cols[jr, pos] = fc
    keep = np.zeros((n, width), dtype=bool)
    keep[jr, pos] = True
    V = value.reshape(n, W * P)[np.arange(n)[:, None], cols]
    wk, pk = wg[cols], pg[cols]
    size = (alpha / scale).sum(axis=1)[:, None] * wk + (gamma / scale).sum(axis=1)[:, None] * pk
    keep &= np.isfinite(V)
    r = np.arange(n)
    guess = [None] * n if guess is None else guess
    # guessed vertices as positions in ``cols`` (column 0: (1, 1); -1: none, or not kept now)
    G = np.full((n, 1 + max((len(g) for g in guess if g is not None), default=0)), -1)
    G[:, 0] = 0
    if G.shape[1] > 1:
        at = np.full((n, W * P), -1)
        at[jr, fc] = pos
        for i, g in enumerate(guess):
            if g is not None and len(g):
                G[i, 1 : len(g) + 1] = at[i, g]
    parts = []  # (job, round, from position, to position, slope) of the segments found
    with np.errstate(divide="ignore", invalid="ignore"):
        # every guessed vertex at once: the same element-wise steps as the gift wrap below
        c = np.maximum(G, 0)
        rc = r[:, None]
        ds = size[:, None, :] - size[rc, c][:, :, None]
        dv = V[:, None, :] - V[rc, c][:, :, None]
        ok = keep[:, None, :] & (ds > 1e-12)
        ok &= (wk[:, None, :] >= wk[rc, c][:, :, None]) & (pk[:, None, :] >= pk[rc, c][:, :, None])
        slope = np.where(ok, dv / np.where(ok, ds, 1.0), -np.inf)
        best = slope.max(axis=2)
        tie = (slope >= best[:, :, None] * (1 - 1e-12)) & ok
        nxt = np.where(tie, size[:, None, :], -np.inf).argmax(axis=2)
        good = best > 0
        guessed_next = np.full(G.shape, -1)
        guessed_next[:, :-1] = G[:, 1:]
        # a row's hull follows its guess up to the first vertex whose next is not the guessed one
        last = (~good | (guessed_next != nxt)).argmax(axis=1)
        k = np.arange(G.shape[1])
        take = good & (k[None, :] <= last[:, None])
        jt, kt = take.nonzero()
        parts.append((jt, kt, c[jt, kt], nxt[jt, kt], best[jt, kt]))
        # the rest by gift wrapping, vertex by vertex: next vertex = steepest point to the right.
        # Rows whose hull ended stay in the arrays (masked out): gathering the active rows every
        # round cost more than the arithmetic on a few dozen rows of ~20 points.
        alive = good[r, last]  # rows whose hull may continue
        cur = nxt[r, last]
        step = last + 1
        while alive.any():
            ds = size - size[r, cur][:, None]
            dv = V - V[r, cur][:, None]
            # only configurations that add tasks (w' >= w, p' >= p): every upgrade then uses
            # more of every resource, so a segment that does not fit now never fits later
            ok = keep & (wk >= wk[r, cur][:, None]) & (pk >= pk[r, cur][:, None]) & (ds > 1e-12)
            slope = np.where(ok, dv / np.where(ok, ds, 1.0), -np.inf)
            best1 = slope.max(axis=1)
            alive &= best1 > 0
            idx = alive.nonzero()[0]
            if not idx.size:
                break
            # among the steepest, the farthest point (skips collinear vertices)
            tie = (slope >= best1[:, None] * (1 - 1e-12)) & ok
            nx = np.where(tie, size, -np.inf).argmax(axis=1)[idx]
            parts.append((idx, step[idx], cur[idx], nx, best1[idx]))
            cur[idx] = nx
            step[idx] += 1
    job, rnd, fr, to, sl = (np.concatenate(x) for x in zip(*parts))
    # return them job-major, in hull order
    order = np.lexsort((rnd, job))
    job = job[order]
    return job, cols[job, fr[order]], cols[job, to[order]], sl[order]


class HullKnapsack:
    """Convex-hull greedy for the knapsack with profits lambda_i * V_i(c) (maximised), V fixed.

    Each job's kept configurations are reduced to one scalar size, sum_r use_r / scale_r; the
    upper concave hull of (size, V) from (1, 1) gives the job's efficient upgrades (a jump from
    one hull vertex to the next, possibly several tasks at once). For given lambda the segments
    of all jobs are taken in decreasing order of lambda_i * slope while they fit the capacity in
    every resource; a segment that does not fit ends that job's upgrades (classical aggregate-
    resource greedy for multiple-choice knapsacks, Sinha-Zoltners/Toyoda style). With one
    resource this is the rounded-down optimum of the LP relaxation. The hulls depend only on V,
    so repeated solves with new lambda (SMD's iterations) reuse them.
    """

    def __init__(
        self,
        value: np.ndarray,
        mask: np.ndarray,
        alpha: np.ndarray,
        gamma: np.ndarray,
        capacity: np.ndarray,
        segments: tuple | None = None,
    ):
        n, W, P = value.shape
        self.n, self.W, self.P = n, W, P
        self.capacity = np.asarray(capacity, dtype=float)
        self.alpha, self.gamma = alpha, gamma
        if segments is None:
            segments = _hull_segments(
                value, mask, alpha, gamma, np.where(self.capacity > 0, self.capacity, 1.0)
            )
        self.seg_job, self.seg_from, self.seg_to, self.seg_slope = segments
        wg = np.repeat(np.arange(1, W + 1), P)
        pg = np.tile(np.arange(1, P + 1), W)
        wt, pt = wg[self.seg_to], pg[self.seg_to]
        wf, pf = wg[self.seg_from], pg[self.seg_from]
        self.seg_w, self.seg_p = wt, pt
        self.seg_duse = (
            alpha[self.seg_job] * (wt - wf)[:, None] + gamma[self.seg_job] * (pt - pf)[:, None]
        )
        self.seg_duse_t = np.ascontiguousarray(self.seg_duse.T)
        self.base = (alpha + gamma).sum(axis=0)
        self.tol = 1e-9 * np.maximum(1.0, np.abs(self.capacity))
        self._cap = (self.capacity + self.tol)[:, None]
        # position of each segment in its job's hull chain
        starts = np.searchsorted(self.seg_job, np.arange(n))
        self.seg_start = starts
        self.seg_rank = (
            np.arange(len(self.seg_job)) - starts[self.seg_job]
            if len(self.seg_job)
            else np.zeros(0, dtype=int)
        )
        # allocation per greedy order: lambda enters ``solve`` only through the order of the
        # segments, and SMD's iterations meet the same order again (a fifth of its solves)
        self._by_order: dict[bytes, tuple[np.ndarray, np.ndarray]] = {}

    @classmethod
    def several(cls, values, mask, alpha, gamma, capacity) -> list[HullKnapsack]:
        """One knapsack per value table (same mask and demands), hulls computed in one vectorised pass.

        A job's hull depends on its own rows alone, so each job row's segments are kept
        (``HULL_SEGMENTS``) and only rows not seen before are computed: SMD's decisions of a
        simulation and its two candidate selections share most of the jobs' speed tables. A row
        not seen before starts from the hull vertices of the same table position and demand
        rows in an earlier call (``HULL_CHAINS``), each checked.
        """
        k, n = len(values), values[0].shape[0]
        _, W, P = values[0].shape
        capacity = np.asarray(capacity, dtype=float)
        scale = np.where(capacity > 0, capacity, 1.0)
        tail = scale.tobytes()
        rows = [(W, P, m.tobytes(), a.tobytes(), g.tobytes(), tail) for m, a, g in zip(mask, alpha, gamma)]  # fmt: skip
        keys = [(values[j][i].tobytes(), *rows[i]) for j in range(k) for i in range(n)]
        found: list[Any] = [HULL_SEGMENTS.get(key) for key in keys]  # (from, to, slope) or None
        todo = [r for r, f in enumerate(found) if f is None]
        if todo:
            tj, ti = np.divmod(np.array(todo), n)
            # the same job's hull in an earlier call (its remaining work moves the values by a
            # few ulps between SMD's decisions): checked vertex by vertex, so only a time saver
            hints = [(j, *rows[i]) for j, i in zip(tj.tolist(), ti.tolist())]
            job, fr, to, slope = _hull_segments(
                np.stack([values[j][i] for j, i in zip(tj.tolist(), ti.tolist())]),
                mask[ti], alpha[ti], gamma[ti], scale, [HULL_CHAINS.get(h) for h in hints],
            )  # fmt: skip
            ends = np.searchsorted(job, np.arange(len(todo) + 1)).tolist()
            for r, (lo, hi) in enumerate(itertools.pairwise(ends)):
                seg = (fr[lo:hi].copy(), to[lo:hi].copy(), slope[lo:hi].copy())
                found[todo[r]] = HULL_SEGMENTS.put(keys[todo[r]], seg)
                HULL_CHAINS.put(hints[r], seg[1])
        out = []
        for j in range(k):
            part = found[j * n : (j + 1) * n]
            counts = [len(f[0]) for f in part]
            segments = (
                np.repeat(np.arange(n), counts),
                np.concatenate([f[0] for f in part]),
                np.concatenate([f[1] for f in part]),
                np.concatenate([f[2] for f in part]),
            )
            out.append(cls(values[j], mask, alpha, gamma, capacity, segments))
        return out

    def _apply(self, taken: np.ndarray, w: np.ndarray, p: np.ndarray) -> None:
        """Move each job with taken segments to the end vertex of its furthest one."""
        if not taken.size:
            return
        # segments are job-major in hull order: a job's furthest is its last taken index
        s = np.sort(taken)
        j = self.seg_job[s]
        last = np.empty(s.size, dtype=bool)
        np.not_equal(j[1:], j[:-1], out=last[:-1])
        last[-1] = True
        s, j = s[last], j[last]
        w[j] = self.seg_w[s]
        p[j] = self.seg_p[s]

    def solve(self, lam: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(workers, ps) for profits lambda_i * V_i (lambda > 0)."""
        if not len(self.seg_job):
            return np.ones(self.n, dtype=int), np.ones(self.n, dtype=int)
        eff = np.asarray(lam, dtype=float)[self.seg_job] * self.seg_slope
        order = np.argsort(-eff, kind="stable")
        key = order.tobytes()
        seen = self._by_order.get(key)
        if seen is None:
            seen = self._by_order[key] = self._greedy(order)
        return seen[0].copy(), seen[1].copy()

    def _greedy(self, order: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(workers, ps): the segments taken in ``order`` while they fit (a job's first misfit closes it)."""
        w = np.ones(self.n, dtype=int)
        p = np.ones(self.n, dtype=int)
        cap = self._cap
        # resources x segments, so cumulative sums run along contiguous rows
        cum = self.base[:, None] + np.cumsum(self.seg_duse_t[:, order], axis=1)
        first = _first_over(cum, cap)
        self._apply(order[:first], w, p)
        if first < len(order):
            # The rest, with the sequential rule (take a segment if it fits, else close its job) done
            # in vectorised rounds. Upgrades only add resources, so a segment that does not fit the
            # current slack will not fit when its turn comes: it closes its job at once.
            used = cum[:, first - 1 : first] if first > 0 else self.base[:, None].copy()
            rest = order[first:]
            rank = self.seg_rank
            while rest.size:
                d = self.seg_duse_t[:, rest]
                fail = (d > cap - used).any(axis=0)
                if fail.any():
                    # close each failing job from its first failing segment (in hull order)
                    # onwards: job-major segments, so a job's first is its least failing index
                    s = np.sort(rest[fail])
                    j = self.seg_job[s]
                    head = np.empty(s.size, dtype=bool)
                    head[0] = True
                    np.not_equal(j[1:], j[:-1], out=head[1:])
                    cut = np.full(self.n, np.iinfo(np.int64).max)
                    cut[j[head]] = rank[s[head]]
                    alive = rank[rest] < cut[self.seg_job[rest]]
                    rest, d = rest[alive], d[:, alive]
                    if not rest.size:
                        break
                cum = used + np.cumsum(d, axis=1)
                stop = _first_over(cum, cap)
                self._apply(rest[:stop], w, p)
                if stop == len(rest):
                    break
                used = cum[:, stop - 1 : stop] if stop > 0 else used
                j = self.seg_job[rest[stop]]
                later = rest[stop:]
                rest = later[(self.seg_job[later] != j)]
        return w, p
