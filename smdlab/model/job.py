"""A data-parallel training job on the parameter-server architecture."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType

from smdlab.errors import InvalidInput, check_choice, check_int, check_positive
from smdlab.model.demands import task_demands
from smdlab.model.pipeline import InputPipeline, bundled_pipeline
from smdlab.model.profiles import LayerProfile

BATCH_MODES = ("global", "per_worker")

# One uniform per-task bundle (one GPU worker, a CPU-only PS): the workloads' ``demands="uniform"``
# option. make_job and the workloads' default derive demands per network instead
# (smdlab.model.demands.task_demands).
DEFAULT_WORKER_DEMAND: Mapping[str, float] = MappingProxyType(
    {"gpu": 1, "cpu": 4, "mem_gb": 16, "bw_gbps": 10}
)
DEFAULT_PS_DEMAND: Mapping[str, float] = MappingProxyType(
    {"gpu": 0, "cpu": 4, "mem_gb": 16, "bw_gbps": 10}
)


def _demand(field: str, demand: Mapping[str, float]) -> Mapping[str, float]:
    if not isinstance(demand, Mapping):
        raise InvalidInput(
            f"{field} must be a mapping from resource name to amount, got {demand!r}"
        )
    out = {str(r): check_positive(f"{field}[{r!r}]", v, allow_zero=True) for r, v in demand.items()}
    if out.get("bw_gbps", 0) <= 0:
        raise InvalidInput(
            f"{field}['bw_gbps'] must be > 0 (the NIC bandwidth the task reserves), got {demand.get('bw_gbps')!r}"
        )
    return MappingProxyType(out)


@dataclass(frozen=True, eq=False)
class Job:
    """A training job: network profile, work, batch convention and per-task demands.

    name: identifier, unique within a workload.
    profile: per-layer profile of the network.
    samples: samples still to process (epochs times dataset size, minus work done).
    global_batch: global mini-batch M (global mode), split evenly over the workers.
    worker_demand: resources one worker reserves; ``bw_gbps`` is its NIC bandwidth B_w.
    ps_demand: resources one PS reserves; ``bw_gbps`` is its NIC bandwidth B_ps.
    arrival: arrival time (s).
    weight: weight omega in the weighted-JCT objective.
    max_workers: largest number of workers W_max.
    max_ps: largest number of PSs P_max.
    batch_mode: ``global`` (M split over workers) or ``per_worker`` (m samples per worker).
    per_worker_batch: m, required in ``per_worker`` mode.
    latency_s: per-message latency added to every push and pull.
    requested_workers: workers the user asked for (trace GPU count); request-driven policies use
        it (e.g. Tiresias). None: not given (such policies fall back to ``max_workers``).
    pipeline: the input pipeline (data stage, ``smdlab.model.pipeline``); None: no data stage,
        the iteration is the layered model's alone. With one, the worker demand's ``cpu`` and
        ``mem_gb`` set how fast data arrives.
    """

    name: str
    profile: LayerProfile
    samples: float
    global_batch: int
    worker_demand: Mapping[str, float]
    ps_demand: Mapping[str, float]
    arrival: float = 0.0
    weight: float = 1.0
    max_workers: int = 16
    max_ps: int = 16
    batch_mode: str = "global"
    per_worker_batch: int | None = None
    latency_s: float = 0.0
    requested_workers: int | None = None
    pipeline: InputPipeline | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.profile, LayerProfile):
            raise InvalidInput(f"profile must be a LayerProfile, got {type(self.profile).__name__}")
        object.__setattr__(self, "name", str(self.name))
        object.__setattr__(self, "samples", check_positive("samples", self.samples))
        object.__setattr__(self, "global_batch", check_int("global_batch", self.global_batch, 1))
        object.__setattr__(self, "worker_demand", _demand("worker_demand", self.worker_demand))
        object.__setattr__(self, "ps_demand", _demand("ps_demand", self.ps_demand))
        object.__setattr__(
            self, "arrival", check_positive("arrival", self.arrival, allow_zero=True)
        )
        object.__setattr__(self, "weight", check_positive("weight", self.weight))
        object.__setattr__(self, "max_workers", check_int("max_workers", self.max_workers, 1, 1024))
        object.__setattr__(self, "max_ps", check_int("max_ps", self.max_ps, 1, 1024))
        check_choice("batch_mode", self.batch_mode, BATCH_MODES)
        if self.batch_mode == "per_worker":
            object.__setattr__(
                self, "per_worker_batch", check_int("per_worker_batch", self.per_worker_batch, 1)
            )
        elif self.per_worker_batch is not None:
            raise InvalidInput("per_worker_batch must be None when batch_mode is 'global'")
        object.__setattr__(
            self, "latency_s", check_positive("latency_s", self.latency_s, allow_zero=True)
        )
        if self.requested_workers is not None:
            object.__setattr__(
                self,
                "requested_workers",
                check_int("requested_workers", self.requested_workers, 1, self.max_workers),
            )
        if self.pipeline is not None:
            if not isinstance(self.pipeline, InputPipeline):
                raise InvalidInput(
                    f"pipeline must be an InputPipeline or None, got {type(self.pipeline).__name__}"
                )
            if self.pipeline.cpu_s_per_sample > 0 and self.worker_demand.get("cpu", 0) <= 0:
                raise InvalidInput(
                    "worker_demand['cpu'] must be > 0 for a job whose input pipeline uses the CPU, "
                    f"got {self.worker_demand.get('cpu', 0)!r}"
                )

    @property
    def value_key(self) -> tuple:
        """Every field by value (the profile by its fingerprint): equal keys, equal jobs."""
        return self._memo(
            "_value_key",
            lambda: (
                self.name,
                self.samples,
                self.arrival,
                self.weight,
                self.requested_workers,
                self.model_key,
            ),
        )

    @property
    def model_key(self) -> tuple:
        """Every field the timing model reads, by value (the key of the speed-table caches)."""
        return self._memo(
            "_model_key",
            lambda: (
                self.profile.fingerprint,
                self.global_batch,
                self.batch_mode,
                self.per_worker_batch,
                self.latency_s,
                self.max_workers,
                self.max_ps,
                self.pipeline,
                self.demand_key,
            ),
        )

    @property
    def demand_key(self) -> tuple:
        """The worker and PS demands as sorted (resource, amount) pairs (the demand caches' key)."""
        return self._memo(
            "_demand_key",
            lambda: (
                tuple(sorted(self.worker_demand.items())),
                tuple(sorted(self.ps_demand.items())),
            ),
        )

    def _memo(self, attr: str, compute: Callable[[], tuple]) -> tuple:
        found = self.__dict__.get(attr)
        if found is None:
            found = compute()
            object.__setattr__(self, attr, found)  # the job is immutable: its keys never change
        return found

    @property
    def batch(self) -> int:
        """The batch the mode names: M in ``global`` mode, m in ``per_worker`` mode."""
        if self.batch_mode == "global" or self.per_worker_batch is None:
            return self.global_batch
        return self.per_worker_batch

    @property
    def worker_bw_bytes(self) -> float:
        """Worker NIC bandwidth B_w in bytes per second."""
        return self.worker_demand["bw_gbps"] * 1e9 / 8

    @property
    def ps_bw_bytes(self) -> float:
        """PS NIC bandwidth B_ps in bytes per second."""
        return self.ps_demand["bw_gbps"] * 1e9 / 8

    def replace(self, **changes) -> Job:
        """Copy with some fields changed (validated again)."""
        fields = {f: getattr(self, f) for f in self.__dataclass_fields__}
        fields.update(changes)
        return Job(**fields)

    def check_config(self, workers: int, ps: int) -> tuple[int, int]:
        """Validate a (workers, ps) configuration against this job's bounds."""
        return (
            check_int("workers", workers, 1, self.max_workers),
            check_int("ps", ps, 1, self.max_ps),
        )

    def __repr__(self) -> str:
        return (
            f"Job({self.name!r}, {self.profile.network}, samples={self.samples:g}, M={self.global_batch}, "
            f"arrival={self.arrival:g}, caps=({self.max_workers},{self.max_ps}))"
        )


def make_job(
    name: str,
    network: str,
    samples: float,
    *,
    device: str = "v100",
    global_batch: int | None = None,
    worker_demand: Mapping[str, float] | None = None,
    ps_demand: Mapping[str, float] | None = None,
    pipeline: bool | InputPipeline | None = False,
    **kwargs,
) -> Job:
    """A job on a bundled network; demands default to the network's (``smdlab.model.demands.task_demands``).

    pipeline: True attaches the network's bundled data stage (``bundled_pipeline``), an
    InputPipeline attaches that one, False/None none (the layered model alone).
    """
    from smdlab.model.profiles import profile_info

    profile = LayerProfile.load(network, device)
    batch = (
        global_batch
        if global_batch is not None
        else int(profile_info(network)["default_global_batch"])
    )
    wd, pd_ = task_demands(profile)
    if pipeline is True:
        pipeline = bundled_pipeline(profile)
    elif pipeline is False:
        pipeline = None
    return Job(
        name,
        profile,
        samples,
        batch,
        dict(worker_demand or wd),
        dict(ps_demand or pd_),
        pipeline=pipeline,
        **kwargs,
    )
