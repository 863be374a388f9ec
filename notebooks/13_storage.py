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
# # 13. Storage: datasets, a shared cache and remote IO
#
# In a cloud a training job reads its data from a cache inside the compute cluster or from remote
# storage over a bandwidth someone pays for. A job samples its dataset uniformly without
# replacement in every epoch, so a cache holding c of the dataset's d GB serves exactly c/d of
# the reads, and remote bandwidth b GB/s feeds at most 1000 b / (s (1 - c/d)) samples/s for a
# mean sample size of s MB. The job runs at the minimum of that IO bound and its compute-bound
# speed. Specification, derivations and the policies CBA, AutoCBA and SiloD: `docs/storage.md`.
#
# Terms and abbreviations: [docs/glossary.md](../docs/glossary.md).

# %%
import numpy as np
import pandas as pd

from smdlab.model.cluster import Cluster
from smdlab.model.placement_speed import table_speed
from smdlab.model.storage import bundled_datasets, io_speed
from smdlab.policies.registry import get_policy
from smdlab.sim.simulator import simulate
from smdlab.viz.notebook import show, table
from smdlab.viz.storage import io_bound_figure
from smdlab.workloads.storage import storage_for
from smdlab.workloads.synthetic import synthetic

# %% [markdown]
# ## The bundled datasets
#
# Size and sample count of each training split as published (sources in
# `data/storage/README.md`); the mean sample size is their ratio.

# %%
ds = bundled_datasets()
table(
    pd.DataFrame(
        [(d.name, d.task, d.size_gb, d.samples, d.sample_mb * 1000) for d in ds.values()],
        columns=["dataset", "task", "size (GB)", "samples", "mean sample (KB)"],
    ),
    decimals={"size (GB)": 2, "samples": 0, "mean sample (KB)": 1},
)

# %% [markdown]
# ## One job: speed against cache share and remote bandwidth
#
# A ResNet-50 job on 8 GPUs reading ImageNet. Dotted: its IO bound at each remote bandwidth;
# dashed: its compute bound (the layered model, data stage included); solid: its speed, the
# smaller of the two. Where a solid line leaves its dotted one, the job stops being IO-bound.

# %%
cluster = Cluster.homogeneous(2)
jobs = synthetic(20, cluster, seed=0)
job = next(j for j in jobs if j.profile.network == "resnet50")
w, p = job.gang_allocation
compute = table_speed(job, w, p)
imagenet = ds["imagenet1k"]
shares = np.linspace(0.0, 1.0, 101)
bandwidths = np.array([0.05, 0.2, 0.5, 1.0])
speeds = np.array(
    [[io_speed(imagenet, s * imagenet.size_gb, b) for s in shares] for b in bandwidths]
)
print(f"{job.profile.network} at {w} workers, {p} PSs: compute bound {compute:,.0f} samples/s")
show(io_bound_figure(shares, bandwidths, speeds, compute))

# %% [markdown]
# The cache share at which each bandwidth stops binding: c/d = 1 - 1000 b / (s v_compute).

# %%
need = compute * imagenet.sample_mb / 1000  # GB/s to feed it from remote alone
table(
    pd.DataFrame(
        {
            "remote GB/s": bandwidths,
            "cache share where IO stops binding": np.clip(1 - bandwidths / need, 0, 1),
        }
    ),
    decimals={"remote GB/s": 2, "cache share where IO stops binding": 3},
)

# %% [markdown]
# ## A small workload: IO cost and JCT under each cache rule
#
# 20 synthetic jobs on 2 machines reading datasets drawn by task; 100 GB of cache before a 0.5 GB/s
# remote pool, at 0.01 per GB-hour of cache and 2 per GB/s-hour of remote bandwidth (illustrative
# prices). FIFO with each baseline cache rule, then CBA and SiloD on FIFO; last, SMD (elastic,
# storage-oblivious, under the run's LRU rule) and `smd_storage`, SMD with the cache and
# remote-bandwidth rows of (P) (docs/storage.md, "SMD with storage").

# %%
rows = []
for label, policy in [
    ("FIFO, no cache", "cache_baseline:none"),
    ("FIFO, LRU", "cache_baseline:lru"),
    ("FIFO, by GPUs", "cache_baseline:proportional"),
    ("SiloD", "silod"),
    ("CBA", "cba"),
    ("SMD", "smd"),
    ("SMD with storage rows", "smd_storage"),
]:
    name, _, rule = policy.partition(":")
    pol = get_policy(name, **({"cache": rule} if rule else {}))
    st = storage_for(jobs, cache_gb=100.0, remote_gbps=0.5, cache_price=0.01, remote_price=2.0)
    s = simulate(jobs, cluster, pol, storage=st).summary
    rows.append((label, s["io_cost"], s["mean_jct"] / 3600, s["io_bound_share"]))
table(
    pd.DataFrame(rows, columns=["policy", "IO cost", "mean JCT (h)", "share of run time IO-bound"]),
    decimals={"IO cost": 2, "mean JCT (h)": 2, "share of run time IO-bound": 3},
)
