"""Invariants under random testing (hypothesis, derandomised by tests/conftest.py).

- Capacities are never exceeded: random heterogeneous clusters, random layered profiles and
  random workloads, simulated under every registered policy (milp on tiny instances); every
  state a policy sees and every decision is re-checked machine by machine from the placements of
  the running jobs, independently of the simulator's own accounting
  (``smdlab.sim.policy_check.audit_decision``, the check ``check_policy`` runs on fixed worlds).
- Every job completes when it fits the cluster (one worker and one PS fit the empty machines),
  and only such jobs: the others are reported as skipped; the samples processed equal the
  samples asked. This includes jobs whose worker and PS fit only on two different machines
  (first-fit placement tries both task orders; test_job_that_fits_only_split_is_run and
  test_solver_placement_starts_a_job_that_fits below are the cases that found it).
- Lower bound <= optimum <= any heuristic: LP <= MILP = brute force <= SMD (each knapsack rule)
  and LP rounding, on tiny random instances.
- Determinism for a seed: the same workload seed gives the identical per-job table and history.
- Each test above also runs on an SLO workload (``workload="slo"``: deadlines drawn for about half
  the jobs, ``smdlab.workloads.deadlines``), where the deadline columns agree with the finish
  times and the value-weighted miss rate never exceeds the hard one. The determinism test runs the
  deadline-aware policies (EDF, LSF, Chronus) in place of FIFO, SRTF and Tiresias there.
- Iteration time monotone as specified: tests/test_model_timing.py (test_nonincreasing_in_ps,
  test_monotone_in_sizes_and_bandwidths, test_mode_ordering) and tests/test_model_prefetch.py;
  not repeated here.
- JSON output parses: tests/test_reliability_cli.py (``smdlab simulate --json`` in a fresh process).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
import pandas as pd
import pytest
from hypothesis import event, given, settings, strategies as st

from smdlab import Cluster, Job, LayerProfile, Machine
from smdlab.policies.base import ClusterState, Decision
from smdlab.policies.registry import get_policy, list_policies
from smdlab.sim import Stalled, simulate
from smdlab.sim.policy_check import audit_decision
from smdlab.solve import place, solve
from smdlab.solve.placement import first_fit
from smdlab.workloads import synthetic
from smdlab.workloads.deadlines import with_deadlines

RES = ("gpu", "cpu", "mem_gb", "bw_gbps")
TOL = 1e-9


# ---- random instances -------------------------------------------------------------------------------
def _profile(rng: np.random.Generator) -> LayerProfile:
    n = int(rng.integers(1, 6))
    f = rng.uniform(1e-5, 2e-4, n)
    return LayerProfile(
        [f"l{i}" for i in range(n)],
        f,
        f * rng.uniform(1.5, 2.5, n),
        rng.uniform(1e4, 2e7, n),
        update_s_per_byte=float(rng.choice([0.0, 1e-10])),
    )


def _job(rng: np.random.Generator, name: str, caps: int, arrival: float) -> Job:
    batch_mode = str(rng.choice(["global", "per_worker"]))
    return Job(
        name, _profile(rng), float(rng.uniform(2e3, 5e4)), int(rng.choice([32, 64, 128])),
        {"gpu": float(rng.choice([0.5, 1, 2])), "cpu": float(rng.integers(1, 9)), "mem_gb": float(rng.integers(1, 33)),
         "bw_gbps": float(rng.choice([1, 5, 10, 25]))},
        {"cpu": float(rng.integers(1, 9)), "mem_gb": float(rng.integers(1, 17)), "bw_gbps": float(rng.choice([1, 5, 10, 25]))},
        arrival=arrival, weight=float(rng.choice([1.0, 2.0])), max_workers=int(rng.integers(1, caps + 1)),
        max_ps=int(rng.integers(1, caps + 1)), batch_mode=batch_mode,
        per_worker_batch=int(rng.choice([16, 32])) if batch_mode == "per_worker" else None,
        latency_s=float(rng.choice([0.0, 1e-4])),
    )  # fmt: skip


def _cluster(rng: np.random.Generator, machines: int) -> Cluster:
    return Cluster(tuple(
        Machine(f"m{i}", {"gpu": float(rng.choice([0, 1, 2, 4, 8])), "cpu": float(rng.integers(2, 65)),
                          "mem_gb": float(rng.choice([16, 64, 256])), "bw_gbps": float(rng.choice([10, 40, 100]))})
        for i in range(machines)
    ), RES)  # fmt: skip


@dataclass(frozen=True)
class World:
    """A random cluster, workload and simulation setting."""

    cluster: Cluster
    jobs: tuple[Job, ...]
    policy: str
    execution: str
    slot_s: float | None
    mode: str


@st.composite
def worlds(draw, policy: str, slo: bool = False) -> World:
    tiny = policy == "milp"
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    n = draw(st.integers(1, 3 if tiny else 6))
    together = draw(st.booleans())  # a batch arriving at once, or a spread of arrivals
    arrivals = np.zeros(n) if together else np.sort(rng.uniform(0, 200, n))
    jobs = tuple(_job(rng, f"j{i}", 2 if tiny else 4, float(a)) for i, a in enumerate(arrivals))
    if slo:  # an SLO workload: about half the jobs get deadlines (1 to 3 times their duration)
        jobs = tuple(with_deadlines(jobs, slack=(1.0, 3.0), fraction=0.5, seed=seed % 2**31))
    return World(
        _cluster(rng, draw(st.integers(1, 3))),
        jobs,
        policy,
        "elastic" if draw(st.booleans()) else "non_elastic",
        draw(st.sampled_from([None, 60.0])),
        draw(st.sampled_from(["sequential", "wfbp", "wfbp_prefetch"])),
    )


def _task_vectors(job: Job) -> tuple[np.ndarray, np.ndarray]:
    return (
        np.array([job.worker_demand.get(r, 0.0) for r in RES]),
        np.array([job.ps_demand.get(r, 0.0) for r in RES]),
    )


def _fits_somewhere(job: Job, cap: np.ndarray) -> bool:
    """Whether (1 worker, 1 PS) fits the empty cluster: both on one machine, or on two machines."""
    w, p = _task_vectors(job)
    fw, fp, fb = (np.all(cap >= v - TOL, axis=1) for v in (w, p, w + p))
    return bool(
        fb.any() or any(fw[i] and fp[k] for i in range(len(cap)) for k in range(len(cap)) if i != k)
    )


def _solver_cannot_place(job: Job, cluster: Cluster) -> bool:
    """The job's (1, 1) fits an empty cluster by first fit, but not by the solver's placement."""
    cap = np.array([[m.capacity[r] for r in RES] for m in cluster.machines])
    return first_fit(job, 1, 1, cap, RES) is not None and place(
        [job], [(1, 1)], cluster
    ).workers == (0,)


class Auditor:
    """Wraps a policy: re-checks every state and every decision against each machine's capacity
    (``smdlab.sim.policy_check.audit_decision``, independent of the simulator's accounting)."""

    def __init__(self, inner, cluster: Cluster):
        self.inner, self.name = inner, inner.name
        self.states = 0
        self.placements: list[
            tuple[int, ...]
        ] = []  # machines of each running job seen (statistics)

    def reset(self) -> None:
        self.inner.reset()

    def decide(self, state: ClusterState) -> Decision:
        self.states += 1
        self.placements.extend(tuple(m for m, _, _ in r.placement.tasks) for r in state.running)
        decision = self.inner.decide(state)
        audit_decision(state, decision)  # raises PolicyProblem, one line, on a broken decision
        return decision


def _machines_used(auditor: Auditor) -> list[tuple[int, ...]]:
    return auditor.placements


# Low Tiresias thresholds, so that its preemptions happen within these short runs.
# Short GA runs for OMRU: the invariants do not depend on how well the GA converges.
OPTIONS = {
    "tiresias": {"thresholds": (5.0, 50.0)},
    "omru": {"generations": 20},
    "omru_noreuse": {"generations": 20},
}


@pytest.mark.parametrize("workload", ["plain", "slo"])
@pytest.mark.parametrize("policy", list_policies())
@settings(max_examples=40)
@given(data=st.data())
def test_capacity_never_exceeded_and_every_fitting_job_completes(policy, workload, data):
    world = data.draw(worlds(policy, slo=workload == "slo"))
    cap = np.array([[m.capacity[r] for r in RES] for m in world.cluster.machines])
    auditor = Auditor(get_policy(world.policy, **OPTIONS.get(policy, {})), world.cluster)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # unfit jobs are skipped with a warning: checked below
            res = simulate(
                list(world.jobs),
                world.cluster,
                auditor,
                mode=world.mode,
                execution=world.execution,
                slot_s=world.slot_s,
            )
    except Stalled:
        # A stall is a defect; it used to happen when the solver's placement could not place a
        # (1, 1) that first fit places (test_solver_placement_starts_a_job_that_fits). Say which.
        assert not any(_solver_cannot_place(j, world.cluster) for j in world.jobs), (
            "solver placement misses a (1, 1)"
        )
        raise
    df = res.jobs.set_index("job")
    for job in world.jobs:
        row = df.loc[job.name]
        if _fits_somewhere(job, cap):
            # first fit tries both task orders, so it finds every (1 worker, 1 PS) placement
            assert first_fit(job, 1, 1, cap, RES) is not None, job.name
            if not np.all(cap >= sum(_task_vectors(job)) - TOL, axis=1).any():
                event("a job fits only with worker and PS on different machines")
            assert row["status"] == "completed", (world.policy, job.name, row["status"])
            assert row["samples_done"] == pytest.approx(job.samples, rel=1e-9)
            assert row["finish"] >= row["start"] >= job.arrival
        else:
            assert row["status"] == "skipped", (world.policy, job.name)
    event(f"{res.summary['jobs_skipped']} job(s) skipped")  # shown by --hypothesis-show-statistics
    event(
        "some job preempted or resized"
        if res.summary["preemptions"] + res.summary["resizes"]
        else "no preemption"
    )
    event(
        "some job on several machines"
        if any(len(set(pl)) > 1 for pl in _machines_used(auditor))
        else "one machine per job"
    )
    if workload == "slo" and res.summary.get("slo_jobs"):  # SLO jobs that were not skipped
        done = df[df["status"] == "completed"]
        met = done["deadline_met"].dropna()
        assert set(met) <= {0.0, 1.0}
        assert ((done["lateness"] <= 1e-6) == (done["deadline_met"] == 1))[
            done["job_class"] == "slo"
        ].all()
        assert 0.0 <= res.summary["hard_miss_rate"] <= 1.0
        assert res.summary["weighted_miss_rate"] <= res.summary["hard_miss_rate"] + 1e-12
    util = res.utilization[list(RES)].to_numpy(dtype=float)
    assert np.all(np.nan_to_num(util) <= 1 + 1e-9) and np.all(np.nan_to_num(util) >= -1e-9)
    if res.summary["jobs_completed"]:
        assert auditor.states >= 1
        assert np.allclose(np.nan_to_num(util[-1]), 0)  # everything released at the end


# ---- bounds: LP <= MILP = brute <= heuristics ------------------------------------------------------------
@st.composite
def instances(draw):
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    n = draw(st.integers(1, 3))
    jobs = [_job(rng, f"j{i}", 3, 0.0) for i in range(n)]
    total = sum(_task_vectors(j)[0] * j.max_workers + _task_vectors(j)[1] * j.max_ps for j in jobs)
    alone = np.max([sum(_task_vectors(j)) for j in jobs], axis=0)
    frac = draw(
        st.sampled_from([0.2, 0.4, 0.7, 1.0])
    )  # tight: some jobs wait; loose: every job at its cap
    cap = np.maximum(np.floor(frac * total), alone)  # every job fits on its own
    return (
        jobs,
        Cluster.pooled(RES, **dict(zip(RES, map(float, cap)))),
        draw(st.sampled_from(["sequential", "wfbp"])),
    )


@settings(max_examples=80)
@given(instances())
def test_lower_bound_le_optimum_le_every_heuristic(inst):
    jobs, cluster, mode = inst
    rel = 1e-7
    brute = solve(jobs, cluster, "brute", mode=mode)
    milp = solve(jobs, cluster, "milp", mode=mode, mip_gap=0, backend="highs")
    lp = solve(jobs, cluster, "lp", mode=mode, backend="highs")
    assert milp.status == "optimal" and milp.objective == pytest.approx(brute.objective, rel=rel)
    assert lp.objective <= milp.objective * (1 + rel)
    heuristics = [solve(jobs, cluster, "lp_round", mode=mode, backend="highs")] + [
        solve(jobs, cluster, "smd", mode=mode, knapsack=k, backend="highs")
        for k in ("hull", "exact", "lp_round", "greedy")
    ]
    cap = cluster.capacity_vector
    for sol in (milp, *heuristics):
        assert sol.objective >= milp.objective * (1 - rel), (
            sol.method,
            sol.objective,
            milp.objective,
        )
        assert sol.lower_bound <= milp.objective * (1 + rel), (sol.method, sol.lower_bound)
        use = sum(
            w * _task_vectors(j)[0] + p * _task_vectors(j)[1]
            for j, w, p in zip(jobs, sol.workers, sol.ps)
        )
        assert np.all(use <= cap * (1 + rel) + 1e-9), sol.method


# ---- determinism --------------------------------------------------------------------------------------
@pytest.mark.parametrize("workload", ["plain", "slo"])
@settings(max_examples=16)
@given(
    st.integers(0, 2**31 - 1),
    st.sampled_from(["fifo", "srtf", "drf", "tetris", "optimus", "tiresias", "smd"]),
)
def test_same_seed_same_per_job_table(workload, seed, policy):
    cluster = Cluster.homogeneous(2)
    runs = []
    if workload == "slo":
        policy = {"fifo": "edf", "srtf": "lsf", "tiresias": "chronus"}.get(policy, policy)
    for _ in range(2):
        jobs = synthetic(
            10, cluster, load=1.2, seed=seed, networks=["resnet50", "alexnet", "lstm_lm"]
        )
        if workload == "slo":
            jobs = with_deadlines(jobs, fraction=0.5, seed=seed)
        runs.append(simulate(jobs, cluster, policy))
    pd.testing.assert_frame_equal(runs[0].jobs, runs[1].jobs, check_exact=True)
    pd.testing.assert_frame_equal(runs[0].history, runs[1].history, check_exact=True)
    pd.testing.assert_frame_equal(runs[0].utilization, runs[1].utilization, check_exact=True)
    other = synthetic(
        10, cluster, load=1.2, seed=seed + 1, networks=["resnet50", "alexnet", "lstm_lm"]
    )
    assert [j.samples for j in other] != [j.samples for j in jobs]  # the seed matters


@pytest.mark.parametrize("policy", ["fifo", "drf"])
def test_job_that_fits_only_split_is_run(policy):
    # Found by test_capacity_never_exceeded_and_every_fitting_job_completes. The worker (dominant
    # share 2/8 GPUs) goes first, to m0, the first machine it fits; the PS then fits neither on m0
    # (3 CPUs left, it needs 4) nor on m1 (10 Gbps, it needs 25). PS on m0 and worker on m1 fits.
    cluster = Cluster(
        (
            Machine("m0", {"gpu": 4, "cpu": 7, "mem_gb": 64, "bw_gbps": 100}),
            Machine("m1", {"gpu": 4, "cpu": 26, "mem_gb": 16, "bw_gbps": 10}),
        ),
        RES,
    )
    prof = LayerProfile(["a"], [1e-4], [2e-4], [1e6])
    job = Job(
        "j",
        prof,
        1e4,
        64,
        {"gpu": 2, "cpu": 4, "mem_gb": 1, "bw_gbps": 1},
        {"cpu": 4, "mem_gb": 4, "bw_gbps": 25},
        max_workers=1,
        max_ps=1,
    )
    assert _fits_somewhere(job, np.array([[m.capacity[r] for r in RES] for m in cluster.machines]))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = simulate([job], cluster, policy)
    assert res.jobs["status"].tolist() == ["completed"]


@pytest.mark.parametrize("policy", ["smd", "milp"])
def test_solver_placement_starts_a_job_that_fits(policy):
    # Found by test_capacity_never_exceeded_and_every_fitting_job_completes (milp). Worker and PS
    # each need 25 of m0's 40 Gbps; the worker needs a GPU (only m0 has one). Worker on m0 and PS
    # on m1 fits (first fit, workers first on ties, finds it: fifo, drf, ... run the job).
    cluster = Cluster(
        (
            Machine("m0", {"gpu": 8, "cpu": 42, "mem_gb": 256, "bw_gbps": 40}),
            Machine("m1", {"gpu": 0, "cpu": 26, "mem_gb": 64, "bw_gbps": 40}),
        ),
        RES,
    )
    job = Job(
        "j",
        LayerProfile(["a"], [1e-4], [2e-4], [1e6]),
        1e4,
        64,
        {"gpu": 1, "cpu": 1, "mem_gb": 15, "bw_gbps": 25},
        {"cpu": 5, "mem_gb": 3, "bw_gbps": 25},
        max_workers=1,
        max_ps=1,
    )
    assert simulate([job], cluster, "fifo").jobs["status"].tolist() == ["completed"]
    assert simulate([job], cluster, policy).jobs["status"].tolist() == ["completed"]
