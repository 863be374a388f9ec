"""The spread and local placement rules on Python floats (few machines) against their array versions."""

from __future__ import annotations

import numpy as np
import pytest

import smdlab.solve.placement as pl


def _problems(rng: np.random.Generator, count: int):
    """Random free capacities (some machines full, some demands zero, sums that round) and jobs."""
    for _ in range(count):
        m, K = int(rng.integers(1, 9)), int(rng.integers(1, 5))
        free = rng.choice([0.0, 0.1, 0.3, 1.0, 2.5, 4.0, 8.0], size=(m, K)) * rng.integers(
            0, 4, (m, 1)
        )
        alpha = rng.choice([0.0, 0.1, 0.5, 1.0, 2.0], size=K)
        gamma = rng.choice([0.0, 0.1, 0.3, 1.0], size=K)
        yield free, int(rng.integers(0, 9)), int(rng.integers(0, 5)), alpha, gamma


@pytest.mark.parametrize(
    "rule",
    [
        "_spread_tasks_flat",
        "_local_tasks_flat",
        "_consolidated_tasks_flat",
        "_first_fit_tasks_flat",
    ],
)
@pytest.mark.parametrize("seed", range(4))
def test_small_placement_rules_equal_the_array_rules(rule, seed, monkeypatch):
    place = getattr(pl, rule)
    found = 0
    for free, w, p, alpha, gamma in _problems(np.random.default_rng(seed), 300):
        if w + p == 0:
            continue
        monkeypatch.setattr(pl, "SMALL_PLACE", 10**9)
        small = place(free.copy(), w, p, alpha, gamma)
        monkeypatch.setattr(pl, "SMALL_PLACE", 0)
        assert place(free.copy(), w, p, alpha, gamma) == small
        found += small is not None
    assert found > 50


@pytest.mark.parametrize("seed", range(3))
def test_small_fill_leaves_the_rows_numpy_leaves(seed):
    rng = np.random.default_rng(seed)
    for free, w, _, alpha, _ in _problems(rng, 200):
        order = rng.permutation(free.shape[0])
        want_free = free.copy()
        want = pl.fill(want_free, alpha, w, order)
        got_free = free.tolist()
        got = pl._fill_small(got_free, alpha.tolist(), w, order.tolist())
        assert (want is None) == (got is None)
        if want is not None:
            assert want.tolist() == got
            assert np.array_equal(want_free, np.array(got_free)) and np.array_equal(
                np.signbit(want_free), np.signbit(np.array(got_free))
            )


@pytest.mark.parametrize("seed", range(4))
def test_column_sums_round_as_numpy(seed):
    rng = np.random.default_rng(seed)
    for _ in range(200):
        m, K = int(rng.integers(1, 65)), int(rng.integers(1, 9))
        free = rng.uniform(0.0, 10.0, (m, K)) * 10.0 ** rng.integers(-3, 4, (m, K))
        want = free.sum(axis=0)
        assert want.tolist() == pl._column_sums(free.tolist())
