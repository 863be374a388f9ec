"""The fabric's water-filling against Sincronia's offline coflow simulator (GREEDY rates): the
same coflow order gives the same completion time for every coflow (tests/data/coflow/README.md)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from smdlab.experiments.coflow_validation import (
    read_output,
    read_trace,
    replay,
    scf_order,
    synthetic_trace,
)

DATA = Path(__file__).resolve().parent / "data" / "coflow"


def test_the_shipped_trace_is_the_seeded_one():
    ports, coflows = read_trace(DATA / "synthetic-40.txt")
    assert ports == 16 and coflows == synthetic_trace(40, 16, seed=0)


@pytest.mark.parametrize("order", ["SCF", "SEBF"])
def test_completion_times_match_sincronia(order):
    ports, coflows = read_trace(DATA / "synthetic-40.txt")
    ref = read_output(DATA / f"out-synthetic-40-{order}-GREEDY.txt")
    sequence = ref.sort_values("order")["coflow"].tolist()
    if order == "SCF":
        assert sequence == scf_order(coflows)
    got = replay(ports, coflows, sequence)
    want = ref.set_index("coflow")["completion"]
    rel = np.array([abs(got[c] - want[c]) / want[c] for c in want.index])
    assert (rel <= 0.01).mean() >= 0.95
    assert rel.max() <= 1e-5  # the log prints 6 significant digits
