"""Muri-S and Muri-L: multi-resource interleaving of jobs that share one GPU set.

Source: Zhao et al., "Multi-resource Interleaving for Deep Learning Training", SIGCOMM 2022;
simulator Rivendile/Muri (Apache-2.0), ``simulator/run_sim.py`` and ``matching.py``. Read, not
copied. Mode: preemptive (Muri's simulator descends from Tiresias': jobs are stopped and resumed
from checkpoints); decisions at arrivals and completions and every ``SLOT_S`` = 300 s
(assumption: Synergy's lease; Muri's simulator re-plans on its own events).

Per decision:
1. Order every running and queued job by ``sort_val``: Muri-S (``muri_s``, durations known) by
   remaining time at its request, Muri-L (``muri_l``, unknown) by attained time (GPU-seconds
   over its GPUs); ties by arrival.
2. Candidates: walk that order; a job whose GPUs fit in the GPUs left takes them and brings the
   next jobs (up to 4 in all) with the same request into its GPU set (Muri: ``packing_num`` = 4).
3. Grouping: while the candidates need more GPUs than the cluster has, a round of maximum-weight
   matching (networkx ``max_weight_matching``, the Blossom algorithm) over the groups of each
   request size (a group of 2 then 4); the weight of a pair is the utilisation of the merged
   group, sum of its jobs' stage times / (4 x its interleaved iteration time), and a pair is an
   edge only if its size is at most 4 and interleaving beats taking turns (Muri's ``autopack``).
   Matched pairs merge, best utilisation first, until the demand fits (Muri: at most
   ``packing_num`` rounds).
4. Groups are placed in priority order (the best member's), each on one set of machines that
   holds the per-machine maximum of its members' demands (``consolidated`` placement); a group
   that does not fit waits. A running group kept as it is stays where it is.
Each job runs at its request: ``requested_workers`` workers (else ``max_workers``) and one PS per
worker (capped by ``max_ps``), lowered until the empty cluster holds it; only jobs with the
same (workers, PSs) group. Stage times: ``smdlab.model.interleave.stage_times``; group iteration
time: ``group_iteration_time`` (Muri's measured overhead per group size, with its source).

``rules="authors"``: the rules of Muri's own simulator instead (its run_sim.py
``multi_resource_blossom_same_sim_jobs`` and matching.py ``Blossom_Same``; docs/multiresource.md,
"Muri's simulator, job by job"), for GPU-only gang jobs (``Job.gpu_only``, e.g. Muri's traces):
decisions at every arrival and completion, no slot; Muri-S orders by remaining GPU-time at the
request (a job that has never run: its trace duration, ``Job.duration_s``, times its GPUs),
Muri-L by attained GPU-seconds, ties in the previous decision's order (larger requests first)
with new arrivals last; a candidate slot is a real first fit on the machines (a job of more GPUs
than a machine takes whole free machines); up to 4 matching rounds, every pair of at most 4 jobs
an edge weighted by its utilisation, matched by ``smdlab.solve.blossom`` (its simulator's own
tie order among equal-weight matchings), merged in index order while the candidates exceed the
cluster; autopack afterwards (a packing slower than its members taking turns is
split); packings kept in priority order if their first job fits, then placed first fit in
descending request order, every decision from an empty cluster. Gang PS jobs (one PS per
worker, e.g. a Muri trace read with ``ps_demand``) run too: the first fit counts GPUs, and each
machine's PSs sit beside its workers.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal, get_args

import networkx as nx
import numpy as np

from smdlab.caches import MURI_MATCHINGS, MURI_PACKINGS, memoize
from smdlab.errors import check_choice
from smdlab.model.cluster import Cluster
from smdlab.model.interleave import (
    GROUP_OVERHEAD,
    MAX_GROUP,
    STAGES,
    job_iteration_time,
    packing_time,
    stage_times,
)
from smdlab.model.job import Job
from smdlab.model.timing import iteration_time
from smdlab.policies.base import (
    Allocation,
    ClusterState,
    Decision,
    Placement,
    Policy,
    QueuedJob,
    RunningJob,
)
from smdlab.solve.blossom import max_weight_matching
from smdlab.solve.instance import job_speeds, task_vectors
from smdlab.solve.placement import TOL, capacity_matrix, consolidated_tasks, usage

SLOT_S = 300.0
Variant = Literal["s", "l"]  # Muri-S (shortest first) or Muri-L (least attained service)
VARIANTS: tuple[Variant, ...] = get_args(Variant)
Rules = Literal["smdlab", "authors"]  # this port's rules, or those of Muri's simulator
RULES: tuple[Rules, ...] = get_args(Rules)
MATCH_ROUNDS_AUTHORS = 4  # Muri's simulator: packing_num rounds of matching
Entry = QueuedJob | RunningJob


@dataclass
class _Group:
    """Jobs sharing one GPU set (one entry: alone)."""

    members: list[Entry]
    key: tuple[int, int]
    prio: tuple
    stages: np.ndarray  # (jobs x 4)
    solo: np.ndarray  # each member's own iteration time
    tasks: tuple[tuple[int, int, int], ...] | None = field(default=None)


def request(job: Job, cluster: Cluster) -> tuple[int, int]:
    """(workers, PSs) of the job's request, lowered until the empty cluster holds it."""
    w = job.requested_workers if job.requested_workers is not None else job.max_workers
    cap = capacity_matrix(cluster)
    a, g = task_vectors(job, cluster.resources)
    while w > 1 and consolidated_tasks(cap, w, min(job.max_ps, w), a, g) is None:
        w -= 1
    return w, min(job.max_ps, w)


def _pair_times(stages: np.ndarray, solo: np.ndarray) -> np.ndarray:
    """(n x n) interleaved iteration time of every pair of single jobs (vectorised)."""
    best = np.full((stages.shape[0], stages.shape[0]), np.inf)
    S = len(STAGES)
    for o in range(1, S):  # offsets (0, o): the second job's stage in slot s is (s - o) mod 4
        rolled = stages[:, [(s - o) % S for s in range(S)]]
        best = np.minimum(best, np.maximum(stages[:, None, :], rolled[None, :, :]).sum(-1))
    return np.maximum(best * GROUP_OVERHEAD[2], np.maximum(solo[:, None], solo[None, :]))


_OFFSETS = {
    k: np.array([o for o in itertools.permutations(range(len(STAGES)), k) if o[0] == 0])
    for k in range(2, MAX_GROUP + 1)
}


def _group_time(stages: np.ndarray, solo: np.ndarray) -> float:
    """Interleaved iteration time of a group (``group_iteration_time`` from stage times, numpy)."""
    k = stages.shape[0]
    if k == 1:
        return float(solo[0])
    S = len(STAGES)
    offs = _OFFSETS[k]  # (m, k)
    idx = (
        np.arange(S)[None, :, None] - offs[:, None, :]
    ) % S  # (m, S, k): stage of job i in slot s
    vals = stages[np.arange(k)[None, None, :], idx]  # (m, S, k)
    best = float(vals.max(axis=2).sum(axis=1).min())
    return max(float(solo.max()), best * GROUP_OVERHEAD[k])


class Muri(Policy):
    """Muri: Blossom matching of same-size jobs into interleaved groups (module docstring)."""

    name = "muri"
    execution = "preemptive"
    executions = ("non_elastic", "preemptive")  # non_elastic: never preempts, plans the queue
    slot_s: float | None = SLOT_S

    def __init__(self, variant: str = "s", rules: str = "smdlab") -> None:
        self.variant = check_choice("variant", variant, VARIANTS)
        self.rules = check_choice("rules", rules, RULES)
        self.name = f"muri_{self.variant}"
        if self.rules == "authors":  # its simulator re-plans at every arrival and completion
            self.slot_s = None
            self.decide_on_completion = True
        self.reset()

    def reset(self) -> None:
        """Forget cached requests and stage times (the simulator calls this before a run)."""
        self._requests: dict[int, tuple[Job, tuple[int, int]]] = {}
        self._stages: dict[tuple[int, str], tuple[Job, np.ndarray, float]] = {}
        self.last_groups: list[list[str]] = []
        self._order: list[str] = []  # authors' rules: the previous decision's job order

    def _request(self, job: Job, cluster: Cluster) -> tuple[int, int]:
        hit = self._requests.get(id(job))
        if hit is not None and hit[0] is job:
            return hit[1]
        out = request(job, cluster)
        self._requests[id(job)] = (job, out)
        return out

    def _stage_row(self, job: Job, key: tuple[int, int], mode: str) -> tuple[np.ndarray, float]:
        hit = self._stages.get((id(job), mode))
        if hit is not None and hit[0] is job:
            return hit[1], hit[2]
        st = stage_times(job, *key, mode)
        row = np.array([st[s] for s in STAGES])
        solo = iteration_time(job, *key, mode)
        self._stages[(id(job), mode)] = (job, row, solo)
        return row, solo

    def sort_val(self, entry: Entry, key: tuple[int, int], mode: str) -> float:
        """Muri-S: remaining time at the request; Muri-L: attained GPU-seconds per GPU."""
        job = entry.job
        if self.variant == "s":
            return entry.remaining / float(job_speeds(job, mode)[key[0] - 1, key[1] - 1])
        gpus = key[0] * (job.worker_demand.get("gpu", 0.0) or 1.0)
        return entry.attained_service / gpus

    def decide(self, state: ClusterState) -> Decision:
        """Pick candidates, group them by matching, place the groups (module docstring)."""
        if self.rules == "authors":
            return self._decide_authors(state)
        cluster, mode = state.cluster, state.mode
        # Without preemption (forced non_elastic) running jobs keep what they hold.
        every: list[Entry] = (
            [*state.running, *state.queued] if state.preemptive else list(state.queued)
        )
        self._free0 = (
            capacity_matrix(cluster)
            if state.preemptive
            else np.array(state.free, dtype=float, copy=True)
        )
        items = []
        for e in every:
            if e.remaining <= 0:
                continue
            key = self._request(e.job, cluster)
            items.append(((self.sort_val(e, key, mode), e.job.arrival, e.job.name), e, key))
        items.sort(key=lambda x: x[0])
        groups = self.candidates(items, cluster, mode)
        gi = cluster.resources.index("gpu") if "gpu" in cluster.resources else None
        total = math.inf if gi is None else float(self._free0[:, gi].sum())
        groups = self.match(groups, total)
        self.last_groups = [[m.job.name for m in g.members] for g in groups]
        return self._place(groups, state)

    # ---- step 2: candidates -------------------------------------------------------------------
    def candidates(self, items, cluster: Cluster, mode: str) -> list[_Group]:
        """Single-job groups of the candidates: each job that fits brings up to 3 of its size."""
        by_key: dict[tuple[int, int], list] = {}
        for it in items:
            by_key.setdefault(it[2], []).append(it)
        nxt = dict.fromkeys(by_key, 0)
        gi = cluster.resources.index("gpu") if "gpu" in cluster.resources else None
        left = math.inf if gi is None else float(self._free0[:, gi].sum())
        chosen: set[str] = set()
        out = []
        for _prio, e, key in items:
            if e.job.name in chosen:
                continue
            need = key[0] * e.job.worker_demand.get("gpu", 0.0)
            if need > left + TOL:
                continue
            left -= need
            lst = by_key[key]
            start = next(i for i in range(nxt[key], len(lst)) if lst[i][1] is e)
            taken = 0
            for i in range(start, len(lst)):
                p2, e2, _ = lst[i]
                if e2.job.name in chosen:
                    continue
                chosen.add(e2.job.name)
                row, solo = self._stage_row(e2.job, key, mode)
                out.append(_Group([e2], key, p2, row[None, :], np.array([solo])))
                taken += 1
                if taken == MAX_GROUP:
                    break
            nxt[key] = start
        return out

    # ---- step 3: matching ------------------------------------------------------------------
    def match(self, groups: list[_Group], total_gpus: float) -> list[_Group]:
        """Rounds of Blossom matching per request size until the groups' GPUs fit (at most 2)."""

        def gpus(g: _Group) -> float:
            return g.key[0] * (g.members[0].job.worker_demand.get("gpu", 0.0))

        required = sum(gpus(g) for g in groups)
        for _ in range(int(math.log2(MAX_GROUP))):
            if required <= total_gpus + TOL:
                break
            by_key: dict[tuple[int, int], list[_Group]] = {}
            for g in groups:
                by_key.setdefault(g.key, []).append(g)
            pairs = []  # (sort key, i, j, key)
            for key, gs in by_key.items():
                for u, v, ratio in self._matching(gs):
                    pairs.append(((1 - ratio) * gpus(gs[u]), key, u, v))
            pairs.sort(key=lambda x: x[0])
            merged: dict[tuple[int, int], dict[int, int]] = {}
            for _, key, u, v in pairs:
                if required <= total_gpus + TOL:
                    break
                merged.setdefault(key, {})[u] = v
                required -= gpus(by_key[key][u])
            out = []
            for key, gs in by_key.items():
                m = merged.get(key, {})
                gone = set(m.values())
                for i, g in enumerate(gs):
                    if i in gone:
                        continue
                    if i in m:
                        h = gs[m[i]]
                        g = _Group(
                            g.members + h.members,
                            key,
                            min(g.prio, h.prio),
                            np.vstack([g.stages, h.stages]),
                            np.concatenate([g.solo, h.solo]),
                        )
                    out.append(g)
            groups = out
        return groups

    def _matching(self, gs: Sequence[_Group]) -> list[tuple[int, int, float]]:
        """Maximum-weight matching of ``gs`` (edge weight: utilisation of the merged group)."""
        n = len(gs)
        if n < 2:
            return []
        graph = nx.Graph()
        if all(len(g.members) == 1 for g in gs):
            stages = np.vstack([g.stages for g in gs])
            solo = np.concatenate([g.solo for g in gs])
            tau = _pair_times(stages, solo)
            work = stages.sum(1)
            util = (work[:, None] + work[None, :]) / (len(STAGES) * tau)
            better = tau < solo[:, None] + solo[None, :]  # autopack: beats taking turns
            iu, ju = np.triu_indices(n, 1)
            keep = better[iu, ju] & (util[iu, ju] > 0)
            graph.add_weighted_edges_from(
                zip(iu[keep].tolist(), ju[keep].tolist(), util[iu, ju][keep].tolist())
            )
        else:
            own = [_group_time(g.stages, g.solo) for g in gs]
            single = [i for i, g in enumerate(gs) if len(g.members) == 1]
            if len(single) >= 2:
                stages = np.vstack([gs[i].stages for i in single])
                solo = np.concatenate([gs[i].solo for i in single])
                tau = _pair_times(stages, solo)
                work = stages.sum(1)
                util = (work[:, None] + work[None, :]) / (len(STAGES) * tau)
                better = tau < solo[:, None] + solo[None, :]
                iu, ju = np.triu_indices(len(single), 1)
                keep = better[iu, ju] & (util[iu, ju] > 0)
                ids = np.array(single)
                graph.add_weighted_edges_from(
                    zip(ids[iu[keep]].tolist(), ids[ju[keep]].tolist(), util[iu, ju][keep].tolist())
                )
            for u in range(n):
                for v in range(u + 1, n):
                    size = len(gs[u].members) + len(gs[v].members)
                    if size == 2 or size > MAX_GROUP:
                        continue
                    st = np.vstack([gs[u].stages, gs[v].stages])
                    t_uv = _group_time(st, np.concatenate([gs[u].solo, gs[v].solo]))
                    if t_uv >= own[u] + own[v]:
                        continue
                    graph.add_edge(u, v, weight=float(st.sum() / (len(STAGES) * t_uv)))
        out = []
        for u, v in nx.max_weight_matching(graph):
            u, v = min(u, v), max(u, v)
            out.append((u, v, float(graph[u][v]["weight"])))
        return sorted(out)

    # ---- step 4: placement and decision --------------------------------------------------------
    def _place(self, groups: list[_Group], state: ClusterState) -> Decision:
        cluster = state.cluster
        free = self._free0.copy()
        running = {r.job.name: r for r in state.running}
        by_gid: dict[str | None, set[str]] = {}
        for r in state.running:
            by_gid.setdefault(r.group, set()).add(r.job.name)
        keep: set[str] = set()
        allocations: list[Allocation] = []
        for g in sorted(groups, key=lambda g: g.prio):
            names = [m.job.name for m in g.members]
            w, p = g.key
            vecs = [task_vectors(m.job, cluster.resources) for m in g.members]
            a = np.max([v[0] for v in vecs], axis=0)
            gam = np.max([v[1] for v in vecs], axis=0)
            same = self._unchanged(g, names, running, by_gid)
            tasks: tuple[tuple[int, int, int], ...] | None = None
            if same is not None:
                use = usage(same, a, gam, free.shape[0])
                if np.all(use <= free + TOL * np.maximum(1.0, free)):
                    tasks = same
            fresh = tasks is None
            if fresh:
                tasks = consolidated_tasks(free, w, p, a, gam)
            if tasks is None:
                continue
            free -= usage(tasks, a, gam, free.shape[0])
            if not fresh:
                keep.update(names)
                continue
            label = "+".join(names) if len(names) > 1 else None
            allocations.extend(
                Allocation(n, w, p, Placement(tuple(tasks)), group=label) for n in names
            )
        if not state.preemptive:
            return Decision(tuple(allocations))
        preempt = tuple(n for n in running if n not in keep)
        return Decision(tuple(allocations), preempt)

    @staticmethod
    def _unchanged(g: _Group, names, running, by_gid):
        """The group's tasks if it runs exactly as planned already (same members, alone or grouped)."""
        rs = [running.get(n) for n in names]
        if any(r is None for r in rs) or any((r.workers, r.ps) != g.key for r in rs):
            return None
        gid = rs[0].group
        if len(names) == 1:
            return tuple(rs[0].placement.tasks) if gid is None else None
        if gid is None or by_gid.get(gid) != set(names):
            return None
        return tuple(rs[0].placement.tasks)

    # ---- rules="authors": Muri's own simulator ----------------------------------------------------
    def _decide_authors(self, state: ClusterState) -> Decision:
        """One decision by the rules of Muri's simulator (module docstring), from an empty cluster."""
        cluster, mode = state.cluster, state.mode
        gi = cluster.resources.index("gpu")
        cap = capacity_matrix(cluster)[:, gi]
        total = float(cap.sum())
        every: dict[str, Entry] = {r.job.name: r for r in state.running if r.remaining > 0}
        every.update((q.job.name, q) for q in state.queued if q.remaining > 0)
        order = [n for n in self._order if n in every]
        known = set(order)
        order += [n for n in every if n not in known]  # new arrivals last, in arrival order
        gpus = {n: e.job.gang_allocation[0] for n, e in every.items()}
        val = {n: self._sort_val_authors(e, gpus[n], mode) for n, e in every.items()}
        order.sort(key=lambda n: val[n])
        self._order = sorted(order, key=lambda n: -gpus[n])
        # candidates: each job whose slot fits claims the next 4 unclaimed jobs of its size
        free = cap.copy()
        by_size: dict[int, list[str]] = {}
        for n in order:
            by_size.setdefault(gpus[n], []).append(n)
        claimed: set[str] = set()
        cand: dict[int, list[list[str]]] = {}
        for n in order:
            if n in claimed or _first_fit(free, gpus[n], cap) is None:
                continue
            taken = [m for m in by_size[gpus[n]] if m not in claimed][:MAX_GROUP]
            claimed.update(taken)
            cand.setdefault(gpus[n], []).extend([m] for m in taken)
        required = sum(g * len(ps) for g, ps in cand.items())
        jobs = {n: e.job for n, e in every.items()}
        for r in range(MATCH_ROUNDS_AUTHORS):
            if r > 0 and required <= total:
                break
            ready = [(g, self._match_round(packs, jobs)) for g, packs in cand.items()]
            cand = {}
            for g, items in ready:
                out = cand.setdefault(g, [])
                for item in items:
                    if len(item) == 2 and required > total:
                        out.append(item[0] + item[1])
                        required -= g
                    else:
                        out.extend(item)
        # autopack: a packing slower than its members taking turns is split
        packs: list[tuple[float, list[str]]] = []
        for ps in cand.values():
            for p in ps:
                solo = sum(_solo(jobs[n], mode) for n in p)
                if len(p) > 1 and _packing_time(p, jobs) / solo > 1:
                    packs.extend((val[n], [n]) for n in p)
                else:
                    packs.append((min(val[n] for n in p), p))
        packs.sort(key=lambda x: x[0])
        free = cap.copy()
        kept = [p for _, p in packs if _first_fit(free, gpus[p[0]], cap) is not None]
        # final placement: first fit in descending request order
        of = {n: i for i, p in enumerate(kept) for n in p}
        free = cap.copy()
        placed: dict[int, tuple[tuple[int, int, int], ...]] = {}
        for n in sorted(order, key=lambda n: -gpus[n]):
            i = of.get(n)
            if i is None or i in placed:
                continue
            fit = _first_fit(free, gpus[n], cap)
            if fit is not None:
                # A GPU-only job's one nominal PS goes first; a PS job's PSs sit by their workers.
                beside = not every[n].job.gpu_only
                placed[i] = tuple(
                    (m, k, k if beside else (1 if j == 0 else 0)) for j, (m, k) in enumerate(fit)
                )
        self.last_groups = [kept[i] for i in sorted(placed)]
        return self._decision_authors(kept, placed, state)

    def _sort_val_authors(self, e: Entry, g: int, mode: str) -> float:
        """Muri-S: remaining solo GPU-time at the request; Muri-L: attained GPU-seconds.

        Muri-S keys a job that has never run by the duration its trace states (``duration_s``)
        times its GPUs, as Muri's simulator does until the job's first progress update.
        """
        if self.variant == "s":
            if (
                e.job.duration_s is not None
                and isinstance(e, QueuedJob)
                and e.attained_service <= 0
            ):
                return e.job.duration_s * g
            w, p = e.job.gang_allocation
            return e.remaining / float(job_speeds(e.job, mode)[w - 1, p - 1]) * g
        return e.attained_service

    @staticmethod
    def _match_round(packs: list[list[str]], jobs: dict[str, Job]) -> list[tuple[list[str], ...]]:
        """One matching round of one size: matched pairs (at the larger index) and singles."""
        zero = (0.0, 0.0, 0.0)
        keys = tuple(tuple(jobs[m].stage_times_s or zero for m in p) for p in packs)
        mate: dict[int, int] = {}
        for a, b in _matched_pairs(keys):
            mate[a], mate[b] = b, a
        out: list[tuple[list[str], ...]] = []
        for u in range(len(packs)):
            mu = mate.get(u)
            if mu is None:
                out.append((packs[u],))
            elif mu < u:
                out.append((packs[mu], packs[u]))
        return out

    def _decision_authors(self, kept, placed, state: ClusterState) -> Decision:
        """Allocations of the placed packings; running jobs not placed as they run are stopped."""
        running = {r.job.name: r for r in state.running}
        jobs: dict[str, Job] = {e.job.name: e.job for e in state.running}
        jobs.update((q.job.name, q.job) for q in state.queued)
        by_gid: dict[str | None, set[str]] = {}
        for r in state.running:
            by_gid.setdefault(r.group, set()).add(r.job.name)
        keep: set[str] = set()
        allocations: list[Allocation] = []
        for i, tasks in placed.items():
            names = kept[i]
            rs = [running.get(n) for n in names]
            if all(r is not None for r in rs):
                gid = rs[0].group  # type: ignore[union-attr]
                same = (gid is None and len(names) == 1) or (
                    gid is not None and by_gid.get(gid) == set(names)
                )
                if same and tuple(rs[0].placement.tasks) == tasks:  # type: ignore[union-attr]
                    keep.update(names)
                    continue
            label = "+".join(names) if len(names) > 1 else None
            for n in names:
                w, p = jobs[n].gang_allocation
                allocations.append(Allocation(n, w, p, Placement(tasks), group=label))
        preempt = tuple(n for n in running if n not in keep)
        return Decision(tuple(allocations), preempt)


def _solo(job: Job, mode: str) -> float:
    """A job's solo iteration time at its request (measured where the job carries it)."""
    w, p = job.gang_allocation
    return job_iteration_time(job, w, p, mode)


def _packing_time(names: Sequence[str], jobs: dict[str, Job]) -> float:
    """Interleaved iteration time of the named jobs (their measured stage times)."""
    if len(names) == 1:
        it = jobs[names[0]].iteration_s
        return float(it) if it is not None else math.inf
    return _packing_time_of(tuple(sorted(jobs[n].stage_times_s or (0.0, 0.0, 0.0) for n in names)))


@memoize(MURI_MATCHINGS)
def _matched_pairs(keys: tuple[tuple[tuple[float, ...], ...], ...]) -> tuple[tuple[int, int], ...]:
    """Maximum-weight matching of packings given by their stage rows (in packing order).

    Every ordered pair of at most ``MAX_GROUP`` jobs is an edge weighted by the merged packing's
    utilisation, sum of the stage times (summed in Muri's order: the first packing's jobs, then
    the second's) / (4 x its packing time). Matched by ``smdlab.solve.blossom`` in Muri's
    simulator's tie order. The result depends on the rows alone, so equal candidate lists
    (frequent from one event to the next) share it.
    """
    n = len(keys)
    work = [[sum(row) for row in k] for k in keys]
    weights = [[0.0] * n for _ in range(n)]
    times: dict[tuple, float] = {}  # packing time per merged packing (few distinct profiles)
    for u in range(n):
        for v in range(u + 1, n):
            if len(keys[u]) + len(keys[v]) > MAX_GROUP:
                continue
            both = tuple(sorted(keys[u] + keys[v]))
            tt = times.get(both)
            if tt is None:
                tt = times[both] = _packing_time_of(both)
            denom = tt * len(STAGES)
            weights[u][v] = sum(work[u] + work[v]) / denom
            weights[v][u] = sum(work[v] + work[u]) / denom
    mate = max_weight_matching(weights)
    return tuple((u, v) for u, v in enumerate(mate) if u < v)


@memoize(MURI_PACKINGS)
def _packing_time_of(stages: tuple[tuple[float, ...], ...]) -> float:
    """``packing_time`` of sorted stage rows (it does not depend on the jobs' order)."""
    return packing_time(stages)


def _first_fit(free: np.ndarray, g: int, cap: np.ndarray) -> list[tuple[int, int]] | None:
    """Muri's first fit of ``g`` GPUs (its YARN-like placement), consuming ``free``.

    At most one machine's GPUs: the first machine with ``g`` free. More: as many wholly free
    machines as ``g`` fills (first ones), plus one more machine with the rest. None: no fit.
    """
    per = int(cap.max())
    if g <= per:
        for m in range(len(free)):
            if free[m] >= g - TOL:
                free[m] -= g
                return [(m, g)]
        return None
    full = [m for m in range(len(free)) if free[m] >= cap[m] - TOL and cap[m] >= per][: g // per]
    if len(full) < g // per:
        return None
    out = [(m, per) for m in full]
    rest = g - per * len(full)
    if rest:
        extra = next((m for m in range(len(free)) if m not in full and free[m] >= rest - TOL), None)
        if extra is None:
            return None
        out.append((extra, rest))
    for m, k in out:
        free[m] -= k
    return out


class MuriS(Muri):
    """Muri-S: durations known, shortest remaining time first."""

    name = "muri_s"

    def __init__(self, rules: str = "smdlab") -> None:
        super().__init__("s", rules)


class MuriL(Muri):
    """Muri-L: durations unknown, least attained service first."""

    name = "muri_l"

    def __init__(self, rules: str = "smdlab") -> None:
        super().__init__("l", rules)
