"""Where each job runs at chosen times: snapshots of a simulation's placements (for rack drawings)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from smdlab.errors import InvalidInput, check_positive
from smdlab.model.cluster import Cluster
from smdlab.model.job import Job
from smdlab.policies.base import Policy

# (machine index, workers there, PSs there), as ``Placement.tasks``.
Task = tuple[int, int, int]


@dataclass(frozen=True)
class Snapshot:
    """The running jobs at one time and their tasks on machines.

    time: the time asked for (s).
    cluster: the machines (indices of ``tasks`` refer to ``cluster.machines``).
    tasks: job name -> its tasks ((machine index, workers, PSs) per machine used).
    networks: job name -> its network (profile name).
    gpus_per_worker: job name -> GPUs one worker holds.
    queued: names of the jobs waiting then.
    """

    time: float
    cluster: Cluster
    tasks: dict[str, tuple[Task, ...]]
    networks: dict[str, str]
    gpus_per_worker: dict[str, float]
    queued: tuple[str, ...] = ()


def placements_at(
    jobs: Sequence[Job],
    cluster: Cluster,
    policy: Policy | str,
    times: Sequence[float],
    **options,
) -> list[Snapshot]:
    """One ``Snapshot`` per time in ``times`` (sorted): the jobs running then and where.

    The run is the one ``simulate`` makes (driven through ``simulate_steps``, whose ``options``
    it takes: mode, execution, slot_s, ...). A job runs at time t when a segment of its history
    covers t; its tasks are those of the policy's latest allocation for it at or before t.
    GPU sharing runs at degree 1 here (``simulate_steps`` has no sharing degree).
    """
    from smdlab.policies.registry import get_policy
    from smdlab.sim.simulator import simulate_steps

    want = sorted(check_positive("times (s)", t, allow_zero=True) for t in times)
    if not want:
        raise InvalidInput("times must list at least one time (s), got none")
    pol = get_policy(policy) if isinstance(policy, str) else policy
    steps = simulate_steps(jobs, cluster, pol, **{**options, "record_history": True})
    placed: dict[str, list[tuple[float, tuple[Task, ...]]]] = {}
    try:
        state = next(steps)
        while True:
            decision = pol.decide(state)
            for a in decision.allocations:
                placed.setdefault(a.job, []).append((float(state.time), tuple(a.placement.tasks)))
            state = steps.send(decision)
    except StopIteration as stop:
        result = stop.value
    by_name = {j.name: j for j in jobs}
    hist = result.history
    table = result.jobs.set_index("job")
    out = []
    for t in want:
        now = hist[(hist["start"] <= t) & (hist["end"] > t)]
        tasks: dict[str, tuple[Task, ...]] = {}
        for name in dict.fromkeys(now["job"].astype(str)):
            earlier = [tk for when, tk in placed.get(name, []) if when <= t]
            if earlier:
                tasks[name] = earlier[-1]
        arrived = table[(table["arrival"] <= t) & ~(table["finish"] <= t)]
        queued = tuple(str(n) for n in arrived.index if n not in tasks)
        out.append(
            Snapshot(
                float(t),
                cluster,
                tasks,
                {n: by_name[n].profile.network for n in tasks},
                {n: float(by_name[n].worker_demand.get("gpu", 0.0)) for n in tasks},
                queued,
            )
        )
    return out
