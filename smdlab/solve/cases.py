"""Seeded allocation instances for tests, benchmarks and notebooks (not part of the modelling API)."""

from __future__ import annotations

import numpy as np

from smdlab.errors import check_int, check_positive
from smdlab.model.cluster import Cluster
from smdlab.model.job import Job
from smdlab.model.profiles import LayerProfile, list_profiles, profile_info
from smdlab.model.timing import duration_grid

ALL_RESOURCES = ("gpu", "cpu", "mem_gb", "bw_gbps")


def small_job(
    rng: np.random.Generator,
    name: str,
    resources=ALL_RESOURCES,
    max_workers: int = 3,
    max_ps: int = 3,
) -> Job:
    """A job on a random hand-made profile (2-7 layers) with random demands over ``resources``."""
    L = int(rng.integers(2, 8))
    f = rng.uniform(1e-5, 2e-4, L)
    s = rng.uniform(1e5, 5e7, L)
    prof = LayerProfile(
        tuple(f"l{i}" for i in range(L)),
        f,
        2 * f,
        s,
        update_s_per_byte=float(rng.choice([0.0, 1e-10])),
    )
    wd = {"gpu": float(rng.choice([1, 2])), "cpu": float(rng.integers(1, 6)), "mem_gb": float(rng.integers(4, 32)),
          "bw_gbps": float(rng.choice([5, 10, 25]))}  # fmt: skip
    pd = {"gpu": 0.0, "cpu": float(rng.integers(1, 6)), "mem_gb": float(rng.integers(4, 32)),
          "bw_gbps": float(rng.choice([5, 10, 25]))}  # fmt: skip
    keep = set(resources) | {"bw_gbps"}
    return Job(
        name, prof, float(rng.uniform(1e5, 1e7)), int(rng.choice([64, 128, 256])),
        {k: v for k, v in wd.items() if k in keep}, {k: v for k, v in pd.items() if k in keep},
        weight=float(rng.uniform(0.5, 2)), max_workers=max_workers, max_ps=max_ps,
    )  # fmt: skip


def small_instance(
    seed: int, jobs: int | None = None, resources: int | None = None, tightness: float | None = None
):
    """(jobs, pooled cluster) with 2-4 jobs, 2-4 resource types, caps <= 3 and a random capacity.

    tightness: capacity as a fraction of the jobs' total demand at (3, 3); below about 1/3 not
    every job fits at (1, 1) and some must stay unstarted.
    """
    rng = np.random.default_rng(seed)
    n = jobs if jobs is not None else int(rng.integers(2, 5))
    K = resources if resources is not None else int(rng.integers(2, 5))
    res = ("bw_gbps", *tuple(rng.permutation(["gpu", "cpu", "mem_gb"])[: K - 1]))
    js = [
        small_job(rng, f"j{i}", res, int(rng.integers(1, 4)), int(rng.integers(1, 4)))
        for i in range(n)
    ]
    frac = tightness if tightness is not None else float(rng.uniform(0.15, 0.7))
    full = {
        r: sum(
            j.worker_demand.get(r, 0) * j.max_workers + j.ps_demand.get(r, 0) * j.max_ps for j in js
        )
        for r in res
    }
    alone = {r: max(j.worker_demand.get(r, 0) + j.ps_demand.get(r, 0) for j in js) for r in res}
    cap = {
        r: float(max(np.floor(frac * full[r]), alone[r])) for r in res
    }  # every job fits on its own
    return js, Cluster.pooled(res, **cap)


def benchmark_instance(
    n: int, seed: int = 0, fraction: float = 0.5, caps: int = 16, device: str = "v100"
):
    """(jobs, cluster) for the solver benchmark: ``n`` jobs on mixed bundled networks, 4 resource types.

    Each job runs a random bundled network with random work (1e5-1e7 samples), weight 1 or 2 and
    random per-task demands; caps are ``caps`` workers and ``caps`` PSs. The cluster consists of
    identical servers (8 GPU, 64 CPU, 256 GB, 100 Gbps), as many as it takes so that ``fraction``
    of the demand fits, where a job's demand is the resources of its fastest configuration.
    """
    check_int("n", n, 1)
    check_positive("fraction", fraction)
    rng = np.random.default_rng(seed)
    nets = list_profiles()
    jobs = []
    for i in range(n):
        net = nets[int(rng.integers(len(nets)))]
        wd = {"gpu": float(rng.choice([1, 1, 2])), "cpu": float(rng.integers(2, 9)),
              "mem_gb": float(rng.choice([8, 16, 32])), "bw_gbps": float(rng.choice([10, 25]))}  # fmt: skip
        pd = {"gpu": 0.0, "cpu": float(rng.integers(2, 9)), "mem_gb": float(rng.choice([8, 16, 32])),
              "bw_gbps": float(rng.choice([10, 25]))}  # fmt: skip
        profile = LayerProfile.load(net, device)
        batch = int(profile_info(net)["default_global_batch"])
        jobs.append(
            Job(f"j{i}", profile, float(10 ** rng.uniform(5, 7)), batch, wd, pd,
                weight=float(rng.choice([1, 1, 2])), max_workers=caps, max_ps=caps)
        )  # fmt: skip
    dur = duration_grid(jobs)
    demand = np.zeros(4)
    for j, d in zip(jobs, dur):
        w, p = np.unravel_index(np.argmin(d), d.shape)
        demand += (w + 1) * np.array([j.worker_demand[r] for r in ALL_RESOURCES])
        demand += (p + 1) * np.array([j.ps_demand[r] for r in ALL_RESOURCES])
    per = np.array([8.0, 64.0, 256.0, 100.0])
    machines = max(1, int(np.ceil((fraction * demand / per).max())))
    return jobs, Cluster.homogeneous(machines)


def tight_instance(
    n: int,
    seed: int = 0,
    jobs_per_machine: int = 4,
    bw_range: tuple[float, float] = (5.0, 25.0),
    machines: int | None = None,
):
    """(jobs, cluster): ``n`` jobs on ceil(n / ``jobs_per_machine``) 8-GPU servers (or ``machines``), every task reserving ``bw_range`` Gbps.

    The held-out class: bundled networks, work 1e5-1e7 samples, weight 1 or 2, caps 16
    workers and 16 PSs, worker (1-2 GPU, 2-8 CPU, 8-32 GB) and PS (2-8 CPU, 8-32 GB) demands, and
    per-task bandwidth drawn uniformly from ``bw_range`` (rounded to 0.5 Gbps) on 100 Gbps NICs:
    the NICs bind, and usually not every job fits even at (1, 1).
    """
    check_int("n", n, 1)
    check_int("jobs_per_machine", jobs_per_machine, 1)
    lo, hi = (float(x) for x in bw_range)
    check_positive("bw_range low", lo)
    if hi < lo:
        from smdlab.errors import InvalidInput

        raise InvalidInput(f"bw_range must be (low, high) with low <= high, got {bw_range!r}")
    rng = np.random.default_rng(seed)
    nets = list_profiles()
    jobs = []
    for i in range(n):
        net = nets[int(rng.integers(len(nets)))]
        bw_w, bw_p = (float(np.round(rng.uniform(lo, hi) * 2) / 2) for _ in range(2))
        wd = {"gpu": float(rng.choice([1, 1, 2])), "cpu": float(rng.integers(2, 9)),
              "mem_gb": float(rng.choice([8, 16, 32])), "bw_gbps": bw_w}  # fmt: skip
        pd = {"gpu": 0.0, "cpu": float(rng.integers(2, 9)), "mem_gb": float(rng.choice([8, 16, 32])),
              "bw_gbps": bw_p}  # fmt: skip
        profile = LayerProfile.load(net, "v100")
        batch = int(profile_info(net)["default_global_batch"])
        jobs.append(
            Job(f"j{i}", profile, float(10 ** rng.uniform(5, 7)), batch, wd, pd,
                weight=float(rng.choice([1, 1, 2])), max_workers=16, max_ps=16)
        )  # fmt: skip
    m = (
        max(1, -(-n // jobs_per_machine))
        if machines is None
        else check_int("machines", machines, 1)
    )
    return jobs, Cluster.homogeneous(m)
