"""Job-placement decisions for learned agents (DeepRM-MM, SCHED²): state views, actions, networks.

A decision point (an arrival or a completion, non-elastic) holds waiting jobs. The agent takes
several actions there, each starting one window job at its request on a placement it picks, until
it chooses "wait": the simulator then runs on to the next event. ``PlacementBuilder`` holds one
decision point's partial plan and turns it into a ``Decision``; the Gymnasium environment
(``smdlab.rl.PlacementEnv``) and the ``deeprm`` / ``sched2`` policies (``smdlab.policies.learned``)
share it, so a trained agent runs through the simulator's ordinary Decision path (docs/rl.md,
"Placement agents").

Action spaces (``ACTIONS``):

- ``machine`` (DeepRM-MM, Chen, Xu, Wu, arXiv 1711.07440): ``k·N + m`` starts window job ``k``
  with machine ``m`` first (tasks that do not fit there go to the machines with most free GPUs);
- ``locality`` (inspired by SCHED², Luan et al., GLOBECOM 2019): ``k·3 + d`` starts job ``k`` at
  locality degree ``d`` (``LEVELS``): ``consolidated`` (its ring on the fewest machines that can
  hold it in an empty cluster, best fit; valid only when such room is free), ``fewest`` (the
  fewest machines the free capacity allows now) or ``fragments`` (machines with the least free
  GPUs first: fills fragments and spreads the job).

With ``sizes`` S above 1 every choice comes in S sizes: action ``k·per + b·S + s`` starts job
``k`` on placement choice ``b`` with ``size_levels``' worker count ``s`` (its request halved ``s``
times, rounded up; level 0 is the request). Jobs are never resized once started: neither paper
resizes a running job. The last action is "wait". Observations (``OBSERVATIONS``): ``deeprm`` (DeepRM's images),
``sched2`` (locality sensitivity and fragmentation) and ``default`` (a compact feature table);
each is documented at its function below.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from smdlab.errors import check_choice
from smdlab.model.cluster import DEFAULT_RESOURCES
from smdlab.model.job import Job
from smdlab.model.placement_speed import placement_speed, table_speed
from smdlab.policies.base import (
    Allocation,
    ClusterState,
    Decision,
    Placement,
    RunningJob,
)
from smdlab.policies.toolkit import inverse_capacity
from smdlab.rl.networks import mlp
from smdlab.solve.instance import task_vectors
from smdlab.solve.placement import first_fit_tasks, fit_counts

ACTIONS = ("machine", "locality")
LEVELS = ("consolidated", "fewest", "fragments")
OBSERVATIONS = ("deeprm", "sched2", "default")
IMAGE_RESOURCES = DEFAULT_RESOURCES  # fixed image rows: a resource the cluster lacks stays 0
DEFAULT_WINDOW = 10  # M waiting jobs in view (DeepRM shows M job slots)
DEFAULT_HORIZON = 10  # time steps of the occupancy images
DEFAULT_STEP_S = 1800.0  # seconds per image time step
MAX_SIZES = 8  # size levels: the request halved up to 7 times (128 workers down to 1)
HIST_BINS = 5  # SCHED² view: histogram of machines by free-GPU fraction
SENSITIVE = 0.3  # the warm-up teacher keeps jobs above this locality sensitivity consolidated
JOB_FEATURES = {
    "sched2": (
        "present",
        "gpus",
        "log_duration",
        "log_wait",
        "sensitivity",
        "fits_consolidated",
        "fits",
    ),
    "default": ("present", "gpus", "cpu", "mem", "log_duration", "log_wait"),
}
SCHED2_CLUSTER = ("free_hist", "fragmentation", "free_gpu_fraction", "backlog")


@dataclass(frozen=True)
class JobFacts:
    """What the agents know of one job: its request, ideal duration and locality sensitivity.

    workers, ps: the request (``Job.gang_allocation``; a non-gang request too large for the empty
    cluster is cut to the most workers that fit it). ideal_s: T_j, the job's duration alone at its
    request, packed (the timing model). sensitivity: 1 - (ring speed spread over min(workers,
    machines) machines) / (packed speed), 0 for PS jobs (placement does not change their speed
    in the model). packed: machines an empty cluster's best placement spans.
    """

    workers: int
    ps: int
    ideal_s: float
    sensitivity: float
    packed: int
    alpha: np.ndarray
    gamma: np.ndarray


def _ps_for(job: Job, w: int) -> int:
    return min(w, job.max_ps)


def size_levels(job: Job, f: JobFacts, sizes: int) -> list[tuple[int, int] | None]:
    """(workers, PSs) of each of ``sizes`` size levels: level s is the request's workers halved s
    times, rounded up (level 0: the request); None where a level repeats a larger one's count,
    and past level 0 for gang jobs (all or nothing)."""
    out: list[tuple[int, int] | None] = [(f.workers, f.ps)]
    last = f.workers
    for s in range(1, sizes):
        w = -(-f.workers // (2**s))
        if job.gang or w == last:
            out.append(None)
            continue
        out.append((w, _ps_for(job, w)))
        last = w
    return out


def ring_speed(job: Job, w: int, p: int, machines: int, mode: str) -> float:
    """Speed (samples/s) of the job at (w, p) when its workers span ``machines`` machines."""
    return placement_speed(job, w, p, mode, machines=max(1, min(machines, w)))


def job_facts(job: Job, cap: np.ndarray, resources: Sequence[str], mode: str) -> JobFacts:
    """The job's ``JobFacts`` on a cluster of capacity ``cap`` (machines x resources)."""
    alpha, gamma = task_vectors(job, resources)
    w, p = job.gang_allocation
    w = max(1, min(w, job.max_workers))
    p = _ps_for(job, w) if not job.gang else p
    tasks = first_fit_tasks(cap, w, p, alpha, gamma)
    if not job.gang:  # a request too large for the empty cluster: the most workers that fit
        while tasks is None and w > 1:
            w -= 1
            p = _ps_for(job, w)
            tasks = first_fit_tasks(cap, w, p, alpha, gamma)
    packed = 1
    if tasks is not None:
        order = np.argsort(-cap[:, 0], kind="stable") if cap.shape[1] else np.arange(len(cap))
        best = first_fit_tasks(cap[order], w, p, alpha, gamma)
        packed = len({m for m, tw, _ in (best or tasks) if tw > 0}) or 1
    speed = table_speed(job, w, p, mode)
    spread = ring_speed(job, w, p, min(w, cap.shape[0]), mode) if w > 1 else speed
    return JobFacts(
        workers=w,
        ps=p,
        ideal_s=float(job.samples / speed) if speed > 0 else math.inf,
        sensitivity=float(max(0.0, 1.0 - spread / speed)) if speed > 0 else 0.0,
        packed=packed,
        alpha=alpha,
        gamma=gamma,
    )


class FactsCache:
    """``JobFacts`` per job on one cluster (keyed by the job object: workloads reuse names)."""

    def __init__(self, cap: np.ndarray, resources: Sequence[str], mode: str) -> None:
        self.cap = cap
        self.resources = tuple(resources)
        self.mode = mode
        self.facts: dict[int, tuple[Job, JobFacts]] = {}
        self.ring: dict[tuple[int, int, int, int], float] = {}
        self._packed: dict[tuple[int, int, int], int] = {}

    def get(self, job: Job) -> JobFacts:
        """The job's facts (computed once)."""
        hit = self.facts.get(id(job))
        if hit is None or hit[0] is not job:
            hit = self.facts[id(job)] = (job, job_facts(job, self.cap, self.resources, self.mode))
        return hit[1]

    def packed(self, job: Job, w: int, p: int) -> int:
        """Machines an empty cluster's best placement of ``job`` at (w, p) spans."""
        f = self.get(job)
        if (w, p) == (f.workers, f.ps):
            return f.packed
        key = (id(job), w, p)
        hit = self._packed.get(key)
        if hit is None:
            order = np.argsort(-self.cap[:, 0], kind="stable") if self.cap.shape[1] else None
            cap = self.cap if order is None else self.cap[order]
            best = first_fit_tasks(cap, w, p, f.alpha, f.gamma)
            hit = self._packed[key] = len({m for m, tw, _ in best or () if tw > 0}) or 1
        return hit

    def running_speed(self, r: RunningJob) -> float:
        """A running job's speed at its allocation and placement (samples/s)."""
        machines = len({m for m, w, _ in r.placement.tasks if w > 0}) or 1
        self.get(r.job)  # keeps the job alive while its id keys the cache
        key = (id(r.job), r.workers, r.ps, machines)
        v = self.ring.get(key)
        if v is None:
            v = self.ring[key] = ring_speed(r.job, r.workers, r.ps, machines, self.mode)
        return v


def _usage(tasks: Sequence[tuple[int, int, int]], f: JobFacts, n_machines: int) -> np.ndarray:
    out = np.zeros((n_machines, len(f.alpha)))
    for m, w, p in tasks:
        out[m] += w * f.alpha + p * f.gamma
    return out


class PlacementBuilder:
    """One decision point's plan: window jobs started one action at a time, then "wait".

    The window holds the first ``window`` waiting jobs by arrival. "Wait" is refused (masked) while
    the cluster runs nothing and some window job fits, so an agent cannot leave an idle cluster
    idle forever. Running jobs keep their allocations (the agents never preempt or resize).
    ``sizes`` (1: every job at its request) sets the worker counts each choice offers
    (``size_levels``).
    """

    def __init__(
        self,
        state: ClusterState,
        facts: FactsCache,
        *,
        window: int = DEFAULT_WINDOW,
        action: str = "machine",
        horizon: int = DEFAULT_HORIZON,
        step_s: float = DEFAULT_STEP_S,
        sizes: int = 1,
    ) -> None:
        self.state = state
        self.facts = facts
        self.window = window
        self.action = action
        self.horizon = horizon
        self.step_s = step_s
        self.cap = facts.cap
        self.n_machines = self.cap.shape[0]
        self.free = np.array(state.free, dtype=float)
        queued = sorted(state.queued, key=lambda q: (q.job.arrival, q.job.name))
        self.jobs: list[Job] = [q.job for q in queued[:window]]
        self.backlog = max(0, len(queued) - window)
        self.job_facts = [facts.get(j) for j in self.jobs]
        self.sizes = sizes
        self.levels = [size_levels(j, f, sizes) for j, f in zip(self.jobs, self.job_facts)]
        self.started: list[int] = []  # window indices started this decision point
        self.tasks: dict[int, tuple[tuple[int, int, int], ...]] = {}
        self.alloc: dict[int, tuple[int, int]] = {}  # (workers, PSs) of each started job
        self.base = self.n_machines if action == "machine" else len(LEVELS)
        self.per = self.base * sizes
        self.n_actions = window * self.per + 1
        # resource columns of the images (fixed list) -> cluster columns
        self.cols = [
            facts.resources.index(r) if r in facts.resources else -1 for r in IMAGE_RESOURCES
        ]
        self.gpu = facts.resources.index("gpu") if "gpu" in facts.resources else -1
        self.inv_cap = inverse_capacity(self.cap)
        self.inv_machine = inverse_capacity(self.cap.max(axis=0))
        # running work: per job (usage per machine, seconds left at its current speed)
        self.busy: list[tuple[np.ndarray, float]] = []
        for r in state.running:
            f = facts.get(r.job)
            v = facts.running_speed(r)
            left = r.remaining / v if v > 0 else math.inf
            self.busy.append((_usage(r.placement.tasks, f, self.n_machines), left))
        self._options: list[list[tuple | None]] | None = None
        self._lazy: dict[tuple[int, int], tuple | None] = {}
        self._mask: np.ndarray | None = None

    # ---- placements --------------------------------------------------------------------------
    def _place(self, k: int, s: int, order: np.ndarray) -> tuple[tuple[int, int, int], ...] | None:
        size = self.levels[k][s]
        if size is None:
            return None
        f = self.job_facts[k]
        tasks = first_fit_tasks(self.free[order], size[0], size[1], f.alpha, f.gamma)
        if tasks is None:
            return None
        return tuple(sorted((int(order[m]), w, p) for m, w, p in tasks))

    def _free_gpus(self) -> np.ndarray:
        if self.gpu < 0:
            return np.zeros(self.n_machines)
        return self.free[:, self.gpu]

    def options(self) -> list[list[tuple | None]]:
        """Per window job, the placement of each of its ``per`` actions (None: not possible now)."""
        if self._options is None:
            out: list[list[tuple | None]] = []
            idx = np.arange(self.n_machines)
            gpus = self._free_gpus()
            most_first = np.lexsort((idx, -gpus))
            least_first = np.lexsort((idx, np.where(gpus > 0, gpus, np.inf)))
            for k in range(len(self.jobs)):
                if k in self.tasks:
                    out.append([None] * self.per)
                    continue
                row: list[tuple | None] = [None] * self.per
                S = self.sizes
                for s, size in enumerate(self.levels[k]):
                    if size is None:
                        continue
                    if self.action == "machine":
                        for m in range(self.n_machines):
                            order = np.concatenate(([m], most_first[most_first != m]))
                            row[m * S + s] = self._place(k, s, order)
                        continue
                    fewest = self._place(k, s, most_first)
                    frag = self._place(k, s, least_first)
                    cons = None
                    if fewest is not None:
                        packed = self.facts.packed(self.jobs[k], *size)
                        if packed == 1:  # best fit: the machine with least free GPUs holding it
                            for m in least_first:
                                t = self._place(k, s, np.concatenate(([m], idx[idx != m])))
                                if t is not None and len({x[0] for x in t if x[1] > 0}) <= 1:
                                    cons = t
                                    break
                        elif len({x[0] for x in fewest if x[1] > 0}) <= packed:
                            cons = fewest
                    row[s], row[S + s], row[2 * S + s] = cons, fewest, frag
                out.append(row)
            self._options = out
        return self._options

    def _one_kind(self, f: JobFacts) -> bool:
        """Whether only the job's workers take resources (no PS, or PSs that demand nothing)."""
        return f.ps == 0 or not (f.gamma > 0).any()

    def _placement(self, k: int, c: int) -> tuple | None:
        """The placement of action (job ``k``, choice ``c``), computed once per state."""
        if self._options is not None:
            return self._options[k][c]
        if self.action != "machine":
            return self.options()[k][c]
        hit = self._lazy.get((k, c), False)
        if hit is False:
            gpus = self._free_gpus()
            idx = np.arange(self.n_machines)
            most_first = np.lexsort((idx, -gpus))
            m, s = divmod(c, self.sizes)
            order = np.concatenate(([m], most_first[most_first != m]))
            hit = self._lazy[(k, c)] = self._place(k, s, order)
        return hit  # type: ignore[return-value]

    def mask(self) -> np.ndarray:
        """Valid actions (bool, length ``n_actions``)."""
        if self._mask is None:
            m = np.zeros(self.n_actions, dtype=bool)
            if self.action == "machine":
                # one task kind: first fit in any machine order fits exactly when the free
                # capacity holds that many tasks, so every anchor machine is valid or none is
                S = self.sizes
                for k, f in enumerate(self.job_facts):
                    if k in self.tasks:
                        continue
                    if self._one_kind(f):
                        room = int(fit_counts(self.free, f.alpha).sum())
                        for s, size in enumerate(self.levels[k]):
                            ok = size is not None and room >= size[0]
                            m[k * self.per + s : (k + 1) * self.per : S] = ok
                    else:
                        for c in range(self.per):
                            m[k * self.per + c] = self._placement(k, c) is not None
            else:
                for k, row in enumerate(self.options()):
                    for c, t in enumerate(row):
                        m[k * self.per + c] = t is not None
            idle = not self.state.running and not self.tasks
            m[-1] = not (idle and m[:-1].any())
            self._mask = m
        return self._mask

    def apply(self, action: int) -> bool:
        """Start the job of ``action`` on its placement; False for "wait" or an invalid action."""
        a = int(action)
        if a >= self.n_actions - 1 or a < 0 or not self.mask()[a]:
            return False
        k, c = divmod(a, self.per)
        tasks = self._placement(k, c)
        assert tasks is not None
        f = self.job_facts[k]
        size = self.levels[k][c % self.sizes]
        assert size is not None
        use = _usage(tasks, f, self.n_machines)
        self.free -= use
        self.tasks[k] = tasks
        self.alloc[k] = size
        machines = len({m for m, w, _ in tasks if w > 0}) or 1
        v = ring_speed(self.jobs[k], size[0], size[1], machines, self.facts.mode)
        self.busy.append((use, self.jobs[k].samples / v if v > 0 else math.inf))
        self._options = None
        self._lazy = {}
        self._mask = None
        return True

    def _spans(self, tasks: tuple) -> int:
        return len({m for m, w, _ in tasks if w > 0}) or 1

    def expert_action(self, sensitive: float = SENSITIVE, smaller: bool = False) -> int:
        """The warm-up teacher's next action (a locality-aware first fit, ours): the first window
        job by arrival that can start on the fewest machines its request needs, on the best-fit
        such placement (the least free GPUs on the machine chosen first); a job that cannot is
        started anyway on the fewest machines free now if its locality sensitivity is below
        ``sensitive``, else passed over (it waits for room); "wait" when no job is chosen. It
        starts every job at its request (size level 0). With ``smaller`` (ours), where it would
        wait it starts instead the first window job that may start below its request, on its
        first valid placement choice at the largest size that fits."""
        mask = self.mask()
        gpus = self._free_gpus()
        S = self.sizes
        for k, row in enumerate(self.options()):
            if k in self.tasks:
                continue
            f = self.job_facts[k]
            # placement choices b at the request (level 0): action k·per + b·S
            valid = [
                b for b in range(self.base) if row[b * S] is not None and mask[k * self.per + b * S]
            ]
            if not valid:
                continue
            if self.action == "locality":
                if 0 in valid:
                    return k * self.per
                if f.sensitivity < sensitive and 1 in valid:
                    return k * self.per + S
                continue
            spans = {b: self._spans(row[b * S]) for b in valid}  # type: ignore[arg-type]
            best = min(valid, key=lambda b: (spans[b], gpus[b], b))
            if spans[best] <= f.packed or f.sensitivity < sensitive:
                return k * self.per + best * S
        if smaller:
            starts = np.flatnonzero(mask[:-1])
            below = starts[starts % self.per % S > 0]
            if len(below):
                return int(below[0])
        return self.n_actions - 1 if mask[-1] else int(np.flatnonzero(mask)[0])

    def decision(self) -> Decision:
        """The jobs started at this decision point."""
        allocations = tuple(
            Allocation(self.jobs[k].name, *self.alloc[k], Placement(self.tasks[k]))
            for k in range(len(self.jobs))
            if k in self.tasks
        )
        return Decision(allocations)

    # ---- observations ------------------------------------------------------------------------
    def _image_cols(self, a: np.ndarray) -> np.ndarray:
        """(..., cluster resources) -> (..., IMAGE_RESOURCES), 0 where the cluster lacks one."""
        out = np.zeros((*a.shape[:-1], len(self.cols)))
        for i, c in enumerate(self.cols):
            if c >= 0:
                out[..., i] = a[..., c]
        return out

    def _waiting(self) -> list[int]:
        return [k for k in range(len(self.jobs)) if k not in self.tasks]

    def _wait_s(self, k: int) -> float:
        return max(0.0, self.state.time - self.jobs[k].arrival)

    def deeprm(self) -> np.ndarray:
        """DeepRM's state: per machine and resource, the occupied fraction at each of ``horizon``
        future steps (running jobs at their current speed; a column sum of DeepRM's cell image);
        per window job and resource, its request as a fraction of a machine, over the steps of
        its ideal duration; then the backlog (waiting jobs past the window) over the window size.
        Layout: [machines x R x H, window x R x H, 1] with R = ``IMAGE_RESOURCES``."""
        H, R = self.horizon, len(IMAGE_RESOURCES)
        t = np.arange(H) * self.step_s
        cluster = np.zeros((self.n_machines, len(self.facts.resources), H))
        for use, left in self.busy:
            alive = (t < left).astype(float)
            cluster += (use * self.inv_cap)[:, :, None] * alive[None, None, :]
        jobs = np.zeros((self.window, len(self.facts.resources), H))
        for k in self._waiting():
            f = self.job_facts[k]
            need = (f.workers * f.alpha + f.ps * f.gamma) * self.inv_machine
            alive = (t < f.ideal_s).astype(float)
            jobs[k] = need[:, None] * alive[None, :]
        c = self._image_cols(cluster.transpose(0, 2, 1)).transpose(0, 2, 1)
        j = self._image_cols(jobs.transpose(0, 2, 1)).transpose(0, 2, 1)
        assert c.shape[1] == R
        return np.concatenate(
            [c.ravel(), j.ravel(), [self.backlog / self.window]], dtype=np.float32
        )

    def sched2(self) -> np.ndarray:
        """SCHED²'s state (inspired: the paper gives no layout): per window job, ``JOB_FEATURES
        ["sched2"]``: present, GPUs of its request over a machine's, log(1 + ideal duration in
        hours), log(1 + wait in hours), locality sensitivity, whether a consolidated placement
        is free now, whether any is; then the cluster's fragmentation: the fraction of machines
        in each of ``HIST_BINS`` bins of free-GPU fraction ((0], (0, .25], ... (.75, 1]), the
        fragmentation index 1 - (most free GPUs on one machine / free GPUs), the free GPU fraction
        of the cluster and the backlog over the window size."""
        F = len(JOB_FEATURES["sched2"])
        rows = np.zeros((self.window, F))
        gpm = float(self.cap[:, self.gpu].max()) if self.gpu >= 0 else 1.0
        opts = self.options() if self.action == "locality" else None
        for k in self._waiting():
            f, job = self.job_facts[k], self.jobs[k]
            if opts is None:
                cons_ok = fits = float(self._place(k, 0, np.arange(self.n_machines)) is not None)
            else:  # at the request: consolidated is choice 0, fewest choice 1 (level 0)
                cons_ok = float(opts[k][0] is not None)
                fits = float(opts[k][self.sizes] is not None)
            rows[k] = (
                1.0,
                f.workers * float(f.alpha[self.gpu] if self.gpu >= 0 else 0.0) / max(gpm, 1.0),
                math.log1p(f.ideal_s / 3600.0),
                math.log1p(self._wait_s(k) / 3600.0),
                f.sensitivity,
                cons_ok,
                fits,
            )
            del job
        return np.concatenate([rows.ravel(), self._fragmentation()], dtype=np.float32)

    def _fragmentation(self) -> np.ndarray:
        gpus = self._free_gpus()
        cap = self.cap[:, self.gpu] if self.gpu >= 0 else np.ones(self.n_machines)
        frac = np.where(cap > 0, gpus / np.where(cap > 0, cap, 1.0), 0.0)
        edges = np.linspace(0.0, 1.0, HIST_BINS)  # bin 0: none free; then quarters
        bins = np.searchsorted(edges, frac - 1e-9, side="left")
        hist = np.bincount(np.clip(bins, 0, HIST_BINS - 1), minlength=HIST_BINS)
        total = float(gpus.sum())
        frag = 1.0 - float(gpus.max()) / total if total > 0 else 0.0
        free_frac = total / float(cap.sum()) if cap.sum() > 0 else 0.0
        return np.concatenate(
            [hist / max(1, self.n_machines), [frag, free_frac, self.backlog / self.window]]
        )

    def default(self) -> np.ndarray:
        """The default state: per window job, ``JOB_FEATURES["default"]`` (present, its request's
        GPU, CPU and memory over a machine's, log(1 + ideal duration in hours), log(1 + wait in
        hours)); per machine, the free fraction of each of ``IMAGE_RESOURCES``; then the backlog
        over the window size."""
        rows = np.zeros((self.window, len(JOB_FEATURES["default"])))
        for k in self._waiting():
            f = self.job_facts[k]
            need = self._image_cols((f.workers * f.alpha + f.ps * f.gamma) * self.inv_machine)
            rows[k] = (
                1.0,
                need[0],
                need[1],
                need[2],
                math.log1p(f.ideal_s / 3600.0),
                math.log1p(self._wait_s(k) / 3600.0),
            )
        free = self._image_cols(self.free * self.inv_cap)
        return np.concatenate(
            [rows.ravel(), free.ravel(), [self.backlog / self.window]], dtype=np.float32
        )

    def observation(self, kind: str) -> np.ndarray:
        """The flat observation of space ``kind`` (``OBSERVATIONS``)."""
        if kind == "deeprm":
            return self.deeprm()
        if kind == "sched2":
            return self.sched2()
        return self.default()


def observation_size(kind: str, n_machines: int, window: int, horizon: int) -> int:
    """Length of the flat observation of space ``kind``."""
    R = len(IMAGE_RESOURCES)
    if kind == "deeprm":
        return n_machines * R * horizon + window * R * horizon + 1
    if kind == "sched2":
        return window * len(JOB_FEATURES["sched2"]) + HIST_BINS + 3
    return window * len(JOB_FEATURES["default"]) + n_machines * R + 1


# ---- the agents' networks: one scorer shared over rows, plus a "wait" scorer --------------------


def net_inputs(
    agent: str, obs: np.ndarray, n_machines: int, window: int, horizon: int
) -> tuple[np.ndarray, np.ndarray]:
    """(rows, wait input) from a flat observation: one row per (job, machine) for ``deeprm``
    (job image next to machine image), one per job for ``sched2`` (job features next to the
    cluster's); the wait scorer sees the cluster's view (and, for deeprm, the mean job image)."""
    if agent == "deeprm":
        R, H = len(IMAGE_RESOURCES), horizon
        c = obs[: n_machines * R * H].reshape(n_machines, R * H)
        j = obs[n_machines * R * H : -1].reshape(window, R * H)
        rows = np.concatenate([np.repeat(j, n_machines, axis=0), np.tile(c, (window, 1))], axis=1)
        wait = np.concatenate([c.mean(axis=0), j.mean(axis=0), obs[-1:]])
        return rows.astype(np.float32), wait.astype(np.float32)
    F = len(JOB_FEATURES["sched2"])
    jobs = obs[: window * F].reshape(window, F)
    cl = obs[window * F :]
    rows = np.concatenate([jobs, np.tile(cl, (window, 1))], axis=1)
    return rows.astype(np.float32), cl.astype(np.float32)


def logits(
    row_net: Sequence[tuple[np.ndarray, np.ndarray]],
    wait_net: Sequence[tuple[np.ndarray, np.ndarray]],
    rows: np.ndarray,
    wait: np.ndarray,
) -> np.ndarray:
    """Action logits: the row scorer's outputs in row order, then the wait scorer's."""
    return np.concatenate([mlp(row_net, rows).ravel(), mlp(wait_net, wait[None, :]).ravel()])


def check_agent_options(observation: str, action: str) -> tuple[str, str]:
    """Validated (observation, action) names."""
    return (
        check_choice("observation", observation, OBSERVATIONS),
        check_choice("action", action, ACTIONS),
    )
