"""Problem (P) with CPU and memory levels: a configuration is (workers, PSs, CPU level, memory level).

Specification: docs/multiresource.md ("Configurations with CPU and memory"). Each job i has a
menu of (cpu, mem_gb) levels per worker (``level_menu``); a configuration (w, p, l) uses
``w * alpha_il + p * gamma_i`` (alpha_il: the worker demand with the level's CPU and memory) and
costs ``omega_i * d_il(w, p)``, the duration of the job at that level (the data stage of
``smdlab.model.pipeline`` makes it depend on the level). The exact MILP chooses at most one
configuration per job within the capacity: the multiple-choice knapsack of docs/solver.md with
more columns per job, solved by the same backends (``smdlab.solve.backends.solve_flat``).
Jobs may wait exactly when the jobs cannot all start at their cheapest (1, 1) configuration; a
waiting job is charged ``omega_i * (H + d_i(1, 1))`` with its demand level, as in
``smdlab.solve.instance``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from smdlab.errors import InvalidInput
from smdlab.model.job import Job
from smdlab.model.pipeline import check_level, with_worker_resources
from smdlab.solve.backends import Backend, FlatModel, solve_flat
from smdlab.solve.instance import fits, job_speeds, pareto_mask, task_vectors

CPU_LEVELS = (1.0, 2.0, 4.0, 8.0, 16.0)  # per worker, besides the job's demand


def level_menu(job: Job, max_cpu: float = np.inf) -> list[tuple[float, float]]:
    """(cpu, mem_gb) per worker: ``CPU_LEVELS`` and the demand's CPU (within ``max_cpu``), demand memory."""
    cpu = job.worker_demand.get("cpu", 0.0)
    mem = job.worker_demand.get("mem_gb", 0.0)
    if job.pipeline is None:
        return [(cpu, mem)]  # without a data stage, less CPU only slows nothing and saves nothing
    levels = {c for c in CPU_LEVELS if c <= max_cpu} | {cpu}
    return [(c, mem) for c in sorted(levels)]


@dataclass(frozen=True)
class LevelSolution:
    """An allocation with levels: per job, workers, PSs (0: waits) and CPU / memory per worker."""

    workers: np.ndarray
    ps: np.ndarray
    cpu: np.ndarray
    mem_gb: np.ndarray
    objective: float
    bound: float
    status: str
    backend: str
    note: str = ""

    def job(self, jobs: Sequence[Job], i: int) -> Job:
        """Job ``i`` as allocated (its worker demand at the chosen level)."""
        return with_worker_resources(jobs[i], float(self.cpu[i]), float(self.mem_gb[i]))


def _build(
    jobs: Sequence[Job],
    resources: Sequence[str],
    capacity: np.ndarray,
    menus: Sequence[Sequence[tuple[float, float]]] | None,
    mode: str,
):
    """The flat multiple-choice knapsack over (w, p, level) columns, its columns and menus."""
    jobs = list(jobs)
    if not jobs:
        raise InvalidInput("jobs must list at least one job, got 0")
    cap = np.asarray(capacity, dtype=float).reshape(-1)
    if cap.shape != (len(resources),) or np.any(~np.isfinite(cap)) or np.any(cap < 0):
        raise InvalidInput(
            f"capacity must be {len(resources)} finite amounts >= 0 over {tuple(resources)}"
        )
    if menus is None:
        menus = [level_menu(j) for j in jobs]
    if len(menus) != len(jobs):
        raise InvalidInput(f"menus must give one menu per job ({len(jobs)}), got {len(menus)}")
    n = len(jobs)
    samples = np.array([j.samples for j in jobs], dtype=float)
    weight = np.array([j.weight for j in jobs], dtype=float)
    base = np.empty(n)
    smallest = np.zeros(len(resources))
    for i, j in enumerate(jobs):
        a, g = task_vectors(j, resources)
        base[i] = samples[i] / float(job_speeds(j, mode)[0, 0])
        cheapest = min(
            (task_vectors(with_worker_resources(j, *lv), resources)[0] for lv in menus[i]),
            key=lambda v: tuple(v),
        )
        smallest += np.minimum(cheapest, a) + g
    eq = bool(fits(smallest, cap))
    defer = None if eq else weight * (base.max() + base)
    costs, uses, groups, cols = [], [], [], []
    for i, j in enumerate(jobs):
        if not menus[i]:
            raise InvalidInput(f"menus[{i}] must list at least one (cpu, mem_gb) level")
        for k, (c, m) in enumerate(menus[i]):
            check_level(f"menus[{i}][{k}] cpu", c)
            check_level(f"menus[{i}][{k}] mem_gb", m)
            v = with_worker_resources(j, c, m)
            table = job_speeds(v, mode)
            with np.errstate(divide="ignore"):
                obj = weight[i] * samples[i] / table
            keep = pareto_mask(obj[None])[0]
            if defer is not None:
                keep &= obj < defer[i]
            wi, pi = np.nonzero(keep)
            a, g = task_vectors(v, resources)
            costs.append(obj[wi, pi] - (defer[i] if defer is not None else 0.0))
            uses.append(a[None, :] * (wi + 1)[:, None] + g[None, :] * (pi + 1)[:, None])
            groups.append(np.full(len(wi), i))
            cols.append(np.stack([np.full(len(wi), k), wi + 1, pi + 1], axis=1))
    model = FlatModel(
        np.concatenate(costs),
        np.vstack(uses),
        np.concatenate(groups),
        n,
        cap,
        eq,
    )
    return model, np.vstack(cols), list(menus), defer, jobs


def solve_levels(
    jobs: Sequence[Job],
    resources: Sequence[str],
    capacity: np.ndarray,
    menus: Sequence[Sequence[tuple[float, float]]] | None = None,
    *,
    mode: str = "wfbp",
    backend: Backend = "auto",
    time_limit: float | None = None,
) -> LevelSolution:
    """The exact allocation of (P) over (w, p, level) configurations (module docstring)."""
    model, col, menus, defer, jobs = _build(jobs, resources, capacity, menus, mode)
    n = model.n
    res = solve_flat(model, integral=True, backend=backend, time_limit=time_limit)
    grp = model.group
    w = np.zeros(n, dtype=int)
    p = np.zeros(n, dtype=int)
    cpu = np.array([j.worker_demand.get("cpu", 0.0) for j in jobs])
    mem = np.array([j.worker_demand.get("mem_gb", 0.0) for j in jobs])
    for column in np.flatnonzero(res.x > 0.5).tolist():
        i = int(grp[column])
        k, w[i], p[i] = (int(x) for x in col[column])
        cpu[i], mem[i] = menus[i][k]
    offset = float(defer.sum()) if defer is not None else 0.0
    return LevelSolution(
        w,
        p,
        cpu,
        mem,
        res.objective + offset,
        res.bound + offset,
        res.status,
        res.backend,
        res.note,
    )


def level_weights(
    jobs: Sequence[Job],
    resources: Sequence[str],
    capacity: np.ndarray,
    menus: Sequence[Sequence[tuple[float, float]]] | None = None,
    *,
    mode: str = "wfbp",
    backend: Backend = "auto",
) -> list[np.ndarray]:
    """Per job, the LP relaxation's mass on each level of its menu (how much it wants each level)."""
    model, col, menus, _, _ = _build(jobs, resources, capacity, menus, mode)
    res = solve_flat(model, integral=False, backend=backend)
    out = [np.zeros(len(m)) for m in menus]
    for c in np.flatnonzero(res.x > 1e-9).tolist():
        out[int(model.group[c])][int(col[c, 0])] += float(res.x[c])
    return out
