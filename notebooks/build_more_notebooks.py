"""The cells of notebooks/04_policies.ipynb and notebooks/05_paper_figures.ipynb, as (kind, source) pairs.

``python notebooks/build_notebooks.py`` writes them (with 01-03); the .ipynb files are generated,
so diffs of this script are the diffs that matter.
"""

from __future__ import annotations


def md(text: str) -> tuple[str, str]:
    """A markdown cell."""
    return ("markdown", text)


def code(text: str) -> tuple[str, str]:
    """A code cell."""
    return ("code", text)


POLICIES = [
    md("""
# 4. Every policy, side by side

This notebook runs every registered scheduling policy on the same jobs and cluster, first on
smdlab's default synthetic scenario (`data/scenarios/default.toml`), then on the first jobs of the
Microsoft Philly trace (`data/scenarios/philly.toml`), and compares job completion times (JCT),
utilisation and the schedule itself. Policies are described in `docs/` and in each policy's module
docstring; SMD's results come from **the reconstructed SMD model** (see `docs/model.md`).

Sizes are kept small so that the notebook runs top to bottom in well under two minutes; the
command line runs the full scenarios: `smdlab simulate --policy all` (see `smdlab simulate --help`).
"""),
    code("""
import pandas as pd

from smdlab.paths import data_dir
from smdlab.policies.registry import list_policies
from smdlab.sim.runner import run_scenario
from smdlab.viz.sim import job_gantt_figure, jct_cdf_figure, policy_summary_figure, utilisation_figure
from smdlab.viz.style import policy_label
from smdlab.workloads import load_scenario

POLICIES = list_policies()
POLICIES
"""),
    md("""
## The default scenario

Synthetic jobs on every bundled network, Poisson arrivals at the scenario's offered load, on the
scenario's cluster. Every policy sees exactly the same job list.
"""),
    code("""
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
"""),
    code("""
policy_summary_figure(results, title="Default scenario: JCT per policy").show()
jct_cdf_figure(results, title="Default scenario: JCT distribution").show()
"""),
    md("""
How busy the cluster was under SMD, and when each job ran (one bar per job, coloured by its
allocation):
"""),
    code("""
utilisation_figure(results["smd"], title="Default scenario: utilisation under " + policy_label("smd")).show()
job_gantt_figure(results["smd"], max_jobs=60, title="Default scenario: schedule under " + policy_label("smd")).show()
"""),
    md("""
## The Philly workload

Arrival times and GPU counts of the first jobs of the Philly trace (2017), their networks drawn
from the bundled profiles, on the scenario's cluster. Long trace jobs make JCTs much longer than in
the synthetic scenario. Only the first 250 jobs are used here (the scenario file has 2,000).
"""),
    code("""
philly = load_scenario(data_dir() / "scenarios" / "philly.toml").with_changes(workload={"jobs": 250})
print(philly.description, "- here the first", philly.workload["jobs"], "jobs")
philly_results = run_scenario(philly, POLICIES)
summary_table(philly_results).round(2)
"""),
    code("""
policy_summary_figure(philly_results, title="Philly (first 250 jobs): JCT per policy").show()
jct_cdf_figure(philly_results, title="Philly (first 250 jobs): JCT distribution").show()
"""),
    md("""
The JCT-versus-parameter curves of every policy (number of jobs, cluster size, bandwidth,
communication/computation ratio) are in `05_paper_figures.ipynb` and in `figures/`
(`smdlab reproduce`, see `EXPERIMENTS.md`).
"""),
]


PAPER = [
    md("""
# 5. The paper-style figures

Every figure of the reproduction (`figures/`, listed in `EXPERIMENTS.md`) is made by one function
of `smdlab.experiments` that returns a tidy DataFrame (the figure's CSV) and one figure builder of
`smdlab.viz.experiments`. `smdlab reproduce` calls exactly these functions; this notebook calls them
with the `tiny` configuration so that it runs in seconds. Set `CONFIG = "quick"` (a few minutes)
or `"full"` (the committed figures) to get the real sizes.

SMD results come from **the reconstructed SMD model** (`docs/model.md`): the paper's text was not
available, so the model and algorithm follow smdlab's specification of it.
"""),
    code("""
from pathlib import Path

import pandas as pd

from smdlab.experiments import FIGURES, figure, get_config, make_figure

CONFIG = "tiny"  # "quick" or "full" for the sizes of `smdlab reproduce --quick` / `smdlab reproduce`
get_config(CONFIG)
"""),
    code("""
pd.DataFrame([(name, spec.title) for name, spec in FIGURES.items()], columns=["figure", "what it shows"])
"""),
    md("""
## JCT versus the number of jobs

A batch of jobs submitted at time 0 (the offline instances of the paper's numerical experiments),
served by each policy in the simulator: the policy is called at time 0 and at every completion.
Larger batches are the smaller ones plus more jobs (same seed). Error bars: standard error over
seeds.
"""),
    code("""
fig, df = figure("jct_vs_jobs", CONFIG)
fig.show()
df.head()
"""),
    md("""
## JCT versus cluster size

The same batch on clusters of different numbers of servers.
"""),
    code("""
fig, df = figure("jct_vs_cluster", CONFIG)
fig.show()
"""),
    md("""
## JCT versus bandwidth

Every worker and PS reserves the same NIC bandwidth, and each server's NIC is scaled with it, so
the same tasks fit while communication gets faster or slower.
"""),
    code("""
fig, df = figure("jct_vs_bandwidth", CONFIG)
fig.show()
"""),
    md("""
## JCT versus the per-layer communication/computation ratio

Every layer's parameter (and gradient) bytes are scaled by the same factor; the CSV column
`comm_comp_ratio` gives the resulting median ratio of push time to compute time at 1 worker and 1 PS.
"""),
    code("""
fig, df = figure("jct_vs_comm_ratio", CONFIG)
fig.show()
df.groupby("comm_scale")["comm_comp_ratio"].first()
"""),
    md("""
## Optimality gap versus instance size

Offline instances of the allocation problem, solved by SMD (three knapsack methods), LP rounding,
the exact MILP and the LP relaxation. The left panel is the gap to the exact optimum, the right one
the gap to the LP lower bound (available without the MILP). Bars span the smallest to the largest
gap over instances.
"""),
    code("""
fig, df = figure("optimality_gap", CONFIG)
fig.show()
df.pivot_table(index="n_jobs", columns="variant", values="gap_to_milp", aggfunc="max")
"""),
    md("""
## Model validation

The layered timing model, fitted per network to part of the measured parameter-server training
speeds (`data/`, from DL2's measurements), predicting the held-out points; beside it, Optimus'
five-coefficient speed model fitted to the same points.
"""),
    code("""
fig, df = figure("model_validation", CONFIG)
fig.show()
"""),
    md("""
## The committed figures

`figures/` holds the output of `smdlab reproduce` (full configuration) with the CSV of each
figure. Any of them can be redrawn from its CSV with the same builder:
"""),
    code("""
committed = Path("..") / "figures" / "jct_vs_bandwidth.csv"
if committed.exists():
    make_figure("jct_vs_bandwidth", pd.read_csv(committed)).show()
else:
    print("no committed figures next to this notebook; run `smdlab reproduce --quick --out figures`")
"""),
]

NOTEBOOKS = {"04_policies.ipynb": POLICIES, "05_paper_figures.ipynb": PAPER}
