"""The batch-queue mode: EASY and conservative backfilling, wall-time kills, chains, bad input."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from smdlab.errors import InvalidInput
from smdlab.model.batch import BatchJob, Chain, requested_wall_times
from smdlab.policies.batch import (
    BatchState,
    FixedLead,
    Oracle,
    Provisioner,
    QueuedBatch,
    QueuePolicy,
    Reactive,
    RunningBatch,
    shadow,
)
from smdlab.sim.batch import BatchRun, _SubmitAfter, batch_run, simulate_batch
from smdlab.sim.errors import InvalidDecision
from smdlab.workloads.batch import easy_example


def _job(name, arrival, gpus, duration, requested):
    return BatchJob(name, arrival, gpus, duration, requested)


# The hand-worked EASY example of docs/batch.md ("A worked example").
EXAMPLE = easy_example()


def _starts(res):
    return dict(zip(res.jobs["name"], res.jobs["start"], strict=True))


def test_easy_worked_example_exactly():
    # shadow time 10, extra 2: J3 backfills on the extra GPUs, J4 ends (9) before the shadow,
    # J2 does neither; J1 starts at its reservation, J2 after it.
    res = simulate_batch(EXAMPLE, 10, 100, "easy")
    assert _starts(res) == {"A": 0, "J1": 10, "J2": 30, "J3": 1, "J4": 1}
    fifo = simulate_batch(EXAMPLE, 10, 100, "fifo")
    assert _starts(fifo) == {"A": 0, "J1": 10, "J2": 30, "J3": 30, "J4": 30}
    cons = simulate_batch(EXAMPLE, 10, 100, "conservative")
    assert _starts(cons) == {"A": 0, "J1": 10, "J2": 30, "J3": 1, "J4": 1}


def test_shadow_and_extra_of_the_example():
    assert shadow(8, 4, [(10.0, 6)]) == (10.0, 2)
    assert shadow(11, 4, [(10.0, 6)]) == (math.inf, 0)


def test_wall_time_kills_and_requested_times_drive_backfill():
    # B over-runs its request and is killed at it; C's estimate (not its true 2 s) keeps it out.
    jobs = [_job("B", 0, 2, 50, 10), _job("H", 1, 4, 5, 5), _job("C", 1, 2, 2, 20)]
    res = simulate_batch(jobs, 4, 100, "easy")
    row = res.jobs.set_index("name")
    assert row.loc["B", "end"] == 10 and bool(row.loc["B", "killed"])
    assert row.loc["C", "start"] == 15 and row.loc["H", "start"] == 10


@st.composite
def _states(draw):
    total = draw(st.integers(4, 32))
    running, used = [], 0
    for k in range(draw(st.integers(0, 6))):
        g = draw(st.integers(1, max(1, total // 3)))
        if used + g > total:
            break
        used += g
        running.append(RunningBatch(f"r{k}", g, 0.0, draw(st.floats(1, 100))))
    queued = [
        QueuedBatch(f"q{k}", draw(st.integers(1, total)), draw(st.floats(1, 100)), float(k))
        for k in range(draw(st.integers(1, 10)))
    ]
    return BatchState(0.5, total, total - used, tuple(queued), tuple(running))


def _head_start(head: QueuedBatch, state: BatchState, started: list[QueuedBatch]) -> float:
    ends = sorted(
        [(r.requested_end, r.gpus) for r in state.running]
        + [(state.time + q.requested_s, q.gpus) for q in started]
    )
    free = state.free_gpus - sum(q.gpus for q in started)
    return state.time if head.gpus <= free else shadow(head.gpus, free, ends)[0]


@settings(max_examples=300, deadline=None, derandomize=True)
@given(_states(), st.sampled_from(["easy", "conservative"]))
def test_no_backfilled_job_delays_the_head_reservation(state, backfill):
    names = QueuePolicy(backfill).decide(state)
    by_name = {q.name: q for q in state.queued}
    chosen = [by_name[n] for n in names]
    assert sum(q.gpus for q in chosen) <= state.free_gpus
    # the in-order prefix that fits starts; the first job after it is the head
    prefix, free = [], state.free_gpus
    for q in state.queued:
        if q.gpus > free:
            break
        prefix.append(q)
        free -= q.gpus
    assert [q.name for q in chosen[: len(prefix)]] == [q.name for q in prefix]
    if len(prefix) == len(state.queued):
        return
    head = state.queued[len(prefix)]
    assert head.name not in names
    before = _head_start(head, state, prefix)
    after = _head_start(head, state, chosen)
    assert after <= before


def test_fair_share_orders_by_usage():
    state = BatchState(
        0.0,
        4,
        2,
        (QueuedBatch("a", 2, 5, 0, "heavy"), QueuedBatch("b", 2, 5, 1, "light")),
        (),
        {"heavy": 100.0, "light": 1.0},
    )
    assert QueuePolicy("easy", fair_share=True).decide(state) == ("b",)
    assert QueuePolicy("easy").decide(state) == ("a",)


def test_fair_share_run_completes_every_job():
    rng = np.random.default_rng(3)
    jobs = [
        BatchJob(f"j{k}", float(k * 3), int(rng.integers(1, 5)), 20.0, 30.0, "ab"[k % 2])
        for k in range(40)
    ]
    res = simulate_batch(jobs, 8, 100, "fair_easy")
    assert res.jobs["end"].notna().all()
    assert (res.jobs["start"] >= res.jobs["submit"]).all()


# A chain of 20 s on 2 of 4 GPUs, limit 10 s; background B (4 GPUs, 10 s) arrives at 5.
CHAIN = Chain("c", 0.0, 2, 20.0)
BACKGROUND = [_job("B", 5, 4, 10, 10)]


def _chain_row(provisioner):
    res = simulate_batch(
        BACKGROUND, 4, 10, "fifo", chains=[CHAIN], provisioner=provisioner, step_s=1
    )
    return res.chains.iloc[0]


def test_reactive_chain_is_interrupted_by_the_queue():
    row = _chain_row(Reactive())
    # link 1: 0-10; B starts 10-20; link 2 waits behind it: 20-30
    assert (row.links, row.interruptions, row.interruption_s) == (2, 1, 10.0)
    assert row.completion_s == 30 and row.overlap_gpu_h == 0


def test_fixed_lead_chain_trades_overlap_for_no_interruption():
    row = _chain_row(FixedLead(9))
    # link 2 at 1-11, link 3 queued at 2 ahead of B, starts 10, runs to 20: 10 s of 2 GPUs doubled
    assert (row.links, row.interruptions, row.completion_s) == (3, 0, 20.0)
    assert row.overlap_gpu_h == pytest.approx(20 / 3600)


def test_oracle_looks_one_step_ahead():
    # At t=4 deferring link 2 to t=5 would queue it behind B: it goes at 4 (runs 4-14). Link 3
    # is then due at once (deferring it is as bad) but joins at 5 behind B: 24-30. The oracle
    # knows each successor's wait, not the best plan of all links (the lead of 9 s beats it here).
    row = _chain_row(Oracle())
    assert (row.links, row.interruptions, row.interruption_s, row.completion_s) == (3, 1, 10, 30)
    assert row.overlap_gpu_h == pytest.approx(12 / 3600)


def test_chain_without_background_runs_back_to_back():
    res = simulate_batch([], 4, 10, "easy", chains=[Chain("c", 0.0, 2, 25.0)], step_s=1)
    row = res.chains.iloc[0]
    assert (row.links, row.interruptions, row.completion_s) == (3, 0, 25.0)


class _Bad(Provisioner):
    name = "bad"

    def __init__(self, target):
        self.target = target

    def decide(self, state):
        return (self.target,)


def test_bad_input_lines():
    with pytest.raises(InvalidInput, match="requested_s of job 'x' must be a wall time > 0"):
        BatchJob("x", 0, 1, 10, 0)
    with pytest.raises(InvalidInput, match="over max_links 2"):
        simulate_batch([], 4, 10, chains=[Chain("c", 0, 1, 100, max_links=2)])
    with pytest.raises(InvalidInput, match="below chain 'c''s minimum run 60 s"):
        simulate_batch([], 4, 10, chains=[Chain("c", 0, 1, 100, min_run_s=60)])
    with pytest.raises(InvalidDecision, match=r"successor for chain 'gone'.*not a chain"):
        simulate_batch([], 4, 10, chains=[CHAIN], provisioner=_Bad("gone"), step_s=1)
    ended = [Chain("c", 0, 1, 5.0), Chain("d", 0, 1, 30.0)]
    with pytest.raises(InvalidDecision, match=r"chain 'c'.*has ended"):
        simulate_batch([], 4, 10, chains=ended, provisioner=_Bad("c"), step_s=1)
    with pytest.raises(InvalidInput, match="queue must be a name or have decide"):
        simulate_batch([], 4, 10, object())
    with pytest.raises(InvalidInput, match="queue must be one of fifo, easy"):
        simulate_batch([], 4, 10, "lifo")
    with pytest.raises(InvalidInput, match="requested_s must be at most the wall-time limit"):
        simulate_batch([_job("y", 0, 1, 5, 50)], 4, 10)


def test_requested_times_follow_the_f_model():
    d = np.array([10.0, 100.0, 1e6])
    req = requested_wall_times(d, 1000.0, np.random.default_rng(0), 3.0)
    assert (req[:2] >= d[:2]).all() and (req[:2] <= 3 * d[:2]).all() and req[2] == 1000.0


def _random_background(seed: int, n: int, gpus: int, limit: float) -> list[BatchJob]:
    rng = np.random.default_rng(seed)
    size = rng.choice([1, 1, 2, 4, 8], size=n)
    dur = rng.exponential(limit / 3, size=n) + 1
    req = requested_wall_times(dur, limit, rng, 3.0)
    work = float((size * np.minimum(dur, req)).mean())
    arrivals = np.cumsum(rng.exponential(work / (rng.uniform(0.7, 1.2) * gpus), size=n))
    arrivals = np.floor(arrivals / 600) * 600  # some arrive together
    return [
        BatchJob(f"j{k}", float(a), int(g), float(d), float(r))
        for k, (a, g, d, r) in enumerate(zip(arrivals, size, dur, req, strict=True))
    ]


@pytest.mark.parametrize("seed", range(6))
def test_kept_conservative_reservations_give_the_same_schedule(seed):
    # The policy keeps its reservations between decisions and stops reserving once no later
    # job can start now; reserving every queued job again at every decision must agree.
    limit = 3600.0
    jobs = _random_background(seed, 250, 16, limit)
    chains = [Chain("c0", jobs[60].arrival, 2, 3 * limit)] if seed % 2 else []
    prov = Oracle() if seed % 2 else None  # the oracle's forks share the policy object
    kept = simulate_batch(jobs, 16, limit, "conservative", chains=chains, provisioner=prov)
    again = simulate_batch(
        jobs,
        16,
        limit,
        QueuePolicy("conservative", keep_reservations=False),
        chains=chains,
        provisioner=Oracle() if seed % 2 else None,
    )
    assert kept.jobs.equals(again.jobs)
    assert kept.jobs["wait_s"].max() > 0  # the queue did fill


@settings(max_examples=200, deadline=None, derandomize=True)
@given(_states(), st.sampled_from(["none", "easy", "conservative"]))
def test_given_smallest_queued_job_decides_the_same(state, backfill):
    # the simulator passes the fewest queued GPUs (kept per event) instead of a scan of the queue
    smallest = min(q.gpus for q in state.queued)
    given_min = dataclasses.replace(state, min_queued_gpus=smallest)
    assert given_min.smallest_queued() == state.smallest_queued() == smallest
    assert QueuePolicy(backfill).decide(given_min) == QueuePolicy(backfill).decide(state)


def _full_probe(run: BatchRun, chain: str, t: float) -> bool:
    """The oracle's question answered by running the fork until the successor starts."""
    fork = run.fork()
    fork.provisioner = _SubmitAfter(chain, t)
    cr = fork.chains[chain]
    end = cr.cover_end
    fork.run(until_submitted=chain)
    assert cr.pending is not None
    name = cr.pending
    fork.run(until=name)
    return fork.start[name] > end


@pytest.mark.parametrize("seed", range(3))
def test_oracle_probe_stopped_at_the_link_end_agrees_with_the_full_fork(seed):
    limit = 3600.0
    jobs = _random_background(seed, 200, 16, limit)
    chains = [Chain(f"c{k}", jobs[40 + 30 * k].arrival, 2 * k + 1, 3 * limit) for k in range(3)]
    run = batch_run(jobs, 16, limit, "easy", chains=chains, provisioner=Oracle(), step_s=600)
    gen = run.steps()
    answers = []
    try:
        state = next(gen)
        while True:
            for v in state.chains:
                if v.time_left > 0:
                    assert v.probe is not None
                    answers.append(v.probe())
                    assert answers[-1] == _full_probe(run, v.name, state.time)
            state = gen.send(run.provisioner.decide(state))
    except StopIteration:
        pass
    assert True in answers and False in answers  # both answers occur
