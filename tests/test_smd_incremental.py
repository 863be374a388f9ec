"""SMD's per-decision rows kept between decisions: the same instances, solutions and decisions as built from scratch."""

from __future__ import annotations

import hashlib

import numpy as np
import pytest
from _policy_cases import cluster, job

import smdlab.solve.shrink_placement as shrink_placement
from smdlab import InvalidInput
from smdlab.policies.ps.smd import SMD
from smdlab.policies.toolkit import running_by_arrival
from smdlab.sim import simulate
from smdlab.solve import solve
from smdlab.solve.api import solve_pooled
from smdlab.solve.instance import InstanceRows, build_instance
from smdlab.solve.shrink_placement import place

GRIDS = ("duration", "cost", "pareto", "share", "fits_alone")


def _jobs(n: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        caps = int(rng.integers(1, 5))
        out.append(
            job(
                f"j{i}",
                arrival=float(i),
                samples=float(rng.uniform(1e4, 1e6)),
                max_workers=caps,
                max_ps=int(rng.integers(1, caps + 1)),
                worker={"gpu": 1, "cpu": float(rng.choice([1.5, 2, 4])), "bw_gbps": 5},
                weight=float(rng.choice([1.0, 2.5])),
            )
        )
    return out


def _same_instance(a, b) -> None:
    assert a.jobs == b.jobs and a.resources == b.resources and a.mode == b.mode
    for name in ("capacity", "alpha", "gamma", "weight", "pool", "samples", "defer_cost"):
        x, y = getattr(a, name), getattr(b, name)
        assert x.dtype == y.dtype and x.shape == y.shape and np.array_equal(x, y), name
    assert all(s is t for s, t in zip(a.tables, b.tables))
    for name in ("fastest", "caps", "reference"):
        for x, y in zip(getattr(a, name), getattr(b, name), strict=True):
            assert np.array_equal(x, y), name
    assert a.horizon == b.horizon
    for name in GRIDS:
        assert np.array_equal(getattr(a, name), getattr(b, name)), name


def test_instance_rows_build_what_build_instance_builds_as_jobs_come_and_go():
    jobs = _jobs(30)
    cl = cluster(3)
    cap = np.array([10.0, 70.0, 250.0])
    rows = InstanceRows()
    rng = np.random.default_rng(1)
    # arrivals, departures, a reordering, the same jobs twice, and a fresh set
    windows = [
        jobs[:5],
        jobs[:8],
        jobs[2:8],
        jobs[2:8],
        jobs[7:1:-1],
        jobs[3:20],
        jobs[20:],
        jobs[:30],
    ]
    for window in windows:
        work = rng.uniform(1e3, 1e5, len(window))
        got = rows.build(window, cl, cap, "wfbp", work)
        _same_instance(got, build_instance(window, cl, cap, "wfbp", work))
        assert len(rows) <= 2 * len(window) + len(window)  # jobs gone are forgotten
    # another mode or resource set starts over
    _same_instance(
        rows.build(jobs[:4], cl, cap, "sequential"), build_instance(jobs[:4], cl, cap, "sequential")
    )


def test_instance_rows_raise_what_build_instance_raises():
    jobs = _jobs(4)
    cl = cluster(2)
    cap = np.array([8.0, 64.0, 200.0])
    rows = InstanceRows()
    rows.build(jobs, cl, cap)
    bad = [
        ([jobs[0], jobs[1], jobs[0]], cap, None),  # a name twice
        ([], cap, None),
        ([jobs[0], "x"], cap, None),
        ([job("odd", worker={"gpu": 1, "fpga": 1, "bw_gbps": 5})], cap, None),
        (jobs, np.array([1.0, -1.0, 2.0]), None),
        (jobs, cap, [1.0, 0.0, 1.0, 1.0]),
        (jobs, cap, [1.0]),
    ]
    for js, c, work in bad:
        with pytest.raises(InvalidInput) as expected:
            build_instance(js, cl, c, "wfbp", work)
        with pytest.raises(InvalidInput, match=None) as got:
            rows.build(js, cl, c, "wfbp", work)
        assert str(got.value) == str(expected.value)


def test_solve_pooled_is_solve_without_placement():
    cl = cluster(2)
    for seed in range(4):
        jobs = _jobs(12, seed)
        free = cl.machine_matrix * np.array([1.0, 0.9, 1.0]) if seed % 2 else cl.machine_matrix
        sol = solve(jobs, cl, "smd", place=False, free=free, bound=False)
        inst = InstanceRows().build(jobs, cl, free.sum(axis=0))
        pooled = solve_pooled(inst, cl, "smd", bound=False)
        assert (pooled.workers, pooled.ps, pooled.note) == (sol.workers, sol.ps, sol.note)
        rep = pooled.solution
        for name in ("jobs", "workers", "ps", "durations", "costs", "objective", "horizon",
                     "selected", "status", "pooled_workers", "placement"):  # fmt: skip
            np.testing.assert_equal(getattr(rep, name), getattr(sol, name), err_msg=name)
        steps = [[(r.iteration, r.objective, r.beta, r.u) for r in s.trace] for s in (rep, sol)]
        assert steps[0] == steps[1]
    with pytest.raises(InvalidInput, match="inst"):
        solve_pooled(jobs, cl)  # type: ignore[arg-type]


class _FromScratch(SMD):
    """SMD forgetting its kept rows before every decision, and solving through ``solve``."""

    def decide(self, state):
        self.reset()
        return super().decide(state)

    def _solve(self, jobs, state, free, place, work=None):
        arg = free if state.cluster.has_machines else free.sum(axis=0)
        sol = solve(jobs, state.cluster, "smd", mode=state.mode, place=False, free=arg, work=work,
                    **self.options)  # fmt: skip
        self.last_solution = sol
        return sol


def _digest(policy, jobs, cl) -> tuple[str, float, list[float]]:
    digest = hashlib.sha256()
    objectives: list[float] = []

    class Recorder(type(policy)):  # type: ignore[misc, valid-type]
        def decide(self, state):
            assert [r.job.name for r in self._tasks.by_arrival(state.running)] == [
                r.job.name for r in running_by_arrival(state)
            ]
            d = super().decide(state)
            digest.update(repr(d).encode())
            if self.last_solution is not None:
                objectives.append(self.last_solution.objective)
            return d

    res = simulate(jobs, cl, Recorder(), restart_s=0, record_history=False)
    return digest.hexdigest(), res.summary["mean_jct"], objectives


def test_smd_decisions_equal_those_from_scratch():
    # jobs that queue on 8 GPUs (the full method runs, running jobs grow, shrink and move)
    jobs = [j.replace(arrival=30.0 * i) for i, j in enumerate(_jobs(24, 5))]
    cl = cluster(2)
    kept = _digest(SMD(), jobs, cl)
    scratch = _digest(_FromScratch(), jobs, cl)
    assert kept[0] == scratch[0] and kept[1] == scratch[1]
    assert np.allclose(kept[2], scratch[2], rtol=0, atol=0)


def test_placement_checks_every_machine_or_the_distinct_ones_alike(monkeypatch):
    cl = cluster(4)
    free = cl.machine_matrix.astype(float)
    free[1] = [1.0, 3.0, 100.0]  # a machine with little left
    jobs = [*_jobs(5, 3), job("huge", worker={"gpu": 1, "cpu": 40, "bw_gbps": 5})]
    alloc = [(2, 1), (1, 1), (3, 2), (1, 1), (2, 2), (1, 1)]
    results = []
    for limit in (0, 10**9):
        monkeypatch.setattr(shrink_placement, "_DIRECT_FIT_CHECK", limit)
        results.append(place(jobs, alloc, cl, free))
    a, b = results
    assert (a.placements, a.workers, a.ps, a.shrink_steps) == (
        b.placements,
        b.workers,
        b.ps,
        b.shrink_steps,
    )
    assert a.workers[-1] == 0  # the task that fits no machine is left out either way
