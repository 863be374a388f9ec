"""Sizes and seeds of the numerical experiments: one frozen configuration per level (full, quick, tiny).

``full`` is what ``smdlab reproduce`` runs and what ``figures/`` holds; ``quick`` keeps every figure
but fewer points and seeds (under 3 minutes on 2 cores); ``tiny`` is for tests and the notebooks
(seconds). Every random draw comes from the seeds listed here, so a configuration names its results.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from smdlab.errors import InvalidInput, check_choice, check_int, check_positive
from smdlab.policies.base import DEFAULT_RESTART_S, EXECUTIONS

# Fewer very large jobs than the synthetic default (which goes up to 32 GPUs), so that a batch of
# jobs contends for the cluster and the choice of workers and PSs per job matters.
# Pairs (GPU count, probability): a tuple, so configurations pickle into worker processes.
BATCH_GPU_MIX: tuple[tuple[int, float], ...] = ((1, 0.4), (2, 0.3), (4, 0.2), (8, 0.1))


# The policies of the jct_vs_* figures: SMD and the per-decision MILP against the field's classic
# and parameter-server baselines (EXPERIMENTS.md).
JCT_POLICIES: tuple[str, ...] = (
    "fifo",
    "srtf",
    "drf",
    "tetris",
    "optimus",
    "tiresias",
    "smd",
    "milp",
)

# The policies of slo_vs_load: the deadline-aware ones, FIFO as the deadline-blind reference, and
# SMD with deadlines (smdlab.experiments.deadlines).
SLO_POLICIES: tuple[str, ...] = ("fifo", "edf", "lsf", "chronus", "unisched", "smd_slo")

# Gavel's continuous-arrival traces of the rate sweep (seed 0, 300 jobs; data/traces/README.md).
GAVEL_SWEEP_TRACES: tuple[str, ...] = tuple(
    f"seed0_rate{r}_300jobs"
    for r in ("0.5", "1.0", "1.5", "2.0", "2.5", "3.0", "4.0", "5.0", "6.0")
)


# Inputs of multiresource_ablation (smdlab.experiments.ablation.INPUTS).
ABLATION_INPUTS = ("authors", "trace3", "subset", "small")


@dataclass(frozen=True)
class ExperimentConfig:
    """Sizes of every experiment.

    name: level name (full, quick, tiny).
    seeds: workload seeds of the JCT sweeps (one simulation per seed, point and policy).
    policies: policies compared in the JCT sweeps (None: every registered policy); by default
        ``JCT_POLICIES``, SMD's comparison: the classic and parameter-server baselines and the
        per-decision MILP (the later families have their own experiments and notebook 04).
    n_jobs: jobs in the base batch.
    machines: servers in the base cluster (each ``gpus_per_machine`` GPUs, 64 CPUs, 256 GB).
    gpus_per_machine: GPUs per server.
    task_bw_gbps: NIC bandwidth each worker and each PS reserves; a server's NIC is
        ``nic_tasks`` times that (so bandwidth sweeps change speed, not packing).
    nic_tasks: how many tasks' worth of bandwidth one server's NIC carries.
    cap_factor: a job may use up to ``cap_factor`` times its requested workers and PSs.
    gpu_mix: distribution of the jobs' requested GPU counts, as (GPU count, probability) pairs.
    duration_median_s: median job duration at its request on an idle cluster.
    mode: timing-model overlap mode.
    demands: per-task demands of the batch jobs: ``per_network`` (each network's, by
        ``smdlab.model.demands.task_demands``; the default, so that multi-resource policies such as
        Tetris and DRF see different demand shapes) or ``uniform`` (one bundle for every job).
    execution: ``natural`` (each policy in the mode it declares, the default) or one execution
        mode forced on every policy (``smdlab.policies.base.EXECUTIONS``; a policy that cannot
        run in it is an error).
    restart_s: checkpoint-restart cost of a re-allocation or a resume, seconds (Pollux's 30 s).
    jobs_values, machines_values, bandwidth_values, comm_scale_values: the sweep points.
    gap_sizes: instance sizes (jobs) of the optimality-gap experiment; the cluster grows with them.
    gap_seeds: instances per size.
    gap_jobs_per_machine: jobs per server in the gap instances.
    milp_time_limit: seconds the exact MILP may take per instance (it reports its status).
    validation_seed: seed of the train/test split of the measured speeds (and of the fits' random starts).
    validation_models: measured networks to validate on (None: all of them).
    validation_test_fraction: share of each network's measurements held out.
    cpu_per_gpu_values: CPU cores per GPU of the servers in ``jct_vs_cpu_per_gpu`` (Synergy).
    muri_load_values: offered loads of ``muri_jct_vs_load``.
    online_jobs: jobs (Poisson arrivals, input pipelines on) in those two experiments.
    philly_jobs, philly_machines: jobs and machines of ``philly_window`` (None: the default
        Philly window's, ``data/scenarios/philly.toml``).
    learned_philly_jobs: jobs of the Philly window of ``learned_vs_heuristics`` (its held-out
        seeds of the training workload: one per seed in ``seeds``).
    sharing_degree_values: most jobs a GPU may hold, the points of ``jct_vs_sharing_degree``.
    sharing_load: offered load of that experiment's online workload (``online_jobs`` jobs).
    deeprm_loads: offered loads of ``deeprm_slowdown_vs_load`` (DeepRM's own environment).
    deeprm_jobsets: held-out jobsets per load there (workload seeds from 1,000 up).
    gavel_traces: the Gavel traces of ``gavel_rate_sweep`` (stems of ``data/traces/gavel/*.trace``
        listed in ``data/traces/gavel/reference/rate_sweep.csv``, which gives each one's rate,
        seed, cluster, measurement window and Gavel's own window averages).
    storage_cache_values: cluster cache sizes (GB), the points of ``io_cost_vs_cache``.
    storage_seeds: workload seeds of ``io_cost_vs_cache``.
    storage_jobs, storage_load: jobs and offered load of its synthetic online workload.
    storage_remote_gbps: its remote-storage bandwidth pool (GB/s).
    storage_cache_price, storage_remote_price: its prices, per GB-hour of cache and per
        (GB/s)-hour of remote bandwidth (illustrative cost units).
    storage_budget: AutoCBA's budget per hour there (GPUs at 1 per GPU-hour).
    ablation_inputs: inputs of ``multiresource_ablation`` (``ABLATION_INPUTS``): ``authors``
        (Synergy's Figure-8 jobs at 9 jobs/h and Muri's whole trace3; hours), ``trace3`` (Muri's
        whole trace3 beside the authors' 4 x 8-GPU Synergy fixture), ``subset`` or ``small``
        (that fixture and trace3's first rows; seconds).
    slo_load_values: offered loads of ``slo_vs_load`` (Chronus' MIX2 trace, its own deadlines).
    slo_jobs, slo_machines: jobs per window and machines of 8 GPUs there.
    slo_windows: first job (index in submit order) of each window there.
    slo_policies: policies compared there (``SLO_POLICIES``).
    contention_values: rack oversubscription ratios of ``jct_vs_contention`` (the fabric).
    contention_jobs: jobs of its online workload.
    batch_loads: offered loads of ``interruption_vs_load`` (the Philly window's arrivals scaled).
    batch_start, batch_jobs: first row (time order) and rows of that Philly window.
    batch_gpus: GPUs of its batch cluster (one pool).
    batch_chains: chains arriving in the window's held-out second half.
    batch_seed: seed of the requested times, the chains and the predictors.
    batch_dqn_steps: training steps of the deep Q-network provisioner, per load.
    """

    name: str
    seeds: tuple[int, ...]
    policies: tuple[str, ...] | None = JCT_POLICIES
    n_jobs: int = 24
    machines: int = 4
    gpus_per_machine: int = 8
    task_bw_gbps: float = 10.0
    nic_tasks: int = 10
    cap_factor: float = 4.0
    gpu_mix: tuple[tuple[int, float], ...] = BATCH_GPU_MIX
    duration_median_s: float = 1800.0
    mode: str = "wfbp"
    demands: str = "per_network"
    execution: str = "natural"
    restart_s: float = DEFAULT_RESTART_S
    jobs_values: tuple[int, ...] = (8, 16, 24, 32, 48, 64)
    machines_values: tuple[int, ...] = (2, 3, 4, 6, 8, 12)
    bandwidth_values: tuple[float, ...] = (1.0, 2.5, 5.0, 10.0, 25.0, 50.0)
    comm_scale_values: tuple[float, ...] = (0.25, 0.5, 1.0, 2.0, 4.0, 8.0)
    gap_sizes: tuple[int, ...] = (4, 8, 12, 16, 24, 32, 48, 64, 96)
    gap_seeds: tuple[int, ...] = tuple(range(8))
    gap_jobs_per_machine: int = 4
    milp_time_limit: float = 60.0
    validation_seed: int = 0
    validation_models: tuple[str, ...] | None = None
    validation_test_fraction: float = 0.3
    cpu_per_gpu_values: tuple[float, ...] = (3.0, 4.0, 6.0, 8.0, 12.0)
    muri_load_values: tuple[float, ...] = (0.5, 1.0, 1.5, 2.0)
    online_jobs: int = 48
    philly_jobs: int | None = None
    philly_machines: int | None = None
    learned_philly_jobs: int = 60
    sharing_degree_values: tuple[int, ...] = (1, 2, 3, 4)
    sharing_load: float = 2.0
    deeprm_loads: tuple[float, ...] = (0.3, 0.5, 0.7, 0.9, 1.1, 1.3, 1.5, 1.7)
    deeprm_jobsets: int = 50
    gavel_traces: tuple[str, ...] = GAVEL_SWEEP_TRACES
    ablation_inputs: str = "trace3"
    slo_load_values: tuple[float, ...] = (0.5, 1.0, 1.5, 2.0, 3.0, 4.0)
    slo_jobs: int = 200
    slo_machines: int = 8
    slo_windows: tuple[int, ...] = (0, 5000)
    slo_policies: tuple[str, ...] = SLO_POLICIES
    storage_cache_values: tuple[float, ...] = (0.0, 50.0, 100.0, 200.0, 400.0, 800.0)
    storage_seeds: tuple[int, ...] = (0, 1, 2, 3, 4)
    storage_jobs: int = 40
    storage_load: float = 1.5
    storage_remote_gbps: float = 1.0
    storage_cache_price: float = 0.01
    storage_remote_price: float = 2.0
    storage_budget: float = 40.0
    contention_values: tuple[float, ...] = (1.0, 2.0, 4.0, 8.0, 16.0)
    contention_jobs: int = 60
    batch_loads: tuple[float, ...] = (0.6, 0.8, 1.0)
    batch_start: int = 30000
    batch_jobs: int = 3000
    batch_gpus: int = 64
    batch_chains: int = 16
    batch_seed: int = 0
    batch_dqn_steps: int = 30000

    def __post_init__(self) -> None:
        if not self.seeds:
            raise InvalidInput("seeds must list at least one seed")
        sweeps = (
            "jobs_values",
            "machines_values",
            "bandwidth_values",
            "comm_scale_values",
            "gap_sizes",
            "gap_seeds",
            "cpu_per_gpu_values",
            "muri_load_values",
            "sharing_degree_values",
            "deeprm_loads",
            "gavel_traces",
            "slo_load_values",
            "slo_windows",
            "slo_policies",
            "storage_cache_values",
            "storage_seeds",
            "contention_values",
            "batch_loads",
        )
        for fname in sweeps:
            if not getattr(self, fname):
                raise InvalidInput(f"{fname} must list at least one value")
        object.__setattr__(
            self, "gpu_mix", tuple((int(k), float(v)) for k, v in dict(self.gpu_mix).items())
        )
        object.__setattr__(self, "seeds", tuple(self.seeds))
        object.__setattr__(self, "gavel_traces", tuple(self.gavel_traces))
        for fname in ("slo_load_values", "slo_windows", "slo_policies"):
            object.__setattr__(self, fname, tuple(getattr(self, fname)))
        for v in self.slo_load_values:
            check_positive("slo_load_values", v)
        for w in self.slo_windows:
            check_int("slo_windows", w, 0)
        check_int("slo_jobs", self.slo_jobs, 2)
        check_int("slo_machines", self.slo_machines, 1)
        check_choice("demands", self.demands, ("per_network", "uniform"))
        check_choice("ablation_inputs", self.ablation_inputs, ABLATION_INPUTS)
        check_choice("execution", self.execution, ("natural", *EXECUTIONS))
        object.__setattr__(
            self, "restart_s", check_positive("restart_s", self.restart_s, allow_zero=True)
        )
        if self.policies is not None:
            object.__setattr__(self, "policies", tuple(self.policies))

    def replace(self, **changes) -> ExperimentConfig:
        """Copy with some fields changed."""
        return replace(self, **changes)


CONFIGS: dict[str, ExperimentConfig] = {
    "full": ExperimentConfig(name="full", seeds=tuple(range(10))),
    "quick": ExperimentConfig(
        name="quick",
        seeds=(0, 1, 2),
        jobs_values=(8, 16, 32, 64),
        machines_values=(2, 4, 8, 12),
        bandwidth_values=(1.0, 5.0, 10.0, 50.0),
        comm_scale_values=(0.25, 1.0, 4.0, 8.0),
        gap_sizes=(4, 8, 16, 32),
        gap_seeds=(0, 1, 2),
        milp_time_limit=20.0,
        cpu_per_gpu_values=(3.0, 6.0, 12.0),
        muri_load_values=(0.75, 1.5),
        online_jobs=32,
        philly_jobs=500,
        philly_machines=16,
        learned_philly_jobs=40,
        sharing_degree_values=(1, 2, 4),
        deeprm_jobsets=10,
        gavel_traces=("seed0_rate1.0_300jobs", "seed0_rate2.5_300jobs", "seed0_rate6.0_300jobs"),
        ablation_inputs="subset",
        slo_load_values=(1.0, 2.0, 4.0),
        slo_jobs=100,
        slo_machines=4,
        slo_windows=(0,),
        storage_cache_values=(0.0, 100.0, 400.0),
        storage_seeds=(0, 1),
        storage_jobs=24,
        contention_values=(1.0, 4.0, 16.0),
        contention_jobs=40,
        batch_jobs=1500,
        batch_chains=8,
        batch_dqn_steps=20000,
    ),
    "tiny": ExperimentConfig(
        name="tiny",
        seeds=(0,),
        policies=("fifo", "drf", "smd"),
        n_jobs=6,
        machines=2,
        jobs_values=(4, 8),
        machines_values=(1, 2),
        bandwidth_values=(2.5, 10.0),
        comm_scale_values=(0.5, 2.0),
        gap_sizes=(3, 6),
        gap_seeds=(0,),
        gap_jobs_per_machine=3,
        milp_time_limit=10.0,
        validation_models=("resnext-110", "seq2seq"),  # the two fastest layered fits
        cpu_per_gpu_values=(4.0,),
        muri_load_values=(1.0,),
        online_jobs=8,
        philly_jobs=24,
        philly_machines=4,
        learned_philly_jobs=20,
        sharing_degree_values=(1, 2),
        deeprm_loads=(0.7, 1.3),
        deeprm_jobsets=2,
        gavel_traces=("seed3_rate0.4_60jobs",),
        ablation_inputs="small",
        slo_load_values=(2.0,),
        slo_jobs=24,
        slo_machines=1,
        slo_windows=(0,),
        slo_policies=("fifo", "edf", "chronus"),
        storage_cache_values=(0.0, 200.0),
        storage_seeds=(0,),
        storage_jobs=8,
        contention_values=(1.0, 8.0),
        contention_jobs=12,
        batch_loads=(0.8,),
        batch_jobs=600,
        batch_gpus=32,
        batch_chains=4,
        batch_dqn_steps=1500,
    ),
}


def get_config(config: str | ExperimentConfig) -> ExperimentConfig:
    """The configuration named ``config`` (full, quick, tiny), or ``config`` itself."""
    if isinstance(config, ExperimentConfig):
        return config
    return CONFIGS[check_choice("config", config, CONFIGS)]
