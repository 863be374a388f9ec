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
# `smdlab.viz.experiments`. `smdlab reproduce` calls exactly these functions.
#
# By default this notebook draws the **committed full-size figures** from their CSVs in
# `figures/` (made by `smdlab reproduce`), with the same builders. Set `SOURCE` to a configuration
# name to recompute them instead: `"tiny"` is a **smoke test** (one seed, two points per curve,
# a few policies; it only checks that the code runs, and its curves mean nothing), `"quick"` takes
# a few minutes, `"full"` is the committed size.
#
# SMD results come from **the reconstructed SMD model** (`docs/model.md`): the paper's text was not
# available, so the model and algorithm follow smdlab's specification of it.
#
# Terms and abbreviations: [docs/glossary.md](../docs/glossary.md).

# %%
from pathlib import Path

import pandas as pd

from smdlab.experiments import FIGURES, figure, make_figure
from smdlab.viz.notebook import percent, show, table

SOURCE = "committed"  # or "tiny" (smoke test), "quick", "full": recompute with that configuration
FIGURES_DIR = Path("..") / "figures"


def draw(name):
    """Show figure ``name`` from its committed CSV (or recomputed with ``SOURCE``); return its data."""
    if SOURCE == "committed":
        df = pd.read_csv(FIGURES_DIR / f"{name}.csv")
        fig = make_figure(name, df)
    else:
        fig, df = figure(name, SOURCE)
    show(fig)  # at the output area's width, with the builder's own axes
    return df


print(
    "drawing the committed figures from figures/*.csv"
    if SOURCE == "committed"
    else f"recomputing with configuration {SOURCE!r}"
)

# %%
listing = pd.DataFrame(
    [(name, spec.title) for name, spec in FIGURES.items()], columns=["figure", "what it shows"]
)
table(listing, summary=f"The {len(listing)} figures of the reproduction, in the order drawn below")

# %% [markdown]
# ## JCT versus the number of jobs
#
# A batch of jobs submitted at time 0 (the offline instances of the paper's numerical experiments),
# served by each policy in the simulator: the policy is called at time 0 and at every completion.
# Larger batches are the smaller ones plus more jobs (same seed). Error bars: standard error over
# seeds.

# %%
df = draw("jct_vs_jobs")
print(
    f"{df['seed'].nunique()} seeds per point; policies: {', '.join(sorted(df['policy'].unique()))}"
)

# %% [markdown]
# ## JCT versus cluster size
#
# The same batch on clusters of different numbers of servers.

# %%
df = draw("jct_vs_cluster")

# %% [markdown]
# ## JCT versus bandwidth
#
# Every worker and PS reserves the same NIC bandwidth, and each server's NIC is scaled with it, so
# the same tasks fit while communication gets faster or slower.

# %%
df = draw("jct_vs_bandwidth")
mean = df.groupby(["bw_gbps", "policy"])["mean_jct_s"].mean().unstack()
versus = pd.DataFrame(
    {
        "best policy": mean.idxmin(axis=1),
        "SMD / best mean JCT": mean["smd"] / mean.min(axis=1),
        "SMD rank (of policies)": mean.rank(axis=1)["smd"].astype(int),
    }
)
table(
    versus.rename_axis("bandwidth per task (Gbps)"),
    formats={"SMD / best mean JCT": lambda r: f"{r:.2f}x"},
)

# %% [markdown]
# **Where SMD wins and where it loses.** The table compares SMD (reconstructed model) with the
# best policy at each bandwidth, and the cell below names the bandwidths where SMD trails the best
# by more than 5%. Where the network is slow, communication dominates, and choosing how many
# workers and PSs each job gets matters most. That is what SMD optimises at each decision point.
# As bandwidth grows the per-decision problem gets easy. What matters then is the order in which
# jobs run over the whole schedule, which SMD does not optimise (it decides one point at a time).
# Policies that order jobs by remaining work can then catch up with it or pass it.

# %%
behind = versus[versus["SMD / best mean JCT"] > 1.05]
print(
    "SMD trails the best policy by more than 5% at: "
    + ", ".join(
        f"{bw} Gbps ({r:.2f}x {b})"
        for bw, r, b in zip(behind.index, behind["SMD / best mean JCT"], behind["best policy"])
    )
    if len(behind)
    else "SMD is within 5% of the best policy at every bandwidth in the committed figure"
)

# %% [markdown]
# ## JCT versus the per-layer communication/computation ratio
#
# Every layer's parameter (and gradient) bytes are scaled by the same factor; the CSV column
# `comm_comp_ratio` gives the resulting median ratio of push time to compute time at 1 worker and 1 PS.

# %%
df = draw("jct_vs_comm_ratio")
table(
    df.groupby("comm_scale")["comm_comp_ratio"]
    .first()
    .to_frame("median push / compute time at (1, 1)")
    .rename_axis("bytes scale")
)

# %% [markdown]
# ## Beyond GPUs: JCT versus CPU cores per GPU (Synergy)
#
# An online workload whose jobs have input pipelines (`docs/model.md`, "The data stage") on servers
# with fewer or more CPU cores per GPU. GPU-proportional gives every worker the same share of CPU
# and memory; Synergy-TUNE gives each job what it needs where that fits (`docs/multiresource.md`).

# %%
df = draw("jct_vs_cpu_per_gpu")
table(
    (df.groupby(["cpu_per_gpu", "policy"])["mean_jct_s"].mean().unstack() / 3600).rename_axis(
        index="CPU cores per GPU", columns="mean JCT (h), per policy"
    ),
    decimals=dict.fromkeys(df["policy"].unique(), 2),
)

# %% [markdown]
# ## Beyond GPUs: Muri's interleaving versus load
#
# The same kind of workload at several offered loads: Muri-S and Muri-L group jobs of the same size
# that interleave their storage, CPU, GPU and network stages on one GPU set.

# %%
df = draw("muri_jct_vs_load")

# %% [markdown]
# ## Beyond GPUs: from the authors' settings to smdlab's, one change at a time
#
# Synergy's and Muri's published gains reproduced in their authors' settings (Synergy's Figure-8
# jobs at 9 jobs/h, Muri's trace3), then one scenario option at a time towards smdlab's world:
# load, PS jobs, prefetching, smdlab's profiles, the restart cost, the cluster size
# (`smdlab.experiments.ablation`; `docs/multiresource.md`, "Where the gains go").

# %%
df = draw("multiresource_ablation")
df.pivot_table(
    index=["system", "step_index", "label"], columns="policy", values="ratio"
).style.format("{:.3f}")

# %% [markdown]
# ## The default Philly window: FIFO, SJF, SRTF and Tiresias
#
# The window of `data/scenarios/philly.toml` (2,000 trace jobs from index 60,000, GPU-only gangs,
# arrivals scaled to an offered GPU load of 10 on 64 machines, no restart cost): mean JCT with
# its p95, the JCT CDF, and the GPU utilisation, each policy in its natural mode.

# %%
df = draw("philly_window")

# %% [markdown]
# ## Optimality gap versus instance size
#
# Offline instances of the allocation problem, solved by SMD (three knapsack methods), LP rounding,
# the exact MILP and the LP relaxation. The left panel is the gap to the exact optimum, the right one
# the gap to the LP lower bound (available without the MILP). Bars span the smallest to the largest
# gap over instances.

# %%
df = draw("optimality_gap")
gaps = df.pivot_table(index="n_jobs", columns="variant", values="gap_to_milp", aggfunc="max")
table(
    gaps.rename_axis(index="jobs", columns="largest gap to the exact optimum, per method"),
    formats=dict.fromkeys(gaps.columns, lambda g: percent(g, 3)),
)

# %% [markdown]
# ## Model validation
#
# The layered timing model, fitted per network to part of the measured parameter-server training
# speeds (`data/`, from DL2's measurements), predicting the held-out points; beside it, Optimus'
# five-coefficient speed model fitted to the same points.

# %%
df = draw("model_validation")

# %% [markdown]
# ## All-reduce epoch models against OMRU's measurements
#
# OMRU's measured V100 epoch times (`data/measurements/epoch_times_v100.csv`): each network's
# all-reduce model fitted on 1, 2, 4 and 8 GPUs predicts 3, 5, 6 and 7; beside it, the layered
# model on our bundled profiles for the networks we have.

# %%
df = draw("allreduce_validation")

# %% [markdown]
# ## Makespan vs machines (OMRU reproduction)
#
# OMRU's image and action workloads on 2, 4 and 8 machines of 4 GPUs under SeqEx, Parallel,
# Optimus-like, OMRU without reuse, OMRU and SJF-BCO. The epoch counts are assumed (each network's
# standard recipe); 16 and 32-GPU points use the fitted model beyond the 8 measured GPUs.

# %%
df = draw("makespan_vs_nodes")

# %% [markdown]
# ## Heterogeneity gain (Gavel-style allocation)
#
# Gavel's max-min fairness and max-sum throughput on a K80/P100/V100 cluster, each aware of GPU
# types and blind to them (the same LP and rounds with one throughput per job). Speeds on each
# type follow Gavel's measured throughput ratios; the bars carry agnostic / aware mean JCT.

# %%
df = draw("heterogeneity_gain")

# %% [markdown]
# ## Consolidation and GPU types: the layered model against Gavel's measurements
#
# For ResNet-50, LM and Transformer, the layered all-reduce model predicts the throughput of a job
# spread over servers relative to the same job on one server (2, 4, 8 GPUs; 10 Gbps NIC against
# PCIe, both assumed), and the speed of K80 and P100 relative to V100 from datasheets. Nothing is
# fitted; `docs/model.md` has the error table and the assumptions.

# %%
df = draw("consolidation_validation")

# %% [markdown]
# ## Learned schedulers against heuristics
#
# The learned policies that ship weights in `data/` (DL2; DeepRM-MM and SCHED² where registered)
# against DRF, Optimus, Tiresias and SMD, on held-out seeds of their training workload and on a
# Philly window with PS demands. The hatched bar is DRF deciding at slot boundaries only, as DL2
# does (docs/rl.md).

# %%
df = draw("learned_vs_heuristics")

# %% [markdown]
# ## Learning curves
#
# From the training logs shipped beside the weights (`data/<agent>/curve.csv`): the mean JCT of
# training episodes and of greedy runs on validation seeds, against training updates.

# %%
df = draw("learning_curves")

# %% [markdown]
# ## DeepRM in its own environment: slowdown against load
#
# DeepRM's paper setting (one machine of 2 resources x 10 slots, a 20-step image, 5 visible jobs,
# a backlog of 60): the average job slowdown of DeepRM (the shipped weights, greedy), SJF,
# Packer, Tetris* and random on held-out jobsets at each offered load (docs/rl.md).

# %%
df = draw("deeprm_slowdown_vs_load")

# %% [markdown]
# ## Rack uplinks: JCT and cross-rack traffic as the uplinks shrink
#
# SMD, Liquid, FIFO and Tiresias on a racked cluster whose rack uplink carries 1/1 to 1/16 of
# the rack's NIC total; every job a gang on its request, so the policies differ in order and
# placement only. Traffic leaving a rack runs at its share of the uplink (`docs/model.md`, Rack
# uplinks); the right panel is the data sent across rack uplinks.

# %%
df = draw("jct_vs_oversubscription")

# %% [markdown]
# ## Shared networks: communication policies as the uplinks shrink
#
# The flow-level fabric (`docs/network.md`): jobs that share a rack uplink slow each other down,
# and a communication policy (fair, SCF, LCoF, Crux, inspired by JCS) sets who is served first.
# FIFO allocates GPUs in every run; mean JCT and the share of held GPU time spent computing
# (notebook 12 walks through two jobs on one link).

# %%
df = draw("jct_vs_contention")

# %% [markdown]
# ## GPU sharing: the co-location model on held-out pairs
#
# Each job's co-located steps per second as the factorised model and the log-additive baseline
# predict it, against Gavel's measurement, for job-type pairs neither model saw (`docs/model.md`,
# "GPU sharing"; notebook 09 explores single pairs).

# %%
df = draw("sharing_validation")

# %% [markdown]
# ## GPU sharing: JCT against the sharing degree
#
# Gandiva, Horus, SJF-BSBF and SJF-FFS when a GPU may hold up to 1-4 jobs, against no sharing and
# Tiresias, on an oversubscribed online workload. A shared GPU counts once in the utilisation.

# %%
df = draw("jct_vs_sharing_degree")

# %% [markdown]
# ## Gavel: heterogeneity-aware against agnostic, by arrival rate
#
# Agnostic over aware window-average JCT of Gavel's max-min fairness on traces drawn by Gavel's own
# generator, computed by smdlab's Gavel mode, beside Gavel's own simulator's ratio (read from the
# shipped reference data, not recomputed) and the paper's "up to 3.5x" (its own setting).

# %%
df = draw("gavel_rate_sweep")

# %% [markdown]
# ## Deadlines: misses and best-effort JCT against offered load
#
# Hard and value-weighted deadline miss rates and best-effort mean JCT of FIFO, EDF, LSF, Chronus,
# UniSched-inspired and SMD with deadlines on windows of Chronus' Philly MIX2 trace, its arrivals
# scaled to each offered load. Notebook 11 shows one lease decision of Chronus.

# %%
df = draw("slo_vs_load")

# %% [markdown]
# ## Storage: IO cost, welfare and mean JCT vs cache size
#
# CBA, AutoCBA and SiloD against FIFO with no cache, an LRU cache and a cache split by GPUs, as
# the cluster cache grows (docs/storage.md; notebook 13 shows the IO bound itself).

# %%
df = draw("io_cost_vs_cache")

# %% [markdown]
# ## Batch queues: chains of jobs against load
#
# Chains of 48 h on a Slurm-like queue (EASY backfilling, 12 h limit, a Philly window as
# background): interruption, share of chains never interrupted and overlap waste of the reactive,
# fixed-lead, oracle and learned provisioners (`docs/batch.md`; notebook 14 follows one chain).

# %%
df = draw("interruption_vs_load")

# %% [markdown]
# ## The committed figures
#
# `figures/` holds the output of `smdlab reproduce` (full configuration) with the CSV of each
# figure. `make_figure(name, pandas.read_csv(...))` redraws any of them with the same builder, as
# this notebook does by default:

# %%
committed = sorted(p.stem for p in FIGURES_DIR.glob("*.csv"))
print("committed figures with CSVs:", ", ".join(committed))
