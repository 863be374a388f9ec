"""A data-parallel training job: parameter-server (``arch="ps"``) or ring all-reduce (``arch="allreduce"``)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Literal, get_args, overload

import numpy as np

from smdlab.errors import InvalidInput, check_bool, check_choice, check_int, check_positive
from smdlab.model.demands import task_demands
from smdlab.model.input_pipeline import InputPipeline, bundled_pipeline
from smdlab.model.measured_speed import MeasuredThroughput
from smdlab.model.profiles import LayerProfile
from smdlab.model.slo import SLO, check_slo

BatchMode = Literal["global", "per_worker"]
BATCH_MODES: tuple[BatchMode, ...] = get_args(BatchMode)
ARCHS = ("ps", "allreduce")
DEFAULT_MAX_PS = 16
DEFAULT_BUCKET_MB = (
    25.0  # PyTorch DDP's default bucket_cap_mb (torch.nn.parallel.DistributedDataParallel)
)
INTERCONNECTS = ("nvlink", "pcie")

# One uniform per-task bundle (one GPU worker, a CPU-only PS): the workloads' ``demands="uniform"``
# option. make_job and the workloads' default derive demands per network instead
# (smdlab.model.demands.task_demands).
DEFAULT_WORKER_DEMAND: Mapping[str, float] = MappingProxyType(
    {"gpu": 1, "cpu": 4, "mem_gb": 16, "bw_gbps": 10}
)
DEFAULT_PS_DEMAND: Mapping[str, float] = MappingProxyType(
    {"gpu": 0, "cpu": 4, "mem_gb": 16, "bw_gbps": 10}
)


# NIC bandwidth the timing model assumes for a GPU-only job, whose tasks reserve none: such a job
# runs only at its gang allocation, where its work is calibrated to the trace duration, so the
# value never changes a result (it only has to be finite and positive).
GPU_ONLY_TIMING_BW_GBPS = 10.0


def _demand(
    field: str, demand: Mapping[str, float] | None, arch: str = "ps", need_bw: bool = True
) -> Mapping[str, float]:
    if arch == "allreduce" and field == "ps_demand":
        if demand is None:
            return MappingProxyType({})
        if not isinstance(demand, Mapping) or any(
            check_positive(f"{field}[{r!r}]", v, allow_zero=True) > 0 for r, v in demand.items()
        ):
            raise InvalidInput(
                f"ps_demand of an all-reduce job must be empty or all 0 (it has no PS), got {demand!r}"
            )
        return MappingProxyType({})
    if not isinstance(demand, Mapping):
        raise InvalidInput(
            f"{field} must be a mapping from resource name to amount, got {demand!r}"
        )
    out = {str(r): check_positive(f"{field}[{r!r}]", v, allow_zero=True) for r, v in demand.items()}
    if need_bw and out.get("bw_gbps", 0) <= 0:
        raise InvalidInput(
            f"{field}['bw_gbps'] must be > 0 (the NIC bandwidth the task reserves), got {demand.get('bw_gbps')!r}"
        )
    return MappingProxyType(out)


# Fields the timing model never reads: jobs differing only in these share speed tables.
_SCHEDULING_ONLY = (
    "name",
    "samples",
    "arrival",
    "weight",
    "requested_workers",
    "restart_s",
    "measured",
    "slo",
)

# The model key leaves these out too: a trace's measured times, which no speed table reads (the
# layered model, the data stage and the measured-throughput table); interleave's packing times
# and Muri's policy read them from the job itself. Jobs differing only here share speed tables.
_NOT_IN_SPEED_TABLES = ("stage_times_s", "iteration_s", "duration_s")

# Field value types kept as they are in the keys (exact types: no Mapping or LayerProfile among
# them), checked first because the abstract Mapping check is slow.
_PLAIN_TYPES = frozenset({str, int, float, bool, type(None), tuple})
_MAPPING_TYPES = frozenset({MappingProxyType, dict})


def _check_scheduling_field(name: str, value, max_workers: int):
    """A scheduling-only field's value, checked and normalised as ``Job.__post_init__`` does."""
    if name == "name":
        return str(value)
    if name == "samples":
        return check_positive("samples", value)
    if name == "arrival":
        return check_positive("arrival", value, allow_zero=True)
    if name == "weight":
        return check_positive("weight", value)
    if name == "restart_s":
        return None if value is None else check_positive("restart_s", value, allow_zero=True)
    if name == "measured":
        return check_bool("measured", value)
    if name == "slo":
        return check_slo(value)
    if value is None:  # requested_workers
        return None
    return check_int("requested_workers", value, 1, max_workers)


@dataclass(frozen=True, eq=False)
class Job:
    """A training job: network profile, work, batch convention and per-task demands.

    name: identifier, unique within a workload.
    profile: per-layer profile of the network.
    samples: samples still to process (epochs times dataset size, minus work done).
    global_batch: global mini-batch M (global mode), split evenly over the workers.
    worker_demand: resources one worker reserves; ``bw_gbps`` is its NIC bandwidth B_w.
    ps_demand: resources one PS reserves; ``bw_gbps`` is its NIC bandwidth B_ps. An all-reduce job
        has no PS: empty (or all 0; stored empty).
    arrival: arrival time (s).
    weight: weight omega in the weighted-JCT objective.
    max_workers: largest number of workers W_max.
    max_ps: largest number of PSs P_max (default 16; an all-reduce job: 0, and only 0).
    batch_mode: ``global`` (M split over workers) or ``per_worker`` (m samples per worker).
    per_worker_batch: m, required in ``per_worker`` mode.
    latency_s: per-message latency added to every push and pull.
    requested_workers: workers the user asked for (trace GPU count); request-driven policies use
        it (e.g. Tiresias). None: not given (such policies fall back to ``max_workers``).
    gang: all-or-nothing: the job starts only on exactly ``gang_allocation`` (its request) and is
        never resized (the trace schedulers' rule: a trace job runs on its GPUs or not at all).
    gpu_only: a GPU-only trace job: one gang of GPU workers and no PS. Its worker reserves only
        what ``worker_demand`` lists (GPUs); the loaders set ``max_ps`` to 1, and that PS entry
        reserves nothing (the allocation format keeps a PS count; ``ps_demand`` must be all 0); the
        demands need no ``bw_gbps`` (the timing model then assumes ``GPU_ONLY_TIMING_BW_GBPS``).
    arch: ``ps`` (parameter servers) or ``allreduce`` (ring all-reduce among the workers, no PS).
    bucket_mb: all-reduce gradient bucket size in MB (1e6 bytes; PyTorch DDP's 25 by default).
    intra_link: all-reduce ring bandwidth inside one machine: ``nvlink`` or ``pcie`` (the profile
        device's link, ``smdlab.model.devices``), or a number in Gbps.
    gpus_per_machine: GPUs of one machine an all-reduce ring fills before it crosses machines: a
        ring of w <= gpus_per_machine workers is taken to sit on one machine in the timing tables.
    pipeline: the input pipeline (data stage, ``smdlab.model.pipeline``); None: no data stage,
        the iteration is the layered model's alone. With one, the worker demand's ``cpu`` and
        ``mem_gb`` set how fast data arrives.
    restart_s: seconds without progress this job pays for a restart (the simulator's restart
        rule says when); None: the simulation's ``restart_s``. Muri's traces give one per model.
    stage_times_s: measured seconds per iteration in each stage at the request (data loading, GPU,
        network: a Muri trace's ``resource_time``); None: derived from the layered model
        (``smdlab.model.interleave``). iteration_s: the measured solo iteration time at the
        request that the job's work is calibrated to; None: the layered model's.
    duration_s: the duration a trace states for the job at its request (a Muri trace's
        ``duration``; Muri-S's key before the job first runs in Muri's simulator); None: none.
    throughput: the measured-throughput job model (``smdlab.model.measured_speed``): the
        iteration time is read from a profiled (CPU, memory) table at the worker demand's ``cpu``
        and ``mem_gb``, with no communication term (with arch ``ps`` its PSs reserve their
        demand and change no iteration time); None: the layered model.
    measured: whether the run's summary counts the job (an input may measure only some of its
        jobs, the others only load the cluster); the per-job tables keep every job.
    slo: the job's deadline options (``smdlab.model.slo.SLO``): an SLO job; None: best-effort.
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
    max_ps: int = None  # type: ignore[assignment]  # None: the arch's default (16; all-reduce 0)
    batch_mode: str = "global"
    per_worker_batch: int | None = None
    latency_s: float = 0.0
    requested_workers: int | None = None
    gang: bool = False
    gpu_only: bool = False
    arch: str = "ps"
    bucket_mb: float = DEFAULT_BUCKET_MB
    intra_link: str | float = "nvlink"
    gpus_per_machine: int = 8
    pipeline: InputPipeline | None = None
    restart_s: float | None = None
    stage_times_s: tuple[float, ...] | None = None
    iteration_s: float | None = None
    duration_s: float | None = None
    throughput: MeasuredThroughput | None = None
    measured: bool = True
    slo: SLO | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.profile, LayerProfile):
            raise InvalidInput(f"profile must be a LayerProfile, got {type(self.profile).__name__}")
        check_choice("arch", self.arch, ARCHS)
        allreduce = self.arch == "allreduce"
        if allreduce:
            if self.max_ps not in (None, 0):
                raise InvalidInput(
                    f"max_ps of an all-reduce job must be 0 (it has no PS), got {self.max_ps!r}"
                )
            object.__setattr__(self, "max_ps", 0)
        elif self.max_ps is None:
            object.__setattr__(self, "max_ps", DEFAULT_MAX_PS)
        object.__setattr__(self, "bucket_mb", check_positive("bucket_mb", self.bucket_mb))
        if isinstance(self.intra_link, str):
            check_choice("intra_link", self.intra_link, INTERCONNECTS)
        else:
            object.__setattr__(self, "intra_link", check_positive("intra_link", self.intra_link))
        object.__setattr__(
            self, "gpus_per_machine", check_int("gpus_per_machine", self.gpus_per_machine, 1, 1024)
        )
        object.__setattr__(self, "name", str(self.name))
        object.__setattr__(self, "samples", check_positive("samples", self.samples))
        object.__setattr__(self, "global_batch", check_int("global_batch", self.global_batch, 1))
        object.__setattr__(self, "slo", check_slo(self.slo))
        for flag in ("gang", "gpu_only", "measured"):
            object.__setattr__(self, flag, check_bool(flag, getattr(self, flag)))
        if self.gpu_only and self.arch != "ps":
            raise InvalidInput(f"a gpu_only job has arch 'ps' (one empty PS), got {self.arch!r}")
        need_bw = not self.gpu_only
        object.__setattr__(
            self, "worker_demand", _demand("worker_demand", self.worker_demand, need_bw=need_bw)
        )
        object.__setattr__(
            self, "ps_demand", _demand("ps_demand", self.ps_demand, self.arch, need_bw)
        )
        if self.gpu_only and any(v > 0 for v in self.ps_demand.values()):
            raise InvalidInput(
                f"ps_demand of a gpu_only job must reserve nothing, got {dict(self.ps_demand)}"
            )
        object.__setattr__(
            self, "arrival", check_positive("arrival", self.arrival, allow_zero=True)
        )
        object.__setattr__(self, "weight", check_positive("weight", self.weight))
        object.__setattr__(self, "max_workers", check_int("max_workers", self.max_workers, 1, 1024))
        if not allreduce:
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
        if self.restart_s is not None:
            object.__setattr__(
                self, "restart_s", check_positive("restart_s", self.restart_s, allow_zero=True)
            )
        if self.stage_times_s is not None:
            stages = tuple(
                check_positive(f"stage_times_s[{i}]", x, allow_zero=True)
                for i, x in enumerate(self.stage_times_s)
            )
            if not stages:
                raise InvalidInput("stage_times_s must list at least one stage time, got none")
            object.__setattr__(self, "stage_times_s", stages)
        if self.iteration_s is not None:
            object.__setattr__(self, "iteration_s", check_positive("iteration_s", self.iteration_s))
        if self.duration_s is not None:
            object.__setattr__(
                self, "duration_s", check_positive("duration_s", self.duration_s, allow_zero=True)
            )
        if self.requested_workers is not None:
            object.__setattr__(
                self,
                "requested_workers",
                check_int("requested_workers", self.requested_workers, 1, self.max_workers),
            )
        if self.throughput is not None:
            if not isinstance(self.throughput, MeasuredThroughput):
                raise InvalidInput(
                    "throughput must be a MeasuredThroughput or None, "
                    f"got {type(self.throughput).__name__}"
                )
            if self.pipeline is not None:
                raise InvalidInput(
                    "a job with a measured throughput has no pipeline (its table is the data stage)"
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
        return self._memo("_value_key", lambda: self._fields_key(()))

    @property
    def model_key(self) -> tuple:
        """Every field but those only scheduling or no speed table reads, by value (the speed-table caches' key).

        Built from all fields, so a field added later is part of the key without anyone listing it.
        """
        return self._memo(
            "_model_key", lambda: self._fields_key(_SCHEDULING_ONLY + _NOT_IN_SPEED_TABLES)
        )

    def _fields_key(self, skip: tuple[str, ...]) -> tuple:
        out = []
        for name in self.__dataclass_fields__:
            if name in skip:
                continue
            v = getattr(self, name)
            if type(v) in _PLAIN_TYPES:
                pass
            elif isinstance(v, LayerProfile):
                v = v.fingerprint
            elif type(v) in _MAPPING_TYPES or isinstance(v, Mapping):
                v = tuple(sorted(v.items()))
            out.append((name, v))
        return tuple(out)

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
    def job_class(self) -> str:
        """``slo`` (the job has deadline options) or ``best_effort``."""
        return "best_effort" if self.slo is None else "slo"

    @property
    def gang_allocation(self) -> tuple[int, int]:
        """(workers, PSs) of the job's request: requested_workers (else max_workers), as many PSs up to max_ps."""
        n = self.requested_workers if self.requested_workers is not None else self.max_workers
        return n, min(n, self.max_ps)

    @property
    def gang_gpus(self) -> float:
        """GPUs the job holds at its gang allocation."""
        w, p = self.gang_allocation
        return w * self.worker_demand.get("gpu", 0.0) + p * self.ps_demand.get("gpu", 0.0)

    @property
    def batch(self) -> int:
        """The batch the mode names: M in ``global`` mode, m in ``per_worker`` mode."""
        if self.batch_mode == "global" or self.per_worker_batch is None:
            return self.global_batch
        return self.per_worker_batch

    @overload
    def samples_per_iteration(self, workers: int) -> int: ...

    @overload
    def samples_per_iteration(self, workers: np.ndarray) -> int | np.ndarray: ...

    def samples_per_iteration(self, workers: int | np.ndarray) -> int | np.ndarray:
        """Samples one iteration on ``workers`` workers processes: M (global), workers x m (per worker)."""
        if self.batch_mode == "global":
            return self.global_batch
        return workers * self.batch

    @property
    def worker_bw_bytes(self) -> float:
        """Worker NIC bandwidth B_w in bytes per second."""
        return self.worker_demand.get("bw_gbps", GPU_ONLY_TIMING_BW_GBPS) * 1e9 / 8

    @property
    def ps_bw_bytes(self) -> float:
        """PS NIC bandwidth B_ps in bytes per second (0 for an all-reduce job)."""
        if self.gpu_only:
            return GPU_ONLY_TIMING_BW_GBPS * 1e9 / 8
        return self.ps_demand.get("bw_gbps", 0.0) * 1e9 / 8

    @property
    def is_allreduce(self) -> bool:
        """Whether the job trains with ring all-reduce (no PS)."""
        return self.arch == "allreduce"

    @property
    def ps_slots(self) -> int:
        """Columns of the job's timing tables: max_ps, or 1 for an all-reduce job (p = 0)."""
        return 1 if self.arch == "allreduce" else int(self.max_ps or 0)

    @property
    def intra_bw_bytes(self) -> float:
        """All-reduce ring bandwidth inside one machine, bytes per second."""
        if isinstance(self.intra_link, str):
            from smdlab.model.devices import DEVICES

            device = DEVICES.get(self.profile.device, DEVICES["v100"])
            return device.link_gbps(self.intra_link) * 1e9 / 8
        return float(self.intra_link) * 1e9 / 8

    def replace(self, **changes) -> Job:
        """Copy with some fields changed (validated again)."""
        if changes and all(k in _SCHEDULING_ONLY for k in changes):
            # Schedulers copy jobs with their remaining samples at every decision: only the changed
            # fields need validating (by __post_init__'s rules), and the copy keeps the original's
            # model and demand keys (``value_key`` covers every field, so it is dropped).
            job = object.__new__(Job)
            job.__dict__.update(self.__dict__)
            job.__dict__.pop("_value_key", None)
            for k, v in changes.items():
                object.__setattr__(job, k, _check_scheduling_field(k, v, self.max_workers))
            return job
        fields = {f: getattr(self, f) for f in self.__dataclass_fields__}
        fields.update(changes)
        return Job(**fields)

    def check_config(self, workers: int, ps: int) -> tuple[int, int]:
        """Validate a (workers, ps) configuration against this job's bounds (all-reduce: ps = 0)."""
        if self.arch == "allreduce":
            return check_int("workers", workers, 1, self.max_workers), check_int("ps", ps, 0, 0)
        return (
            check_int("workers", workers, 1, self.max_workers),
            check_int("ps", ps, 1, self.max_ps),
        )

    def __repr__(self) -> str:
        return (
            f"Job({self.name!r}, {self.profile.network}, samples={self.samples:g}, M={self.global_batch}, "
            f"arrival={self.arrival:g}, caps=({self.max_workers},{self.max_ps})"
            + (", allreduce" if self.arch == "allreduce" else "")
            + (", gang" if self.gang else "")
            + (", gpu_only" if self.gpu_only else "")
            + ")"
        )


def job_memo(job: Job) -> dict:
    """The job's own memo of its speed tables and demand rows (a per-object memo, not a cache: it
    dies with the job, and ``Job.replace`` copies that change scheduling fields only share it).
    Simulations look these up for every active job at every decision; the memo skips hashing the
    value keys each time."""
    memo = job.__dict__.get("_tables_memo")
    if memo is None:
        memo = {}
        object.__setattr__(job, "_tables_memo", memo)
    return memo


def make_job(
    name: str,
    network: str,
    samples: float,
    *,
    device: str = "v100",
    global_batch: int | None = None,
    worker_demand: Mapping[str, float] | None = None,
    ps_demand: Mapping[str, float] | None = None,
    arch: str = "ps",
    pipeline: bool | InputPipeline | None = False,
    **kwargs,
) -> Job:
    """A job on a bundled network; demands default to the network's (``smdlab.model.demands.task_demands``).

    ``arch="allreduce"``: a ring all-reduce job (no PS; the worker demand as for a PS job).

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
    if check_choice("arch", arch, ARCHS) == "allreduce":
        ps_side = dict(ps_demand or {})  # validated by Job: an all-reduce job has no PS
    else:
        ps_side = dict(ps_demand or pd_)
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
        ps_side,
        arch=arch,
        pipeline=pipeline,
        **kwargs,
    )
