"""Trace-faithful semantics on hand-built GPU-only traces: every expected time is worked out by hand.

Each trace is a Philly-format CSV (seconds, duration, GPUs) loaded with ``demands="gpu_only"``,
so every job is one gang of its GPU count that runs exactly its duration when started.
"""

from __future__ import annotations

import numpy as np
import pytest

from smdlab import Cluster, InvalidInput
from smdlab.errors import Infeasible
from smdlab.policies.base import Allocation, ClusterState, Decision, Placement, Policy, QueuedJob
from smdlab.policies.ps.fifo import FIFO
from smdlab.policies.ps.tiresias import Tiresias
from smdlab.policies.toolkit import gang_placement
from smdlab.sim import simulate
from smdlab.solve.placement import capacity_matrix
from smdlab.workloads import load_philly


def _trace(tmp_path, rows, name="t.csv"):
    """Jobs from (arrival s, duration s, GPUs) rows, named philly00000, philly00001, ... in row order."""
    p = tmp_path / name
    p.write_text("timestamp,duration,num_gpus\n" + "".join(f"{a},{d},{g}\n" for a, d, g in rows))
    return load_philly(p, demands="gpu_only")


def _times(res):
    df = res.jobs.set_index("job")
    return {
        n[-1]: (
            round(float(df.loc[n, "start"]), 6),  # exact up to float rounding
            round(float(df.loc[n, "finish"]), 6),
            int(df.loc[n, "preemptions"]),
        )
        for n in df.index
    }


def _gpus(machines, gpus):
    return Cluster.homogeneous(machines, gpu=gpus)


def test_gpu_only_job_is_one_gang_without_ps_and_runs_its_duration(tmp_path):
    jobs = _trace(tmp_path, [(0, 100, 2), (5, 50, 8), (7, 30, 1)])
    a = jobs[0]
    assert a.gpu_only and a.gang and a.gang_allocation == (2, 1) and a.max_ps == 1
    assert dict(a.worker_demand) == {"gpu": 1.0} and not any(a.ps_demand.values())
    res = simulate(jobs, _gpus(2, 8), "fifo")  # room for everything: each runs its trace time
    df = res.jobs.set_index("job")
    assert np.allclose(df["jct"].to_numpy(), [100, 50, 30])
    assert list(df["workers"]) == [2, 8, 1]
    # no CPU, memory or NIC is held: only GPUs
    util = res.summary["utilization"]
    assert util["cpu"] == util["mem_gb"] == util["bw_gbps"] == 0.0 and util["gpu"] > 0


def test_fifo_strict_blocks_behind_the_head_and_backfill_skips_it(tmp_path):
    # One machine, 4 GPUs. A (2 GPUs) runs 0-100; B (4 GPUs) must wait for A; C (1 GPU) fits at 20.
    jobs = _trace(tmp_path, [(0, 100, 2), (10, 50, 4), (20, 30, 1)])
    cl = _gpus(1, 4)
    strict = _times(simulate(jobs, cl, "fifo"))
    # strict: C waits behind B (head-of-line): B 100-150, then C 150-180
    assert strict == {"0": (0, 100, 0), "1": (100, 150, 0), "2": (150, 180, 0)}
    backfill = _times(simulate(jobs, cl, FIFO(backfill=True)))
    # backfill: C starts beside A at its arrival (20-50); B still starts when A ends
    assert backfill == {"0": (0, 100, 0), "1": (100, 150, 0), "2": (20, 50, 0)}


def test_srtf_preempts_for_shorter_jobs_and_skips_jobs_that_do_not_fit(tmp_path):
    # One machine, 4 GPUs. A: 4 GPUs, 100 s at 0. B: 2 GPUs, 20 s at 10. C: 1 GPU, 30 s at 10.
    # D: 1 GPU, 200 s at 12.
    jobs = _trace(tmp_path, [(0, 100, 4), (10, 20, 2), (10, 30, 1), (12, 200, 1)])
    cl = _gpus(1, 4)
    srtf = _times(simulate(jobs, cl, "srtf", restart_s=0))
    # t=10: B (20 s) and C (30 s) rank before A (90 s left): A is preempted, B and C start.
    # t=12: order B, C, A (90), D (200): A needs 4 of the 1 GPU left and is skipped; D fits.
    # t=30: B ends; A (4 GPUs) still does not fit beside C and D.
    # t=40: C ends; A (90 s) ranks before D (172 s left) and takes all 4 GPUs: D is preempted.
    # t=130: A ends (90 s after 40); D resumes and ends at 130 + 172 = 302.
    assert srtf == {
        "0": (0, 130, 1),
        "1": (10, 30, 0),
        "2": (10, 40, 0),
        "3": (12, 302, 1),
    }
    # a restart cost delays each resumed job: A resumes at 40 + 30, D at 160 + 30
    slow = _times(simulate(jobs, cl, "srtf", restart_s=30))
    assert (slow["0"][1], slow["3"][1]) == (160, 362)
    sjf = _times(simulate(jobs, cl, "sjf"))
    # non-preemptive: A keeps the machine until 100; then B, C and D (shortest first) all fit
    assert sjf == {"0": (0, 100, 0), "1": (100, 120, 0), "2": (100, 130, 0), "3": (100, 300, 0)}


def test_tiresias_demotes_at_the_threshold_and_orders_a_queue_by_entry(tmp_path):
    # One machine, 2 GPUs, two queues split at 100 GPU-seconds.
    # A: 2 GPUs, 300 s at 0. B: 2 GPUs, 100 s at 10.
    jobs = _trace(tmp_path, [(0, 300, 2), (10, 100, 2)])
    cl = _gpus(1, 2)
    got = _times(simulate(jobs, cl, Tiresias(thresholds=(100.0,)), restart_s=0))
    # t=10: both in queue 0; A runs and is ahead of B: B waits.
    # t=50: A reaches 100 GPU-s (2 GPUs x 50 s) and drops to queue 1: B (queue 0) preempts it.
    # t=100: B reaches 100 GPU-s and joins queue 1 *behind* A, which entered it at 50: A resumes
    #        and B is preempted with 50 s left. A ends at 100 + 250 = 350, B at 350 + 50 = 400.
    assert got == {"0": (0, 350, 1), "1": (50, 400, 1)}
    # Time-based service: A drops at t=100 (100 s run); B then runs its whole 100 s (ends at 200,
    # exactly at its own limit); A resumes with 200 s left and ends at 400.
    got = _times(simulate(jobs, cl, Tiresias(thresholds=(100.0,), service="time"), restart_s=0))
    assert got == {"0": (0, 400, 1), "1": (100, 200, 0)}


def test_tiresias_skips_a_job_that_does_not_fit_and_keeps_running_jobs_of_its_queue(tmp_path):
    # One machine, 4 GPUs, one threshold far away: everything stays in queue 0.
    # A: 3 GPUs 100 s at 0; B: 2 GPUs 100 s at 1 (does not fit beside A); C: 1 GPU 50 s at 2.
    jobs = _trace(tmp_path, [(0, 100, 3), (1, 100, 2), (2, 50, 1)])
    got = _times(simulate(jobs, _gpus(1, 4), Tiresias(thresholds=(1e6,))))
    # B is skipped, C fits beside A and starts at 2 (work conserving); at 52 C ends, B still does
    # not fit; at 100 A ends and B starts: 100-200.
    assert got == {"0": (0, 100, 0), "1": (100, 200, 0), "2": (2, 52, 0)}


def test_gang_placement_is_consolidated_else_spread_and_counts_gpus():
    cl = _gpus(2, 4)
    free = capacity_matrix(cl)
    free[0, 0] = 1.0  # machine 0 has 1 free GPU, machine 1 has 4
    jobs = load_philly(first=3, demands="gpu_only")
    one = jobs[0].replace(requested_workers=1, max_workers=1)
    three = jobs[0].replace(requested_workers=3, max_workers=3)
    five = jobs[0].replace(requested_workers=5, max_workers=5)
    six = jobs[0].replace(requested_workers=6, max_workers=6)
    res = cl.resources
    assert gang_placement(one, free, res).tasks == ((1, 1, 1),)  # the machine with most room
    assert gang_placement(three, free, res).tasks == ((1, 3, 1),)  # fits one machine: all there
    assert gang_placement(five, free, res).workers == 5  # 1 + 4: spread, as the GPU count allows
    assert gang_placement(six, free, res) is None  # 5 GPUs free in all


def test_simulator_holds_gang_jobs_to_all_or_nothing(tmp_path):
    jobs = _trace(tmp_path, [(0, 100, 4)])
    cl = _gpus(1, 8)

    class Partial(Policy):
        name = "partial"

        def decide(self, state: ClusterState) -> Decision:
            q = state.queued[0]
            return Decision((Allocation(q.job.name, 2, 1, Placement(((0, 2, 1),))),))

    # a policy that starts a gang on part of its GPUs is corrected by the simulator
    res = simulate(jobs, cl, Partial())
    assert res.jobs.loc[0, "workers"] == 4 and res.jobs.loc[0, "jct"] == pytest.approx(100)
    # and every registered policy runs GPU-only gangs on exactly their GPUs
    rng = np.random.default_rng(3)
    rows = [
        (10 * i, int(rng.integers(100, 3000)), int(rng.choice([1, 2, 4, 8]))) for i in range(12)
    ]
    trace = _trace(tmp_path, rows, "mix.csv")
    for policy in ("fifo", "srtf", "sjf", "tiresias", "drf", "tetris", "optimus", "smd"):
        df = simulate(trace, _gpus(4, 8), policy).jobs
        want = [j.gang_allocation[0] for j in trace]
        assert list(df["workers"]) == want, policy
        assert (df["mean_workers"] == df["workers"]).all(), policy


def test_unfit_gang_jobs_warn_or_raise_and_bad_traces_raise(tmp_path):
    jobs = _trace(tmp_path, [(0, 10, 1), (1, 10, 16)])
    with pytest.warns(UserWarning, match="gang of 16"):
        res = simulate(jobs, _gpus(1, 8), "fifo")
    assert res.skipped == ("philly00001",)
    with pytest.raises(Infeasible, match="gang of 16"):
        simulate(jobs, _gpus(1, 8), "fifo", unfit="raise")
    assert simulate(jobs, _gpus(2, 8), "fifo").summary["jobs_completed"] == 2  # 16 over 2 machines
    for bad in ("0", "two"):
        p = tmp_path / f"bad{bad}.csv"
        p.write_text(f"timestamp,duration,num_gpus\n0,10,1\n1,10,{bad}\n")
        with pytest.raises(InvalidInput, match="num_gpus"):
            load_philly(p, demands="gpu_only")


def test_queued_state_uses_gang_requests():
    cl = _gpus(1, 4)
    big = load_philly(first=1, demands="gpu_only")[0].replace(requested_workers=4, max_workers=4)
    state = ClusterState(0.0, cl, (QueuedJob(big, big.samples),), (), capacity_matrix(cl))
    d = FIFO().decide(state)
    assert [(a.workers, a.ps) for a in d.allocations] == [(4, 1)]


def test_philly_windows_by_index_and_date_and_bad_windows(capsys):
    from smdlab.cli import main

    by_index = load_philly(start=60000, first=5, demands="gpu_only")
    # job 60,000 was submitted at 2017-11-10 11:58:58 UTC, with a few others in the same second
    by_date = load_philly(start="2017-11-10 11:58:58", first=20, demands="gpu_only")
    assert by_index[0].name in [j.name for j in by_date]
    assert by_index[0].name not in [j.name for j in load_philly(start="2017-11-10 11:58:59")]
    assert by_index[0].arrival == 0 and all(j.gpu_only for j in by_index)
    with pytest.raises(InvalidInput, match="holds no job"):
        load_philly(start="2030-01-01")
    with pytest.raises(InvalidInput, match="start"):
        load_philly(start=10**9)
    for argv in (["--load", "0"], ["--load", "-1"], ["--start", "2030-01-01"]):
        assert main(["simulate", "--workload", "philly", "--jobs", "5", *argv]) == 2
        err = capsys.readouterr().err
        assert err.startswith("smdlab: error:") and len(err.strip().splitlines()) == 1
    argv = ["simulate", "--workload", "philly", "--demands", "gpu_only", "--start", "60000"]
    assert main([*argv, "--jobs", "20", "--policy", "fifo", "--json"]) == 0
    out = capsys.readouterr()
    # stderr: the workload line only (no progress bar with --json)
    assert '"fifo"' in out.out and out.err.startswith("smdlab: workload: 20 philly jobs")
    assert out.err.count("\n") == 1
