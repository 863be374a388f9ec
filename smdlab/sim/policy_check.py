"""``check_policy``: run a policy on a few small seeded worlds and report where it breaks the contract.

In the spirit of Gymnasium's ``check_env`` (Farama-Foundation/Gymnasium,
gymnasium/utils/env_checker.py; MIT License), written anew for policies: every decision is checked, independently of the
simulator's own accounting, before the simulator applies it, and every run is checked after it
ends. One line per kind of problem (the first occurrence, with the world, mode and time):

- ``contract``: a setting (``execution``, ``executions``, ``slot_s``, ...) or ``decide`` that
  breaks the ``Policy`` protocol, or ``decide`` returning something that is not a Decision;
- ``capacity``: a decision that puts more on a machine than it has;
- ``unknown job``: a decision that names a job that is neither queued nor running;
- ``mode``: a decision that preempts or resizes where its execution mode forbids it, or a mode
  the policy declares but cannot run in;
- ``lost job``: a job that never completes (the policy leaves it waiting on an idle cluster) or
  whose samples are not all processed;
- ``determinism``: two runs of the same world differ (state kept across ``reset()``, or an
  unseeded random source);
- ``error``: anything else ``decide`` raises.

The simulator is imported here, so this lives in the sim layer (``smdlab.sim.check_policy``).
"""

from __future__ import annotations

import contextlib
import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from smdlab.errors import InvalidInput, SmdlabError, check_int
from smdlab.model.cluster import Cluster, Machine
from smdlab.model.job import Job
from smdlab.model.pipeline import with_worker_resources
from smdlab.policies.base import (
    Allocation,
    ClusterState,
    Decision,
    Execution,
    Policy,
    policy_settings,
)
from smdlab.policies.registry import get_policy
from smdlab.sim.result import SimResult
from smdlab.sim.simulator import CapacityExceeded, InvalidDecision, Stalled, simulate
from smdlab.solve.instance import task_vectors
from smdlab.testing import random_job

__all__ = ["PROBLEM_KINDS", "PolicyProblem", "World", "audit_decision", "check_policy", "worlds"]

PROBLEM_KINDS = (
    "contract",
    "capacity",
    "unknown job",
    "mode",
    "lost job",
    "determinism",
    "error",
)
TOL = 1e-9


class PolicyProblem(SmdlabError):
    """A decision that breaks the policy contract; ``kind`` is one of ``PROBLEM_KINDS``."""

    def __init__(self, kind: str, message: str):
        super().__init__(message)
        self.kind = kind


@dataclass(frozen=True)
class World:
    """A small seeded cluster and workload ``check_policy`` runs a policy on."""

    name: str
    cluster: Cluster
    jobs: tuple[Job, ...]


_RES = ("gpu", "cpu", "mem_gb", "bw_gbps")


def worlds(seed: int = 0) -> tuple[World, ...]:
    """Three small worlds: jobs arriving over time on a mixed cluster (one CPU-only machine),
    a batch arriving at once on two machines, and a queue on one machine."""
    rng = np.random.default_rng(seed)

    def jobs(n: int, spread: float, caps: int) -> tuple[Job, ...]:
        out = []
        for i in range(n):
            out.append(
                random_job(
                    rng,
                    name=f"j{i}",
                    arrival=float(np.round(rng.uniform(0, spread), 1)) if spread else 0.0,
                    samples=float(rng.integers(20_000, 200_000)),
                    worker_demand={
                        "gpu": float(rng.choice([1, 1, 2])),
                        "cpu": float(rng.integers(1, 5)),
                        "mem_gb": float(rng.choice([4, 16])),
                        "bw_gbps": float(rng.choice([5, 10, 25])),
                    },
                    ps_demand={
                        "cpu": float(rng.integers(1, 5)),
                        "mem_gb": float(rng.choice([4, 8])),
                        "bw_gbps": float(rng.choice([5, 10, 25])),
                    },
                    max_workers=int(rng.integers(1, caps + 1)),
                    max_ps=int(rng.integers(1, caps + 1)),
                )
            )
        return tuple(sorted(out, key=lambda j: j.arrival))

    mixed = Cluster(
        (
            Machine("big", {"gpu": 8, "cpu": 32, "mem_gb": 256, "bw_gbps": 100}),
            Machine("small", {"gpu": 2, "cpu": 12, "mem_gb": 64, "bw_gbps": 25}),
            Machine("cpu", {"gpu": 0, "cpu": 24, "mem_gb": 128, "bw_gbps": 40}),
        ),
        _RES,
    )
    return (
        World("arrivals on a mixed cluster", mixed, jobs(8, 300.0, 4)),
        World(
            "a batch on two machines",
            Cluster.homogeneous(2, gpu=4, cpu=32, mem_gb=128, bw_gbps=100),
            jobs(6, 0.0, 4),
        ),
        World(
            "a queue on one machine",
            Cluster.homogeneous(1, gpu=4, cpu=16, mem_gb=64, bw_gbps=50),
            jobs(5, 60.0, 3),
        ),
    )


def _held(cluster: Cluster, members: Sequence[tuple[Job, Any, str | None]]) -> np.ndarray:
    """Per machine, what jobs on ``(job, tasks, group)`` hold: a group holds the per-machine
    maximum of its members' use (interleaving and GPU sharing), a job alone its own."""
    shape = (len(cluster.machines), len(cluster.resources))
    alone = np.zeros(shape)
    groups: dict[str, np.ndarray] = {}
    for job, tasks, group in members:
        wv, pv = task_vectors(job, cluster.resources)
        one = np.zeros(shape)
        for m, w, p in tasks:
            one[m] += w * wv + p * pv
        if group is None:
            alone += one
        else:
            groups[group] = np.maximum(groups.get(group, one), one)
    return alone + sum(groups.values(), np.zeros(shape))


def _over(cluster: Cluster, held: np.ndarray) -> str | None:
    """The first machine and resource ``held`` exceeds, said in words (None: it fits)."""
    cap = np.array([[m.capacity.get(r, 0.0) for r in cluster.resources] for m in cluster.machines])
    over = held > cap * (1 + TOL) + TOL
    if not over.any():
        return None
    m, k = (int(x) for x in np.argwhere(over)[0])
    return (
        f"machine {cluster.machines[m].name!r} would hold {held[m, k]:g} {cluster.resources[k]} "
        f"of its {cap[m, k]:g}"
    )


def audit_decision(state: ClusterState, decision: Any) -> None:
    """Raise PolicyProblem if ``decision`` is no Decision, names a job that is neither queued nor
    running, preempts or resizes where ``state.execution`` forbids it, or overfills a machine.

    The state is checked too: what its running jobs hold must fit and match ``state.free``.
    """
    at = f"t={state.time:g}"
    cl = state.cluster
    now = [(r.job, r.placement.tasks, r.group) for r in state.running]
    held = _held(cl, now)
    bad = _over(cl, held)
    if bad is not None:
        raise PolicyProblem("capacity", f"the state at {at} is over capacity: {bad}")
    cap = np.array([[m.capacity.get(r, 0.0) for r in cl.resources] for m in cl.machines])
    off = np.abs(np.asarray(state.free) - (cap - held)) > 1e-7 * np.maximum(1.0, cap)
    if off.any():
        m, k = (int(x) for x in np.argwhere(off)[0])
        raise PolicyProblem(
            "capacity",
            f"the state at {at} says machine {cl.machines[m].name!r} has "
            f"{state.free[m, k]:g} {cl.resources[k]} free; its running jobs leave "
            f"{cap[m, k] - held[m, k]:g}",
        )
    if not isinstance(decision, Decision):
        raise PolicyProblem(
            "contract", f"decide() returned a {type(decision).__name__} at {at}, not a Decision"
        )
    running = {r.job.name: r for r in state.running}
    queued = {q.job.name: q for q in state.queued}
    for name in decision.preempt:
        if name not in running:
            where = "queued" if name in queued else "neither queued nor running"
            raise PolicyProblem(
                "unknown job", f"decision at {at} preempts job {name!r}, which is {where}"
            )
        if state.execution == "non_elastic":
            raise PolicyProblem(
                "mode",
                f"decision at {at} preempts job {name!r}, but the run is non_elastic "
                "(declare execution or executions without non_elastic)",
            )
    for a in decision.allocations:
        if not isinstance(a, Allocation):
            raise PolicyProblem(
                "contract",
                f"decision at {at} lists a {type(a).__name__} among its allocations, "
                "not an Allocation",
            )
        if a.job not in running and a.job not in queued:
            raise PolicyProblem(
                "unknown job",
                f"decision at {at} allocates job {a.job!r}, which is neither queued nor running",
            )
        if a.job in running and a.job not in decision.preempt and state.execution != "elastic":
            raise PolicyProblem(
                "mode",
                f"decision at {at} resizes running job {a.job!r}, but the run is "
                f"{state.execution} (only elastic runs resize)",
            )
    changed = set(decision.preempt) | {a.job for a in decision.allocations}
    after = [m for m in now if m[0].name not in changed]
    groups = {g for *_, g in after if g is not None}
    for a in decision.allocations:
        job = running[a.job].job if a.job in running else queued[a.job].job
        with contextlib.suppress(InvalidInput):  # bad levels: the simulator reports them
            job = with_worker_resources(job, a.cpu, a.mem_gb)
        if job.arch == "allreduce":  # its PS tasks are dropped by the simulator
            tasks = tuple((m, w, 0) for m, w, _ in a.placement.tasks)
        else:
            tasks = a.placement.tasks
        group = None if a.group is None else a.group if a.group in groups else f"new:{a.group}"
        after.append((job, tasks, group))
    bad = _over(cl, _held(cl, after))
    if bad is not None:
        raise PolicyProblem("capacity", f"decision at {at} overfills a machine: {bad}")


class _Audited:
    """``policy`` with each decision audited before the simulator sees it."""

    def __init__(self, policy: Any):
        self._inner = policy

    def __getattr__(self, attr: str) -> Any:  # name, execution, slot_s, ... of the policy
        return getattr(self._inner, attr)

    def reset(self) -> None:
        """Reset the policy."""
        self._inner.reset()

    def decide(self, state: ClusterState) -> Decision:
        """The policy's decision, audited."""
        try:
            decision = self._inner.decide(state)
        except SmdlabError:
            raise
        except Exception as exc:  # a bug in the policy: report it as one line
            raise PolicyProblem(
                "error",
                f"decide() raised {type(exc).__name__} at t={state.time:g}: "
                f"{' '.join(str(exc).split())}",
            ) from exc
        audit_decision(state, decision)
        return decision


def _run(policy: Any, world: World, execution: Execution) -> SimResult:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return simulate(
            list(world.jobs),
            world.cluster,
            _Audited(policy),
            execution=execution,
            unfit="raise",
        )


def _lost(result: SimResult, world: World) -> str | None:
    """The first job of ``world`` that did not complete with all its samples, said in words."""
    df = result.jobs.set_index("job")
    status, done = df["status"].to_dict(), df["samples_done"].to_dict()
    for job in world.jobs:
        if status[job.name] != "completed":
            return f"job {job.name!r} ends {status[job.name]}"
        if not math.isclose(float(done[job.name]), job.samples, rel_tol=1e-6):
            return (
                f"job {job.name!r} completes with {float(done[job.name]):g} of its "
                f"{job.samples:g} samples"
            )
    return None


def _difference(a: SimResult, b: SimResult) -> str | None:
    """How two runs' per-job tables differ (None: identical)."""
    ja, jb = a.jobs.set_index("job"), b.jobs.set_index("job")
    for name in ja.index:
        for col in ("start", "finish", "workers", "ps", "preemptions"):
            x, y = ja.loc[name, col], jb.loc[name, col]
            if not (x == y or (isinstance(x, float) and math.isnan(x) and math.isnan(y))):
                return f"job {name!r}: {col} {x:g} in the first run, {y:g} in the second"
    if not a.history.equals(b.history):
        return "the allocation histories differ"
    return None


def check_policy(
    policy: Policy | str,
    *,
    seed: int = 0,
    worlds_to_run: int = 3,
    executions: Sequence[Execution] | None = None,
) -> list[str]:
    """Problems of ``policy`` (an instance, a registered name or ``module:Class``), one line each.

    Runs the policy on ``worlds_to_run`` of ``worlds(seed)`` in each execution mode it supports
    (or ``executions``), auditing every decision (``audit_decision``) and checking that every job
    completes; then runs the first world again in its natural mode and compares. An empty list:
    no problem found. Raises InvalidInput for a name or spec that is no policy.
    """
    if isinstance(policy, str):
        name = policy
        policy = get_policy(policy)
    else:
        name = str(getattr(policy, "name", type(policy).__name__))
    n = check_int("worlds_to_run", worlds_to_run, 1, 3)
    found: dict[str, str] = {}

    def report(kind: str, line: str) -> None:
        found.setdefault(kind, f"{kind}: policy {name!r}: {line}")

    for method in ("decide", "reset"):
        if not callable(getattr(policy, method, None)):
            report("contract", f"it has no {method}() method")
    try:
        settings = policy_settings(policy)
    except InvalidInput as exc:
        found["contract"] = f"contract: {exc}"
    if found:
        return list(found.values())
    modes = list(settings.executions if executions is None else executions)
    modes.sort(key=lambda m: m != settings.execution)  # the natural mode first
    first = None
    for mode in modes:
        for world in worlds(seed)[:n]:
            where = f"{world.name}, {mode}"
            try:
                result = _run(policy, world, mode)
            except PolicyProblem as exc:
                report(exc.kind, f"{exc} ({where})")
                continue
            except SmdlabError as exc:
                text = " ".join(str(exc).split()).removeprefix(f"policy {name!r} ")
                report(_kind_of(exc), f"{text} ({where})")
                continue
            lost = _lost(result, world)
            if lost is not None:
                report("lost job", f"{lost} ({where})")
            if first is None:
                first = (world, mode, result)
    if first is not None and "error" not in found:
        world, mode, result = first
        try:
            again = _run(policy, world, mode)
        except SmdlabError as exc:
            report("determinism", f"the second run fails: {exc} ({world.name}, {mode})")
        else:
            diff = _difference(result, again)
            if diff is not None:
                report(
                    "determinism",
                    f"two runs of one world differ: {diff} ({world.name}, {mode}); does decide() "
                    "keep state that reset() does not clear, or use an unseeded random source?",
                )
    return [found[k] for k in PROBLEM_KINDS if k in found]


def _kind_of(exc: SmdlabError) -> str:
    """The problem kind of an error the simulator raised."""
    if isinstance(exc, Stalled):
        return "lost job"
    if isinstance(exc, CapacityExceeded):
        return "capacity"
    if isinstance(exc, InvalidDecision):
        text = str(exc)
        if "which is" in text and ("unknown" in text or "not running" in text):
            return "unknown job"
        if "execution is" in text:
            return "mode"
        return "contract"
    if isinstance(exc, InvalidInput) and "cannot run in mode" in str(exc):
        return "mode"
    return "error"
