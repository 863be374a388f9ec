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
# # 12. Shared networks: two jobs on one link, and who should be served first
#
# Jobs whose traffic crosses the same rack uplink slow each other down. smdlab's flow-level
# fabric times the shared links by contention: each running job gets a fraction x of the rate it
# needs, set by strict priority levels and max-min fair sharing inside a level, and a
# communication policy (fair, SCF, LCoF, Crux, inspired by JCS) sets the levels. This notebook
# puts two jobs on one link, walks through Crux's Theorem 1 with their numbers, and ends with the
# communication policies on a whole workload. Specification: `docs/network.md`.
#
# Terms and abbreviations: [docs/glossary.md](../docs/glossary.md).

# %%
import numpy as np
import pandas as pd
import plotly.graph_objects as go

from smdlab.experiments import make_figure, run_experiment
from smdlab.experiments.contention import against_fair
from smdlab.model.cluster import Cluster, FabricSpec
from smdlab.model.fabric import FabricState, Links, compute_seconds, job_volumes, water_fill
from smdlab.model.job import make_job
from smdlab.model.placement_speed import placement_speed
from smdlab.policies.network import get_communication_policy
from smdlab.sim import simulate
from smdlab.viz.notebook import show, table

# %% [markdown]
# ## Two jobs, one link
#
# Four racks of one 8-GPU, 96-core machine, with ample 100 Gbps rack uplinks and a core of 12 Gbps. Job A
# (VGG-16) and job B (ResNet-50) are 16-worker ring all-reduce gangs, so each spans two racks and
# crosses the core: the core is the one link they share.

# %%
cluster = Cluster.groups(
    [{"name": f"r{i}", "machines": 1, "cpu": 96, "uplink_gbps": 100} for i in range(4)],
    fabric={"communication": "fair", "core_gbps": 12},
)
links = Links.of(cluster)
jobs = {
    "A": make_job("A", "vgg16", 3e5, arch="allreduce", max_workers=16, requested_workers=16),
    "B": make_job("B", "resnet50", 3e5, arch="allreduce", max_workers=16, requested_workers=16),
}
tasks = {"A": ((0, 8, 0), (1, 8, 0)), "B": ((2, 8, 0), (3, 8, 0))}
capacity = float(links.capacity[links.core])
rows = []
for name, job in jobs.items():
    speed = placement_speed(job, 16, 0, tasks=tasks[name])
    tau0 = job.samples_per_iteration(16) / speed
    c = compute_seconds(job, 16)
    volume = job_volumes(job, tasks[name], links)[links.core]
    rows.append(
        {
            "job": name,
            "GPUs": 16,
            "compute c (s)": c,
            "tau0 (s)": tau0,
            "M on the link (GB)": volume / 1e9,
            "demand d = M/tau0 (Gbps)": volume / tau0 * 8 / 1e9,
            "W = GPUs x c (GPU-s)": 16 * c,
            "t = M / B (s)": volume / capacity,
        }
    )
two = pd.DataFrame(rows).set_index("job")
two["intensity W/t"] = two["W = GPUs x c (GPU-s)"] / two["t = M / B (s)"]
table(two, decimals=dict.fromkeys(two.columns, 3))

# %% [markdown]
# Together they need more than the link's 12 Gbps, so the link binds. Each job's GPUs compute
# `x c / tau0` of the time; the GPU-seconds computed per second are `sum_j GPUs_j x_j c_j /
# tau0_j`, and the link allows `sum_j x_j M_j / tau0_j <= B`. That is a fractional knapsack: the
# best use of a byte goes to the job with the most compute per byte, `W / M`, which on one link
# orders the jobs as GPU intensity `W / t` does (Theorem 1 of Crux). Below: x and the GPU
# compute rate under fair sharing and under each strict order.

# %%
demand = np.array([[two.loc[j, "demand d = M/tau0 (Gbps)"] * 1e9 / 8] for j in ("A", "B")])
gpu_rate = (two["GPUs"] * two["compute c (s)"] / two["tau0 (s)"]).to_numpy()
orders = {"fair": None, "A first": np.array([0, 1]), "B first": np.array([1, 0])}
walk = []
for label, levels in orders.items():
    x = water_fill(demand, np.array([capacity]), levels)
    walk.append(
        {
            "service": label,
            "x_A": x[0],
            "x_B": x[1],
            "link use (Gbps)": float(x @ demand[:, 0]) * 8 / 1e9,
            "GPUs computing (of 32)": float(x @ gpu_rate),
        }
    )
walk_df = pd.DataFrame(walk).set_index("service")
table(walk_df, decimals=dict.fromkeys(walk_df.columns, 3))

# %%
picture = go.Figure()
for job, color in (("A", "#1f77b4"), ("B", "#d62728")):
    i = "AB".index(job)
    picture.add_bar(
        x=walk_df.index,
        y=walk_df[f"x_{job}"] * gpu_rate[i],
        name=f"job {job}",
        marker_color=color,
    )
picture.update_layout(
    barmode="stack",
    title="Two jobs, one 12 Gbps link: GPUs computing under each service order",
    yaxis_title="GPUs computing (of 32)",
    template="plotly_white",
    height=380,
)
show(picture)

# %%
best = walk_df["GPUs computing (of 32)"].idxmax()
by_intensity = two["intensity W/t"].idxmax()
print(f"most GPUs computing: {best}; the more intense job: {by_intensity}")
state = FabricState(
    tuple(jobs.values()),
    np.array([[two.loc[j, "M on the link (GB)"] * 1e9] for j in ("A", "B")]),
    np.array([capacity]),
    two["tau0 (s)"].to_numpy(),
    two["compute c (s)"].to_numpy(),
    two["GPUs"].to_numpy(dtype=float),
    np.array([100.0, 100.0]),
)
crux_scores = get_communication_policy("crux").scores(state)
first = "AB"[int(np.argmin(crux_scores))]
print(f"crux serves first: {first} (scores {', '.join(f'{s:.4g}' for s in crux_scores)})")

# %% [markdown]
# ## The same two jobs in the simulator
#
# The two gangs start together (FIFO places A on racks r0-r1 and B on r2-r3); once one
# finishes, the other has the core alone. Finish times and mean JCT under each communication
# policy (the GPU allocation, FIFO, is the same in every run).

# %%
runs = []
for comm in ("fair", "scf", "lcof", "crux", "jcs"):
    c = cluster.with_fabric(FabricSpec(comm, core_gbps=12))
    r = simulate([j.replace(gang=True) for j in jobs.values()], c, "fifo")
    finish = r.jobs.set_index("job")["finish"]
    runs.append(
        {
            "communication": comm,
            "A done (s)": finish["A"],
            "B done (s)": finish["B"],
            "mean JCT (s)": r.summary["mean_jct"],
        }
    )
runs_df = pd.DataFrame(runs).set_index("communication")
table(runs_df, decimals=dict.fromkeys(runs_df.columns, 0))

# %% [markdown]
# ## A whole workload: `jct_vs_contention`
#
# The figure of `smdlab reproduce` on its smallest configuration: synthetic gang jobs under FIFO
# on 4 racks of 2 machines, the rack uplinks shrinking from 1:1 to 8:1 oversubscription, each
# communication policy against `fair`.

# %%
df = run_experiment("jct_vs_contention", "tiny")
show(make_figure("jct_vs_contention", df))
vs = against_fair(df)
table(
    vs, decimals={"mean_jct_h": 3, "gpu_util": 3, "jct_vs_fair_pct": 1, "gpu_util_vs_fair_pct": 1}
)

# %% [markdown]
# Crux reports GPU utilisation up 13-23% on a two-layer Clos and JCS a mean JCT 19-46% below its
# baselines; the table above is what smdlab's fluid fabric measures on its own workload, not a
# reproduction of either (EXPERIMENTS.md, `jct_vs_contention`).
