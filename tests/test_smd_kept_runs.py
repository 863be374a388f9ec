"""SMD's running jobs kept as arrays between decisions: the same decisions as from the RunningJob view."""

from __future__ import annotations

import dataclasses
import hashlib

import numpy as np
import pytest
from _policy_cases import cluster
from test_smd_incremental import _jobs as _random_jobs

from smdlab import Cluster, InvalidInput
from smdlab.policies.ps.smd import SMD
from smdlab.sim import simulate
from smdlab.solve.instance import InstanceRows, build_instance
from smdlab.solve.placement import fit_counts
from smdlab.solve.shrink_placement import _first_fit_from, _first_live, _fits_some


def _jobs(n: int, seed: int, cpu: dict[float, float] | None = None, gap: float = 30.0):
    """``test_smd_incremental``'s random jobs, ``gap`` s apart, their worker CPUs mapped by ``cpu``."""
    out = []
    for i, j in enumerate(_random_jobs(n, seed)):
        if cpu is not None:
            j = j.replace(worker_demand={**j.worker_demand, "cpu": cpu[j.worker_demand["cpu"]]})
        out.append(j.replace(arrival=gap * i))
    return out


class _Views(SMD):
    """SMD reading the running jobs as RunningJob objects (the path for states not from the simulator)."""

    def decide(self, state):
        return super().decide(dataclasses.replace(state, running=tuple(state.running)))


def _digest(policy: SMD, jobs, cl) -> tuple[str, float, int]:
    digest = hashlib.sha256()

    class Recorder(type(policy)):  # type: ignore[misc, valid-type]
        def decide(self, state):
            d = super().decide(state)
            digest.update(repr(d).encode())
            return d

    res = simulate(jobs, cl, Recorder(), restart_s=0, record_history=False, lower_bound=False)
    return digest.hexdigest(), res.summary["mean_jct"], res.summary["preemptions"]


@pytest.mark.parametrize(
    ("cpu", "machines", "restart_s"),
    [
        (None, 2, 0.0),  # amounts whose sums are exact: the kept sum per machine
        ({1.5: 1.3, 2.0: 2.1, 4.0: 0.7}, 2, 0.0),  # sums that round: summed per decision as before
        (None, 3, 60.0),  # restarts: running jobs change speed between decisions
    ],
)
def test_kept_runs_decide_as_the_running_job_view(cpu, machines, restart_s):
    # jobs that queue on a few GPUs: running jobs grow, shrink, move and are preempted
    jobs = _jobs(24, 5, cpu)
    cl = cluster(machines)
    kept = _digest(SMD(), jobs, cl)
    views = _digest(_Views(), jobs, cl)
    assert kept == views
    # and the same policy object in a second run starts over
    policy = SMD()
    _digest(policy, jobs[:6], cl)
    assert _digest(policy, jobs, cl) == kept


def test_kept_runs_on_a_pooled_cluster():
    pooled = Cluster.pooled(("gpu", "cpu", "bw_gbps"), gpu=6, cpu=48, bw_gbps=200)
    jobs = _jobs(12, 2)
    assert _digest(SMD(), jobs, pooled) == _digest(_Views(), jobs, pooled)


def test_first_fit_helpers_match_a_scan_of_every_machine():
    rng = np.random.default_rng(3)
    for _ in range(300):
        H, K = int(rng.integers(1, 300)), int(rng.integers(1, 5))
        free = rng.choice([0.0, 0.5, 1.0, 2.0, 3.5, 8.0], size=(H, K))
        d = rng.choice([0.0, 0.5, 1.0, 2.0], size=K)
        need = int(rng.integers(1, 4))
        counts = fit_counts(free, d)
        take = np.clip(need - (np.cumsum(counts) - counts), 0, counts)
        lo = int(rng.integers(0, H))
        # machines before lo hold none in the placement's use; here: the scan from lo
        sub = counts[lo:]
        want_take = np.clip(need - (np.cumsum(sub) - sub), 0, sub)
        used, got = _first_fit_from(free, d, need, lo)
        assert np.array_equal(used, lo + np.flatnonzero(want_take))
        assert np.array_equal(got, want_take[want_take > 0])
        assert take.sum() == min(need, counts.sum())
        dead_below = np.where(d > 0, 0.5 * d, -np.inf)
        live = ~np.any(free[lo:] < dead_below, axis=1)
        assert _first_live(free, dead_below, lo) == (lo + int(live.argmax()) if live.any() else H)
        for rows in (1, 3, 7):
            demand = rng.choice([0.0, 1.0, 2.0, 9.0], size=(rows, K))
            want = np.all(demand[:, None, :] <= free[None] + 1e-9, axis=2).any(axis=1)
            assert np.array_equal(_fits_some(demand, free + 1e-9), want)


def test_instance_rows_with_two_kept_jobs_of_one_name():
    a, b = _jobs(2, 0)
    a2 = a.replace(samples=a.samples * 2)  # another job object with a's name
    cl = cluster(2)
    cap = np.array([8.0, 64.0, 200.0])
    rows = InstanceRows()
    rows.build([a, b], cl, cap)
    rows.build([a2, b], cl, cap)  # both objects named like a are kept now
    with pytest.raises(InvalidInput) as expected:
        build_instance([a, a2], cl, cap)
    with pytest.raises(InvalidInput) as got:
        rows.build([a, a2], cl, cap)
    assert str(got.value) == str(expected.value)
    for window in ([a, b], [b, a2], [a]):
        got_inst, want = rows.build(window, cl, cap), build_instance(window, cl, cap)
        assert got_inst.jobs == want.jobs and np.array_equal(got_inst.alpha, want.alpha)
        assert np.array_equal(got_inst.samples, want.samples)


def test_last_solution_of_a_decision_from_the_slack_rule():
    # a cluster with room for every job's fastest configuration: the kept rows decide, and the
    # Solution read afterwards is the one the solver gives for that decision
    jobs = _jobs(8, 4, gap=200.0)
    cl = cluster(6)
    seen: dict[str, list] = {"kept": [], "views": []}
    deferred = []

    def record(policy: SMD, key: str) -> None:
        class Reader(type(policy)):  # type: ignore[misc, valid-type]
            def decide(self, state):
                d = super().decide(state)
                deferred.append(type(self._last).__name__ == "_Deferred")
                sol = self.last_solution
                seen[key].append((sol.jobs, sol.workers, sol.ps, sol.objective, sol.costs))
                return d

        simulate(jobs, cl, Reader(), restart_s=0, record_history=False, lower_bound=False)

    record(SMD(), "kept")
    record(_Views(), "views")
    assert seen["kept"] == seen["views"] and len(seen["kept"]) >= len(jobs)
    n = len(seen["kept"])
    assert any(deferred[:n]) and not any(deferred[n:])  # the rule applied; the views never defer
