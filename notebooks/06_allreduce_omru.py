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
# # 6. Ring all-reduce, OMRU and SJF-BCO
#
# Most data-parallel jobs today train with **ring all-reduce** (PyTorch DDP, Horovod): the
# workers average their gradients among themselves and no parameter server (PS) exists. This
# notebook puts the all-reduce model beside the PS model on one network, runs OMRU's genetic
# algorithm (Li et al., FGCS 2021) step by step and shows how SJF-BCO (Yu et al., MobiHoc 2022)
# places a ring when other rings already share the network. The model is written down in
# `docs/model.md` ("All-reduce jobs"); the policies' rules and assumptions are in their
# docstrings (`smdlab/policies/allreduce/omru.py`, `sjf_bco.py`).
#
# Terms and abbreviations: [docs/glossary.md](../docs/glossary.md).

# %%
import numpy as np
import pandas as pd

from smdlab import iteration_time, make_job
from smdlab.model.allreduce import allreduce_iteration_time
from smdlab.viz.model import timeline_figure
from smdlab.viz.notebook import show, table

ps_job = make_job("ps", "resnet50", samples=1.28e6, max_workers=16, max_ps=16)
ring_job = make_job("ring", "resnet50", samples=1.28e6, max_workers=16, arch="allreduce")

# %% [markdown]
# ## The same network, with and without parameter servers
#
# Gradients go into 25 MB buckets in backward order (DDP's default); each bucket's ring all-reduce
# takes 2(g-1)/g · S/B + 2(g-1)·α and, in `wfbp` mode, overlaps the rest of the backward pass. B
# is the slowest link of the ring: NVLink inside one machine (8 GPUs here), the NIC share once
# the ring crosses machines. The PS job below gets one PS per worker.

# %%
rows = []
for w in (1, 2, 4, 8, 9, 12, 16):
    rows.append(
        {
            "workers": w,
            "PS job, p = w (ms)": iteration_time(ps_job, w, w) * 1e3,
            "all-reduce job (ms)": iteration_time(ring_job, w, 0) * 1e3,
        }
    )
table(pd.DataFrame(rows), decimals={"PS job, p = w (ms)": 1, "all-reduce job (ms)": 1})

# %% [markdown]
# One iteration of the ring on 8 GPUs: the green bars are the buckets' all-reduces, each
# starting once the backward pass has produced its last gradient (hover for its size).

# %%
show(timeline_figure(ring_job, 8, 0, "wfbp"))

# %% [markdown]
# ## OMRU's genetic algorithm, step by step
#
# OMRU's jobs are the networks of its measured epoch-time table; their epoch times come from the
# all-reduce model fitted to those measurements (`smdlab.fit_epoch_model`), their epoch counts
# from each network's standard recipe (assumed: OMRU does not publish them). A chromosome gives
# each job a batch number; batches run one after another, each job of a batch gets one GPU and
# the spare GPUs go one by one to the job that would finish last.

# %%
from smdlab.policies.allreduce import epoch_table
from smdlab.policies.allreduce.omru import evaluate, ga, plan_from_genes
from smdlab.workloads.omru import omru_jobs

jobs = omru_jobs("omru-action")
G = 8  # two machines of 4 GPUs
epochs = epoch_table(jobs, [j.samples for j in jobs], G, "wfbp")
table(
    pd.DataFrame(
        {
            "epochs": epochs.epochs,
            **{f"epoch at {g} GPUs (h)": epochs.epoch_time[:, g] / 3600 for g in (1, 4, 8)},
        },
        index=pd.Index(list(epochs.names), name="job"),
    ),
    decimals={"epochs": 0, **{f"epoch at {g} GPUs (h)": 2 for g in (1, 4, 8)}},
)

# %% [markdown]
# Three chromosomes by hand: every job in one batch, every job in its own batch, and three jobs
# then two. GPU reuse lets a job of the next batch pre-train on the GPUs that a finished job of
# the current batch leaves idle. The sentences above the table are written from its numbers.

# %%
from IPython.display import Markdown, display

from smdlab.viz.takeaways import reuse_effect

by_hand = {
    "every job in one batch": [0, 0, 0, 0, 0],
    "every job in its own batch": [0, 1, 2, 3, 4],
    "three jobs, then two": [0, 0, 0, 1, 1],
}
genes_by_hand = np.array(list(by_hand.values()))
without, with_reuse = (
    evaluate(genes_by_hand, epochs, reuse=reuse).makespan / 3600 for reuse in (False, True)
)
display(Markdown(reuse_effect(by_hand, without, with_reuse)))
table(
    pd.DataFrame(
        {
            "batch of each job": [str(g) for g in by_hand.values()],
            "makespan without GPU reuse (h)": without,
            "makespan with GPU reuse (h)": with_reuse,
        },
        index=pd.Index(list(by_hand), name="chromosome"),
    ),
    decimals={"makespan without GPU reuse (h)": 1, "makespan with GPU reuse (h)": 1},
)

# %% [markdown]
# The GA: population 50, roulette selection on 1/makespan, one-point crossover, one mutated
# gene per child, the best 50 of parents and children survive; seeded, so this run is the same
# every time. The best makespan never rises (elitism).

# %%
genes, best, history = ga(epochs, population=50, generations=300, seed=0)
print(f"best chromosome (batch of each job): {genes.tolist()}, makespan {best / 3600:.1f} h")
steps = [0, 10, 50, 100, 299]
table(
    pd.DataFrame(
        {"best makespan (h)": history[steps] / 3600}, index=pd.Index(steps, name="generation")
    ),
    decimals={"best makespan (h)": 1},
)

# %% [markdown]
# The best plan as a Gantt chart: coloured bars are each job's run in its batch (with its GPUs),
# grey hatched bars the idle slices of the previous batch that a job reuses to pre-train.

# %%
from smdlab.viz.allreduce import plan_gantt_figure

plan = plan_from_genes(genes, epochs)
show(plan_gantt_figure(plan, epochs))

# %% [markdown]
# The same plan run in the simulator (the reusing jobs restart on their own GPUs at the barrier),
# beside the baselines OMRU compares against:

# %%
from smdlab.policies.registry import get_policy
from smdlab.sim import simulate
from smdlab.workloads.omru import omru_cluster

cluster = omru_cluster(2, 4)
summary = {}
for name in ("seqex", "parallel", "optimus_like", "omru_noreuse", "omru"):
    opts = {"generations": 300} if name.startswith("omru") else {}
    s = simulate(jobs, cluster, get_policy(name, **opts)).summary
    summary[name] = {
        "makespan (h)": s["makespan"] / 3600,
        "GPU utilisation": s["utilization"]["gpu"],
    }
table(
    pd.DataFrame(summary).T.rename_axis("policy"),
    decimals={"makespan (h)": 1},
    percent_cols=["GPU utilisation"],
)

# %% [markdown]
# ## SJF-BCO: spreading a ring against contention
#
# A ring on more machines pays the NIC instead of NVLink (overhead); a ring that shares a
# machine's NIC with other rings gets only its share (contention). SJF-BCO places each job where
# the two balance. Below, four machines have two free GPUs each and other rings already cross
# machines 0 and 2: a 4-GPU ring goes to the quiet machines 1 and 3.

# %%
from smdlab.model.cluster import Cluster
from smdlab.policies.allreduce.sjf_bco import balanced_tasks
from smdlab.solve.placement import capacity_matrix

four = Cluster.homogeneous(4, gpu=4, cpu=64, mem_gb=256, bw_gbps=100)
free = capacity_matrix(four)
free[:, 0] = 2
crossing = np.array([3, 0, 2, 0])
job = make_job("r", "vgg16", 1e6, arch="allreduce", max_workers=8, gpus_per_machine=4)
alpha = np.array([job.worker_demand.get(r, 0.0) for r in four.resources])
tasks, tau = balanced_tasks(job, 4, alpha, free, crossing, "wfbp")
where = ", ".join(f"machine {m}: {w} workers" for m, w, _ in tasks)
print(f"SJF-BCO places the ring on {where}: {tau * 1e3:.0f} ms per iteration")
table(
    pd.DataFrame(
        {
            "sharing rings on the busiest NIC": [1, 2, 3, 4],
            "iteration over 2 machines (ms)": [
                allreduce_iteration_time(job, 4, machines=2, sharing=k) * 1e3 for k in (1, 2, 3, 4)
            ],
        }
    ),
    decimals={"iteration over 2 machines (ms)": 1},
)
