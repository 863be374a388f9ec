"""Gavel's trace format as an smdlab workload (``--workload gavel:PATH``).

Source of the format: stanford-futuredata/gavel (MIT licence, Copyright (c) 2020 Stanford Future
Data Systems), ``scheduler/utils.py`` (``parse_trace``) and ``scheduler/job.py``: one job per line,
ten TAB-separated fields: job type, command, working directory, steps argument, data-dir flag
(0/1), total steps, scale factor (GPUs), priority weight, SLO (negative: none), arrival time (s).
Arrival times must not decrease. A job's name is its 0-based line number, as Gavel numbers it.

Each job type must be in the throughput table smdlab ships (Gavel's measured throughputs,
``smdlab.model.gavel_data``), at the job's scale factor on every GPU type (K80, P100, V100),
consolidated: the steps per second of the whole job on that many GPUs of one type.

``read_gavel_trace`` returns the trace as Gavel sees it (``GavelTraceJob``), which Gavel's mode
(``smdlab.sim.gavel_mode``) runs exactly. ``load_gavel`` turns it into smdlab ``Job``s for every
other policy: a GPU-only gang of ``scale_factor`` GPUs whose duration at that size equals its
nominal time on consolidated V100s (``total_steps`` over the V100 throughput); the network comes
from the job type's family (``FAMILY_NETWORKS``), so its speed on K80/P100 follows the family's
measured ratio (``smdlab.model.gpu_types``) rather than the exact job type's.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from smdlab.errors import InvalidInput, check_int
from smdlab.model.cluster import Cluster
from smdlab.model.gavel_data import load_gavel_pairs, load_gavel_solo
from smdlab.model.job import Job
from smdlab.workloads.base import calibrated_jobs, network_demands, resolve_networks

__all__ = [
    "FAMILY_NETWORKS",
    "GAVEL_TYPES",
    "GavelTraceJob",
    "gavel_pair_throughputs",
    "gavel_throughputs",
    "load_gavel",
    "read_gavel_trace",
]

GAVEL_TYPES = ("k80", "p100", "v100")  # the types Gavel's simulator reads, in its sorted order

# Job-type family -> bundled network for smdlab's own engine (the families Gavel's job table
# has; Recommendation, A3C and CycleGAN have no bundled network of their kind: VGG-16, whose
# K80/P100 ratio is the median of Gavel's, ``smdlab.model.gpu_types``).
FAMILY_NETWORKS = {
    "ResNet-18": "densenet121",
    "ResNet-50": "resnet50",
    "Transformer": "bert_base",
    "LM": "lstm_lm",
    "Recommendation": "vgg16",
    "A3C": "vgg16",
    "CycleGAN": "vgg16",
}


@dataclass(frozen=True)
class GavelTraceJob:
    """One line of a Gavel trace: what Gavel's simulator uses of it."""

    job_id: int  # 0-based line number
    job_type: str
    total_steps: int
    scale_factor: int
    priority_weight: float
    arrival: float
    throughput: tuple[float, float, float]  # steps/s on k80, p100, v100 (GAVEL_TYPES order)


def gavel_throughputs() -> dict[tuple[str, int], tuple[float, float, float]]:
    """(job type, scale factor) -> consolidated steps/s on K80, P100, V100 (types it has on all)."""
    df = load_gavel_solo()
    df = df[df["placement"] == "consolidated"]
    rates: dict[tuple[str, int], dict[str, float]] = {}
    for t, jt, sf, v in zip(df["gpu_type"], df["job_type"], df["scale_factor"], df["steps_per_s"]):
        rates.setdefault((str(jt), int(sf)), {})[str(t)] = float(v)
    return {
        k: (r["k80"], r["p100"], r["v100"])
        for k, r in rates.items()
        if all(t in r for t in GAVEL_TYPES)
    }


PairRates = dict[tuple[str, str, str], tuple[float, float]]


def gavel_pair_throughputs(path: str | os.PathLike[str] | None = None) -> PairRates:
    """(GPU type, job type a, job type b) -> steps/s of a and of b sharing one GPU (scale factor 1).

    Default: the shipped table (``data/measurements/gavel_colocated_throughputs.csv``,
    consolidated rows; about 70% of Gavel's pairs, six significant digits). ``path``: Gavel's own
    ``scheduler/simulation_throughputs.json`` (every pair, full precision), as its simulator reads
    it. A pair not in the table does not share (0, 0); Gavel measured no pair above one GPU.
    """
    out: PairRates = {}
    if path is None:
        df = load_gavel_pairs()
        df = df[(df["placement"] == "consolidated") & (df["scale_factor_a"] == 1)]
        for t, a, b, ra, rb in zip(
            df["gpu_type"], df["job_a"], df["job_b"], df["steps_per_s_a"], df["steps_per_s_b"]
        ):
            out[(str(t), str(a), str(b))] = (float(ra), float(rb))
            out[(str(t), str(b), str(a))] = (float(rb), float(ra))
        return out
    import ast
    import json

    p = Path(path)
    try:
        table = json.loads(p.read_text())
    except (OSError, ValueError) as e:
        raise InvalidInput(
            f"pair throughputs {p}: not a readable Gavel throughput JSON ({e})"
        ) from None
    for t in GAVEL_TYPES:
        for a, row in table.get(t, {}).items():
            ja, sa = ast.literal_eval(a)
            for b, v in row.items():
                if b == "null" or sa != 1:
                    continue
                jb, _ = ast.literal_eval(b)
                out[(t, str(ja), str(jb))] = (float(v[0]), float(v[1]))
    if not out:
        raise InvalidInput(f"pair throughputs {p}: no single-GPU pairs on {', '.join(GAVEL_TYPES)}")
    return out


def read_gavel_trace(
    path: str | os.PathLike[str], *, max_gpus: int | None = None, first: int | None = None
) -> list[GavelTraceJob]:
    """Parse a Gavel trace; each bad line raises one InvalidInput naming it.

    max_gpus: the cluster's GPUs (a larger scale factor is refused); first: keep the first N lines.
    """
    p = Path(path)
    try:
        lines = p.read_text().splitlines()
    except OSError as e:
        raise InvalidInput(f"gavel trace {p}: cannot read ({e.strerror})") from None
    if first is not None:
        lines = lines[: check_int("first", first, 1)]
    table = gavel_throughputs()
    jobs: list[GavelTraceJob] = []
    for i, line in enumerate(lines):
        where = f"gavel trace {p} line {i + 1} (job {i})"
        fields = line.rstrip("\n").split("\t")
        if len(fields) != 10:
            raise InvalidInput(f"{where}: expected 10 tab-separated fields, got {len(fields)}")
        job_type = fields[0]
        try:
            steps, sf = int(fields[5]), int(fields[6])
            weight, arrival = float(fields[7]), float(fields[9])
        except ValueError:
            raise InvalidInput(
                f"{where}: total steps and scale factor must be integers, priority weight and "
                "arrival time numbers"
            ) from None
        if steps < 1 or sf < 1 or not weight > 0 or not arrival >= 0:
            raise InvalidInput(
                f"{where}: total steps and scale factor must be >= 1, priority weight > 0, "
                f"arrival time >= 0; got {steps}, {sf}, {weight}, {arrival}"
            )
        if max_gpus is not None and sf > max_gpus:
            raise InvalidInput(f"{where}: scale factor {sf} exceeds the cluster's {max_gpus} GPUs")
        if (job_type, sf) not in table:
            known = sorted({jt for jt, _ in table})
            raise InvalidInput(
                f"{where}: job type {job_type!r} at scale factor {sf} is not in the throughput "
                f"table; job types: {', '.join(known)}"
            )
        if jobs and arrival < jobs[-1].arrival:
            raise InvalidInput(
                f"{where}: arrival time {arrival} is before the previous line's "
                f"{jobs[-1].arrival} (Gavel traces are in arrival order)"
            )
        jobs.append(GavelTraceJob(i, job_type, steps, sf, weight, arrival, table[(job_type, sf)]))
    if not jobs:
        raise InvalidInput(f"gavel trace {p}: no jobs")
    return jobs


def load_gavel(
    path: str | os.PathLike[str], *, cluster: Cluster, first: int | None = None
) -> list[Job]:
    """smdlab jobs from a Gavel trace (module docstring: how each line becomes a job)."""
    gpus = round(sum(m.capacity.get("gpu", 0) for m in cluster.machines))
    trace = read_gavel_trace(path, max_gpus=gpus, first=first)
    nets = resolve_networks(sorted(set(FAMILY_NETWORKS.values())))
    index = {n.name: k for k, n in enumerate(nets)}
    family = [FAMILY_NETWORKS[j.job_type.split(" (")[0]] for j in trace]
    return calibrated_jobs(
        [str(j.job_id) for j in trace],
        np.array([j.arrival for j in trace]),
        np.array([j.scale_factor for j in trace]),
        np.array([j.total_steps / j.throughput[2] for j in trace]),
        np.array([index[f] for f in family]),
        nets,
        demands=network_demands(nets, "gpu_only"),
        gpu_only=True,
    )
