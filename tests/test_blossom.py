"""The weighted blossom matching (smdlab.solve.blossom): optimal, and in Muri's simulator's tie order."""

from __future__ import annotations

import itertools
import json
import random
from pathlib import Path

import pytest

from smdlab.errors import InvalidInput
from smdlab.solve.blossom import max_weight_matching

DATA = Path(__file__).parent / "data" / "muri"


def _best_weight(w: list[list[float]]) -> float:
    """Largest total weight of any matching (enumeration; small graphs only)."""
    n = len(w)

    def rec(free: tuple[int, ...]) -> float:
        if len(free) < 2:
            return 0.0
        u, rest = free[0], free[1:]
        best = rec(rest)  # u unmatched
        for k, v in enumerate(rest):
            if w[u][v] > 0:
                best = max(best, w[u][v] + rec(rest[:k] + rest[k + 1 :]))
        return best

    return rec(tuple(range(n)))


def _weight(w: list[list[float]], mate: list[int]) -> float:
    return sum(w[u][v] for u, v in enumerate(mate) if v > u)


@pytest.mark.parametrize("seed", range(40))
def test_matching_is_a_maximum_weight_matching(seed):
    rng = random.Random(seed)
    n = rng.randint(2, 9)
    levels = [0.2, 0.35, 0.5]  # few distinct weights: many equal-weight matchings
    w = [[0.0] * n for _ in range(n)]
    for u, v in itertools.combinations(range(n), 2):
        if rng.random() < 0.7:
            w[u][v] = w[v][u] = rng.choice(levels) if seed % 2 else rng.random()
    mate = max_weight_matching(w)
    assert all(mate[v] == u for u, v in enumerate(mate) if v >= 0)
    assert all(w[u][v] > 0 for u, v in enumerate(mate) if v >= 0)
    assert _weight(w, mate) == pytest.approx(_best_weight(w), abs=1e-12)


def test_the_authors_matchings_among_equal_weights():
    # Graphs Muri's simulator matched on its trace3 (each has another matching of equal weight,
    # the one networkx returns; most form and expand blossoms; some weight tables are directed).
    graphs = json.loads((DATA / "blossom_matchings.json").read_text())
    assert len(graphs) == 10
    for g in graphs:
        assert max_weight_matching(g["weights"]) == g["mate"]


def test_a_higher_pair_beats_two_lower_ones_and_no_edge_leaves_all_unmatched():
    w = [[0, 1.0, 0, 0], [1.0, 0, 3.0, 0], [0, 3.0, 0, 1.0], [0, 0, 1.0, 0]]
    assert max_weight_matching(w) == [-1, 2, 1, -1]  # 3 > 1 + 1
    assert max_weight_matching([[0.0, 0.0], [0.0, 0.0]]) == [-1, -1]
    assert max_weight_matching([]) == []


def test_a_non_square_table_is_refused():
    with pytest.raises(InvalidInput, match="weights must be a square table"):
        max_weight_matching([[0.0, 1.0], [1.0]])
