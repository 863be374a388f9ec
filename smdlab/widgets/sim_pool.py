"""Worker processes for the explorer's schedule panel: each policy's simulation and the interval-LP
bound run outside the kernel's process, so they neither hold its interpreter lock (the controls and
the first repaint stay fast) nor run one after another on a multi-core machine.

A request owns a slot of a shared array and writes its generation there; a worker's simulation
checks the slot at every decision and stops once a newer request took it (cancelled, not ignored).
The pool is started (a forkserver that imports smdlab once, then forks its workers) by the first
explorer and shared by every explorer of the kernel; until its workers are ready, simulations run on
the caller's thread. Nothing here imports a widget library at module level.
"""

from __future__ import annotations

import math
import multiprocessing
import os
import threading
import time
import types
from collections.abc import Callable, Generator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from multiprocessing.reduction import ForkingPickler
from typing import Any

from smdlab.errors import SmdlabError

# Slots of the shared generation array: explorers alive at once in one kernel, at most.
SLOTS = 64
# What a worker runs besides the policies: the interval-LP bound of the job mix.
BOUND_TASK = "interval LP bound"
_TOKENS: Any = None  # in a worker: the shared generation array


def _mappingproxy(items: dict) -> types.MappingProxyType:
    return types.MappingProxyType(items)


def _reduce_mappingproxy(proxy: types.MappingProxyType) -> tuple:
    return _mappingproxy, (dict(proxy),)


# Jobs and clusters hold read-only mappings; multiprocessing's own pickler (not copyreg, so
# nothing else in the kernel changes) sends them to the workers as copies.
ForkingPickler.register(types.MappingProxyType, _reduce_mappingproxy)


class Superseded(Exception):
    """Raised by background work that noticed a newer request made it pointless."""


def stoppable_policy(policy: Any, still_wanted: Callable[[], bool]) -> Any:
    """``policy`` (a fresh instance) whose every decision first checks ``still_wanted`` and raises ``Superseded`` once it is False."""
    decide = policy.decide

    def checked(state: Any) -> Any:
        if not still_wanted():
            raise Superseded
        return decide(state)

    # An instance attribute: the simulator binds ``policy.decide`` once per run.
    policy.decide = checked
    return policy


def simulate_policy(
    jobs, cluster, policy: str, mode: str, still_wanted, lower_bound: bool = True
) -> float:
    """One policy's simulated mean JCT (NaN when it cannot run); stops at a decision once ``still_wanted()`` is False.

    lower_bound: False skips the summary's LP bound (a worker of the pool leaves it to one task).
    """
    from smdlab.policies.registry import get_policy
    from smdlab.sim import simulate

    try:
        run = stoppable_policy(get_policy(policy), still_wanted)
        res = simulate(jobs, cluster, run, mode=mode, record_history=False, lower_bound=lower_bound)
    except SmdlabError:
        return math.nan
    return float(res.summary["mean_jct"])


def _init(tokens: Any, owner: int | None = None) -> None:
    """In a worker: keep the generation array; exit once the ``owner`` process (the kernel) is gone."""
    global _TOKENS
    _TOKENS = tokens
    if owner is not None:
        threading.Thread(target=_exit_without, args=(owner,), daemon=True).start()


def _exit_without(owner: int) -> None:
    # A kernel killed outright never shuts its pool down; its workers must not outlive it.
    while True:
        time.sleep(1.0)
        try:
            os.kill(owner, 0)
        except ProcessLookupError:
            os._exit(0)
        except PermissionError:  # alive, owned by someone else (pid reused: keep serving)
            pass


def _warm() -> int:
    """Import what a task needs, so the first real task pays nothing (returns the worker's pid)."""
    import smdlab.policies.registry
    import smdlab.sim
    import smdlab.solve.schedule_bound  # noqa: F401

    return os.getpid()


def run_task(slot: int, generation: int, task: str, jobs, cluster, mode: str) -> float | None:
    """In a worker: ``task``'s result (a policy's mean JCT, or ``BOUND_TASK``'s bound); None once superseded."""
    tokens = _TOKENS

    def wanted() -> bool:
        return tokens is None or tokens[slot] == generation

    if not wanted():
        return None
    if task == BOUND_TASK:
        from smdlab.sim.bound import workload_bound

        return float(workload_bound(jobs, cluster, mode))
    try:
        # The interval-LP bound is its own task: no worker computes it inside a simulation too.
        return simulate_policy(jobs, cluster, task, mode, wanted, lower_bound=False)
    except Superseded:
        return None


def run_simulation(
    slot: int, generation: int, jobs, cluster, policy: str, options: dict, sim_options: dict
) -> Any:
    """In a worker: ``simulate`` of ``policy`` (built with ``options``) under ``sim_options``; None once superseded."""
    from smdlab.policies.registry import get_policy
    from smdlab.sim import simulate

    tokens = _TOKENS

    def wanted() -> bool:
        return tokens is None or tokens[slot] == generation

    if not wanted():
        return None
    try:
        return simulate(
            jobs, cluster, stoppable_policy(get_policy(policy, **options), wanted), **sim_options
        )
    except Superseded:
        return None


class SimulationPool:
    """Worker processes shared by the explorers of one kernel; ``ready`` once their imports are done."""

    def __init__(self, workers: int) -> None:
        methods = multiprocessing.get_all_start_methods()
        ctx = multiprocessing.get_context("forkserver" if "forkserver" in methods else "spawn")
        if "forkserver" in methods:
            # The server imports smdlab once; each worker is a fork of it (no import of its own).
            ctx.set_forkserver_preload(["smdlab.widgets.sim_pool", "smdlab.sim"])
        self.workers = workers
        self._tokens = ctx.Array("q", SLOTS, lock=False)
        self._pool = ProcessPoolExecutor(
            workers, mp_context=ctx, initializer=_init, initargs=(self._tokens, os.getpid())
        )
        self._lock = threading.Lock()
        self._slots = 0
        # One warm-up per worker (each waits for the server's imports and forks a worker).
        self._warm = [self._pool.submit(_warm) for _ in range(workers)]

    @property
    def ready(self) -> bool:
        """Whether every worker has started and imported what a task needs."""
        return all(f.done() and f.exception() is None for f in self._warm)

    def wait_ready(self, timeout: float | None = None) -> bool:
        """Block until ``ready`` (False if ``timeout`` passed first or a worker failed to start)."""
        from concurrent.futures import wait

        wait(self._warm, timeout)
        return self.ready

    @property
    def broken(self) -> bool:
        """Whether a worker died (the pool then takes no more tasks)."""
        return bool(getattr(self._pool, "_broken", False))

    def slot(self) -> int:
        """A slot of the generation array for one explorer."""
        with self._lock:
            self._slots += 1
            return self._slots % SLOTS

    def start(self, slot: int) -> int:
        """A new generation for ``slot``: the slot's older tasks stop at their next decision."""
        with self._lock:
            self._tokens[slot] += 1
            return int(self._tokens[slot])

    def submit(
        self, slot: int, generation: int, tasks: Sequence[str], jobs, cluster, mode: str
    ) -> dict[Future, str]:
        """Queue ``tasks`` (policy names or ``BOUND_TASK``) for ``generation``; future -> task."""
        return {
            self._pool.submit(run_task, slot, generation, t, jobs, cluster, mode): t for t in tasks
        }

    def submit_runs(
        self, slot: int, generation: int, runs: dict[str, dict], jobs, cluster, sim_options: dict
    ) -> dict[Future, str]:
        """Queue one ``simulate`` per policy (policy -> its options) for ``generation``; future -> policy."""
        return {
            self._pool.submit(
                run_simulation, slot, generation, jobs, cluster, p, opts, sim_options
            ): p
            for p, opts in runs.items()
        }

    def arrivals(
        self, slot: int, futures: dict[Future, str], still_wanted: Callable[[], bool]
    ) -> Generator[tuple[str, Any], None, None]:
        """Yield (task, result) as ``futures`` finish; raise ``Superseded`` once ``still_wanted()`` is False or a task was stopped.

        On leaving early (superseded, failed, or the caller stopped), queued tasks never start and
        running ones stop at their next decision (the slot gets a new generation).
        """
        from concurrent.futures import FIRST_COMPLETED, wait

        left = set(futures)
        try:
            while left:
                done, left = wait(left, timeout=0.05, return_when=FIRST_COMPLETED)
                if not still_wanted():
                    raise Superseded
                for fut in done:
                    result = fut.result()
                    if result is None:  # stopped by a newer generation
                        raise Superseded
                    yield futures[fut], result
        finally:
            if left:
                for fut in left:
                    fut.cancel()
                self.start(slot)

    def close(self) -> None:
        """Stop the workers (queued tasks are dropped)."""
        self._pool.shutdown(wait=False, cancel_futures=True)


_SHARED: SimulationPool | None = None
_SHARED_LOCK = threading.Lock()


def shared_pool(workers: int) -> SimulationPool | None:
    """The kernel's pool with ``workers`` processes (started on first use); None for 0 workers or when it cannot start."""
    global _SHARED
    if workers <= 0:
        return None
    with _SHARED_LOCK:
        if _SHARED is not None and (_SHARED.workers != workers or _SHARED.broken):
            _SHARED.close()
            _SHARED = None
        if _SHARED is None:
            try:
                _SHARED = SimulationPool(workers)
            except (OSError, ValueError):  # no shared memory or processes here: run on threads
                return None
        return _SHARED


def default_workers() -> int:
    """Worker processes for the schedule panel: one per core, at most two (the panel has one long simulation)."""
    return max(1, min(2, os.cpu_count() or 1))
