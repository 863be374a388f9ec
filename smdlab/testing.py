"""Random but seeded model objects for tests and experiments that need no bundled data."""

from __future__ import annotations

from typing import Any

import numpy as np

from smdlab.model.job import Job
from smdlab.model.profiles import LayerProfile


def random_profile(rng: np.random.Generator, layers: int | None = None) -> LayerProfile:
    """A random layered network: per-sample times ~10-100 us, 0.1-5 MB of parameters per layer."""
    n = int(layers or rng.integers(1, 12))
    f = rng.uniform(1e-5, 1e-4, n)
    return LayerProfile(
        tuple(f"l{i}" for i in range(n)),
        f,
        2 * f * rng.uniform(0.8, 1.2, n),
        rng.uniform(1e5, 5e6, n),
    )


def random_job(rng: np.random.Generator, name: str = "j", **overrides: Any) -> Job:
    """A job on a random profile with random NIC bandwidths; keyword arguments override fields."""
    args: dict[str, Any] = dict(
        profile=random_profile(rng),
        samples=float(rng.integers(10_000, 1_000_000)),
        global_batch=int(rng.integers(16, 512)),
        worker_demand={"gpu": 1, "cpu": 2, "bw_gbps": float(rng.uniform(1, 25))},
        ps_demand={"cpu": 2, "bw_gbps": float(rng.uniform(1, 25))},
        max_workers=6,
        max_ps=6,
    )
    args.update(overrides)
    return Job(name, **args)
