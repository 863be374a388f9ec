"""SMD's small-instance shortcuts against the rules they replace (the same results on random instances)."""

from __future__ import annotations

import numpy as np
import pytest

from smdlab.solve.instance import pareto_mask
from smdlab.solve.knapsack_hull import HullKnapsack, _hull_segments
from smdlab.solve.local_search import _fill_room


def _hull_segments_compacting(value, mask, alpha, gamma, scale):
    """The previous rule: gift wrapping on the rows still active, gathered every round."""
    n, W, P = value.shape
    wg = np.repeat(np.arange(1, W + 1), P)
    pg = np.tile(np.arange(1, P + 1), W)
    keep = mask.reshape(n, W * P).copy()
    keep[:, 0] = True
    counts = keep.sum(axis=1)
    width = int(counts.max())
    jr, fc = np.nonzero(keep)
    pos = np.arange(len(jr)) - np.repeat(np.cumsum(counts) - counts, counts)
    cols = np.zeros((n, width), dtype=int)
    cols[jr, pos] = fc
    keep = np.zeros((n, width), dtype=bool)
    keep[jr, pos] = True
    V = value.reshape(n, W * P)[np.arange(n)[:, None], cols]
    wk, pk = wg[cols], pg[cols]
    size = (alpha / scale).sum(axis=1)[:, None] * wk + (gamma / scale).sum(axis=1)[:, None] * pk
    keep &= np.isfinite(V)
    cur = np.zeros(n, dtype=int)
    seg_job, seg_from, seg_to, seg_slope = [], [], [], []
    act = np.arange(n)
    while act.size:
        c = cur[act]
        sz, vv, kk = size[act], V[act], keep[act]
        r = np.arange(act.size)
        ds = sz - sz[r, c][:, None]
        dv = vv - vv[r, c][:, None]
        wa, pa = wk[act], pk[act]
        ok = kk & (wa >= wa[r, c][:, None]) & (pa >= pa[r, c][:, None]) & (ds > 1e-12)
        with np.errstate(divide="ignore", invalid="ignore"):
            slope = np.where(ok, dv / np.where(ok, ds, 1.0), -np.inf)
        best = slope.max(axis=1)
        good = best > 0
        if not good.any():
            break
        tie = (slope >= best[:, None] * (1 - 1e-12)) & ok
        nxt = np.where(tie, sz, -np.inf).argmax(axis=1)
        idx = act[good]
        seg_job.append(idx)
        seg_from.append(cols[idx, c[good]])
        seg_to.append(cols[idx, nxt[good]])
        seg_slope.append(best[good])
        cur[idx] = nxt[good]
        act = idx
    if not seg_job:
        empty = np.zeros(0, dtype=int)
        return empty, empty, empty, np.zeros(0)
    job = np.concatenate(seg_job)
    rnd = np.concatenate([np.full(len(s), k) for k, s in enumerate(seg_job)])
    order = np.lexsort((rnd, job))
    return (
        job[order],
        np.concatenate(seg_from)[order],
        np.concatenate(seg_to)[order],
        np.concatenate(seg_slope)[order],
    )


def _tables(rng: np.random.Generator, n: int, W: int, P: int, K: int):
    """Speeds growing with tasks (some missing, some ties), the ratio table and demands."""
    step = rng.choice([0.0, 0.5, 1.0, 2.0], size=(n, W, P))  # equal steps: collinear points
    speed = np.cumsum(step, axis=1).cumsum(axis=2) + 1.0
    speed[rng.random((n, W, P)) < 0.15] = -np.inf
    speed[:, 0, 0] = 1.0
    ratio = -rng.uniform(1.0, 5.0, n)[:, None, None] / np.where(speed > 0, speed, np.nan)
    ratio = np.where(np.isfinite(ratio), ratio, -np.inf)
    mask = pareto_mask(np.where(speed > 0, -speed, np.inf))
    alpha = rng.uniform(0.5, 3.0, (n, K))
    gamma = rng.uniform(0.0, 2.0, (n, K))
    return speed, ratio, mask, alpha, gamma


@pytest.mark.parametrize("seed", range(8))
def test_hull_segments_equal_the_compacting_gift_wrap(seed):
    rng = np.random.default_rng(seed)
    n, W, P, K = int(rng.integers(1, 30)), int(rng.integers(1, 9)), int(rng.integers(1, 9)), 4
    speed, ratio, mask, alpha, gamma = _tables(rng, n, W, P, K)
    scale = rng.uniform(10.0, 40.0, K)
    for table in (speed, ratio):
        want = _hull_segments_compacting(table, mask, alpha, gamma, scale)
        got = _hull_segments(table, mask, alpha, gamma, scale)
        for a, b in zip(want, got):
            assert a.dtype == b.dtype and np.array_equal(a, b)


@pytest.mark.parametrize("seed", range(6))
def test_hull_solve_by_order_equals_a_fresh_greedy(seed):
    # lambda enters the greedy only through the order of the segments: a repeated order (here
    # a scaled lambda, or the same one) returns the allocation a fresh knapsack computes
    rng = np.random.default_rng(seed)
    n, W, P, K = 12, 6, 5, 4
    speed, _, mask, alpha, gamma = _tables(rng, n, W, P, K)
    cap = (alpha + gamma).sum(axis=0) * rng.uniform(1.5, 4.0, K)
    kept = HullKnapsack(speed, mask, alpha, gamma, cap)
    lams = [rng.uniform(0.1, 10.0, n) for _ in range(6)]
    for lam in [*lams, *(2.0 * x for x in lams), *lams]:
        w, p = kept.solve(lam)
        fresh = HullKnapsack(speed, mask, alpha, gamma, cap).solve(lam)
        assert w.tolist() == fresh[0].tolist() and p.tolist() == fresh[1].tolist()
        w[:] = 0  # the caller's copy: the kept allocation stays as it was
    assert len(kept._by_order) <= len(lams)


def _fill_room_isin(use, gain, job, room, total):
    """The previous rule: the fitting columns gathered, jobs already started found by ``np.isin``."""
    cols = np.arange(len(gain))
    ins: list[int] = []
    used: set[int] = set()
    while True:
        okc = (use <= room).all(axis=1)
        okc &= ~np.isin(job, list(used)) if used else okc
        if not okc.any():
            return total, ins
        k = int(cols[okc][int(gain[okc].argmax())])
        total += float(gain[k])
        room = room - use[k]
        used.add(int(job[k]))
        ins.append(k)


@pytest.mark.parametrize("seed", range(10))
def test_fill_room_equals_the_isin_rule(seed):
    rng = np.random.default_rng(seed)
    n, K = int(rng.integers(1, 20)), int(rng.integers(1, 5))
    m = int(rng.integers(1, 120))
    job = np.sort(rng.integers(0, n, m))
    use = rng.choice([0.5, 1.0, 2.0, 4.0], size=(m, K)) * rng.integers(1, 4, (m, 1))
    gain = rng.choice([1.0, 2.0, 3.5, 7.0], size=m) * rng.uniform(0.5, 1.0, m).round(1)  # ties
    for _ in range(5):
        room = rng.uniform(0.0, 20.0, K)
        start = -float(rng.uniform(0.0, 5.0))
        want = _fill_room_isin(use, gain, job, room, start)
        got = _fill_room(use, gain, job, n, room, start)
        assert got[0] == want[0] and got[1] == want[1]


def _first_over_by_rows(cum, cap):
    """The previous rule: each resource row searched before the first column found so far."""
    first = cum.shape[1]
    for r in range(cum.shape[0]):
        row = cum[r, :first] > cap[r, 0]
        k = int(row.argmax()) if first else 0
        if first and row[k]:
            first = k
    return first


@pytest.mark.parametrize("seed", range(6))
def test_first_over_equals_the_row_by_row_search(seed):
    from smdlab.solve.knapsack_hull import _first_over

    rng = np.random.default_rng(seed)
    for _ in range(50):
        K, m = int(rng.integers(1, 6)), int(rng.integers(0, 40))
        cum = np.cumsum(rng.choice([0.0, 0.5, 1.0, 3.0], size=(K, m)), axis=1)
        cap = rng.uniform(0.0, 2.0 * max(m, 1), (K, 1)).round(0)  # ties with the sums
        assert _first_over(cum, cap) == _first_over_by_rows(cum, cap)
