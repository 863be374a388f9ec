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
# # 5. The paper-style figures
#
# Every figure of the reproduction (`figures/`, listed in `EXPERIMENTS.md`) is made by one function
# of `smdlab.experiments` that returns a tidy DataFrame (the figure's CSV) and one figure builder of
# `smdlab.viz.experiments`. `smdlab reproduce` calls exactly these functions; this notebook calls them
# with the `tiny` configuration so that it runs in seconds. Set `CONFIG = "quick"` (a few minutes)
# or `"full"` (the committed figures) to get the real sizes.
#
# SMD results come from **the reconstructed SMD model** (`docs/model.md`): the paper's text was not
# available, so the model and algorithm follow smdlab's specification of it.

# %%
from pathlib import Path

import pandas as pd

from smdlab.experiments import FIGURES, figure, get_config, make_figure

CONFIG = (
    "tiny"  # "quick" or "full" for the sizes of `smdlab reproduce --quick` / `smdlab reproduce`
)
get_config(CONFIG)

# %%
pd.DataFrame(
    [(name, spec.title) for name, spec in FIGURES.items()], columns=["figure", "what it shows"]
)

# %% [markdown]
# ## JCT versus the number of jobs
#
# A batch of jobs submitted at time 0 (the offline instances of the paper's numerical experiments),
# served by each policy in the simulator: the policy is called at time 0 and at every completion.
# Larger batches are the smaller ones plus more jobs (same seed). Error bars: standard error over
# seeds.

# %%
fig, df = figure("jct_vs_jobs", CONFIG)
fig.show()
df.head()

# %% [markdown]
# ## JCT versus cluster size
#
# The same batch on clusters of different numbers of servers.

# %%
fig, df = figure("jct_vs_cluster", CONFIG)
fig.show()

# %% [markdown]
# ## JCT versus bandwidth
#
# Every worker and PS reserves the same NIC bandwidth, and each server's NIC is scaled with it, so
# the same tasks fit while communication gets faster or slower.

# %%
fig, df = figure("jct_vs_bandwidth", CONFIG)
fig.show()

# %% [markdown]
# ## JCT versus the per-layer communication/computation ratio
#
# Every layer's parameter (and gradient) bytes are scaled by the same factor; the CSV column
# `comm_comp_ratio` gives the resulting median ratio of push time to compute time at 1 worker and 1 PS.

# %%
fig, df = figure("jct_vs_comm_ratio", CONFIG)
fig.show()
df.groupby("comm_scale")["comm_comp_ratio"].first()

# %% [markdown]
# ## Beyond GPUs: JCT versus CPU cores per GPU (Synergy)
#
# An online workload whose jobs have input pipelines (`docs/model.md`, "The data stage") on servers
# with fewer or more CPU cores per GPU. GPU-proportional gives every worker the same share of CPU
# and memory; Synergy-TUNE gives each job what it needs where that fits (`docs/multiresource.md`).

# %%
fig, df = figure("jct_vs_cpu_per_gpu", CONFIG)
fig.show()
df.groupby(["cpu_per_gpu", "policy"])["mean_jct_s"].mean().unstack()

# %% [markdown]
# ## Beyond GPUs: Muri's interleaving versus load
#
# The same kind of workload at several offered loads: Muri-S and Muri-L group jobs of the same size
# that interleave their storage, CPU, GPU and network stages on one GPU set.

# %%
fig, df = figure("muri_jct_vs_load", CONFIG)
fig.show()

# %% [markdown]
# ## Optimality gap versus instance size
#
# Offline instances of the allocation problem, solved by SMD (three knapsack methods), LP rounding,
# the exact MILP and the LP relaxation. The left panel is the gap to the exact optimum, the right one
# the gap to the LP lower bound (available without the MILP). Bars span the smallest to the largest
# gap over instances.

# %%
fig, df = figure("optimality_gap", CONFIG)
fig.show()
df.pivot_table(index="n_jobs", columns="variant", values="gap_to_milp", aggfunc="max")

# %% [markdown]
# ## Model validation
#
# The layered timing model, fitted per network to part of the measured parameter-server training
# speeds (`data/`, from DL2's measurements), predicting the held-out points; beside it, Optimus'
# five-coefficient speed model fitted to the same points.

# %%
fig, df = figure("model_validation", CONFIG)
fig.show()

# %% [markdown]
# ## All-reduce epoch models against OMRU's measurements
#
# OMRU's measured V100 epoch times (`data/measurements/epoch_times_v100.csv`): each network's
# all-reduce model fitted on 1, 2, 4 and 8 GPUs predicts 3, 5, 6 and 7; beside it, the layered
# model on our bundled profiles for the networks we have.

# %%
fig, df = figure("allreduce_validation", CONFIG)
fig.show()

# %% [markdown]
# ## Makespan vs machines (OMRU reproduction)
#
# OMRU's image and action workloads on 2, 4 and 8 machines of 4 GPUs under SeqEx, Parallel,
# Optimus-like, OMRU without reuse, OMRU and SJF-BCO. The epoch counts are assumed (each network's
# standard recipe); 16 and 32-GPU points use the fitted model beyond the 8 measured GPUs.

# %%
fig, df = figure("makespan_vs_nodes", CONFIG)
fig.show()

# %% [markdown]
# ## The committed figures
#
# `figures/` holds the output of `smdlab reproduce` (full configuration) with the CSV of each
# figure. Any of them can be redrawn from its CSV with the same builder:

# %%
committed = Path("..") / "figures" / "jct_vs_bandwidth.csv"
if committed.exists():
    make_figure("jct_vs_bandwidth", pd.read_csv(committed)).show()
else:
    print(
        "no committed figures next to this notebook; run `smdlab reproduce --quick --out figures`"
    )
