"""``liquid``: network-efficient placement with resource estimation from history.

Source: Gu et al., "Liquid: Intelligent Resource Estimation and Network-Efficient Scheduling for
Deep Learning Jobs on Distributed GPU Clusters", IEEE TPDS 33(11), 2022; the code is
PasaLab/Liquid (Go, Apache-2.0; read for the rules below, nothing copied). Mode: non-elastic and
non-preemptive: a started job keeps its tasks and placement until it ends (Liquid allocates the
tasks a job asks for and runs them to completion).

Rules (docs/heterogeneity.md, Liquid):

- Order: queued jobs in arrival order (the FCFS scheduler, one of Liquid's scheduler choices);
  the pass stops at the first job that does not fit (head-of-line, like ``fifo``).
- Tasks: a job runs on its request, ``Job.gang_allocation`` (requested workers, else
  ``max_workers``; as many PSs up to ``max_ps``), reduced while it would not fit even on the
  empty cluster. Tasks are placed a worker and a PS in turn, then the remaining workers (our
  order: with all workers first, the load term scatters them over the busiest machines before
  any PS pulls them together).
- Cost of a placement (``placement_cost``, smaller is better), over the tasks being placed:
  network: for each (worker, PS) pair of one job, the job's estimated per-task bandwidth b_j
  times 0 on one machine, 1 on two machines of one rack, 4 across racks of one domain and 40
  across domains (Liquid's factors); load: each task adds ``sign * load / n`` with load the
  GPU fraction of its machine in use right after the task lands there (busy GPUs plus the
  task's over the machine's GPUs), sign -1 for a worker (pack workers onto busy machines) and +1
  for a PS (spread PSs onto idle ones), n the number of tasks; node count: the number of
  (job, machine) pairs used over n. Liquid counts one extra busy GPU in the load term; we do not.
- Single job (one job starts in this decision): best fit, task by task, each on the machine of
  least cost increase among those it fits on (every resource checked, not only GPUs as in
  Liquid). On a racked cluster best fit first runs within each rack that can hold the job
  (best-fit rack first), then on the 2, 3, ... racks with most free capacity (the shared rule
  of ``smdlab.solve.placement.rack_candidates``), and takes the first that succeeds; then over
  all machines. Jobs are best-fitted one after another, which also decides which jobs start. When the greedy order finds no machine for some task although
  the job fits (a PS that fits only where an earlier worker went), the job takes the shared
  first-fit rule's placement (``first_fit_tasks``, which tries both task orders).
- Batch (several jobs start in this decision): a small genetic algorithm over the machines of
  all their tasks, seeded (``seed`` and the decision time), started from the best-fit solution
  (so it is never worse) and random-fit genomes, as Liquid's genome factory mixes best-fit and
  random-fit genomes, plus one first-fit genome;
  population ``30 + tasks / 2`` capped at ``population``, tournament selection, uniform
  crossover by job (a child takes each job's whole placement from one parent), mutation moving
  one task next to another task of its job or to a random machine; a genome whose task does not
  fit is repaired by best fit for that task. It stops after ``generations`` generations or
  ``patience`` generations without improvement (Liquid: after 30 + tasks generations without
  improvement or 30 s); a
  batch of more than ``ga_tasks`` tasks keeps the best-fit placement (the GA's cost grows with
  tasks x population x generations).
  Liquid itself runs the GA on one job's tasks when there are three or more; we keep best fit
  for one job and run the GA on the batch of jobs that one decision starts together.
- Resource estimation from history: b_j (Gbps per task) is the mean traffic rate per worker
  observed for earlier jobs of the same network (each running job's samples processed between
  two decision points, times ``2 P`` bytes per iteration per worker, P the parameter bytes); a
  network never seen before gets the job's declared NIC share (``bw_gbps`` of its worker
  demand). Liquid estimates GPU memory and compute needs from its job history; our tasks'
  demands are fixed by the job, so the estimate weighs the network cost only.
- Racks and domains: a flat cluster is one rack; racks without a domain share one domain.
  A pooled cluster (no machines) is one virtual machine, so every placement costs the same.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from smdlab.errors import check_int
from smdlab.model.cluster import Cluster
from smdlab.model.job import Job
from smdlab.policies.base import Allocation, ClusterState, Decision, Policy
from smdlab.solve.instance import task_vectors
from smdlab.solve.placement import (
    TOL,
    Placement,
    capacity_matrix,
    first_fit_tasks,
    rack_candidates,
)

NODE, RACK, DOMAIN = 1.0, 4.0, 40.0  # Liquid's network factors (evaluator: node, rack, domain)

__all__ = ["Liquid", "Topology", "placement_cost"]


class Topology:
    """Rack and domain index per machine, GPUs per machine (what the cost function reads)."""

    def __init__(self, cluster: Cluster) -> None:
        # a pooled cluster is one virtual machine (as capacity_matrix has it) in one rack
        n = len(cluster.machines) if cluster.has_machines else 1
        racks = cluster.rack_of if cluster.topology else (0,) * n
        self.rack = np.array([max(r, 0) for r in racks], dtype=np.int64)
        names = {r.name: r.domain for r in cluster.topology}
        doms = [names.get(m.rack, "") for m in cluster.machines] if cluster.has_machines else [""]
        index = {d: i for i, d in enumerate(dict.fromkeys(doms))}
        self.domain = np.array([index[d] for d in doms], dtype=np.int64)
        res = cluster.resources
        cap = capacity_matrix(cluster)
        self.gpu = cap[:, res.index("gpu")] if "gpu" in res else np.ones(n)
        self.n_racks = int(self.rack.max()) + 1 if n else 0
        self.n_domains = int(self.domain.max()) + 1 if n else 0


def placement_cost(
    tasks: Sequence[tuple[int, int, int]],
    bandwidth: Sequence[float] | np.ndarray,
    task_gpus: Sequence[tuple[float, float]],
    topo: Topology,
    busy_gpus: np.ndarray,
) -> float:
    """Liquid's cost of placing ``tasks`` in order: (job index, kind 0 worker / 1 PS, machine).

    bandwidth: b_j per job; task_gpus: (worker GPUs, PS GPUs) per job; busy_gpus: GPUs in use
    per machine before these tasks. Module docstring: network + load + node-count terms.
    """
    if len(tasks) == 0:
        return 0.0
    arr = np.asarray(tasks, dtype=np.int64).reshape(-1, 3)
    g = np.array([task_gpus[j][k] for j, k in arr[:, :2].tolist()], dtype=float)
    return _cost(arr[:, 0], arr[:, 1], arr[:, 2], g, np.asarray(bandwidth, float), topo, busy_gpus)


def _cost(
    job: np.ndarray,
    kind: np.ndarray,
    machine: np.ndarray,
    gpus: np.ndarray,
    bandwidth: np.ndarray,
    topo: Topology,
    busy0: np.ndarray,
) -> float:
    """``placement_cost`` on arrays: per task its job, kind (0 worker, 1 PS), machine and GPUs."""
    n = machine.size
    # load: GPUs in use on the task's machine right after it lands (tasks in order)
    order = np.argsort(machine, kind="stable")
    ms, gs = machine[order], gpus[order]
    cum = np.cumsum(gs)
    first = np.r_[True, ms[1:] != ms[:-1]]
    base = np.maximum.accumulate(np.where(first, np.arange(n), 0))
    within = cum - cum[base] + gs[base]
    after = np.empty(n)
    after[order] = np.asarray(busy0, dtype=float)[ms] + within
    cap = topo.gpu[machine]
    frac = np.divide(after, cap, out=np.zeros(n), where=cap > 0)
    load = float(np.where(kind == 1, frac, -frac).sum())
    # network: (worker, PS) pairs of one job by distance
    M = topo.gpu.size
    jobs = np.unique(job)
    key = job * M + machine
    w_count = np.bincount(key[kind == 0], minlength=(int(jobs.max()) + 1) * M)
    p_count = np.bincount(key[kind == 1], minlength=(int(jobs.max()) + 1) * M)
    network = 0.0
    for j in jobs.tolist():
        W = w_count[j * M : (j + 1) * M].astype(float)
        P = p_count[j * M : (j + 1) * M].astype(float)
        total = W.sum() * P.sum()
        if total == 0:
            continue
        node = float(W @ P)
        rack = float(np.bincount(topo.rack, W) @ np.bincount(topo.rack, P))
        dom = float(np.bincount(topo.domain, W) @ np.bincount(topo.domain, P))
        factor = NODE * (rack - node) + RACK * (dom - rack) + DOMAIN * (total - dom)
        network += float(bandwidth[j]) * factor
    pairs = np.unique(key).size
    return network + load / n + pairs / n


class _Batch:
    """Tasks of the jobs one decision starts, with the arrays the cost and the fit checks read."""

    def __init__(self, jobs, configs, bandwidth, resources, topo, free, busy):
        self.jobs = jobs
        self.topo = topo
        self.free0 = free
        self.busy0 = busy
        self.bw = np.asarray(bandwidth, dtype=float)
        vecs = [task_vectors(j, resources) for j in jobs]
        gi = resources.index("gpu") if "gpu" in resources else None
        self.gpus = [(0.0, 0.0) if gi is None else (float(a[gi]), float(g[gi])) for a, g in vecs]
        # (job, kind) per task; per job a worker and a PS in turn, then the remaining workers
        self.kinds: list[tuple[int, int]] = []
        self.demand: list[np.ndarray] = []
        for j, (w, p) in enumerate(configs):
            order = [0, 1] * min(w, p) + [0] * (w - min(w, p)) + [1] * (p - min(w, p))
            self.kinds += [(j, kind) for kind in order]
            self.demand += [vecs[j][kind] for kind in order]
        self.job_of = np.array([j for j, _ in self.kinds], dtype=np.int64)
        self.kind_of = np.array([k for _, k in self.kinds], dtype=np.int64)
        self.task_gpus = np.array([self.gpus[j][k] for j, k in self.kinds], dtype=float)
        self.matrix = np.array(self.demand).reshape(len(self.kinds), free.shape[1])
        self.n = len(self.kinds)

    def delta(self, t: int, placed: list[int], free: np.ndarray, busy: np.ndarray) -> np.ndarray:
        """Cost increase of task t on each machine (inf where it does not fit), given ``placed``."""
        topo = self.topo
        j, kind = self.kinds[t]
        d = self.demand[t]
        fits = np.all(free + TOL * np.maximum(1.0, d) >= d, axis=1)
        other = [
            placed[s]
            for s in range(len(placed))
            if self.kinds[s][0] == j and self.kinds[s][1] != kind
        ]
        net = np.zeros(free.shape[0])
        if other:
            o = np.array(other, dtype=np.int64)
            on_node = np.bincount(o, minlength=free.shape[0])
            in_rack = np.bincount(topo.rack[o], minlength=topo.n_racks)[topo.rack]
            in_dom = np.bincount(topo.domain[o], minlength=topo.n_domains)[topo.domain]
            net = self.bw[j] * (
                NODE * (in_rack - on_node) + RACK * (in_dom - in_rack) + DOMAIN * (o.size - in_dom)
            )
        g = self.gpus[j][kind]
        with np.errstate(divide="ignore", invalid="ignore"):
            frac = np.where(topo.gpu > 0, (busy + g) / topo.gpu, 0.0)
        load = (1.0 if kind else -1.0) * frac / self.n
        mine = {placed[s] for s in range(len(placed)) if self.kinds[s][0] == j}
        new_node = np.ones(free.shape[0]) / self.n
        if mine:
            new_node[list(mine)] = 0.0
        return np.where(fits, net + load + new_node, np.inf)

    def place(self, t: int, m: int, placed: list[int], free: np.ndarray, busy: np.ndarray) -> None:
        j, kind = self.kinds[t]
        placed.append(m)
        free[m] -= self.demand[t]
        busy[m] += self.gpus[j][kind]

    def decode(self, genome: np.ndarray, first_fit: bool = False) -> np.ndarray | None:
        """The genome with every task that does not fit where it says moved by best fit (or first
        fit); None if one fits nowhere."""
        use = np.zeros_like(self.free0)
        np.add.at(use, genome, self.matrix)
        if np.all(use <= self.free0 + TOL * np.maximum(1.0, use)):
            return genome  # every task fits where the genome says
        free, busy = self.free0.copy(), self.busy0.copy()
        placed: list[int] = []
        out = genome.copy()
        for t in range(self.n):
            m = int(genome[t])
            d = self.demand[t]
            if np.any(free[m] + TOL * np.maximum(1.0, d) < d):
                cost = self.delta(t, placed, free, busy)
                ok = np.isfinite(cost)
                if not ok.any():
                    return None
                m = int(ok.argmax()) if first_fit else int(np.argmin(cost))
            out[t] = m
            self.place(t, m, placed, free, busy)
        return out

    def best_fit(self, rows: np.ndarray | None = None) -> np.ndarray | None:
        """Task by task, each on the machine (among ``rows``; None: all) of least cost increase;
        None if a task fits nowhere."""
        free, busy = self.free0.copy(), self.busy0.copy()
        placed: list[int] = []
        outside = None
        if rows is not None:
            outside = np.ones(free.shape[0], dtype=bool)
            outside[rows] = False
        for t in range(self.n):
            cost = self.delta(t, placed, free, busy)
            if outside is not None:
                cost[outside] = np.inf
            if not np.isfinite(cost).any():
                return None
            self.place(t, int(np.argmin(cost)), placed, free, busy)
        return np.array(placed, dtype=np.int64)

    def cost(self, genome: np.ndarray) -> float:
        """``placement_cost`` of the genome (machine per task, in task order)."""
        return _cost(
            self.job_of, self.kind_of, genome, self.task_gpus, self.bw, self.topo, self.busy0
        )


class Liquid(Policy):
    """Liquid (TPDS 2022): FCFS, best fit for one job, a seeded GA for a batch (module docstring)."""

    name = "liquid"
    execution = "non_elastic"
    executions = ("non_elastic",)

    def __init__(
        self,
        seed: int = 0,
        population: int = 40,
        generations: int = 20,
        patience: int = 5,
        ga_tasks: int = 64,
    ) -> None:
        self.seed = check_int("seed", seed, 0, 2**32 - 1)
        self.ga_tasks = check_int("ga_tasks", ga_tasks, 2, 100_000)
        self.population = check_int("population", population, 2, 10_000)
        self.generations = check_int("generations", generations, 0, 100_000)
        self.patience = check_int("patience", patience, 1, 100_000)
        self.reset()

    def reset(self) -> None:
        """Forget the traffic history and the last observations."""
        self.history: dict[str, list[float]] = {}  # network -> observed Gbps per worker
        self._seen: dict[str, tuple[float, float]] = {}  # running job -> (time, remaining)
        self._topo: tuple[Cluster, Topology] | None = None

    # ---- resource estimation from history ----------------------------------------------------
    def _observe(self, state: ClusterState) -> None:
        for r in state.running:
            prev = self._seen.get(r.job.name)
            self._seen[r.job.name] = (state.time, r.remaining)
            if prev is None or state.time <= prev[0] or r.remaining >= prev[1]:
                continue
            rate = (prev[1] - r.remaining) / (state.time - prev[0])  # samples/s
            batch = r.job.samples_per_iteration(r.workers)
            size = float(r.job.profile.param_bytes.sum())
            gbps = rate / batch * 2.0 * size * 8 / 1e9
            self.history.setdefault(r.job.profile.network, []).append(gbps)

    def bandwidth(self, job: Job) -> float:
        """b_j: mean observed Gbps per worker of earlier jobs of the network, else the NIC share."""
        seen = self.history.get(job.profile.network)
        if seen:
            return float(np.mean(seen))
        return float(job.worker_bw_bytes * 8 / 1e9)

    # ---- decision --------------------------------------------------------------------------
    def _topology(self, cluster: Cluster) -> Topology:
        if self._topo is None or self._topo[0] is not cluster:
            self._topo = (cluster, Topology(cluster))
        return self._topo[1]

    def _candidates(self, job: Job, config, free: np.ndarray, topo: Topology, res) -> list:
        """Machine sets for best fit: each rack that holds the job (best fit first), then all
        (``smdlab.solve.placement.rack_candidates``, the rule every policy shares)."""
        if topo.n_racks < 2:
            return [None]
        a, g = task_vectors(job, res)
        return [*rack_candidates(free, config[0] * a + config[1] * g, topo.rack)[:-1], None]

    @staticmethod
    def _first_fit(one: _Batch, job: Job, config, free: np.ndarray, res) -> np.ndarray | None:
        """The job's tasks by ``first_fit_tasks`` as a genome in ``one``'s task order, or None."""
        tasks = first_fit_tasks(free, config[0], config[1], *task_vectors(job, res))
        if tasks is None:
            return None
        slots: dict[int, list[int]] = {0: [], 1: []}
        for m, w, p in tasks:
            slots[0] += [m] * w
            slots[1] += [m] * p
        return np.array([slots[kind].pop(0) for _, kind in one.kinds], dtype=np.int64)

    def _config(self, job: Job, cap: np.ndarray, resources) -> tuple[int, int]:
        w, p = job.gang_allocation
        a, g = task_vectors(job, resources)
        while w > 1 and first_fit_tasks(cap, w, min(p, w), a, g) is None:
            w -= 1  # a request larger than the whole cluster would wait forever
        return w, min(p, w) if job.arch != "allreduce" else 0

    def decide(self, state: ClusterState) -> Decision:
        """FCFS jobs on their requests; best fit for one, a seeded GA for a batch."""
        self._observe(state)
        cluster = state.cluster
        if not state.queued:
            return Decision()
        topo = self._topology(cluster)
        res = cluster.resources
        cap = capacity_matrix(cluster)
        free = np.array(state.free, dtype=float)
        busy = (
            cap[:, res.index("gpu")] - free[:, res.index("gpu")]
            if "gpu" in res
            else np.zeros(len(free))
        )
        jobs: list[Job] = []
        configs: list[tuple[int, int]] = []
        parts: list[np.ndarray] = []
        free_now, busy_now = free.copy(), busy.copy()
        for q in state.queued:  # which jobs start: best fit one after another, FCFS
            config = self._config(q.job, cap, res)
            one = _Batch([q.job], [config], [self.bandwidth(q.job)], res, topo, free_now, busy_now)
            found = None
            for rows in self._candidates(q.job, config, free_now, topo, res):
                found = one.best_fit(rows)
                if found is not None:
                    break
            if found is None:  # greedy order failed: the shared first-fit rule, both task orders
                found = self._first_fit(one, q.job, config, free_now, res)
            if found is None:
                break
            for t, m in enumerate(found.tolist()):
                one.place(t, m, [], free_now, busy_now)
            jobs.append(q.job)
            configs.append(config)
            parts.append(found)
        if not jobs:
            return Decision()
        genome = np.concatenate(parts)
        batch = _Batch(jobs, configs, [self.bandwidth(j) for j in jobs], res, topo, free, busy)
        if len(jobs) > 1 and batch.n <= self.ga_tasks:
            genome = self._ga(batch, genome, state.time)
        allocations = []
        for j, (job, (w, p)) in enumerate(zip(jobs, configs, strict=True)):
            per: dict[int, list[int]] = {}
            for (jj, kind), m in zip(batch.kinds, genome, strict=True):
                if jj == j:
                    per.setdefault(int(m), [0, 0])[kind] += 1
            tasks = tuple((m, c[0], c[1]) for m, c in sorted(per.items()))
            allocations.append(Allocation(job.name, w, p, Placement(tasks)))
        note = f"liquid: {len(jobs)} job(s), cost {batch.cost(genome):.4g}"
        return Decision(tuple(allocations), note=note)

    def _ga(self, batch: _Batch, start: np.ndarray, time: float) -> np.ndarray:
        """A small seeded GA over the batch's task machines, started from ``start`` (best fit)."""
        rng = np.random.default_rng([self.seed, int(time * 1000) % (2**32)])
        machines = batch.free0.shape[0]
        size = min(self.population, 30 + batch.n // 2)
        pop: list[np.ndarray] = [start]
        costs: list[float] = [batch.cost(start)]
        for k in range(1, size):  # Liquid's factory: random-fit genomes and one first-fit genome
            raw = (
                np.zeros(batch.n, dtype=np.int64)
                if k == 1
                else rng.integers(machines, size=batch.n)
            )
            g = batch.decode(raw, first_fit=k == 1)
            if g is not None:
                pop.append(g)
                costs.append(batch.cost(g))
        best = int(np.argmin(costs))
        stale = 0
        job_of = batch.job_of
        n_jobs = int(job_of.max()) + 1
        for _ in range(self.generations):
            children = [pop[best]]  # elitism
            child_costs = [costs[best]]
            for _ in range(4 * size):  # a child that cannot be repaired is dropped
                if len(children) >= size:
                    break
                a, b = (
                    min(rng.integers(len(pop), size=2), key=lambda i: costs[i]) for _ in range(2)
                )
                take = rng.random(n_jobs) < 0.5
                child = np.where(take[job_of], pop[a], pop[b])
                if rng.random() < 0.3:
                    t = int(rng.integers(batch.n))
                    mates = np.flatnonzero(job_of == job_of[t])
                    if rng.random() < 0.5 and mates.size > 1:
                        child[t] = child[int(rng.choice(mates))]
                    else:
                        child[t] = int(rng.integers(machines))
                g = batch.decode(child)
                if g is None:
                    continue
                children.append(g)
                child_costs.append(batch.cost(g))
            pop, costs = children, child_costs
            new_best = int(np.argmin(costs))
            if costs[new_best] < costs[best] - 1e-12 * max(1.0, abs(costs[best])):
                stale = 0
            else:
                stale += 1
            best = new_best
            if stale >= self.patience:
                break
        return pop[best]
