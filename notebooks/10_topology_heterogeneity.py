# ---
# jupyter:
#   jupytext:
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#       jupytext_version: 1.19.6
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 10. Racks and GPU types: where jobs run, and why the type matters
#
# Real clusters have racks behind shared uplinks and mix GPU generations. This notebook builds a
# racked cluster of K80, P100 and V100 machines, runs a workload on it, and draws the cluster as
# racks of machines with each job's workers coloured on the GPUs they hold. It then compares
# Gavel's heterogeneity-aware allocation with the same rounds blind to GPU types, and ends with how
# well smdlab's layered model predicts Gavel's measured consolidation and GPU-type ratios.
# Specifications: `docs/heterogeneity.md` (cluster shape, speeds on a type, the Gavel policies)
# and `docs/model.md` ("Validation against Gavel").
#
# Terms and abbreviations: [docs/glossary.md](../docs/glossary.md).

# %%
import pandas as pd

from smdlab.experiments import make_figure, run_experiment
from smdlab.experiments.consolidation import error_table
from smdlab.experiments.heterogeneity import hetero_jobs
from smdlab.model.cluster import Cluster
from smdlab.model.gpu_types import speed_ratio
from smdlab.policies.registry import get_policy
from smdlab.sim import simulate
from smdlab.sim.snapshot import placements_at
from smdlab.viz.notebook import percent, show, table
from smdlab.viz.racks import rack_figure

# %% [markdown]
# ## A racked, mixed cluster
#
# One rack per GPU type, two machines of 4 GPUs each. The V100 rack's uplink is oversubscribed
# 2:1. The same cluster can be written as a TOML file of `[[racks]]` tables and passed to
# `smdlab simulate --cluster-file FILE`.

# %%
cluster = Cluster.groups(
    [
        {"name": "k80-rack", "machines": 2, "gpu_type": "k80", "gpu": 4},
        {"name": "p100-rack", "machines": 2, "gpu_type": "p100", "gpu": 4},
        {"name": "v100-rack", "machines": 2, "gpu_type": "v100", "gpu": 4, "oversubscription": 2},
    ]
)
print(cluster)
for rack in cluster.topology:
    print(f"{rack.name}: uplink {rack.uplink_gbps:g} Gbps, usable {rack.effective_uplink_gbps:g}")

# %% [markdown]
# How much faster each network runs on each type: Gavel's measured throughput ratios for the
# network's Gavel job type, relative to a V100 (VGG-16 has no Gavel job type and takes the median
# ratio over Gavel's job types, an explicit estimate).

# %%
networks = ["resnet50", "lstm_lm", "bert_base", "densenet121", "vgg16"]
ratios = pd.DataFrame(
    {t: [speed_ratio(n, t) for n in networks] for t in ("k80", "p100", "v100")}, index=networks
)
table(ratios.rename_axis("network"), decimals=dict.fromkeys(ratios.columns, 2))

# %% [markdown]
# ## The workload on the racks
#
# 24 single-GPU jobs over those five networks, one arrival every 5 minutes, each 0.5-3 h on a
# V100 (`smdlab.experiments.heterogeneity.hetero_jobs`, the workload of the `heterogeneity_gain`
# figure). FIFO places each job where it first fits, whatever the type. Below: the cluster one
# hour in. Hover a square for its machine, GPU and job; a grey diamond marks a machine that holds
# parameter servers.

# %%
jobs = hetero_jobs(24, seed=0)
(snap,) = placements_at(jobs, cluster, "fifo", [3600.0])
show(rack_figure(snap, title="FIFO, t = 1 h: each job's workers on the GPUs they hold"))

# %% [markdown]
# ## Heterogeneity-aware against agnostic allocation
#
# Gavel's max-sum-throughput policy solves an LP over time fractions of each GPU type and runs it
# in 6-minute rounds. Aware, it sees each job's throughput on each type; agnostic
# (`aware=False`), it sees one throughput per job. The drawings show both allocations at the same
# moment; the same job has the same colour in both.

# %%
policies = {
    "aware": get_policy("gavel_max_sum", aware=True),
    "agnostic": get_policy("gavel_max_sum", aware=False),
}
for label, policy in policies.items():
    (snap,) = placements_at(jobs, cluster, policy, [3600.0])
    show(rack_figure(snap, title=f"Gavel max-sum, {label}, t = 1 h"))

# %% [markdown]
# What did it cost, and where did each network run? First the mean JCT, makespan and time-weighted
# busy fraction of each type's GPUs. Then, since a run's per-job history records no machines, the
# placements sampled every 10 minutes over each run: per network, the share of samples on each
# GPU type (percent).

# %%
results = {label: simulate(jobs, cluster, policy) for label, policy in policies.items()}
summary = pd.DataFrame(
    {
        label: {
            "mean JCT (h)": r.summary["mean_jct"] / 3600,
            "makespan (h)": r.summary["makespan"] / 3600,
            **{f"{t} busy": r.summary["utilization"][f"gpu_{t}"] for t in ("k80", "p100", "v100")},
        }
        for label, r in results.items()
    }
)
print(
    "agnostic / aware mean JCT: "
    f"{summary.loc['mean JCT (h)', 'agnostic'] / summary.loc['mean JCT (h)', 'aware']:.3f}"
)
table(
    summary.T.rename_axis("allocation"),
    decimals={"mean JCT (h)": 2, "makespan (h)": 2},
    percent_cols=[f"{t} busy" for t in ("k80", "p100", "v100")],
)

# %%
types = [m.gpu_type for m in cluster.machines]
samples = []
for label, policy in policies.items():
    end = results[label].summary["makespan"]
    times = [600.0 * k for k in range(int(end // 600) + 1)]
    for snap in placements_at(jobs, cluster, policy, times):
        for name, tasks in snap.tasks.items():
            samples.append(
                {"allocation": label, "network": snap.networks[name], "type": types[tasks[0][0]]}
            )
where = pd.DataFrame(samples).pivot_table(
    index=["allocation", "network"], columns="type", aggfunc="size", fill_value=0
)
shares = where.div(where.sum(axis=1), axis=0)
table(
    shares.rename(columns=lambda t: f"on {t}"),
    formats=dict.fromkeys([f"on {t}" for t in shares.columns], lambda v: percent(v, 0)),
)

# %% [markdown]
# Read the last table beside the speed ratios at the top. Max-sum maximises the total samples per
# second, so the V100s go to the jobs that gain the most samples per second on them: an absolute
# gain, which favours the high-throughput CNNs (ResNet-50 also loses most on a K80), not simply
# the largest ratio. The K80s go to the jobs that lose the fewest samples per second there. The
# agnostic allocation sees one throughput per job, so where a network lands follows arrival order.

# %% [markdown]
# ## Does the layered model know about consolidation and GPU types?
#
# Gavel measured each job type on 2, 4 and 8 GPUs on one server and spread over servers. The
# layered all-reduce model predicts the ratio spread / consolidated from the job type's own 1-GPU
# rate and assumed links (PCIe inside a server, a 10 Gbps NIC between servers), and the ratio
# between GPU types from datasheets. Nothing is fitted; `docs/model.md` has the full error table
# and the assumptions.

# %%
from IPython.display import Markdown, display

from smdlab.viz.takeaways import consolidation_errors

validation = run_experiment("consolidation_validation", "tiny")
show(make_figure("consolidation_validation", validation))
errors = error_table(validation).rename(
    columns={
        "mape_pct": "MAPE (%)",
        "measured_median": "measured (median)",
        "predicted_median": "predicted (median)",
    }
)
display(Markdown(consolidation_errors(validation)))
table(
    errors,
    decimals={"MAPE (%)": 1, "measured (median)": 2, "predicted (median)": 2},
    summary=f"MAPE per family and case over {int(errors['points'].sum())} points "
    "(ratios: spread / consolidated, and each type / V100)",
)
