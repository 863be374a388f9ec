"""Scenario files (TOML): a cluster, a workload, the policies to compare and a seed.

Layout (every key optional except where noted; defaults in ``Scenario``)::

    name = "default"
    seed = 1  # seeds the workload draws
    policies = ["fifo", "srtf"]  # registered policy names (or one comma-separated string)

    [cluster]  # homogeneous machines
    machines = 16
    gpu = 8
    cpu = 64
    mem_gb = 256
    bw_gbps = 100
    # or racks instead of the keys above: [[cluster.racks]] tables with name, machines, gpu_type,
    # gpu, cpu, mem_gb, bw_gbps, uplink_gbps, oversubscription, domain (``Cluster.groups``)

    [workload]
    kind = "synthetic"  # synthetic | philly | csv | omru-image | omru-action
    jobs = 200  # synthetic: how many; philly/csv: the first N (optional)
    load = 0.8  # synthetic: offered load; philly: rescale arrivals to it
    # synthetic: networks, mix, gpu_mix, duration_median_s, duration_sigma, duration_range_s,
    #            arch_mix (fraction of ring all-reduce jobs, 0..1: PS and all-reduce mixed),
    #            pipeline (true: bundled input pipelines, the default; false: none),
    #            lengths (drawn: per job, the default; per_network: each network's fixed length,
    #            as DL2's simulator, workloads.synthetic), arrival_slot_s (seconds: arrivals
    #            moved up to the next multiple, as DL2's simulator; default 0, none)
    # philly:    path, start (index or date-time), window_s, vc, rate_scale, networks, mix
    # csv:       path (a trace or a job table); relative paths are relative to this file
    # muri:      path, jobs, job_model, solo_scale, load, load_resource, ps_demand, stages,
    #            restart_overheads (workloads.muri)
    # synergy:   path, jobs, load, load_resource, ps_demand, profiles (workloads.synergy)
    # chronus:   path, start (jobs to skip, in submit order), rate_scale (workloads.chronus)
    # omru-image, omru-action: epochs (a table network = epochs; default: workloads.omru),
    #            max_workers; every job arrives at 0 (offline batch; compare makespans)
    cap_factor = 1.0
    device = "v100"
    demands = "per_network"  # per_network | uniform (per-task demands, workloads.base)
    task_bw_gbps = 10  # NIC bandwidth each worker and PS reserves

    [workload.deadlines]  # any kind: SLOs drawn for its jobs (workloads.deadlines)
    slack = [1.5, 3.0]  # deadline = slack x isolated duration; distribution, fraction, value,
    # soft_factors, soft_values

    [simulation]
    mode = "wfbp"  # timing-model overlap mode
    execution = "natural"  # natural (each policy's own mode) | non_elastic | preemptive | elastic
    # slot_s = 1200  # seconds between periodic decisions (default: each policy's own)
    restart_s = 30  # seconds without progress after a re-allocation or a resume
    unfit = "skip"  # skip | raise
    # sharing_degree = 2  # jobs a GPU may hold at once (default: each policy's own, else 1)
    # restart_rule = "on_restart"  # on_restart | every_event (when restart_s is paid)
    # engine = "smdlab"  # smdlab | gavel (Gavel's mode for the gavel_* policies on a gavel
    #                    # workload; other policies run in smdlab's simulator, sim.gavel_engine)

    [policy_options.NAME]  # keyword options of policy NAME

    [storage]  # optional: datasets, cache and remote IO (docs/storage.md, workloads.storage)
    cache_gb = 100  # cluster cache (inf: every dataset fits)
    remote_gbps = 1.0  # remote-storage bandwidth pool (inf: free bandwidth)
    cache_price = 0.01  # per GB-hour; remote_price per (GB/s)-hour
    allocator = "lru"  # none | lru | proportional: for policies that allocate no storage
    dataset_seed = 0  # seeds each job's dataset draw from its network's task
    machine_cache_gb = [50, 50]  # optional, one per machine: the cache is their sum
    cache_scope = "cluster"  # cluster | machine: a machine's cache serves its own workers only

    [variants.NAME]  # a named variant: usable wherever a policy name is (policies, --policy)
    policy = "synergy_tune"  # the registered policy it runs
    base = "srtf"  # and that policy's keyword options
"""

from __future__ import annotations

import importlib
import os
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import MappingProxyType
from typing import Any, Literal, get_args

from smdlab.errors import InvalidInput, check_choice, check_int, check_positive
from smdlab.execution import DEFAULT_RESTART_S, EXECUTIONS, RESTART_RULES
from smdlab.model.cluster import DEFAULT_RESOURCES, MAX_MACHINES, Cluster
from smdlab.model.devices import DEVICES
from smdlab.model.job import Job
from smdlab.model.profiles import list_profiles
from smdlab.model.timing import MODES
from smdlab.paths import data_dir
from smdlab.workloads.base import DEMAND_RULES, seconds_pair
from smdlab.workloads.synthetic import LENGTH_RULES, MAX_JOBS

WorkloadKind = Literal[
    "synthetic", "philly", "csv", "omru-image", "omru-action", "gavel", "muri", "synergy", "chronus"
]
WORKLOAD_KINDS: tuple[WorkloadKind, ...] = get_args(WorkloadKind)
# Workloads read from another simulator's input file (``--workload KIND:PATH``): kind ->
# ``"module:function"``, called as ``function(path, cluster=cluster, first=jobs)`` -> jobs. Each
# kind's keys are ``("kind", "path", "jobs")`` unless ``_WL_KEYS`` says more.
INPUT_READERS: dict[str, str] = {
    "gavel": "smdlab.workloads.gavel:load_gavel",
    "muri": "smdlab.workloads.muri:load_muri",
    "synergy": "smdlab.workloads.synergy:read_synergy",
    "chronus": "smdlab.workloads.chronus:load_chronus",
}
_TOP_KEYS = (
    "name",
    "seed",
    "policies",
    "cluster",
    "workload",
    "simulation",
    "policy_options",
    "description",
    "variants",
    "storage",
)
_CLUSTER_KEYS = ("machines", "gpu", "cpu", "mem_gb", "bw_gbps", "racks", "domains", "fabric")
_SIM_KEYS = (
    "mode",
    "execution",
    "slot_s",
    "restart_s",
    "unfit",
    "sharing_degree",
    "restart_rule",
    "engine",
)
ENGINES = ("smdlab", "gavel")  # simulation.engine: smdlab's simulator, or Gavel's mode
# Former keys of [simulation] (removed in 0.2) -> what replaces them.
_FORMER_SIM_KEYS = {
    "elastic": 'execution = "elastic" (was elastic = true) or "non_elastic" (was false)',
    "delta": "slot_s = seconds between periodic decision points (was delta)",
}
_COMMON_WL = (
    "kind",
    "jobs",
    "load",
    "networks",
    "mix",
    "cap_factor",
    "device",
    "load_resource",
    "demands",
    "task_bw_gbps",
)
_JOB_SHAPE = (
    "jobs",
    "cap_factor",
    "device",
    "demands",
    "task_bw_gbps",
)  # kept when the workload kind changes
_WL_KEYS = {
    "synthetic": (
        *_COMMON_WL,
        "gpu_mix",
        "duration_median_s",
        "duration_sigma",
        "duration_range_s",
        "arch_mix",
        "pipeline",
        "lengths",
        "arrival_slot_s",
    ),
    "philly": (*_COMMON_WL, "path", "start", "window_s", "vc", "rate_scale", "on_unsorted"),
    "csv": (*_COMMON_WL, "path", "start", "window_s", "vc", "rate_scale", "on_unsorted"),
    "omru-image": ("kind", "epochs", "max_workers"),
    "omru-action": ("kind", "epochs", "max_workers"),
    "gavel": ("kind", "path", "jobs"),
    "muri": (
        "kind",
        "path",
        "jobs",
        "job_model",
        "solo_scale",
        "load",
        "load_resource",
        "ps_demand",
        "stages",
        "restart_overheads",
    ),
    "synergy": ("kind", "path", "jobs", "load", "load_resource", "ps_demand", "profiles"),
    "chronus": ("kind", "path", "jobs", "start", "rate_scale"),
}
# Keys of ``[workload.deadlines]`` (any workload kind): SLOs drawn for its jobs
# (``smdlab.workloads.deadlines.with_deadlines``, seeded by the scenario's seed).
_DEADLINE_KEYS = ("slack", "distribution", "fraction", "value", "soft_factors", "soft_values")
# The shape of each optional workload key (its value range is checked where the jobs are built).
_WL_SHAPES = {
    "networks": "names",
    "vc": "names",
    "mix": "weights",
    "gpu_mix": "weights",
    "epochs": "weights",
    "duration_range_s": "pair",
    "window_s": "pair",
    "start": "start",
    "path": "text",
    "device": "text",
    "load_resource": "text",
    "on_unsorted": "text",
    "lengths": "text",
    "demands": "text",
    "task_bw_gbps": "number",
    "cap_factor": "number",
    "duration_median_s": "number",
    "duration_sigma": "number",
    "rate_scale": "number",
    "arch_mix": "number",
    "arrival_slot_s": "number",
    "pipeline": "flag",
    "ps_demand": "text",
    "stages": "text",
    "profiles": "text",
    "restart_overheads": "flag",
}


def default_scenario_path() -> Path:
    """The bundled default scenario, ``data/scenarios/default.toml``."""
    return data_dir() / "scenarios" / "default.toml"


def _frozen(d: Mapping[str, Any]) -> Mapping[str, Any]:
    return MappingProxyType(dict(d))


@dataclass(frozen=True)
class Scenario:
    """A cluster, a workload, policies and a seed: everything one comparison run needs.

    name, description: labels.
    seed: seeds the workload's random draws.
    cluster: homogeneous machine spec (keys machines, gpu, cpu, mem_gb, bw_gbps).
    workload: workload spec (``kind`` plus that kind's options, see the module docstring).
    policies: registered policy names to run.
    policy_options: per policy, keyword options for its constructor.
    variants: named variants, name -> {"policy": registered name, **its options}; a variant's
        name is usable wherever a policy name is.
    simulation: simulator options (mode, execution, slot_s, restart_s, unfit, sharing_degree).
    base_dir: folder that relative workload paths are resolved against.
    """

    name: str = "default"
    description: str = ""
    seed: int = 1
    policies: tuple[str, ...] = ("fifo", "srtf")
    cluster: Mapping[str, Any] = field(
        default_factory=lambda: _frozen(
            {"machines": 16, "gpu": 8, "cpu": 64, "mem_gb": 256, "bw_gbps": 100}
        )
    )
    workload: Mapping[str, Any] = field(
        default_factory=lambda: _frozen({"kind": "synthetic", "jobs": 200, "load": 0.8})
    )
    simulation: Mapping[str, Any] = field(
        default_factory=lambda: _frozen(
            {
                "mode": "wfbp",
                "execution": "natural",
                "restart_s": DEFAULT_RESTART_S,
                "unfit": "skip",
            }
        )
    )
    policy_options: Mapping[str, Mapping[str, Any]] = field(default_factory=lambda: _frozen({}))
    base_dir: Path | None = None
    variants: Mapping[str, Mapping[str, Any]] = field(default_factory=lambda: _frozen({}))
    storage: Mapping[str, Any] | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "name", str(self.name))
        object.__setattr__(self, "description", str(self.description))
        object.__setattr__(self, "seed", check_int("seed", self.seed, 0))
        object.__setattr__(self, "policies", _policy_list(self.policies))
        object.__setattr__(self, "cluster", _frozen(_check_cluster(self.cluster)))
        object.__setattr__(self, "workload", _frozen(_check_workload(self.workload)))
        object.__setattr__(self, "simulation", _frozen(_check_simulation(self.simulation)))
        opts = self.policy_options
        if not isinstance(opts, Mapping) or not all(isinstance(v, Mapping) for v in opts.values()):
            raise InvalidInput(
                f"policy_options must map policy names to tables of options, got {opts!r}"
            )
        object.__setattr__(
            self, "policy_options", _frozen({k: _frozen(v) for k, v in opts.items()})
        )
        object.__setattr__(self, "variants", _frozen(check_variants(self.variants)))
        if self.storage is not None:
            object.__setattr__(self, "storage", _frozen(_check_storage(self.storage)))

    def with_changes(
        self,
        *,
        cluster: Mapping[str, Any] | None = None,
        workload: Mapping[str, Any] | None = None,
        simulation: Mapping[str, Any] | None = None,
        **fields: Any,
    ) -> Scenario:
        """Copy with fields replaced and the given cluster/workload/simulation keys updated."""
        changes = dict(fields)
        if cluster:
            changes["cluster"] = {**self.cluster, **cluster}
        if workload:
            # A new kind keeps only the job count and job shape; a synthetic load would silently
            # rescale a trace's arrivals, so a load must be given again for the new kind.
            kind = workload.get("kind", self.workload["kind"])
            base = (
                self.workload
                if kind == self.workload["kind"]
                else {
                    k: v
                    for k, v in self.workload.items()
                    if k in _JOB_SHAPE and k in _WL_KEYS.get(kind, ())
                }
            )
            changes["workload"] = {**base, **workload}
        if simulation:
            changes["simulation"] = {**self.simulation, **simulation}
        return replace(self, **changes)

    def to_dict(self) -> dict[str, Any]:
        """Plain (picklable, TOML-shaped) form; ``Scenario(**d)`` rebuilds it."""

        def plain(m: Mapping[str, Any]) -> dict[str, Any]:
            return {k: (plain(v) if isinstance(v, Mapping) else v) for k, v in m.items()}

        return {
            "name": self.name,
            "description": self.description,
            "seed": self.seed,
            "policies": list(self.policies),
            "cluster": plain(self.cluster),
            "workload": plain(self.workload),
            "simulation": plain(self.simulation),
            "policy_options": plain(self.policy_options),
            "base_dir": self.base_dir,
            "variants": plain(self.variants),
            "storage": None if self.storage is None else plain(self.storage),
        }

    def build_cluster(self) -> Cluster:
        """The scenario's cluster."""
        c = self.cluster
        if "racks" in c:
            return Cluster.groups(c["racks"], c.get("domains", []), c.get("fabric"))
        return Cluster.homogeneous(
            c["machines"], gpu=c["gpu"], cpu=c["cpu"], mem_gb=c["mem_gb"], bw_gbps=c["bw_gbps"]
        )

    def build_jobs(self, cluster: Cluster | None = None) -> list[Job]:
        """The scenario's jobs (seeded by ``seed``), with SLOs drawn if ``[workload.deadlines]``."""
        deadlines = self.workload.get("deadlines")
        if deadlines is None:
            return self._build_jobs(cluster)
        from smdlab.workloads.deadlines import with_deadlines

        jobs = self._build_jobs(cluster)
        return with_deadlines(jobs, seed=self.seed, mode=self.simulation["mode"], **deadlines)

    def _build_jobs(self, cluster: Cluster | None = None) -> list[Job]:
        from smdlab.workloads.synthetic import synthetic
        from smdlab.workloads.trace import load_csv, load_philly

        cluster = cluster or self.build_cluster()
        w = dict(self.workload)
        w.pop("deadlines", None)
        kind = w.pop("kind")
        if kind in ("omru-image", "omru-action"):
            from smdlab.workloads.omru import omru_jobs

            gpm = round(max((float(m.capacity.get("gpu", 0)) for m in cluster.machines), default=0))
            if gpm < 1:
                raise InvalidInput(f"cluster.gpu must be >= 1 for workload {kind!r}, got {gpm}")
            return omru_jobs(
                kind,
                epochs=w.get("epochs"),
                gpus_per_machine=gpm,
                max_workers=w.get("max_workers", 32),
            )
        mode = self.simulation["mode"]
        jobs = w.pop("jobs", None)
        if kind == "synthetic":
            if jobs is None:
                raise InvalidInput("workload.jobs must be given for a synthetic workload")
            if "duration_range_s" in w:
                w["duration_range_s"] = tuple(w["duration_range_s"])
            return synthetic(jobs, cluster, seed=self.seed, mode=mode, **w)
        path = w.pop("path", None)
        if path is not None:
            path = Path(path)
            if not path.is_absolute() and self.base_dir is not None:
                path = self.base_dir / path
        if "window_s" in w:
            w["window_s"] = tuple(w["window_s"])
        if kind in INPUT_READERS:
            if path is None:
                raise InvalidInput(f"workload.path must be given for a {kind} workload")
            module, _, function = INPUT_READERS[kind].partition(":")
            reader = getattr(importlib.import_module(module), function)
            return list(reader(path, cluster=cluster, first=jobs, **w))
        if kind == "philly":
            return load_philly(path, first=jobs, cluster=cluster, seed=self.seed, mode=mode, **w)
        if path is None:
            raise InvalidInput("workload.path must be given for a csv workload")
        return load_csv(
            path,
            first=jobs,
            cluster=cluster if w.get("load") is not None else None,
            seed=self.seed,
            mode=mode,
            **w,
        )


def check_variants(value: Any) -> dict[str, Mapping[str, Any]]:
    """Named variants, checked: a table of name -> table with a ``policy`` name and its options."""
    from smdlab.policies.registry import known_policy

    if not isinstance(value, Mapping):
        raise InvalidInput(f"variants must be a table of name = {{policy = ...}}, got {value!r}")
    out = {}
    for name, spec in value.items():
        if not isinstance(spec, Mapping) or not isinstance(spec.get("policy"), str):
            raise InvalidInput(f"variants.{name} must be a table with policy = a policy name")
        if known_policy(name):
            raise InvalidInput(f"variants.{name}: the name is a registered policy; choose another")
        if not known_policy(spec["policy"]):
            raise InvalidInput(
                f"variants.{name}.policy must be a registered policy or module:Class, "
                f"got {spec['policy']!r}"
            )
        out[str(name)] = _frozen(dict(spec))
    return out


def _policy_list(value: Any) -> tuple[str, ...]:
    if isinstance(value, str):
        value = [p.strip() for p in value.split(",")]
    if (
        not isinstance(value, Sequence)
        or not value
        or not all(isinstance(p, str) and p for p in value)
    ):
        raise InvalidInput(f"policies must be a non-empty list of policy names, got {value!r}")
    if len(set(value)) != len(value):
        raise InvalidInput(f"policies must not repeat a name, got {list(value)}")
    return tuple(value)


def _unknown(section: str, d: Mapping[str, Any], allowed: Sequence[str]) -> None:
    extra = [k for k in d if k not in allowed]
    if extra:
        raise InvalidInput(f"{section} has unknown key {extra[0]!r}; allowed: {', '.join(allowed)}")


def _check_cluster(c: Mapping[str, Any]) -> dict[str, Any]:
    if not isinstance(c, Mapping):
        raise InvalidInput(f"cluster must be a table, got {c!r}")
    _unknown("cluster", c, _CLUSTER_KEYS)
    if "racks" in c:  # a racked cluster (``Cluster.groups``): the racks replace the flat keys
        flat = [k for k in c if k not in ("racks", "domains", "fabric")]
        if flat:
            raise InvalidInput(
                f"cluster.{flat[0]} cannot be combined with cluster.racks (set it per rack)"
            )
        cluster = Cluster.groups(c["racks"], c.get("domains", []), c.get("fabric"))  # raises
        if cluster.fabric is not None:
            from smdlab.policies.network import check_communication

            check_communication(cluster.fabric.communication)
        return {k: c[k] for k in ("racks", "domains", "fabric") if k in c}
    if "domains" in c:
        raise InvalidInput("cluster.domains needs cluster.racks (racks name their domain)")
    if "fabric" in c:
        raise InvalidInput("cluster.fabric needs cluster.racks with uplink_gbps (racks carry it)")
    out = {"machines": 16, "gpu": 8, "cpu": 64, "mem_gb": 256, "bw_gbps": 100, **c}
    out["machines"] = check_int("cluster.machines", out["machines"], 1, MAX_MACHINES)
    for k in ("gpu", "cpu", "mem_gb", "bw_gbps"):
        out[k] = check_positive(f"cluster.{k}", out[k], allow_zero=k != "bw_gbps")
    return out


def _check_workload(w: Mapping[str, Any]) -> dict[str, Any]:
    if not isinstance(w, Mapping):
        raise InvalidInput(f"workload must be a table, got {w!r}")
    out = dict(w)
    kind = check_choice("workload.kind", out.setdefault("kind", "synthetic"), WORKLOAD_KINDS)
    _unknown(f"workload (kind {kind!r})", out, (*_WL_KEYS[kind], "deadlines"))
    if out.get("deadlines") is not None:
        out["deadlines"] = _check_deadlines(out["deadlines"])
    if out.get("jobs") is not None:
        out["jobs"] = check_int("workload.jobs", out["jobs"], 1, MAX_JOBS)
    if out.get("load") is not None:
        out["load"] = check_positive("workload.load", out["load"])
    if out.get("task_bw_gbps") is not None:
        out["task_bw_gbps"] = check_positive("workload.task_bw_gbps", out["task_bw_gbps"])
    for key, value in out.items():
        if value is not None and key in _WL_SHAPES:
            _check_shape(f"workload.{key}", value, _WL_SHAPES[key])
    if isinstance(out.get("networks"), (str, list, tuple)):
        for name in [out["networks"]] if isinstance(out["networks"], str) else out["networks"]:
            check_choice("workload.networks", name, list_profiles())
    choices = {
        "device": sorted(DEVICES),
        "load_resource": DEFAULT_RESOURCES,
        "on_unsorted": ("sort", "raise"),
        "demands": DEMAND_RULES,
        "lengths": LENGTH_RULES,
    }
    for key, allowed in choices.items():
        if out.get(key) is not None:
            check_choice(f"workload.{key}", out[key], allowed)
    return out


def _check_deadlines(d: Any) -> dict[str, Any]:
    """A ``[workload.deadlines]`` table (``smdlab.workloads.deadlines.with_deadlines`` options)."""
    if not isinstance(d, Mapping):
        raise InvalidInput(f"workload.deadlines must be a table of deadline options, got {d!r}")
    _unknown("workload.deadlines", d, _DEADLINE_KEYS)
    out = dict(d)
    if isinstance(out.get("slack"), list):
        out["slack"] = tuple(out["slack"])
    from smdlab.workloads.deadlines import SLACK_DISTRIBUTIONS

    if "distribution" in out:
        check_choice("workload.deadlines.distribution", out["distribution"], SLACK_DISTRIBUTIONS)
    return out


def _check_shape(field: str, value: Any, shape: str) -> None:
    """Raise unless ``value`` has ``shape``: text, number, flag, names, weights (a table of numbers) or pair."""
    if shape == "text" and not isinstance(value, str):
        raise InvalidInput(f"{field} must be a string, got {value!r}")
    if shape == "number":
        check_positive(field, value, allow_zero=True)
    if shape == "flag" and not isinstance(value, bool):
        raise InvalidInput(f"{field} must be true or false, got {value!r}")
    if shape == "names":
        names = [value] if isinstance(value, str) else value
        if (
            not isinstance(names, (list, tuple))
            or not names
            or not all(isinstance(n, str) and n for n in names)
        ):
            raise InvalidInput(
                f"{field} must be a name or a non-empty list of names, got {value!r}"
            )
    if shape == "weights":
        if not isinstance(value, Mapping) or not value:
            raise InvalidInput(f"{field} must be a table of name = weight, got {value!r}")
        for k, v in value.items():
            check_positive(f"{field}[{k!r}]", v, allow_zero=True)
    if shape == "start" and (
        isinstance(value, bool)
        or not isinstance(value, (int, str))
        or (isinstance(value, int) and value < 0)
    ):
        raise InvalidInput(
            f"{field} must be a job index (integer >= 0) or a date-time string, got {value!r}"
        )
    if shape == "pair":
        for i, v in enumerate(seconds_pair(field, value)):
            check_positive(f"{field}[{i}]", v, allow_zero=True, allow_inf=True)


def _check_storage(s: Any) -> dict[str, Any]:
    """The ``[storage]`` table, checked (``smdlab.workloads.storage.StorageSpec``'s fields)."""
    from smdlab.workloads.storage import StorageSpec

    if not isinstance(s, Mapping):
        raise InvalidInput(f"storage must be a table, got {s!r}")
    _unknown("storage", s, tuple(StorageSpec.__dataclass_fields__))
    StorageSpec(**s)
    return dict(s)


def _check_simulation(s: Mapping[str, Any]) -> dict[str, Any]:
    if not isinstance(s, Mapping):
        raise InvalidInput(f"simulation must be a table, got {s!r}")
    for key, use in _FORMER_SIM_KEYS.items():
        if s.get(key) is not None:
            raise InvalidInput(
                f"simulation.{key} is a former key, removed in 0.2; use simulation.{use}"
            )
    _unknown("simulation", {k: v for k, v in s.items() if k not in _FORMER_SIM_KEYS}, _SIM_KEYS)
    out = {
        "mode": "wfbp",
        "execution": "natural",
        "restart_s": DEFAULT_RESTART_S,
        "unfit": "skip",
        **{k: v for k, v in s.items() if v is not None},  # None: not given (CLI overrides)
    }
    check_choice("simulation.mode", out["mode"], MODES)
    check_choice("simulation.execution", out["execution"], ("natural", *EXECUTIONS))
    if "slot_s" in out:
        out["slot_s"] = check_positive("simulation.slot_s", out["slot_s"])
    out["restart_s"] = check_positive("simulation.restart_s", out["restart_s"], allow_zero=True)
    check_choice("simulation.unfit", out["unfit"], ("skip", "raise"))
    if "sharing_degree" in out:
        out["sharing_degree"] = check_int("simulation.sharing_degree", out["sharing_degree"], 1)
    if "restart_rule" in out:
        check_choice("simulation.restart_rule", out["restart_rule"], RESTART_RULES)
    if "engine" in out:
        check_choice("simulation.engine", out["engine"], ENGINES)
    return out


def load_scenario(path: str | os.PathLike | None = None) -> Scenario:
    """Read and validate a scenario file (default: the bundled default scenario)."""
    if path is not None and not isinstance(path, (str, os.PathLike)):
        raise InvalidInput(f"scenario must be a file path, got {path!r}")
    p = Path(path) if path is not None else default_scenario_path()
    if p.is_dir():
        raise InvalidInput(f"scenario path is a folder, not a file: {str(p)!r}")
    if not p.is_file():
        raise InvalidInput(f"scenario file not found: {str(p)!r}")
    try:
        data = tomllib.loads(p.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:  # its message carries "(at line L, column C)"
        raise InvalidInput(f"{p}: malformed TOML: {exc}") from None
    except UnicodeDecodeError as exc:
        raise InvalidInput(f"{p}: not a UTF-8 text file ({exc})") from None
    except OSError as exc:
        raise InvalidInput(f"{p}: cannot read the scenario file ({exc.strerror or exc})") from None
    _unknown(f"{p}", data, _TOP_KEYS)
    kwargs = {
        k: data[k]
        for k in (
            "name",
            "description",
            "seed",
            "policies",
            "cluster",
            "workload",
            "simulation",
            "policy_options",
            "variants",
            "storage",
        )
        if k in data
    }
    kwargs.setdefault("name", p.stem)
    try:
        return Scenario(**kwargs, base_dir=p.parent)
    except InvalidInput as exc:
        raise InvalidInput(f"{p}: {exc}") from None
