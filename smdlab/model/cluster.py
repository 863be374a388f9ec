"""Machines and their capacities over resource types."""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType

import numpy as np

from smdlab.errors import InvalidInput, check_int, check_items, check_positive, check_unique_names
from smdlab.model.gpu_types import check_gpu_type

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
    """One server: a name, its capacity per resource type, its GPU type and rack ("": none)."""

    name: str
    capacity: Mapping[str, float]
    gpu_type: str = ""
    rack: str = ""


def _check_uplink(kind: str, name: object, uplink_gbps: float, oversubscription: float) -> None:
    """InvalidInput unless a rack's or domain's name, uplink and oversubscription (>= 1) are valid."""
    if not isinstance(name, str) or not name:
        raise InvalidInput(f"{kind} name must be a non-empty string, got {name!r}")
    check_positive(f"{kind} {name!r} uplink_gbps", uplink_gbps)
    over = check_positive(f"{kind} {name!r} oversubscription", oversubscription)
    if over < 1:
        raise InvalidInput(
            f"{kind} {name!r} oversubscription must be >= 1, got {oversubscription!r}"
        )


@dataclass(frozen=True)
class Rack:
    """A rack: its name, uplink bandwidth (Gbps), oversubscription (>= 1) and optional domain."""

    name: str
    uplink_gbps: float = 100.0
    oversubscription: float = 1.0
    domain: str = ""

    def __post_init__(self) -> None:
        _check_uplink("rack", self.name, self.uplink_gbps, self.oversubscription)

    @property
    def effective_uplink_gbps(self) -> float:
        """Uplink bandwidth left after oversubscription (uplink / oversubscription)."""
        return float(self.uplink_gbps) / float(self.oversubscription)


@dataclass(frozen=True)
class Domain:
    """A domain of racks (e.g. a pod or a building): its name, uplink (Gbps), oversubscription (>= 1)."""

    name: str
    uplink_gbps: float = 400.0
    oversubscription: float = 1.0

    def __post_init__(self) -> None:
        _check_uplink("domain", self.name, self.uplink_gbps, self.oversubscription)

    @property
    def effective_uplink_gbps(self) -> float:
        """Uplink bandwidth left after oversubscription (uplink / oversubscription)."""
        return float(self.uplink_gbps) / float(self.oversubscription)


DOMAIN_KEYS: tuple[str, ...] = ("name", "uplink_gbps", "oversubscription")

MAX_LEVELS = 8  # strict priority levels a fabric serves (switch queues; Crux uses 8)
FABRIC_KEYS: tuple[str, ...] = ("communication", "levels", "core_gbps")


@dataclass(frozen=True)
class FabricSpec:
    """A request for the flow-level fabric (docs/network.md): the shared links are timed by contention.

    communication: the registered communication policy's name. levels: strict priority levels
    (1..8). core_gbps: the core's capacity (None: the core never binds).
    """

    communication: str = "fair"
    levels: int = MAX_LEVELS
    core_gbps: float | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.communication, str) or not self.communication:
            raise InvalidInput(
                f"fabric communication must be a policy name, got {self.communication!r}"
            )
        object.__setattr__(self, "levels", check_int("fabric levels", self.levels, 1, MAX_LEVELS))
        if self.core_gbps is not None:
            object.__setattr__(
                self, "core_gbps", check_positive("fabric core_gbps", self.core_gbps)
            )


# Keys of one machine group (``Cluster.groups``, the ``[[racks]]`` tables of a cluster file).
GROUP_KEYS: tuple[str, ...] = (
    "name",
    "machines",
    "gpu_type",
    "gpu",
    "cpu",
    "mem_gb",
    "bw_gbps",
    "uplink_gbps",
    "oversubscription",
    "domain",
)


@dataclass(frozen=True, eq=False)
class Cluster:
    """A set of machines over resource types; ``capacity`` is their pooled capacity.

    machines: the servers (empty for a pooled, placement-free cluster built by ``Cluster.pooled``).
    resources: resource type names, in the order used for vectors.
    """

    machines: tuple[Machine, ...]
    resources: tuple[str, ...] = DEFAULT_RESOURCES
    pooled_capacity: Mapping[str, float] | None = None
    topology: tuple[Rack, ...] = ()  # racks; empty: a flat cluster (machines have rack "")
    domains: tuple[Domain, ...] = ()  # domains with an uplink; a rack's undeclared domain has none
    fabric: FabricSpec | None = None  # the flow-level fabric (docs/network.md); None: off

    def __post_init__(self) -> None:
        res = tuple(self.resources) if not isinstance(self.resources, str) else ()
        if not res or len(set(res)) != len(res) or not all(isinstance(r, str) and r for r in res):
            raise InvalidInput(
                f"resources must be distinct names, at least one; got {self.resources!r}"
            )
        res = tuple(str(r) for r in res)  # plain str (numpy's str_ would show in every message)
        object.__setattr__(self, "resources", res)
        given = check_items("machines", self.machines, Machine)
        check_unique_names("machine names", (m.name for m in given))
        machines = tuple(
            Machine(
                m.name,
                _frozen_amounts(f"machine {m.name!r} capacity", m.capacity, res),
                check_gpu_type(f"machine {m.name!r} gpu_type", m.gpu_type),
                m.rack,
            )
            for m in given
        )
        object.__setattr__(self, "machines", machines)
        object.__setattr__(self, "topology", _check_topology(machines, self.topology))
        object.__setattr__(self, "domains", _check_domains(self.domains))
        if self.fabric is not None:
            if not isinstance(self.fabric, FabricSpec):
                raise InvalidInput(f"fabric must be a FabricSpec, got {self.fabric!r}")
            if not self.topology:
                raise InvalidInput(
                    "fabric needs racks with uplinks (a racked cluster); this cluster is flat"
                )
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
        """Capacities as an (machines x resources) matrix (a fresh copy each time)."""
        memo = self.__dict__.get("_machine_matrix")  # the cluster is immutable: built once
        if memo is None:
            memo = np.array(
                [[m.capacity[r] for r in self.resources] for m in self.machines]
            ).reshape(-1, len(self.resources))
            object.__setattr__(self, "_machine_matrix", memo)
        return memo.copy()

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

    @property
    def gpu_types(self) -> tuple[str, ...]:
        """Distinct GPU types of the machines, in first-seen order (empty when untyped)."""
        return tuple(dict.fromkeys(m.gpu_type for m in self.machines if m.gpu_type))

    @property
    def rack_of(self) -> tuple[int, ...]:
        """Rack index of each machine (-1 for all machines of a flat cluster)."""
        index = {r.name: i for i, r in enumerate(self.topology)}
        return tuple(index.get(m.rack, -1) for m in self.machines)

    @classmethod
    def racks(
        cls,
        racks: int = 4,
        machines_per_rack: int = 8,
        gpu_type: str = "v100",
        gpu: float = 8,
        cpu: float = 64,
        mem_gb: float = 256,
        bw_gbps: float = 100,
        uplink_gbps: float = 100,
        oversubscription: float = 1.0,
    ) -> Cluster:
        """``racks`` racks of ``machines_per_rack`` identical machines of ``gpu_type``."""
        n = check_int("racks", racks, 1, MAX_MACHINES)
        per = check_int("machines_per_rack", machines_per_rack, 1, MAX_MACHINES)
        if n * per > MAX_MACHINES:
            raise InvalidInput(
                f"racks x machines_per_rack must be <= {MAX_MACHINES}, got {n * per}"
            )
        group = {
            "machines": per,
            "gpu_type": gpu_type,
            "gpu": gpu,
            "cpu": cpu,
            "mem_gb": mem_gb,
            "bw_gbps": bw_gbps,
            "uplink_gbps": uplink_gbps,
            "oversubscription": oversubscription,
        }
        return cls.groups([{"name": f"r{i}", **group} for i in range(n)])

    @classmethod
    def groups(
        cls,
        groups: Sequence[Mapping[str, object]],
        domains: Sequence[Mapping[str, object]] = (),
        fabric: Mapping[str, object] | None = None,
    ) -> Cluster:
        """A racked cluster from machine groups, one rack each (keys ``GROUP_KEYS``).

        ``machines`` (count) is required; ``name`` defaults to ``r<i>``, ``gpu_type`` to ``v100``,
        capacities to ``Cluster.homogeneous``'s, ``uplink_gbps`` to 100, ``oversubscription`` to
        1. Machines are named ``<rack>-m<j>``. ``domains``: tables with keys ``DOMAIN_KEYS``
        giving a domain's uplink (a rack's ``domain`` need not be declared: then no uplink).
        ``fabric``: a table with keys ``FABRIC_KEYS`` turning the flow-level fabric on; then every
        rack must name its ``uplink_gbps``.
        """
        spec = _fabric_table(fabric)
        if isinstance(groups, (str, Mapping)) or not isinstance(groups, Sequence) or not groups:
            raise InvalidInput(f"racks must be a non-empty list of tables, got {groups!r}")
        machines: list[Machine] = []
        racks: list[Rack] = []
        for i, g in enumerate(groups):
            _check_table(f"racks[{i}]", g, GROUP_KEYS)
            if "machines" not in g:
                raise InvalidInput(f"racks[{i}].machines is required (machines in this rack, >= 1)")
            name = g.get("name", f"r{i}")
            if not isinstance(name, str) or not name:
                raise InvalidInput(f"racks[{i}].name must be a non-empty string, got {name!r}")
            n = check_int(f"racks[{i}].machines", g["machines"], 1, MAX_MACHINES)
            if spec is not None and "uplink_gbps" not in g:
                raise InvalidInput(
                    f"racks[{i}].uplink_gbps is required when a fabric is requested "
                    "(the rack's uplink capacity in Gbps, > 0)"
                )
            gpu_type = check_gpu_type(f"racks[{i}].gpu_type", g.get("gpu_type", "v100"))
            cap = {}
            for k, default in (("gpu", 8), ("cpu", 64), ("mem_gb", 256), ("bw_gbps", 100)):
                cap[k] = check_positive(f"racks[{i}].{k}", g.get(k, default), allow_zero=True)
            racks.append(
                Rack(
                    name,
                    check_positive(f"racks[{i}].uplink_gbps", g.get("uplink_gbps", 100.0)),
                    check_positive(f"racks[{i}].oversubscription", g.get("oversubscription", 1.0)),
                    str(g.get("domain", "")),
                )
            )
            machines += [Machine(f"{name}-m{j}", dict(cap), gpu_type, name) for j in range(n)]
        return cls(
            tuple(machines), topology=tuple(racks), domains=_domain_tables(domains), fabric=spec
        )

    def with_fabric(self, fabric: FabricSpec | None) -> Cluster:
        """Copy with the flow-level fabric set (None: off)."""
        return Cluster(
            self.machines,
            self.resources,
            self.pooled_capacity if not self.machines else None,
            self.topology,
            self.domains,
            fabric,
        )

    def scaled_bandwidth(self, bw_gbps: float) -> Cluster:
        """Copy with every machine's ``bw_gbps`` capacity set to ``bw_gbps``."""
        check_positive("bw_gbps", bw_gbps)
        if not self.machines:
            return Cluster.pooled(self.resources, **{**self.capacity, "bw_gbps": bw_gbps})
        return Cluster(
            tuple(
                Machine(m.name, {**m.capacity, "bw_gbps": bw_gbps}, m.gpu_type, m.rack)
                for m in self.machines
            ),
            self.resources,
            topology=self.topology,
            domains=self.domains,
            fabric=self.fabric,
        )

    def __repr__(self) -> str:
        cap = ", ".join(f"{r}={v:g}" for r, v in self.capacity.items())
        extra = ""
        if self.topology:
            types = "/".join(self.gpu_types) or "untyped"
            extra = f"; {len(self.topology)} racks, {types}"
            if self.fabric is not None:
                extra += f"; fabric {self.fabric.communication}"
        return f"Cluster({len(self.machines)} machines; pooled {cap}{extra})"


def _check_topology(machines: tuple[Machine, ...], racks: Sequence[Rack]) -> tuple[Rack, ...]:
    """Racks checked against the machines: unique names, every machine in a declared rack."""
    out = check_items("topology", racks, Rack)
    names = [r.name for r in out]
    check_unique_names("rack names", names)
    known = set(names)
    for m in machines:
        if out and not m.rack:
            raise InvalidInput(f"machine {m.name!r} is in no rack; every machine needs a rack")
        if m.rack and m.rack not in known:
            raise InvalidInput(
                f"machine {m.name!r} is in rack {m.rack!r}, which is not declared; "
                f"racks: {', '.join(names) or 'none'}"
            )
    return out


def _check_domains(domains: Sequence[Domain]) -> tuple[Domain, ...]:
    """Domains checked: Domain objects with unique names."""
    out = check_items("domains", domains, Domain)
    check_unique_names("domain names", (d.name for d in out))
    return out


def _domain_tables(tables: Sequence[Mapping[str, object]]) -> tuple[Domain, ...]:
    """Domains from ``[[domains]]`` tables (keys ``DOMAIN_KEYS``; ``name`` required)."""
    if isinstance(tables, (str, Mapping)) or not isinstance(tables, Sequence):
        raise InvalidInput(f"domains must be a list of tables, got {tables!r}")
    out = []
    for i, d in enumerate(tables):
        _check_table(f"domains[{i}]", d, DOMAIN_KEYS)
        if "name" not in d:
            raise InvalidInput(f"domains[{i}].name is required (a non-empty string)")
        out.append(
            Domain(
                d["name"],  # type: ignore[arg-type]  # Domain checks it
                check_positive(f"domains[{i}].uplink_gbps", d.get("uplink_gbps", 400.0)),
                check_positive(f"domains[{i}].oversubscription", d.get("oversubscription", 1.0)),
            )
        )
    return _check_domains(out)


def _check_table(field: str, table: object, keys: Sequence[str]) -> None:
    """InvalidInput unless ``table`` is a mapping whose keys are all among ``keys``."""
    if not isinstance(table, Mapping):
        raise InvalidInput(f"{field} must be a table, got {table!r}")
    unknown = [k for k in table if k not in keys]
    if unknown:
        raise InvalidInput(f"{field} has unknown key {unknown[0]!r}; allowed: {', '.join(keys)}")


def _fabric_table(table: Mapping[str, object] | None) -> FabricSpec | None:
    """The ``[fabric]`` table of a cluster file as a FabricSpec (None: no fabric)."""
    if table is None:
        return None
    _check_table("fabric", table, FABRIC_KEYS)
    core = table.get("core_gbps")
    return FabricSpec(
        table.get("communication", "fair"),  # type: ignore[arg-type]  # FabricSpec checks it
        table.get("levels", MAX_LEVELS),  # type: ignore[arg-type]
        None if core is None else check_positive("fabric core_gbps", core),
    )


def load_cluster_file(path: str | os.PathLike[str]) -> Cluster:
    """A racked cluster from a TOML file of ``[[racks]]`` (optional ``[[domains]]``, ``[fabric]``)."""
    doc = _read_cluster_file(path)
    return Cluster.groups(doc["racks"], doc.get("domains", []), doc.get("fabric"))


def cluster_file_groups(path: str | os.PathLike[str]) -> list[dict[str, object]]:
    """The ``[[racks]]`` tables of a TOML cluster file, checked (they build a valid cluster)."""
    return _read_cluster_file(path)["racks"]


def cluster_file_tables(path: str | os.PathLike[str]) -> dict[str, list[dict[str, object]]]:
    """A TOML cluster file's ``racks`` and (when present) ``domains`` and ``fabric`` tables, checked."""
    doc = _read_cluster_file(path)
    return {k: doc[k] for k in ("racks", "domains", "fabric") if k in doc}


def _read_cluster_file(path: str | os.PathLike[str]) -> dict:
    """A TOML cluster file's tables, checked: ``racks`` (required) and ``domains`` (optional)."""
    where = f"cluster file {os.fspath(path)!r}"
    try:
        with open(path, "rb") as fh:
            doc = tomllib.load(fh)
    except OSError as e:
        raise InvalidInput(f"{where} cannot be read: {e.strerror}") from None
    except tomllib.TOMLDecodeError as e:
        raise InvalidInput(f"{where} is not valid TOML: {e}") from None
    unknown = [k for k in doc if k not in ("racks", "domains", "fabric")]
    if unknown:
        raise InvalidInput(
            f"{where} has unknown key {unknown[0]!r}; allowed: racks, domains, fabric"
        )
    groups = doc.get("racks")
    if not isinstance(groups, list) or not groups:
        raise InvalidInput(f"{where} needs a [[racks]] list with at least one rack")
    Cluster.groups(groups, doc.get("domains", []), doc.get("fabric"))  # raises on bad input
    return doc
