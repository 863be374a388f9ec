"""Machines and their capacities over resource types."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType

import numpy as np

from smdlab.errors import InvalidInput, check_int, check_positive

DEFAULT_RESOURCES: tuple[str, ...] = ("gpu", "cpu", "mem_gb", "bw_gbps")
MAX_MACHINES = 100_000  # a bound on generated clusters: building 10^5 machines takes about a second


def _frozen_amounts(
    field: str, amounts: Mapping[str, float], resources: Sequence[str]
) -> Mapping[str, float]:
    if not isinstance(amounts, Mapping):
        raise InvalidInput(
            f"{field} must be a mapping from resource name to amount, got {amounts!r}"
        )
    unknown = [r for r in amounts if r not in resources]
    if unknown:
        raise InvalidInput(
            f"{field} has unknown resource {unknown[0]!r}; allowed: {', '.join(resources)}"
        )
    out = {
        r: check_positive(f"{field}[{r!r}]", amounts.get(r, 0.0), allow_zero=True)
        for r in resources
    }
    return MappingProxyType(out)


@dataclass(frozen=True)
class Machine:
    """One server: a name and its capacity per resource type."""

    name: str
    capacity: Mapping[str, float]


@dataclass(frozen=True, eq=False)
class Cluster:
    """A set of machines over resource types; ``capacity`` is their pooled capacity.

    machines: the servers (empty for a pooled, placement-free cluster built by ``Cluster.pooled``).
    resources: resource type names, in the order used for vectors.
    """

    machines: tuple[Machine, ...]
    resources: tuple[str, ...] = DEFAULT_RESOURCES
    pooled_capacity: Mapping[str, float] | None = None

    def __post_init__(self) -> None:
        res = tuple(self.resources) if not isinstance(self.resources, str) else ()
        if not res or len(set(res)) != len(res) or not all(isinstance(r, str) and r for r in res):
            raise InvalidInput(
                f"resources must be distinct names, at least one; got {self.resources!r}"
            )
        res = tuple(str(r) for r in res)  # plain str (numpy's str_ would show in every message)
        object.__setattr__(self, "resources", res)
        try:
            given = tuple(self.machines)
        except TypeError:
            raise InvalidInput(
                f"machines must be a sequence of Machine objects, got {self.machines!r}"
            ) from None
        bad = [m for m in given if not isinstance(m, Machine)]
        if bad:
            raise InvalidInput(f"machines must be Machine objects, got {bad[0]!r}")
        names = [m.name for m in given]
        if len(set(names)) != len(names):
            dup = next(n for n in names if names.count(n) > 1)
            raise InvalidInput(f"machine names must be unique; {dup!r} appears more than once")
        machines = tuple(
            Machine(m.name, _frozen_amounts(f"machine {m.name!r} capacity", m.capacity, res))
            for m in given
        )
        object.__setattr__(self, "machines", machines)
        if self.pooled_capacity is not None:
            if machines:
                raise InvalidInput("pooled_capacity must be None when machines are given")
            pooled = _frozen_amounts("capacity", self.pooled_capacity, res)
        elif machines:
            pooled = MappingProxyType({r: float(sum(m.capacity[r] for m in machines)) for r in res})
        else:
            raise InvalidInput("machines must list at least one machine (or use Cluster.pooled)")
        object.__setattr__(self, "pooled_capacity", pooled)

    @property
    def capacity(self) -> Mapping[str, float]:
        """Pooled capacity: resource name -> amount summed over machines."""
        pooled = self.pooled_capacity
        assert pooled is not None  # __post_init__ always sets it
        return pooled

    @property
    def capacity_vector(self) -> np.ndarray:
        """Pooled capacity as a vector in the order of ``resources``."""
        return np.array([self.capacity[r] for r in self.resources])

    @property
    def machine_matrix(self) -> np.ndarray:
        """Capacities as an (machines x resources) matrix."""
        return np.array([[m.capacity[r] for r in self.resources] for m in self.machines]).reshape(
            -1, len(self.resources)
        )

    @property
    def has_machines(self) -> bool:
        """Whether placement onto machines is possible (False for a pooled cluster)."""
        return bool(self.machines)

    def vector(self, amounts: Mapping[str, float], field: str = "demand") -> np.ndarray:
        """A demand mapping as a vector over ``resources``; unknown names raise."""
        return np.array(list(_frozen_amounts(field, amounts, self.resources).values()))

    @classmethod
    def homogeneous(
        cls,
        machines: int,
        gpu: float = 8,
        cpu: float = 64,
        mem_gb: float = 256,
        bw_gbps: float = 100,
    ) -> Cluster:
        """``machines`` identical servers with the given capacities."""
        n = check_int("machines", machines, 1, MAX_MACHINES)
        cap = {"gpu": gpu, "cpu": cpu, "mem_gb": mem_gb, "bw_gbps": bw_gbps}
        for k, v in cap.items():
            check_positive(k, v, allow_zero=True)
        return cls(tuple(Machine(f"m{i}", dict(cap)) for i in range(n)))

    @classmethod
    def pooled(cls, resources: Sequence[str] = DEFAULT_RESOURCES, **capacity: float) -> Cluster:
        """A cluster without machines: only a pooled capacity (allocation without placement)."""
        return cls((), tuple(resources), pooled_capacity=capacity)

    def scaled_bandwidth(self, bw_gbps: float) -> Cluster:
        """Copy with every machine's ``bw_gbps`` capacity set to ``bw_gbps``."""
        check_positive("bw_gbps", bw_gbps)
        if not self.machines:
            return Cluster.pooled(self.resources, **{**self.capacity, "bw_gbps": bw_gbps})
        return Cluster(
            tuple(Machine(m.name, {**m.capacity, "bw_gbps": bw_gbps}) for m in self.machines),
            self.resources,
        )

    def __repr__(self) -> str:
        cap = ", ".join(f"{r}={v:g}" for r, v in self.capacity.items())
        return f"Cluster({len(self.machines)} machines; pooled {cap})"
