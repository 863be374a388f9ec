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


def _repairs_on_arrays(t, tried, job_c, wi, pi, w, p, defer, capacity, tol_a, rtol, below, polish):
    """The previous rule: each trial on arrays, its objective by ``np.where(...).sum()``."""
    n, W, P = len(w), t.W, t.P
    V = t.item.__self__
    rows = np.arange(n)
    _TRIED.append(len(tried))
    for _, s_, c_ in tried:
        tw, tp = w.copy(), p.copy()
        tw[s_] = tp[s_] = 0
        j = int(job_c[c_])
        tw[j], tp[j] = int(wi[c_]) + 1, int(pi[c_]) + 1
        st = (tw > 0).nonzero()[0]
        tw[st], tp[st] = polish(st, tw[st], tp[st])
        idx = np.clip((tw - 1) * P + (tp - 1), 0, W * P - 1)
        if np.where(tw > 0, V[rows, idx], defer).sum() < below:
            _REPAIRED.append(1)
            return "set", (tw, tp)
    return None


_REPAIRED: list[int] = []
_TRIED: list[int] = []


@pytest.mark.parametrize("seed", range(4))
def test_defer_search_repairs_on_floats_equal_the_array_rule(seed, monkeypatch):
    import smdlab.solve.local_search as ls

    def runs(rng):
        out = []
        for _ in range(30):
            n, W, P = int(rng.integers(2, 14)), int(rng.integers(1, 6)), int(rng.integers(1, 6))
            v = rng.uniform(1.0, 10.0, size=(n, W, P))
            defer = rng.uniform(2.0, 12.0, n)
            K = int(rng.integers(1, 4))
            alpha = rng.uniform(0.0, 3.0, (n, K)) * (rng.random((n, K)) < 0.8)
            gamma = rng.uniform(0.0, 2.0, (n, K)) * (rng.random((n, K)) < 0.6)
            cap = (alpha + gamma).sum(axis=0) * rng.uniform(0.3, 1.2, K)
            zero = np.zeros(n, dtype=int)
            w, p, m = ls.defer_search(v, pareto_mask(v), defer, alpha, gamma, cap, zero, zero)
            out.append((w.tolist(), p.tolist(), m))
        return out

    floats = runs(np.random.default_rng(seed))
    _TRIED.clear()
    monkeypatch.setattr(ls, "_repairs_on_floats", _repairs_on_arrays)
    assert runs(np.random.default_rng(seed)) == floats
    assert sum(_TRIED) > 0  # repairs were tried


@pytest.mark.parametrize("seed", range(6))
def test_repairs_on_floats_keep_the_trial_the_array_rule_keeps(seed):
    # the trials themselves, with thresholds around the current objective: some are kept
    import smdlab.solve.local_search as ls

    rng = np.random.default_rng(seed)
    _REPAIRED.clear()
    for _ in range(40):
        n, W, P, K = int(rng.integers(3, 14)), int(rng.integers(1, 6)), int(rng.integers(1, 6)), 2
        v = rng.uniform(1.0, 10.0, size=(n, W, P))
        defer = rng.uniform(2.0, 12.0, n)
        alpha, gamma = rng.uniform(0.2, 3.0, (n, K)), rng.uniform(0.0, 2.0, (n, K))
        cap = (alpha + gamma).sum(axis=0) * rng.uniform(0.3, 0.8, K)
        mask = pareto_mask(v)
        zero = np.zeros(n, dtype=int)
        w, p, _ = ls.defer_search(v, mask, defer, alpha, gamma, cap, zero, zero)
        keep = mask & (v < defer[:, None, None])
        job_c, wi, pi = np.nonzero(keep)
        started, waiting = np.flatnonzero(w > 0), np.flatnonzero(w[job_c] == 0)
        if not started.size or not waiting.size:
            continue
        t = ls._FloatTables(v, mask, alpha, gamma)
        tol = 1e-9 * np.maximum(1.0, np.abs(cap))

        def polish(s, sw, sp, v=v, mask=mask, alpha=alpha, gamma=gamma, cap=cap):
            return ls.local_search(v[s], mask[s], alpha[s], gamma[s], cap, sw, sp)[:2]

        tried = [(0.0, int(rng.choice(started)), int(rng.choice(waiting))) for _ in range(4)]
        on = np.where(w > 0, v[np.arange(n), np.maximum(w - 1, 0), np.maximum(p - 1, 0)], defer)
        below = float(on.sum()) * rng.uniform(0.97, 1.03)
        args = (t, tried, job_c, wi, pi, w, p, defer, cap, tol, 1e-6, below, polish)
        got, want = ls._repairs_on_floats(*args), _repairs_on_arrays(*args)
        assert (got is None) == (want is None)
        if got is not None:
            assert got[1][0].tolist() == want[1][0].tolist()
            assert got[1][1].tolist() == want[1][1].tolist()
    assert _REPAIRED  # some trials were kept


@pytest.mark.parametrize("seed", range(4))
def test_shrink_plans_from_one_rounds_lists_equal_plans_from_the_arrays(seed):
    # defer_search reads the started jobs' lists once per round for its several shrink plans
    from smdlab.solve.local_search import _plan_rows, _shrink_plan

    rng = np.random.default_rng(seed)
    planned = 0
    for _ in range(40):
        n, W, P, K = int(rng.integers(1, 10)), 5, 4, int(rng.integers(1, 6))
        V = rng.uniform(1.0, 10.0, (n, W * P))
        alpha = rng.integers(0, 4, (n, K)).astype(float)
        gamma = rng.integers(0, 3, (n, K)).astype(float)
        scale = rng.uniform(1.0, 20.0, K)
        w, p = rng.integers(1, W + 1, n), rng.integers(1, P + 1, n)
        cur = V[np.arange(n), (w - 1) * P + p - 1]
        started = np.flatnonzero(rng.random(n) < 0.8)
        kept = _plan_rows(alpha, gamma, scale, w, p, cur, started)
        for _ in range(6):  # one round's several plans share the lists
            deficit = rng.uniform(-1.0, 6.0, K)
            budget = float(rng.uniform(0.5, 30.0))
            args = (V, P, alpha, gamma, scale, w, p, cur, started, deficit, budget)
            want = _shrink_plan(*args)
            assert _shrink_plan(*args, kept) == want
            planned += want is not None and bool(want[1])
    assert planned > 0


@pytest.mark.parametrize("seed", range(8))
def test_hull_segments_from_guessed_vertices_equal_those_without(seed):
    # right guesses (an earlier, slightly different table), wrong, short, long and none
    rng = np.random.default_rng(seed)
    n, W, P, K = int(rng.integers(1, 25)), int(rng.integers(1, 9)), int(rng.integers(1, 9)), 4
    speed, ratio, mask, alpha, gamma = _tables(rng, n, W, P, K)
    scale = rng.uniform(10.0, 40.0, K)
    for table in (speed, ratio):
        want = _hull_segments(table, mask, alpha, gamma, scale)
        nudged = table * (1 + 1e-13 * rng.standard_normal(table.shape))
        job, _, to, _ = _hull_segments(nudged, mask, alpha, gamma, scale)
        earlier = [to[job == i] for i in range(n)]
        kinds = [
            earlier,
            [g[:-1] if len(g) else g for g in earlier],
            [np.r_[g, rng.integers(0, W * P, 2)] for g in earlier],
            [rng.integers(0, W * P, int(rng.integers(0, 6))) for _ in range(n)],
            [None if rng.random() < 0.5 else g for g in earlier],
        ]
        for guess in kinds:
            got = _hull_segments(table, mask, alpha, gamma, scale, guess)
            for a, b in zip(want, got):
                assert a.dtype == b.dtype and np.array_equal(a, b)


@pytest.mark.parametrize("seed", range(4))
def test_local_searches_sharing_a_tables_memo_move_as_fresh_ones(seed):
    # defer_search's local searches share one table: states met by an earlier search are reused
    import smdlab.solve.local_search as ls

    rng = np.random.default_rng(seed)
    n, W, P, K = 12, 5, 4, 3
    v = rng.uniform(1.0, 10.0, (n, W, P))
    mask = pareto_mask(v)
    alpha, gamma = rng.uniform(0.2, 3.0, (n, K)), rng.uniform(0.0, 2.0, (n, K))
    cap = (alpha + gamma).sum(axis=0) * 1.5
    shared = ls._FloatTables(v, mask, alpha, gamma)
    tol = 1e-9 * np.maximum(1.0, cap)
    for _ in range(30):
        jobs = sorted(rng.choice(n, int(rng.integers(1, n + 1)), replace=False).tolist())
        w, p = np.ones(len(jobs), dtype=int), np.ones(len(jobs), dtype=int)
        args = (jobs, cap, tol, w, p, 1e-6, 200)
        fresh = ls._local_search_small(ls._FloatTables(v, mask, alpha, gamma), *args)
        kept = ls._local_search_small(shared, *args)
        assert fresh[0].tolist() == kept[0].tolist() and fresh[1].tolist() == kept[1].tolist()
        assert fresh[2] == kept[2]
    assert len(shared.memo) > n
