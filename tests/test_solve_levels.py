"""Problem (P) with CPU/memory levels: exact against brute force, menus, the milp_levels policy."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import smdlab
from smdlab.errors import InvalidInput
from smdlab.model.pipeline import with_worker_resources
from smdlab.sim import simulate
from smdlab.solve.levels import level_menu, solve_levels
from smdlab.workloads.synthetic import synthetic

RES = ("gpu", "cpu", "mem_gb", "bw_gbps")


def _jobs():
    return [
        smdlab.make_job("a", "googlenet", 2e6, pipeline=True, max_workers=2, max_ps=2),
        smdlab.make_job("b", "resnet50", 1e6, pipeline=True, max_workers=2, max_ps=2),
    ]


def _brute(jobs, cap, menus):
    best = np.inf
    options = []
    for j, menu in zip(jobs, menus):
        opts = []
        for lv in menu:
            v = with_worker_resources(j, *lv)
            for w, p in itertools.product(range(1, 3), range(1, 3)):
                use = np.array(
                    [w * v.worker_demand.get(r, 0) + p * v.ps_demand.get(r, 0) for r in RES]
                )
                opts.append((v.samples / smdlab.speed(v, w, p), use))
        options.append(opts)
    for combo in itertools.product(*options):
        if np.all(sum(u for _, u in combo) <= cap + 1e-9):
            best = min(best, sum(c for c, _ in combo))
    return best


def test_levels_milp_equals_brute_force_and_beats_demand_only():
    jobs = _jobs()
    cap = np.array([4.0, 30.0, 256.0, 100.0])  # CPU is scarce: demands would not fit at (2, 2)
    menus = [level_menu(j) for j in jobs]
    sol = solve_levels(jobs, RES, cap, menus)
    assert sol.status == "optimal"
    assert sol.objective == pytest.approx(_brute(jobs, cap, menus), rel=1e-9)
    demand = [[(j.worker_demand["cpu"], j.worker_demand["mem_gb"])] for j in jobs]
    demand_only = solve_levels(jobs, RES, cap, demand)
    assert sol.objective <= demand_only.objective + 1e-9
    assert sol.cpu[0] < jobs[0].worker_demand["cpu"]  # googlenet gives up cores it cannot afford


def test_menu_without_pipeline_is_the_demand():
    job = smdlab.make_job("x", "resnet50", 1e6)
    assert level_menu(job) == [(job.worker_demand["cpu"], job.worker_demand["mem_gb"])]


def test_bad_levels_are_one_clear_line():
    jobs = _jobs()
    with pytest.raises(InvalidInput, match="cpu"):
        solve_levels(jobs, RES, np.array([8.0, 64, 256, 100]), [[(-1.0, 10.0)], [(4.0, 10.0)]])
    with pytest.raises(InvalidInput, match="menus"):
        solve_levels(jobs, RES, np.array([8.0, 64, 256, 100]), [[(4.0, 10.0)]])


def test_milp_levels_policy_runs_to_completion():
    cl = smdlab.Cluster.homogeneous(2, gpu=8, cpu=32, mem_gb=256)
    jobs = synthetic(12, cl, seed=3, load=1.0, gpu_mix={1: 0.6, 2: 0.4})
    res = simulate(jobs, cl, "milp_levels", record_history=False)
    assert res.summary["jobs_completed"] == len(jobs)


def test_smd_levels_runs_and_gives_jobs_cheaper_levels_when_cpu_is_scarce():
    from smdlab.policies.multiresource.smd_levels import SMDLevels

    class Recording(SMDLevels):
        def decide(self, state):
            d = super().decide(state)
            self.seen.extend((a.job, a.cpu) for a in d.allocations)
            return d

    cl = smdlab.Cluster.homogeneous(2, gpu=8, cpu=24, mem_gb=256)  # 3 cores per GPU
    ref = smdlab.Cluster.homogeneous(2, gpu=8, cpu=64, mem_gb=256)
    jobs = synthetic(12, ref, seed=3, load=1.0, gpu_mix={1: 0.6, 2: 0.4})
    pol = Recording()
    pol.seen = []
    res = simulate(jobs, cl, pol, record_history=False)
    assert res.summary["jobs_completed"] == len(jobs)
    demand = {j.name: j.worker_demand["cpu"] for j in jobs}
    assert all(c is not None for _, c in pol.seen)
    assert any(c < demand[n] for n, c in pol.seen)
