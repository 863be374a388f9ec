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
# smdlab's default synthetic scenario (`data/scenarios/default.toml`), then on the first jobs of the
# Microsoft Philly trace (`data/scenarios/philly.toml`), and compares job completion times (JCT),
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
# ## The Philly workload
#
# Arrival times and GPU counts of the first jobs of the Philly trace (2017), their networks drawn
# from the bundled profiles, on the scenario's cluster. Long trace jobs make JCTs much longer than in
# the synthetic scenario. Only the first 250 jobs are used here (the scenario file has 2,000).

# %%
philly = load_scenario(data_dir() / "scenarios" / "philly.toml").with_changes(
    workload={"jobs": 250}
)
print(philly.description, "- here the first", philly.workload["jobs"], "jobs")
philly_results = run_scenario(philly, POLICIES)
summary_table(philly_results).round(2)

# %%
policy_summary_figure(philly_results, title="Philly (first 250 jobs): JCT per policy").show()
jct_cdf_figure(philly_results, title="Philly (first 250 jobs): JCT distribution").show()

# %% [markdown]
# The JCT-versus-parameter curves of every policy (number of jobs, cluster size, bandwidth,
# communication/computation ratio) are in `05_paper_figures.ipynb` and in `figures/`
# (`smdlab reproduce`, see `EXPERIMENTS.md`).
