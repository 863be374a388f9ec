"""Synergy's policies: GPU-proportional, Synergy-TUNE (fifo/srtf/las), Synergy-OPT's LP."""

from __future__ import annotations

import numpy as np
import pytest

import smdlab
from smdlab import Cluster
from smdlab.errors import InvalidInput
from smdlab.paths import data_dir
from smdlab.policies.base import Allocation, ClusterState, Decision, Placement, Policy, QueuedJob
from smdlab.policies.multiresource._rounds import LEASE_S, proportional_levels, request
from smdlab.policies.multiresource.synergy_opt import synergy_opt_lp
from smdlab.policies.registry import get_policy
from smdlab.policies.toolkit import apply_decision
from smdlab.sim import simulate
from smdlab.sim.simulator import InvalidDecision
from smdlab.solve.placement import capacity_matrix
from smdlab.workloads.scenario import load_scenario
from smdlab.workloads.synergy import read_synergy
from smdlab.workloads.synthetic import synthetic

SYNERGY = ("gpu_proportional", "synergy_tune", "synergy_opt")


def _state(cluster, jobs):
    free = capacity_matrix(cluster)
    free.setflags(write=False)
    qs = tuple(QueuedJob(j, j.samples, 0.0, j.arrival) for j in jobs)
    return ClusterState(0.0, cluster, qs, (), free)


def _job(name, network, gpus, arrival=0.0):
    return smdlab.make_job(
        name,
        network,
        1e6,
        pipeline=True,
        arrival=arrival,
        max_workers=gpus,
        max_ps=gpus,
        requested_workers=gpus,
    )


def test_tune_gives_best_case_demand_where_it_fits():
    cl = Cluster.homogeneous(1, gpu=8, cpu=64, mem_gb=256)
    job = _job("a", "googlenet", 2)
    d = get_policy("synergy_tune").decide(_state(cl, [job]))
    (a,) = d.allocations
    assert (a.cpu, a.mem_gb) == (job.worker_demand["cpu"], job.worker_demand["mem_gb"])
    d = get_policy("gpu_proportional").decide(_state(cl, [job]))
    (a,) = d.allocations
    assert (a.cpu, a.mem_gb) == proportional_levels(job, 2, 2, cl)
    assert a.cpu < job.worker_demand["cpu"]


def test_tune_shrinks_greedy_peers_to_their_share():
    # 4 GPUs, 32 cores: googlenet (16-core demand) at best case leaves no CPU for the next job
    cl = Cluster.homogeneous(1, gpu=4, cpu=32, mem_gb=256)
    first, second = _job("a", "googlenet", 1), _job("b", "googlenet", 2, arrival=1)
    d = get_policy("synergy_tune").decide(_state(cl, [first, second]))
    got = {a.job: a for a in d.allocations}
    assert set(got) == {"a", "b"}
    prop = proportional_levels(first, 1, 1, cl)
    assert got["a"].cpu == prop[0] and got["b"].cpu == prop[0]
    assert np.all(apply_decision(_state(cl, [first, second]), d) >= -1e-9)


def test_tune_beats_proportional_on_a_mixed_workload():
    cl = Cluster.homogeneous(2, gpu=8, cpu=32, mem_gb=256)  # 4 cores per GPU
    jobs = synthetic(40, cl, seed=3, load=1.0, gpu_mix={1: 0.6, 2: 0.3, 4: 0.1})
    jct = {
        p: simulate(jobs, cl, get_policy(p), slot_s=LEASE_S).summary["mean_jct"] for p in SYNERGY
    }
    assert jct["synergy_tune"] < jct["gpu_proportional"]
    assert jct["synergy_opt"] < jct["gpu_proportional"]


@pytest.mark.parametrize("base", ["fifo", "srtf", "las"])
def test_every_base_runs_to_completion(base):
    cl = Cluster.homogeneous(2, gpu=8, cpu=32, mem_gb=256)
    jobs = synthetic(15, cl, seed=1, load=1.0, gpu_mix={1: 0.5, 2: 0.5})
    res = simulate(jobs, cl, get_policy("synergy_tune", base=base), slot_s=LEASE_S)
    assert res.summary["jobs_completed"] == len(jobs)
    assert np.allclose(res.jobs["samples_done"], res.jobs["samples"], rtol=1e-6)


def test_bad_base_is_one_clear_line():
    with pytest.raises(InvalidInput, match="base"):
        get_policy("synergy_tune", base="sjf")


def test_opt_lp_bounds_the_proportional_allocation():
    cl = Cluster.homogeneous(1, gpu=8, cpu=32, mem_gb=256)
    jobs = [_job("a", "googlenet", 2), _job("b", "bert_base", 2), _job("c", "mobilenet_v2", 2)]
    reqs = [request(j, cl) for j in jobs]
    lp = synergy_opt_lp(jobs, reqs, cl)
    # normalised to the proportional share, so running everyone at it scores exactly len(jobs)
    assert lp.bound >= len(jobs) - 1e-9
    assert all(abs(x.sum() - 1) < 1e-9 for x in lp.weights)
    with pytest.raises(InvalidInput, match="allocations"):
        synergy_opt_lp(jobs, reqs[:1], cl)


def test_simulator_rejects_negative_levels():
    cl = Cluster.homogeneous(1)
    job = _job("a", "resnet50", 1)

    class Bad(Policy):
        name = "bad"

        def decide(self, state):
            if not state.queued:
                return Decision()
            return Decision((Allocation("a", 1, 1, Placement(((0, 1, 1),)), cpu=-1),))

    with pytest.raises(InvalidDecision, match="cpu"):
        simulate([job], cl, Bad())


def test_default_synthetic_workload_has_jobs_input_bound_at_the_proportional_share():
    cl = Cluster.homogeneous(4)  # the default server: 8 GPUs, 64 cores
    jobs = synthetic(60, cl, seed=0)
    assert all(j.pipeline is not None for j in jobs)
    slowed = set()
    for j in jobs:
        w, p = request(j, cl)
        if smdlab.speed(j, w, p, cpu=proportional_levels(j, w, p, cl)[0]) < smdlab.speed(j, w, p):
            slowed.add(j.profile.network)
    assert slowed  # e.g. GoogLeNet, MobileNetV2, DenseNet-121


class _RankedFromScratch:
    """Mixin: a ``priority`` of a subclass's own, so every round ranks every job anew."""

    def priority(self, entry, job, cluster, mode):
        return super().priority(entry, job, cluster, mode)


@pytest.mark.parametrize("name", ["gpu_proportional", "synergy_tune"])
@pytest.mark.parametrize("base", ["fifo", "srtf", "las"])
@pytest.mark.parametrize("rounds", [True, False])
def test_kept_ranking_schedules_as_ranking_every_round_anew(name, base, rounds):
    # 28 of the authors' single-GPU jobs on one 2-GPU server: a long queue; starvation after 6 min
    sc = load_scenario(data_dir() / "scenarios/synergy_16x8.toml").with_changes(
        cluster={"machines": 1, "gpu": 2}
    )
    cl = sc.build_cluster()
    jobs = read_synergy(data_dir() / "traces/synergy/jobs_seed7_load2.25_short.csv", cluster=cl)
    opts = dict(base=base, round_decisions=rounds, starvation_h=0.1, rule="simulator")
    kept = get_policy(name, **opts)
    cls = type(kept)
    anew = type("Anew", (_RankedFromScratch, cls), {})(**opts)
    runs = [
        simulate(jobs, cl, p, execution="preemptive", slot_s=LEASE_S, restart_s=0, mode="wfbp")
        for p in (kept, anew)
    ]
    cols = ["start", "finish", "preemptions", "restarts"]
    assert runs[0].jobs[cols].equals(runs[1].jobs[cols])
    assert kept._bumped == anew._bumped
    if base != "fifo":
        assert kept._bumped  # the starvation rule was exercised
