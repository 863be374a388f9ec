"""The batch-queue mode: a Slurm-like queue of rigid GPU jobs with wall-time limits, and chains.

Why a mode of its own (docs/batch.md): the main simulator's jobs run at a speed that depends on
their allocation, are never killed and all arrive on a fixed schedule; here a job holds a fixed
GPU count for its true duration or until its requested wall time, whichever is first, and a
provisioner adds a chain's next link while the run goes on. The rules stay policies: a queue
policy returns the jobs to start, a provisioner the chains to extend; neither owns the loop.

Exact next-event time. At each event time: jobs whose run ends then leave; the provisioner is
asked about chains awaiting a decision (at multiples of ``step_s`` and at a link's end); jobs
submitted then join the queue; the queue policy decides.
"""

from __future__ import annotations

import copy
import heapq
import math
import time
from collections.abc import Callable, Generator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from smdlab.errors import InvalidInput, check_int, check_positive
from smdlab.model.batch import BatchJob, Chain
from smdlab.policies.batch.provision import (
    FEATURES,
    ChainView,
    Provisioner,
    ProvisionState,
    Reactive,
)
from smdlab.policies.batch.queue import (
    BatchState,
    QueuedBatch,
    QueuePolicy,
    RunningBatch,
    queue_policy,
)
from smdlab.sim.errors import InvalidDecision

__all__ = [
    "CHAIN_COLUMNS",
    "DEFAULT_STEP_S",
    "BatchResult",
    "BatchRun",
    "batch_run",
    "simulate_batch",
]

# Seconds between a provisioner's decision points (Mirage's agent acts at intervals; ours).
DEFAULT_STEP_S = 600.0
_END, _ARRIVAL = 0, 1
CHAIN_COLUMNS = (
    "chain",
    "gpus",
    "length_s",
    "arrival",
    "links",
    "first_wait_s",
    "interruptions",
    "interruption_s",
    "overlap_gpu_h",
    "completion_s",
)


@dataclass
class _ChainRun:
    """A chain's progress: links, the time until which running links serve it, service so far."""

    chain: Chain
    links: int = 0
    started: int = 0
    pending: str | None = None
    cover_end: float = -math.inf
    covered: float = 0.0
    final: bool = False
    done: float | None = None
    first_start: float | None = None
    interruptions: int = 0
    interruption_s: float = 0.0
    run_s: float = 0.0


@dataclass
class BatchResult:
    """A batch run: per job, per chain, a summary, the wait features (if recorded), CPU seconds."""

    jobs: pd.DataFrame
    chains: pd.DataFrame
    summary: dict[str, float]
    features: pd.DataFrame | None = None
    cpu_s: float = 0.0
    extra: dict[str, Any] = field(default_factory=dict)


class _SubmitAfter(Reactive):
    """The oracle's fork: submit one chain's successor at the first decision point after
    ``after``; every other chain reactively."""

    def __init__(self, chain: str, after: float) -> None:
        self.chain, self.after = chain, after

    def submit(self, view: ChainView, state: ProvisionState) -> bool:
        """Reactive, except the probed chain goes at its first decision point after ``after``."""
        if view.name == self.chain:
            return state.time > self.after or view.time_left <= 0
        return super().submit(view, state)


class BatchRun:
    """One run's state and loop (``simulate_batch``, ``batch_run``): ``run`` to the end, or
    ``steps`` to pause at every provisioning decision point; ``fork`` copies it for the oracle."""

    def __init__(
        self,
        jobs: Sequence[BatchJob],
        chains: Sequence[Chain],
        gpus: int,
        limit_s: float,
        queue: QueuePolicy | Any,
        provisioner: Provisioner | None,
        step_s: float,
        record_features: bool,
    ) -> None:
        self.gpus = self.free = gpus
        self.limit_s = limit_s
        self.queue = queue
        self.provisioner = provisioner
        self.step_s = step_s
        self.jobs: dict[str, BatchJob] = {}
        self.heap: list[tuple[float, int, int, str]] = []
        self.seq = 0
        for j in sorted(jobs, key=lambda j: j.arrival):
            self._check_job(j)
            self._push(j.arrival, _ARRIVAL, j.name)
            self.jobs[j.name] = j
        self.chains: dict[str, _ChainRun] = {}
        self.link_of: dict[str, str] = {}
        self.queued: dict[str, QueuedBatch] = {}
        self.running: dict[str, RunningBatch] = {}
        self.start: dict[str, float] = {}
        self.end: dict[str, float] = {}
        self.submit: dict[str, float] = {}
        # queue and running aggregates (the wait features): jobs, GPUs, GPU-seconds requested
        self.q_jobs = self.q_gpus = 0
        self.q_gpu_s = 0.0
        self.q_sizes: dict[int, int] = {}  # queued jobs per GPU count: the smallest in O(sizes)
        self.r_gpus = 0
        self.r_gpu_end = 0.0  # sum over running jobs of GPUs x requested end
        self.features: dict[str, list[float]] | None = {} if record_features else None
        self.fair = bool(getattr(queue, "fair_share", False))
        # a QueuePolicy's own decide, without fair share (whose usage decays at each decision)
        self.plain_queue = (
            not self.fair and getattr(type(queue), "decide", None) is QueuePolicy.decide
        )
        self.half_life = float(getattr(queue, "half_life_s", 1.0))
        self.usage: dict[str, float] = {}
        self.acct_gpus: dict[str, int] = {}
        self.usage_t = 0.0
        self.next_tick = math.inf
        self.t = -math.inf  # the last event time run
        self.resume = False
        for c in chains:
            self.add_chain(c)

    def add_chain(self, c: Chain) -> None:
        """Add chain ``c``: its first link is submitted at its arrival, which may not be earlier
        than the run's time (a run paused by ``steps(before=c.arrival)`` takes it exactly as if
        it had been given at the start)."""
        c.check_limit(self.limit_s)
        if c.name in self.chains or c.gpus > self.gpus:
            raise InvalidInput(
                f"chain {c.name!r}: names must be unique and gpus at most the cluster's {self.gpus}"
            )
        if c.arrival <= self.t:
            raise InvalidInput(
                f"chain {c.name!r}: arrival {c.arrival:g} must be after the run's time {self.t:g}"
            )
        self.chains[c.name] = _ChainRun(c)
        self._submit_link(self.chains[c.name], c.arrival)

    def _check_job(self, j: BatchJob) -> None:
        if j.name in self.jobs:
            raise InvalidInput(f"job names must be unique; {j.name!r} appears twice")
        if j.gpus > self.gpus:
            raise InvalidInput(
                f"job {j.name!r}: gpus must be at most the cluster's {self.gpus}, got {j.gpus}"
            )
        if j.requested_s > self.limit_s * (1 + 1e-12):
            raise InvalidInput(
                f"job {j.name!r}: requested_s must be at most the wall-time limit "
                f"{self.limit_s:g} s, got {j.requested_s:g}"
            )

    def _push(self, t: float, kind: int, name: str) -> None:
        self.seq += 1
        heapq.heappush(self.heap, (t, kind, self.seq, name))

    def _submit_link(self, cr: _ChainRun, t: float) -> None:
        c = cr.chain
        if cr.links >= c.max_links:
            raise InvalidInput(
                f"chain {c.name!r}: a link {cr.links + 1} is over max_links {c.max_links}"
            )
        cr.links += 1
        name = f"{c.name}#{cr.links}"
        # A link is a service: it runs until its wall time unless the chain completes first.
        self.jobs[name] = BatchJob(name, t, c.gpus, self.limit_s, self.limit_s, c.account)
        self.link_of[name] = c.name
        cr.pending = name
        self._push(t, _ARRIVAL, name)

    def queue_features(self, t: float) -> tuple[float, ...]:
        """``FEATURES[2:]`` of the queue and the running set at time ``t``."""
        left = self.r_gpu_end - t * self.r_gpus
        return (
            float(self.q_jobs),
            float(self.q_gpus),
            self.q_gpu_s,
            float(self.r_gpus),
            max(left, 0.0),
            float(self.free),
        )

    def _decay(self, t: float) -> None:
        dt = t - self.usage_t
        if dt <= 0:
            return
        f = 2.0 ** (-dt / self.half_life)
        gain = self.half_life / math.log(2) * (1 - f)
        for a in set(self.usage) | set(self.acct_gpus):
            self.usage[a] = self.usage.get(a, 0.0) * f + self.acct_gpus.get(a, 0) * gain
        self.usage_t = t

    def _start(self, name: str, t: float) -> None:
        j = self.jobs[name]
        q = self.queued.pop(name)
        self.q_jobs -= 1
        self.q_gpus -= j.gpus
        self.q_gpu_s -= j.gpus * j.requested_s
        left = self.q_sizes[j.gpus] - 1
        if left:
            self.q_sizes[j.gpus] = left
        else:
            del self.q_sizes[j.gpus]
        self.free -= j.gpus
        self.start[name] = t
        chain = self.link_of.get(name)
        end = t + j.run_s if chain is None else self._start_link(self.chains[chain], t)
        req_end = t + j.requested_s
        self.running[name] = RunningBatch(name, j.gpus, t, req_end, q.account)
        self.r_gpus += j.gpus
        self.r_gpu_end += j.gpus * req_end
        if self.fair:
            self._decay(t)
            self.acct_gpus[j.account] = self.acct_gpus.get(j.account, 0) + j.gpus
        self._push(end, _END, name)

    def _start_link(self, cr: _ChainRun, t: float) -> float:
        """A chain's link starts at t: its end, and the chain's service and interruptions."""
        c, w = cr.chain, self.limit_s
        cr.started += 1
        cr.pending = None
        if cr.started == 1:
            cr.first_start = t
        if t >= cr.cover_end:
            if cr.started > 1 and t > cr.cover_end:
                cr.interruptions += 1
                cr.interruption_s += t - cr.cover_end
            end = t + min(w, c.length_s - cr.covered)
            cr.covered += end - t
        else:  # overlap: the new link serves from where the running ones stop
            end = min(t + w, cr.cover_end + c.length_s - cr.covered)
            cr.covered += max(end - cr.cover_end, 0.0)
        cr.cover_end = max(cr.cover_end, end)
        cr.run_s += end - t
        cr.final = cr.covered >= c.length_s * (1 - 1e-12)
        return end

    def _finish(self, name: str, t: float) -> None:
        r = self.running.pop(name)
        self.free += r.gpus
        self.r_gpus -= r.gpus
        self.r_gpu_end -= r.gpus * r.requested_end
        self.end[name] = t
        if self.fair:
            self._decay(t)
            self.acct_gpus[r.account] -= r.gpus
        chain = self.link_of.get(name)
        if chain is not None:
            cr = self.chains[chain]
            if cr.final and t >= cr.cover_end and cr.done is None:
                cr.done = t

    def _arrive(self, name: str, t: float) -> None:
        j = self.jobs[name]
        if self.features is not None:
            self.features[name] = [float(j.gpus), j.requested_s, *self.queue_features(t)]
        self.queued[name] = QueuedBatch(name, j.gpus, j.requested_s, t, j.account)
        self.submit[name] = t
        self.q_jobs += 1
        self.q_gpus += j.gpus
        self.q_gpu_s += j.gpus * j.requested_s
        self.q_sizes[j.gpus] = self.q_sizes.get(j.gpus, 0) + 1

    def _awaiting(self) -> list[_ChainRun]:
        """Chains whose running link has no successor and does not complete the chain."""
        return [
            cr
            for cr in self.chains.values()
            if cr.started and cr.pending is None and not cr.final and cr.done is None
        ]

    def decision_point(self, t: float) -> ProvisionState | None:
        """What the provisioner sees at time ``t``, or None if no chain awaits a decision."""
        waiting = self._awaiting()
        if not waiting:
            return None
        probe = getattr(self.provisioner, "needs_probe", False)
        views = tuple(
            ChainView(
                cr.chain.name,
                cr.chain.gpus,
                cr.links,
                cr.cover_end - t,
                self.limit_s,
                self._probe(cr.chain.name, t) if probe else None,
            )
            for cr in waiting
        )
        return ProvisionState(t, self.step_s, views, self.queue_features(t))

    def apply(self, state: ProvisionState, chosen: Sequence[str]) -> None:
        """Submit the successors of the chains ``chosen`` at ``state``'s decision point, then
        those of the chains whose running link has ended."""
        t = state.time
        names = {v.name for v in state.chains}
        for n in dict.fromkeys(chosen):
            if n not in names:
                self._reject_successor(n, t, self.provisioner)
            self._submit_link(self.chains[n], t)
        for v in state.chains:  # a link that has ended is followed at once (no chain stops)
            cr = self.chains[v.name]
            if cr.pending is None and cr.cover_end <= t:
                self._submit_link(cr, t)

    def _reject_successor(self, n: str, t: float, provisioner: Provisioner | None) -> None:
        cr = self.chains.get(n)
        who = f"provisioner {getattr(provisioner, 'name', provisioner)!r}"
        if cr is None:
            why = "is not a chain of this run"
        elif cr.done is not None or cr.final:
            why = "has ended (its running link completes it); it takes no successor"
        elif cr.pending is not None:
            why = f"already has a successor waiting ({cr.pending!r})"
        else:
            why = "has no running link yet"
        raise InvalidDecision(
            f"{who} submitted a successor for chain {n!r} at t={t:g}, which {why}"
        )

    def _probe(self, chain: str, t: float) -> Callable[[], bool]:
        """Would ``chain`` be interrupted if its successor waited for the next decision point?
        (Run in a fork of the run.)"""

        def interrupted() -> bool:
            fork = self.fork()
            fork.provisioner = _SubmitAfter(chain, t)
            cr = fork.chains[chain]
            end = cr.cover_end
            fork.run(until_submitted=chain)
            name = cr.pending
            assert name is not None  # the running link's end is a decision point
            # Interrupted iff the successor starts after ``end``: once every event up to ``end``
            # has run the answer is known, so the fork stops there (or at the start, if earlier).
            fork.run(until=name, before=math.nextafter(end, math.inf))
            return fork.start.get(name, math.inf) > end

        return interrupted

    def copy(self) -> BatchRun:
        """An independent copy of the run in its present state (features are not copied)."""
        new = copy.copy(self)
        for attr in (
            "heap",
            "jobs",
            "link_of",
            "queued",
            "running",
            "start",
            "end",
            "submit",
            "q_sizes",
        ):
            setattr(new, attr, copy.copy(getattr(self, attr)))
        new.usage, new.acct_gpus = dict(self.usage), dict(self.acct_gpus)
        new.chains = {k: copy.copy(v) for k, v in self.chains.items()}
        new.features = None
        return new

    def fork(self) -> BatchRun:
        """A copy to run forward from a decision point (other chains provisioned reactively)."""
        new = self.copy()
        new.provisioner = Reactive()
        new.resume = True  # forked mid-step: jobs that ended now may not have been replaced yet
        return new

    def _state(self, t: float, smallest: int) -> BatchState:
        if self.fair:
            self._decay(t)
        return BatchState(
            t,
            self.gpus,
            self.free,
            tuple(self.queued.values()),
            tuple(self.running.values()),
            self.usage,
            smallest,
        )

    def _decide(self, t: float) -> None:
        smallest = min(self.q_sizes)
        if self.free < smallest and self.plain_queue:
            return  # QueuePolicy.decide would return () without reading the state
        names = self.queue.decide(self._state(t, smallest))
        need = 0
        for n in names:
            if n not in self.queued:
                raise InvalidDecision(f"queue policy started {n!r}, which is not queued at t={t:g}")
            need += self.jobs[n].gpus
        if need > self.free or len(set(names)) != len(names):
            raise InvalidDecision(
                f"queue policy started jobs needing {need} GPUs at t={t:g}; {self.free} are free"
            )
        for n in names:
            self._start(n, t)

    def steps(
        self,
        until: str | None = None,
        until_submitted: str | None = None,
        before: float = math.inf,
        stop: Callable[[], bool] | None = None,
    ) -> Generator[ProvisionState, Sequence[str], None]:
        """Run events, pausing at every provisioning decision point: yields what the
        provisioner sees and takes the names of the chains to extend (``apply``). Ends with the
        events, or once job ``until`` has started, chain ``until_submitted`` has a successor
        waiting, the next event is at or after ``before``, or ``stop()`` is true."""
        heap = self.heap
        while True:
            t_ev = heap[0][0] if heap else math.inf
            t = min(t_ev, self.next_tick)
            if t == math.inf or t >= before:
                return
            self.t = t
            changed, self.resume = self.resume, False
            while heap and heap[0][0] == t and heap[0][1] == _END:
                self._finish(heapq.heappop(heap)[3], t)
                changed = True
            if self.provisioner is not None:
                state = self.decision_point(t)
                if state is not None:
                    self.apply(state, (yield state))
                if until_submitted is not None and self.chains[until_submitted].pending:
                    return
            while heap and heap[0][0] == t:
                self._arrive(heapq.heappop(heap)[3], t)
                changed = True
            if changed and self.queued and self.free > 0:
                self._decide(t)
                if until is not None and until in self.start:
                    return
            self.next_tick = (
                (math.floor(t / self.step_s + 1e-9) + 1) * self.step_s
                if self.provisioner is not None and self._awaiting()
                else math.inf
            )
            if stop is not None and stop():
                return

    def run(
        self,
        until: str | None = None,
        until_submitted: str | None = None,
        before: float = math.inf,
    ) -> None:
        """Run events to the end (or until job ``until`` has started, chain ``until_submitted``
        has a successor waiting, or the next event is at or after ``before``), the provisioner
        deciding at every pause."""
        gen = self.steps(until, until_submitted, before)
        provisioner = self.provisioner
        try:
            state = next(gen)
            while True:
                assert provisioner is not None  # only a run with a provisioner pauses
                state = gen.send(provisioner.decide(state))
        except StopIteration:
            return

    def result(self, cpu_s: float) -> BatchResult:
        """Tables and summary of the finished run."""
        return _tables(self, cpu_s)


def _tables(run: BatchRun, cpu_s: float) -> BatchResult:
    """Tables and summary of a finished run."""
    names = list(run.jobs)
    start = np.array([run.start.get(n, math.nan) for n in names])
    end = np.array([run.end.get(n, math.nan) for n in names])
    jobs = pd.DataFrame(
        {
            "name": names,
            "chain": [run.link_of.get(n, "") for n in names],
            "gpus": [run.jobs[n].gpus for n in names],
            "submit": [run.submit.get(n, run.jobs[n].arrival) for n in names],
            "start": start,
            "end": end,
            "requested_s": [run.jobs[n].requested_s for n in names],
            "killed": [
                n not in run.link_of and run.jobs[n].duration_s > run.jobs[n].requested_s
                for n in names
            ],
        }
    )
    jobs["wait_s"] = jobs["start"] - jobs["submit"]
    rows = []
    for cr in run.chains.values():
        c = cr.chain
        overlap = c.gpus * max(cr.run_s - cr.covered, 0.0) / 3600
        rows.append(
            (
                c.name,
                c.gpus,
                c.length_s,
                c.arrival,
                cr.links,
                (cr.first_start if cr.first_start is not None else math.nan) - c.arrival,
                cr.interruptions,
                cr.interruption_s,
                overlap,
                (cr.done if cr.done is not None else math.nan) - c.arrival,
            )
        )
    chains = pd.DataFrame(rows, columns=list(CHAIN_COLUMNS))
    bg = jobs[jobs["chain"] == ""]
    span = float(np.nanmax(end) - jobs["submit"].min()) if len(jobs) else 0.0
    busy = float(np.nansum((end - start) * jobs["gpus"].to_numpy()))
    summary = {
        "jobs": float(len(bg)),
        "mean_wait_s": float(bg["wait_s"].mean()) if len(bg) else math.nan,
        "killed": float(bg["killed"].sum()),
        "utilization": busy / (run.gpus * span) if span > 0 else math.nan,
        "chains": float(len(chains)),
        "mean_interruptions": float(chains["interruptions"].mean()) if len(chains) else math.nan,
        "zero_interruption_share": float((chains["interruptions"] == 0).mean())
        if len(chains)
        else math.nan,
    }
    feats = None
    if run.features is not None:
        fnames = [n for n in run.features if n in run.start]
        feats = pd.DataFrame([run.features[n] for n in fnames], columns=list(FEATURES))
        feats.insert(0, "name", fnames)
        feats["submit"] = [run.submit[n] for n in fnames]
        feats["wait_s"] = [run.start[n] - run.submit[n] for n in fnames]
    return BatchResult(jobs, chains, summary, feats, cpu_s)


def simulate_batch(
    jobs: Sequence[BatchJob],
    gpus: int,
    limit_s: float,
    queue: str | QueuePolicy = "easy",
    *,
    chains: Sequence[Chain] = (),
    provisioner: Provisioner | None = None,
    step_s: float = DEFAULT_STEP_S,
    record_features: bool = False,
) -> BatchResult:
    """Run batch ``jobs`` and ``chains`` on a pool of ``gpus`` GPUs with wall-time limit
    ``limit_s`` under a queue policy (a name of ``BATCH_QUEUES`` or a policy object) and a
    provisioner (default: reactive). record_features: keep every job's wait features
    (``FEATURES``) at submission and its wait, to train wait predictors."""
    run = batch_run(
        jobs,
        gpus,
        limit_s,
        queue,
        chains=chains,
        provisioner=provisioner,
        step_s=step_s,
        record_features=record_features,
    )
    t0 = time.process_time()
    run.run()
    return run.result(time.process_time() - t0)


def batch_run(
    jobs: Sequence[BatchJob],
    gpus: int,
    limit_s: float,
    queue: str | QueuePolicy = "easy",
    *,
    chains: Sequence[Chain] = (),
    provisioner: Provisioner | None = None,
    step_s: float = DEFAULT_STEP_S,
    record_features: bool = False,
) -> BatchRun:
    """A batch run not yet started, as ``simulate_batch`` sets it up: drive it with ``run()``,
    or with ``steps()`` to make the provisioning decisions from outside."""
    gpus = check_int("gpus", gpus, 1)
    limit_s = check_positive("limit_s", limit_s)
    step_s = check_positive("step_s", step_s)
    if not isinstance(queue, str) and not all(
        callable(getattr(queue, m, None)) for m in ("decide", "reset")
    ):
        raise InvalidInput(f"queue must be a name or have decide(state) and reset(), got {queue!r}")
    policy = queue_policy(queue) if isinstance(queue, str) else queue
    if chains and provisioner is None:
        provisioner = Reactive()
    policy.reset()
    if provisioner is not None:
        provisioner.reset()
    return BatchRun(jobs, chains, gpus, limit_s, policy, provisioner, step_s, record_features)
