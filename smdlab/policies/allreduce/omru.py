"""OMRU: a genetic algorithm over job batches, with GPU reuse, minimising makespan.

Paper: "Optimizing makespan and resource utilization for multi-DNN training in GPU cluster"
(Li, Chang, Hu, Fu et al., Future Generation Computer Systems, 2021); the rules below follow our
reading of its public implementation (GitHub 1a2yd09/gpu-scheduling-algorithm; no licence: read,
nothing copied). Mode: offline (all jobs known at time 0), ``preemptive`` execution: the only
preemptions are the reusing jobs, which restart on their own GPU count at a batch barrier (each
pays the simulator's ``restart_s``); in non-elastic execution they keep the slice's GPUs.

- Chromosome: one gene per job, a batch index in 0..n-1. Jobs with equal genes form a batch;
  batches run one after another in gene order. Inside a gene, jobs are ordered by completion time
  on one GPU, and a batch of more than G jobs (G: the cluster's GPUs) is cut into chunks of G.
- Allocation inside a batch: one GPU each; every remaining GPU goes, one at a time, to the job
  with the currently largest completion time (completion = epochs x epoch time at g GPUs).
- GPU reuse: in batch k, a job that finishes before the batch's longest job leaves an idle slice
  (its GPUs for the difference). The slices, largest first, go to the jobs of batch k+1, longest
  completion first (one slice per job); each pre-trains as many whole epochs as fit in its slice
  at the slice's GPU count, and its remaining epochs shrink. Makespan = sum of the batches'
  longest completion times.
- GA: population 50, 1,000 generations (parameters); fitness 1 / makespan; roulette-wheel
  selection of as many parents as the population; parents paired at random, one crossover point
  per pair (uniform in 1..n-1, tails swapped); one gene per child mutated to a different value;
  elitist (mu + lambda) survival: the best ``population`` of parents and children. Seeded
  (``numpy.random.default_rng(seed)``), so a run is deterministic; the fitness of the whole
  population is evaluated at once with numpy.

Assumptions (marked): epoch times come from the layered model (``smdlab.model.epochs`` fits it
to OMRU's measurements for the ``omru-*`` workloads), not from a lookup of measured values; an
epoch is ``samples_per_epoch`` samples; the spare-GPU rule applies to every batch, also to a
partial last chunk (the implementation leaves a cut chunk at one GPU per job); in the simulator a
reusing job trains continuously on its slice until the barrier (the plan counts whole epochs), so
simulated makespans can be slightly below the plan's.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from smdlab.errors import InvalidInput, check_int, check_positive
from smdlab.model.epochs import STEPS_PER_EPOCH
from smdlab.policies.allreduce._batch_plan import (
    BatchPlan,
    BatchPlanPolicy,
    Entry,
    EpochTable,
    Reuse,
)
from smdlab.policies.base import Execution

MAX_POPULATION = 100_000
MAX_GENERATIONS = 1_000_000


@dataclass(frozen=True)
class Evaluation:
    """Makespans of a population and, for one individual, the plan's details."""

    makespan: np.ndarray  # (P,)
    batch: np.ndarray  # (P, n) batch index of each job
    gpus: np.ndarray  # (P, n) GPUs of each job in its batch
    reuses: tuple[
        tuple[int, int, int, int, float, float], ...
    ] = ()  # (ind, owner, job, g, epochs, slice)


def _batches(genes: np.ndarray, rank1: np.ndarray, G: int) -> np.ndarray:
    """Dense batch index (P, n): genes in order, chunks of at most G jobs inside a gene."""
    P, n = genes.shape
    order = np.argsort(genes * n + rank1[None, :], axis=1, kind="stable")
    sg = np.take_along_axis(genes, order, axis=1)
    idx = np.broadcast_to(np.arange(n), (P, n))
    new_group = np.ones((P, n), dtype=bool)
    new_group[:, 1:] = sg[:, 1:] != sg[:, :-1]
    start = np.maximum.accumulate(np.where(new_group, idx, 0), axis=1)
    chunk = (idx - start) // G
    key = sg * n + chunk
    new_batch = np.ones((P, n), dtype=bool)
    new_batch[:, 1:] = key[:, 1:] != key[:, :-1]
    bid_sorted = np.cumsum(new_batch, axis=1) - 1
    bid = np.empty_like(bid_sorted)
    np.put_along_axis(bid, order, bid_sorted, axis=1)
    return bid


def _spare_to_longest(bid: np.ndarray, nb: int, E: np.ndarray, T: np.ndarray, G: int) -> np.ndarray:
    """GPUs per job (P, n): one each, then each spare GPU of a batch to its job with the largest
    completion time (ties: the lower job index), for every batch of every chromosome at once."""
    P, n = bid.shape
    seg = (np.arange(P)[:, None] * nb + bid).ravel()
    order = np.argsort(seg, kind="stable")
    seg_s = seg[order]
    starts = np.flatnonzero(np.r_[True, seg_s[1:] != seg_s[:-1]])
    sizes = np.diff(np.r_[starts, seg_s.size])
    seg_of = np.repeat(np.arange(starts.size), sizes)
    job_s = order % n
    E_s, T_s = E[job_s], T[job_s]
    g_s = np.ones(seg_s.size, dtype=np.int64)
    rows = np.arange(seg_s.size)
    with np.errstate(invalid="ignore"):
        c_s = E_s * T_s[:, 1]
    spare = G - sizes
    big = seg_s.size
    for _ in range(int(spare.max(initial=0))):
        can = (g_s < G) & np.isfinite(T_s[rows, np.minimum(g_s + 1, G)])
        val = np.where(can, c_s, -np.inf)
        top = np.maximum.reduceat(val, starts)
        active = (spare > 0) & np.isfinite(top)
        if not active.any():
            break
        first = np.minimum.reduceat(np.where(val == top[seg_of], rows, big), starts)
        pick = first[active]
        g_s[pick] += 1
        c_s[pick] = E_s[pick] * T_s[pick, g_s[pick]]
        spare[active] -= 1
    g = np.empty(seg_s.size, dtype=np.int64)
    g[order] = g_s
    return g.reshape(P, n)


def evaluate(
    genes: np.ndarray, table: EpochTable, reuse: bool = True, detail: bool = False
) -> Evaluation:
    """Makespan of every chromosome (rows of ``genes``) under OMRU's rules (module docstring)."""
    genes = np.atleast_2d(np.asarray(genes, dtype=np.int64))
    P, n = genes.shape
    G = table.gpus
    T = table.epoch_time
    E = table.epochs
    jobs = np.arange(n)
    c1 = E * T[:, 1]
    rank1 = np.empty(n, dtype=np.int64)
    rank1[np.lexsort((jobs, c1))] = jobs
    bid = _batches(genes, rank1, G)
    nb = int(bid.max()) + 1
    M = bid[:, None, :] == np.arange(nb)[None, :, None]  # (P, nb, n)
    g = _spare_to_longest(bid, nb, E, T, G)
    with np.errstate(invalid="ignore"):
        c = E[None, :] * T[jobs[None, :], g]
    reuses: list[tuple[int, int, int, int, float, float]] = []
    if reuse and nb > 1:
        left = np.broadcast_to(E, (P, n)).copy()
        Tg = T[jobs[None, :], g]
        for b in range(nb - 1):
            cur, nxt_b = M[:, b], M[:, b + 1]
            longest = np.max(np.where(cur, c, -np.inf), axis=1)
            slack = np.where(cur, longest[:, None] - c, 0.0)
            has = cur & (slack > 0)
            s_order = np.argsort(np.where(has, -slack, np.inf), axis=1, kind="stable")
            j_order = np.argsort(np.where(nxt_b, -c, np.inf), axis=1, kind="stable")
            m = np.minimum(has.sum(axis=1), nxt_b.sum(axis=1))
            valid = np.arange(n)[None, :] < m[:, None]
            if not valid.any():
                continue
            gs = np.take_along_axis(g, s_order, axis=1)
            sl = np.take_along_axis(slack, s_order, axis=1)
            t_slice = T[j_order, gs]
            with np.errstate(invalid="ignore", divide="ignore"):
                pre = np.floor(sl / t_slice)
            pre = np.where(valid & np.isfinite(pre), pre, 0.0)
            pre = np.minimum(pre, np.take_along_axis(left, j_order, axis=1))
            delta = np.zeros((P, n))
            np.put_along_axis(delta, j_order, pre, axis=1)
            left -= delta
            c = left * Tg
            if detail:
                for p, k in zip(*np.nonzero(valid)):
                    reuses.append(
                        (
                            int(p),
                            int(s_order[p, k]),
                            int(j_order[p, k]),
                            int(gs[p, k]),
                            float(pre[p, k]),
                            float(sl[p, k]),
                        )
                    )
    longest_b = np.max(np.where(M, c[:, None, :], -np.inf), axis=2)
    makespan = np.where(np.isfinite(longest_b), longest_b, 0.0).sum(axis=1)
    return Evaluation(makespan, bid, g, tuple(reuses))


def ga(
    table: EpochTable,
    *,
    population: int = 50,
    generations: int = 1000,
    seed: int = 0,
    reuse: bool = True,
) -> tuple[np.ndarray, float, np.ndarray]:
    """Best chromosome, its makespan and the best makespan after each generation."""
    P = check_int("population", population, 2, MAX_POPULATION)
    n_gen = check_int("generations", generations, 1, MAX_GENERATIONS)
    seed = check_int("seed", seed, 0)
    n = len(table.names)
    rng = np.random.default_rng(seed)
    pop = rng.integers(0, n, size=(P, n))
    fit = evaluate(pop, table, reuse).makespan
    history = np.empty(n_gen)
    half = P // 2
    for gen in range(n_gen):
        # roulette-wheel selection on fitness 1 / makespan
        f = 1.0 / fit
        cp = np.cumsum(f / f.sum())
        parents = pop[np.minimum(np.searchsorted(cp, rng.random(P)), P - 1)]
        children = parents.copy()
        if n > 1:
            perm = rng.permutation(P)
            a, b = perm[: 2 * half : 2], perm[1 : 2 * half : 2]
            cut = rng.integers(1, n, size=half)
            tail = np.arange(n)[None, :] >= cut[:, None]
            children[a] = np.where(tail, parents[b], parents[a])
            children[b] = np.where(tail, parents[a], parents[b])
            pos = rng.integers(0, n, size=P)
            step = rng.integers(1, n, size=P)  # a different value: old + 1..n-1 (mod n)
            children[np.arange(P), pos] = (children[np.arange(P), pos] + step) % n
        child_fit = evaluate(children, table, reuse).makespan
        both = np.concatenate([pop, children])
        both_fit = np.concatenate([fit, child_fit])
        keep = np.argsort(both_fit, kind="stable")[:P]
        pop, fit = both[keep], both_fit[keep]
        history[gen] = fit[0]
    return pop[0].copy(), float(fit[0]), history


def plan_from_genes(genes: np.ndarray, table: EpochTable, reuse: bool = True) -> BatchPlan:
    """The BatchPlan one chromosome encodes."""
    ev = evaluate(np.asarray(genes)[None, :], table, reuse, detail=True)
    bid, g = ev.batch[0], ev.gpus[0]
    names = table.names
    c1 = table.completion(1)
    batches = []
    for b in range(int(bid.max()) + 1):
        members = sorted(np.flatnonzero(bid == b), key=lambda i: (c1[i], i))
        batches.append(tuple(Entry(names[i], int(g[i])) for i in members))
    reuses = tuple(
        Reuse(names[j], names[s], gs, epochs, sl)
        for _, s, j, gs, epochs, sl in ev.reuses
        if epochs > 0
    )
    return BatchPlan(tuple(batches), reuses, float(ev.makespan[0]), tuple(int(x) for x in genes))


class OMRU(BatchPlanPolicy):
    """OMRU's GA over batches with GPU reuse (module docstring); one plan per set of jobs."""

    name = "omru"
    reuse = True
    execution: Execution = "preemptive"

    def __init__(
        self,
        population: int = 50,
        generations: int = 1000,
        seed: int = 0,
        samples_per_epoch: float = STEPS_PER_EPOCH,
    ) -> None:
        self.population = check_int("population", population, 2, MAX_POPULATION)
        self.generations = check_int("generations", generations, 1, MAX_GENERATIONS)
        self.seed = check_int("seed", seed, 0)
        self.samples_per_epoch = check_positive("samples_per_epoch", samples_per_epoch)
        self.history: list[np.ndarray] = []
        super().__init__()

    def plan(self, table: EpochTable) -> BatchPlan:
        """Run the GA and return the best chromosome's plan."""
        if not len(table.names):
            raise InvalidInput("OMRU needs at least one job")
        genes, _, history = ga(
            table,
            population=self.population,
            generations=self.generations,
            seed=self.seed,
            reuse=self.reuse,
        )
        self.history.append(history)
        return plan_from_genes(genes, table, self.reuse)


__all__ = ["OMRU", "Evaluation", "evaluate", "ga", "plan_from_genes"]
