"""The explorer's scenario: every control value in one frozen record, and the jobs and cluster it means.

Kept free of widgets so tests, benchmarks and notebooks build exactly what the explorer shows.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType

import numpy as np

from smdlab.caches import EDITED_PROFILES, WIDGET_JOB_SAMPLES, memoize
from smdlab.errors import InvalidInput, check_choice, check_int, check_positive
from smdlab.model.cluster import Cluster
from smdlab.model.demands import task_demands
from smdlab.model.job import ARCHS, BATCH_MODES, Job
from smdlab.model.profiles import LayerProfile, list_profiles, profile_info
from smdlab.model.timing import MODES, duration

DEVICES: tuple[str, ...] = ("v100", "a100")

# Machine shapes: label -> (GPUs, CPUs, memory GB) per machine.
MACHINE_SHAPES: Mapping[str, tuple[int, int, int]] = MappingProxyType(
    {
        "8 GPU · 64 CPU · 256 GB": (8, 64, 256),
        "4 GPU · 32 CPU · 128 GB": (4, 32, 128),
        "2 GPU · 16 CPU · 64 GB": (2, 16, 64),
        "8 GPU · 32 CPU · 128 GB (CPU-poor)": (8, 32, 128),
    }
)
# The default state: 4 CPU-poor 8-GPU servers (4 CPU cores per GPU, so PSs compete with workers
# for cores), 25 Gbps per task (400 Gbps per server at two tasks per GPU), 16 jobs of 6 networks.
# Cores bind before GPUs, so jobs get fewer PSs than workers where PSs cost more than they speed
# up, the LP bound is not tight, and the NIC bandwidth changes the allocation (docs/explorer.md).
DEFAULT_SHAPE = "8 GPU · 32 CPU · 128 GB (CPU-poor)"
DEFAULT_BANDWIDTH_GBPS = 25.0
DEFAULT_PROFILES: tuple[str, ...] = (
    "resnet50",
    "vgg16",
    "bert_base",
    "inception_v3",
    "lstm_lm",
    "alexnet",
)

# Per-task demands: "per_network" gives each job its network's worker and PS demands
# (``smdlab.model.demands.task_demands``: CPU and memory differ by network); "uniform" gives every
# job one bundle (worker: 1 GPU, 4 cores, 16 GB; PS: 4 cores, 16 GB). Both reserve the task NIC
# share on workers and PSs (the model's B_w = B_ps).
DEMAND_CHOICES: tuple[str, ...] = ("per_network", "uniform")
WORKER_CPU, WORKER_MEM, PS_CPU, PS_MEM = 4, 16, 4, 16
# Each machine's NIC has room for one worker and one PS per GPU at the task bandwidth.
NIC_SLOTS_PER_GPU = 2
# The "large instance" switch of the explorer: large enough that the exact MILP runs in the
# background for seconds and stops at its time limit (docs/explorer.md), while SMD stays interactive.
LARGE_MACHINES, LARGE_JOBS = 500, 2000
MAX_MACHINES, MAX_JOBS = 1024, 5000
# Job sizes: hours on one worker and one PS (unedited v100 profile, wfbp, 10 Gbps), log-uniform.
JOB_HOURS = (0.5, 8.0)
REFERENCE_BW_GBPS = 10.0


@dataclass(frozen=True)
class ProfileEdit:
    """Edits to one network's layer profile: device, compute and parameter scales, comm/comp ratio.

    compute: multiplies every layer's forward and backward time.
    params: multiplies every layer's parameter bytes.
    comm_ratio: multiplies the communication-to-computation ratio by this factor, keeping their
        geometric mean (bytes times sqrt(r), times divided by sqrt(r)).
    """

    device: str = "v100"
    compute: float = 1.0
    params: float = 1.0
    comm_ratio: float = 1.0

    def __post_init__(self) -> None:
        check_choice("device", self.device, DEVICES)
        for name in ("compute", "params", "comm_ratio"):
            object.__setattr__(self, name, check_positive(name, getattr(self, name)))

    @property
    def is_identity(self) -> bool:
        """Whether the edit leaves the bundled profile unchanged (on v100)."""
        return self.device == "v100" and self.compute == self.params == self.comm_ratio == 1.0

    def apply(self, network: str) -> LayerProfile:
        """The bundled profile of ``network`` with this edit applied."""
        return _edited_profile(network, self)


@memoize(EDITED_PROFILES)
def _edited_profile(network: str, edit: ProfileEdit) -> LayerProfile:
    base = LayerProfile.load(network, edit.device)
    root = float(np.sqrt(edit.comm_ratio))
    compute, params = edit.compute / root, edit.params * root
    if compute == 1.0 and params == 1.0:
        return base
    return base.scaled(compute=compute, params=params)


@dataclass(frozen=True)
class ExplorerSettings:
    """Every value the explorer's controls set (the defaults are the default explorer scenario).

    machines, shape: cluster size and machine shape (a key of MACHINE_SHAPES).
    bandwidth_gbps: NIC bandwidth each worker and PS reserves and uses (B_w = B_ps).
    profiles: bundled networks of the job mix (job i runs profiles[i % len]).
    n_jobs: number of jobs.
    seed: seed of the job sizes.
    edits: per-network profile edits (network -> ProfileEdit).
    mode: overlap mode of the timing model.
    batch: batch convention, ``global`` or ``per_worker``.
    method: solver method of the fast path (``smd`` or ``lp_round``).
    focus: index of the job whose per-layer timeline is shown.
    max_tasks: cap on each job's workers and on its PSs.
    arch: ``ps`` (parameter-server jobs) or ``allreduce`` (ring all-reduce jobs, no PS) for the
        whole job set.
    demands: per-task demands, ``per_network`` (each network's, ``task_demands``) or ``uniform``.
    racks: 0 for a flat cluster; otherwise the machines split into that many racks (in order,
        sizes differing by at most one), drawn as racks beside the allocation.
    """

    machines: int = 4
    shape: str = DEFAULT_SHAPE
    bandwidth_gbps: float = DEFAULT_BANDWIDTH_GBPS
    profiles: tuple[str, ...] = DEFAULT_PROFILES
    n_jobs: int = 16
    seed: int = 0
    edits: Mapping[str, ProfileEdit] = field(default_factory=dict)
    mode: str = "wfbp"
    batch: str = "global"
    method: str = "smd"
    focus: int = 0
    max_tasks: int = 16
    arch: str = "ps"
    demands: str = "per_network"
    racks: int = 0

    def __post_init__(self) -> None:
        check_int("machines", self.machines, 1, MAX_MACHINES)
        check_int("racks", self.racks, 0, self.machines)
        check_choice("shape", self.shape, list(MACHINE_SHAPES))
        check_positive("bandwidth_gbps", self.bandwidth_gbps)
        profiles = tuple(self.profiles)
        if not profiles:
            raise InvalidInput("profiles must name at least one bundled network, got none")
        known = list_profiles()
        for p in profiles:
            check_choice("profiles", p, known)
        object.__setattr__(self, "profiles", profiles)
        check_int("n_jobs", self.n_jobs, 1, MAX_JOBS)
        check_int("seed", self.seed, 0)
        for net, edit in self.edits.items():
            check_choice("edits network", net, known)
            if not isinstance(edit, ProfileEdit):
                raise InvalidInput(
                    f"edits[{net!r}] must be a ProfileEdit, got {type(edit).__name__}"
                )
        object.__setattr__(self, "edits", MappingProxyType(dict(self.edits)))
        check_choice("mode", self.mode, MODES)
        check_choice("batch", self.batch, BATCH_MODES)
        check_int("focus", self.focus, 0, self.n_jobs - 1)
        check_int("max_tasks", self.max_tasks, 1, 64)
        check_choice("arch", self.arch, ARCHS)
        check_choice("demands", self.demands, DEMAND_CHOICES)

    def replace(self, **changes) -> ExplorerSettings:
        """Copy with some values changed (validated again)."""
        return replace(self, **changes)

    def edit_for(self, network: str) -> ProfileEdit:
        """The edit applied to ``network`` (identity when none was made)."""
        return self.edits.get(network, ProfileEdit())

    def with_edit(self, network: str, **changes) -> ExplorerSettings:
        """Copy with ``network``'s profile edit changed."""
        edit = replace(self.edit_for(network), **changes)
        edits = {k: v for k, v in self.edits.items() if k != network}
        if not edit.is_identity:
            edits[network] = edit
        return self.replace(edits=edits)

    def network_of(self, index: int) -> str:
        """Network of job ``index``."""
        return self.profiles[index % len(self.profiles)]

    def job_names(self) -> list[str]:
        """Names of the jobs, in order (``<index>-<network>``)."""
        return [f"{i}-{self.network_of(i)}" for i in range(self.n_jobs)]


def build_cluster(settings: ExplorerSettings) -> Cluster:
    """The cluster the settings describe: identical machines whose NIC fits the task bandwidth."""
    gpu, cpu, mem = MACHINE_SHAPES[settings.shape]
    nic = settings.bandwidth_gbps * NIC_SLOTS_PER_GPU * gpu
    if settings.racks:
        n, k = settings.machines, settings.racks
        shape = {"gpu_type": "", "gpu": gpu, "cpu": cpu, "mem_gb": mem, "bw_gbps": nic}
        return Cluster.groups(
            [{"name": f"r{i}", "machines": n // k + (i < n % k), **shape} for i in range(k)]
        )
    return Cluster.homogeneous(settings.machines, gpu=gpu, cpu=cpu, mem_gb=mem, bw_gbps=nic)


@memoize(WIDGET_JOB_SAMPLES)
def _job_samples(profiles: tuple[str, ...], n_jobs: int, seed: int) -> tuple[float, ...]:
    # Sizes are drawn against the unedited reference job so edits change durations, not the work.
    rng = np.random.default_rng(seed)
    hours = np.exp(rng.uniform(np.log(JOB_HOURS[0]), np.log(JOB_HOURS[1]), n_jobs))
    out = []
    for i in range(n_jobs):
        net = profiles[i % len(profiles)]
        ref = _job(
            net,
            LayerProfile.load(net, "v100"),
            1.0,
            "global",
            REFERENCE_BW_GBPS,
            1,
            1,
            f"ref-{net}",
        )
        out.append(float(hours[i] * 3600.0 / duration(ref, 1, 1, "wfbp")))
    return tuple(out)


def _job(
    name_net: str,
    profile: LayerProfile,
    samples: float,
    batch: str,
    bw: float,
    max_w: int,
    max_p: int,
    name: str,
    arch: str = "ps",
    gpus_per_machine: int = 8,
    task: tuple[dict[str, float], dict[str, float]] | None = None,
) -> Job:
    M = int(profile_info(name_net)["default_global_batch"])
    per_worker = max(1, M // 8) if batch == "per_worker" else None
    ring = arch == "allreduce"
    if task is not None:  # per-network demands
        worker, ps = dict(task[0]), dict(task[1])
    else:
        worker = {"gpu": 1, "cpu": WORKER_CPU, "mem_gb": WORKER_MEM, "bw_gbps": bw}
        ps = {"gpu": 0, "cpu": PS_CPU, "mem_gb": PS_MEM, "bw_gbps": bw}
    return Job(
        name,
        profile,
        samples,
        M,
        worker,
        {} if ring else ps,
        max_workers=max_w,
        max_ps=0 if ring else max_p,
        batch_mode=batch,
        per_worker_batch=per_worker,
        arch=arch,
        gpus_per_machine=gpus_per_machine,
    )


def _network_demands(network: str, bw: float) -> tuple[dict[str, float], dict[str, float]]:
    # From the unedited profile: a profile edit changes the timing, not what a task reserves.
    return task_demands(LayerProfile.load(network, "v100"), bw_gbps=bw)


def build_jobs(settings: ExplorerSettings) -> list[Job]:
    """The jobs the settings describe (seeded sizes; per-worker batch m = M // 8 in per_worker mode)."""
    samples = _job_samples(settings.profiles, settings.n_jobs, settings.seed)
    names = settings.job_names()
    task = (
        {n: _network_demands(n, settings.bandwidth_gbps) for n in settings.profiles}
        if settings.demands == "per_network"
        else {}
    )
    return [
        _job(
            settings.network_of(i),
            settings.edit_for(settings.network_of(i)).apply(settings.network_of(i)),
            samples[i],
            settings.batch,
            settings.bandwidth_gbps,
            settings.max_tasks,
            settings.max_tasks,
            names[i],
            settings.arch,
            int(MACHINE_SHAPES[settings.shape][0]),
            task.get(settings.network_of(i)),
        )
        for i in range(settings.n_jobs)
    ]


def default_settings() -> ExplorerSettings:
    """The default explorer scenario (4 CPU-poor machines of 8 GPUs, 25 Gbps per task, 16 jobs of 6 networks, wfbp, SMD)."""
    return ExplorerSettings()
