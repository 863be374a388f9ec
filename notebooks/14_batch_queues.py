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
# # 14. Batch queues: wall-time limits, backfilling and chains of jobs
#
# On a Slurm-style cluster every job asks for a wall time and is killed when it reaches it. The
# queue runs jobs in order, and EASY backfilling lets a later job jump ahead when, by the
# requested times, it cannot delay the first job's reservation. A service or a long training run
# outlives the limit, so it runs as a chain of jobs; the gap between one link's end and the next
# one's start is an interruption. This notebook works EASY through a small example, then follows
# one chain on a window of the Philly trace under three provisioners: reactive (submit the next
# link when the current one ends), a fixed lead of one hour, and a learned wait predictor
# (gradient boosting, trained on the window's first half). Specification: `docs/batch.md`.
#
# Terms and abbreviations: [docs/glossary.md](../docs/glossary.md).

# %%
import pandas as pd

from smdlab.experiments.batch import (
    BATCH_LIMIT_S,
    batch_setting,
    chain_metrics,
    provisioners,
    run_chains,
)
from smdlab.experiments.config import get_config
from smdlab.sim.batch import simulate_batch
from smdlab.viz.batch import chain_timeline_figure
from smdlab.viz.notebook import show, table
from smdlab.workloads.batch import easy_example

# %% [markdown]
# ## EASY backfilling by hand
#
# Ten GPUs. Job A holds six from t = 0 and asked for 10 s. At t = 1 four jobs arrive in this
# order: J1 (8 GPUs, asks 20 s), J2 (3, 15 s), J3 (2, 15 s), J4 (2, 8 s). J1 cannot start: by
# A's request, 8 GPUs are free at t = 10 (the shadow time), with 2 to spare (the extra GPUs).
# J2 would end after 10 and needs more than 2: it waits. J3 ends after 10 but fits in the 2 extra
# GPUs: it starts. J4 ends at 9, before the shadow time: it starts too. FIFO starts neither.

# %%
example = easy_example()
starts = pd.DataFrame(
    {
        q: simulate_batch(example, 10, 100, q).jobs.set_index("name")["start"]
        for q in ("fifo", "easy")
    }
)
table(starts, summary="Start times (s) under FIFO and EASY backfilling")

# %% [markdown]
# ## One chain under three provisioners
#
# A window of 600 Philly jobs on 32 GPUs at 80% offered load, a 12 h wall-time limit, and four
# chains of 48 h each arriving in the window's second half. The learned provisioner's predictor
# saw only the first half (a run without chains).

# %%
cfg = get_config("tiny")
setting = batch_setting(cfg, cfg.batch_loads[0])
names = ("reactive", "lead_1h", "learned_gbr")
results = {p.name: run_chains(setting, p) for p in provisioners(setting, names)}
summary = pd.DataFrame({name: chain_metrics(r.chains) for name, r in results.items()}).T
table(summary.round(2), summary=f"Per-chain means, wall-time limit {BATCH_LIMIT_S / 3600:g} h")

# %% [markdown]
# The chain the reactive provisioner lets wait longest, link by link: a light bar is a link
# waiting in the queue, a dark bar a link running. A light bar that starts before the previous
# dark bar ends is a link submitted ahead of time; where dark bars overlap, both links hold GPUs.

# %%
reactive = results["reactive"].chains.set_index("chain")
chain = str(reactive["interruption_s"].idxmax())
show(chain_timeline_figure(results, chain))
table(
    pd.DataFrame({name: r.chains.set_index("chain").loc[chain] for name, r in results.items()}).T[
        ["links", "interruptions", "interruption_s", "overlap_gpu_h", "completion_s"]
    ],
    summary=f"Chain {chain!r} under each provisioner",
)
