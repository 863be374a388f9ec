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
# # 4. Every policy, side by side
#
# This notebook runs every registered scheduling policy on the same jobs and cluster, first on
# smdlab's default synthetic scenario (`data/scenarios/default.toml`), then the trace schedulers on
# the default window of the Microsoft Philly trace (`data/scenarios/philly.toml`), and compares job completion times (JCT),
# utilisation and the schedule itself. Policies are described in `docs/` and in each policy's module
# docstring; SMD's results come from **the reconstructed SMD model** (see `docs/model.md`).
#
# Sizes are kept small so that the notebook runs top to bottom in well under two minutes; the
# command line runs the full scenarios: `smdlab simulate --policy all` (see `smdlab simulate --help`).

# %%
import pandas as pd

from smdlab.paths import data_dir
from smdlab.policies.registry import list_policies
from smdlab.sim.runner import run_scenario
from smdlab.viz.sim import (
    jct_cdf_figure,
    job_gantt_figure,
    policy_summary_figure,
    utilisation_figure,
)
from smdlab.viz.style import policy_label
from smdlab.workloads import load_scenario

POLICIES = list_policies()
POLICIES

# %% [markdown]
# ## The default scenario
#
# Synthetic jobs on every bundled network, Poisson arrivals at the scenario's offered load, on the
# scenario's cluster. Every policy sees exactly the same job list.

# %%
default = load_scenario()
print(default.description)
results = run_scenario(default, POLICIES)


def summary_table(results):
    rows = [r.summary_row() for r in results.values()]
    table = pd.DataFrame(rows).set_index("policy")
    table.index = [policy_label(p) for p in table.index]
    hours = ["mean_jct", "median_jct", "p95_jct", "makespan", "mean_queueing_delay"]
    table[hours] = table[hours] / 3600
    table = table[["jobs_completed", *hours, "util_gpu"]].sort_values("mean_jct")
    return table.rename(columns={c: c + " (h)" for c in hours})


summary_table(results).round(2)

# %%
policy_summary_figure(results, title="Default scenario: JCT per policy").show()
jct_cdf_figure(results, title="Default scenario: JCT distribution").show()

# %% [markdown]
# How busy the cluster was under SMD, and when each job ran (one bar per job, coloured by its
# allocation):

# %%
utilisation_figure(
    results["smd"], title="Default scenario: utilisation under " + policy_label("smd")
).show()
job_gantt_figure(
    results["smd"], max_jobs=60, title="Default scenario: schedule under " + policy_label("smd")
).show()

# %% [markdown]
# ## How a policy is run: execution modes
#
# Every policy runs in the *execution mode* its paper uses (`docs/simulator.md`, "Execution
# modes"): **non-elastic** (an allocation is fixed for life), **preemptive** (a running job can be
# stopped and resumed later) or **elastic** (every running job's workers and PSs are re-decided at
# arrivals, completions and every slot). A re-allocation or a resume costs a 30 s
# checkpoint-restart. Each policy declares its natural mode; `simulate(..., execution=...)`
# forces one mode on every policy instead.

# %%
from smdlab.policies.base import natural_execution, supported_executions
from smdlab.policies.registry import policy_class

pd.DataFrame(
    [
        {
            "policy": name,
            "natural mode": natural_execution(policy_class(name)),
            "slot (s)": getattr(policy_class(name), "slot_s", None),
            "can run in": ", ".join(supported_executions(policy_class(name))),
        }
        for name in POLICIES
    ]
).set_index("policy")

# %% [markdown]
# How a policy is run matters as much as what it optimises. Below, the base batch of the JCT
# figures (24 jobs arriving together on 4 servers of 8 GPUs, `EXPERIMENTS.md`) is run twice by the
# same policies: forced non-elastic, then in their natural modes. Under non-elastic execution a
# job keeps the allocation it started with, so a policy that starts jobs small (one worker and one
# PS) leaves them small for life and the GPUs idle; elastic execution grows them as the batch
# drains. `mean workers` is the time-weighted number of workers per running job.

# %%
from smdlab.experiments.config import get_config
from smdlab.experiments.jct import scenario
from smdlab.sim import simulate

batch, batch_cluster = scenario(get_config("quick"), "jobs", 24, seed=0)
runs = {}
for policy in ["smd", "drf", "optimus", "srtf"]:
    for execution in ["non_elastic", "natural"]:
        runs[policy, execution] = simulate(batch, batch_cluster, policy, execution=execution)


def mean_workers(result):
    busy = result.history["end"] - result.history["start"]
    return float((result.history["workers"] * busy).sum() / busy.sum())


modes = pd.DataFrame(
    [
        {
            "policy": policy_label(policy),
            "asked": execution,
            "ran as": r.summary["execution"],
            "mean JCT (h)": r.summary["mean_jct"] / 3600,
            "makespan (h)": r.summary["makespan"] / 3600,
            "GPU utilisation": r.summary["utilization"]["gpu"],
            "mean workers": mean_workers(r),
            "restarts": r.summary["restarts"],
        }
        for (policy, execution), r in runs.items()
    ]
)
modes.round(2)

# %% [markdown]
# The schedule of SMD in both modes, one bar per job coloured by its number of workers: forced
# non-elastic, each job keeps its first allocation to the end; elastic, jobs grow as others finish.

# %%
for execution in ["non_elastic", "natural"]:
    r = runs["smd", execution]
    job_gantt_figure(
        r,
        title=f"Base batch under {policy_label('smd')}, {r.summary['execution']} execution",
    ).show()

# %% [markdown]
# ## The Philly workload
#
# The default Philly window (`data/scenarios/philly.toml`; `docs/simulator.md`, "Philly windows"):
# 2,000 trace jobs from job 60,000 in time order (November 2017), each a GPU-only gang of its
# recorded GPU count that runs exactly its recorded duration, arrivals compressed to an offered
# load of 10 on 64 machines, so that jobs queue and mean JCTs are hours. Here the two
# non-preemptive trace schedulers, strict FIFO and SJF, run it as Tiresias' simulator does (gang,
# no PS); preemptive SRTF and Tiresias take longer to simulate:
# `smdlab simulate --scenario data/scenarios/philly.toml --policy fifo,sjf,srtf,tiresias`.

# %%
philly = load_scenario(data_dir() / "scenarios" / "philly.toml")
print(philly.description)
TRACE_POLICIES = ["fifo", "sjf"]
philly_results = run_scenario(philly, TRACE_POLICIES)
summary_table(philly_results).round(2)

# %%
policy_summary_figure(philly_results, title="Philly default window: JCT per policy").show()
jct_cdf_figure(philly_results, title="Philly default window: JCT distribution").show()

# %% [markdown]
# The JCT-versus-parameter curves of every policy (number of jobs, cluster size, bandwidth,
# communication/computation ratio) are in `05_paper_figures.ipynb` and in `figures/`
# (`smdlab reproduce`, see `EXPERIMENTS.md`).
