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
# This notebook runs the registered scheduling policies on the same jobs and cluster. It starts
# with smdlab's synthetic scenario (`data/scenarios/default.toml`, made smaller here) over several
# seeds. Then it runs the trace schedulers on the default window of the Microsoft Philly trace
# (`data/scenarios/philly.toml`). Policies are described in `docs/` and in each policy's module
# docstring; SMD's results come from **SMD (reconstructed model)** (see `docs/model.md`).
#
# Sizes are kept small so that the notebook runs top to bottom in well under two minutes. The
# command line runs the full scenarios: `smdlab simulate --policy all` (see `smdlab simulate --help`).
#
# ## What the metrics mean
#
# Each run reports, over the jobs that **completed** (jobs that never fit are skipped and counted
# apart):
#
# | metric | definition |
# |---|---|
# | JCT of a job | finish time − arrival time (s; tables show hours) |
# | mean JCT | the plain average of the JCTs, **unweighted** (job weights enter only the separate `weighted_jct_total`) |
# | median / p95 JCT | 50th / 95th percentile of the JCTs |
# | queueing delay | JCT − the time the job held resources: waiting before its start plus any time preempted |
# | makespan | last finish − first arrival |
# | utilisation of a resource | fraction of the cluster's pooled capacity in use, averaged over the makespan |
# | JCT lower bound | a lower bound on the mean JCT of **any** schedule of the same jobs (an interval-indexed LP, `docs/bound.md`); computed for up to 64 jobs |
#
# `milp` (not run here, too slow) solves the allocation problem **exactly at each decision point**.
# It is optimal per decision, not over the whole schedule: a later arrival can make an earlier
# optimal decision regrettable. The JCT lower bound is the yardstick for whole schedules.
#
# Terms and abbreviations: [docs/glossary.md](../docs/glossary.md).

# %%
import dataclasses
import sys

import pandas as pd
import plotly.graph_objects as go
from IPython.display import Markdown, display

from smdlab.paths import data_dir
from smdlab.sim.runner import run_scenario
from smdlab.viz.notebook import number, percent, show, table
from smdlab.viz.sim import jct_cdf_figure, job_gantt_figure, utilisation_figure
from smdlab.viz.style import TEMPLATE, base_layout, color, policy_label
from smdlab.workloads import load_scenario

default = load_scenario()
POLICIES = list(default.policies)
print("policies compared:", ", ".join(policy_label(p) for p in POLICIES))

# %% [markdown]
# ## The default scenario, several seeds
#
# Synthetic jobs on every bundled network arrive by a Poisson process at the scenario's offered
# load. Each seed draws a new job list, and every policy sees exactly the same list. The
# notebook shrinks the scenario to 40 jobs on 4 machines (the same load); the CLI runs it
# full-size.

# %%
SEEDS = (1, 2, 3)
small = dataclasses.replace(
    default,
    workload={**default.workload, "jobs": 40},
    cluster={**default.cluster, "machines": 4},
)
print(
    f"{small.workload['jobs']} jobs at offered load {small.workload['load']} on "
    f"{small.cluster['machines']} machines of {small.cluster['gpu']:.0f} GPUs, seeds {SEEDS}"
)
runs = {seed: run_scenario(dataclasses.replace(small, seed=seed), POLICIES) for seed in SEEDS}
rows = [
    {"seed": seed, **r.summary_row()} for seed, results in runs.items() for r in results.values()
]
per_run = pd.DataFrame(rows)

HOURS = {
    "mean_jct": "mean JCT (h)",
    "median_jct": "median JCT (h)",
    "p95_jct": "p95 JCT (h)",
    "mean_queueing_delay": "mean queueing (h)",
    "makespan": "makespan (h)",
}
SHARES = {"util_gpu": "GPU util.", "util_cpu": "CPU util.", "util_bw_gbps": "NIC util."}


def seed_table(per_run):
    """Mean and standard error over seeds of each metric, one row per policy."""
    df = per_run.copy()
    df[list(HOURS)] = df[list(HOURS)] / 3600
    g = df.groupby("policy")[[*HOURS, *SHARES]]
    mean, se = g.mean(), g.sem()
    out = pd.DataFrame(index=mean.index)
    for k, name in {**HOURS, **SHARES}.items():
        out[name] = mean[k]
    out["mean JCT s.e. (h)"] = se["mean_jct"]
    out.index = [policy_label(p) for p in out.index]
    return out.sort_values("mean JCT (h)")


by_policy = seed_table(per_run)
bound_h = per_run.groupby("seed")["mean_jct_lower_bound"].first().mean() / 3600
print(f"lower bound on the mean JCT of any schedule, averaged over seeds: {bound_h:.2f} h")
table(
    by_policy.rename_axis("policy"),
    decimals=dict.fromkeys(HOURS.values(), 2),
    formats={
        **dict.fromkeys(SHARES.values(), lambda v: percent(v, 0)),
        "mean JCT s.e. (h)": lambda v: "±" + number(v, 2),
    },
)

# %%
fig = go.Figure(
    go.Bar(
        x=by_policy.index,
        y=by_policy["mean JCT (h)"],
        error_y={"type": "data", "array": by_policy["mean JCT s.e. (h)"]},
        marker_color=[color(k) for k in range(len(by_policy))],
        hovertemplate="%{x}: %{y:.2f} h<extra></extra>",
    )
)
fig.add_hline(y=bound_h, line={"dash": "dash"}, annotation_text="lower bound, any schedule")
fig.update_layout(
    base_layout(
        title=f"Mean JCT over {len(SEEDS)} seeds (bars: ± one standard error)",
        template=TEMPLATE,
        height=380,
    )
)
fig.update_yaxes(title_text="mean JCT (h)")
show(fig)
best, worst = by_policy.index[0], by_policy.index[-1]
print(
    f"takeaway: {best} has the lowest mean JCT ({by_policy['mean JCT (h)'].iloc[0]:.2f} h), {worst} the "
    f"highest ({by_policy['mean JCT (h)'].iloc[-1]:.2f} h); differences smaller than about two standard "
    f"errors ({2 * by_policy['mean JCT s.e. (h)'].median():.2f} h here) are not resolved by {len(SEEDS)} seeds."
)

# %% [markdown]
# ### Which resource binds
#
# The offered load counts GPUs at each job's requested allocation. Workers and PSs also reserve
# CPU cores and NIC bandwidth, and one of those can fill first. The cell below names the most
# used resource per policy and writes the takeaway from it.

# %%
util = by_policy[list(SHARES.values())]
binding = util.idxmax(axis=1)
not_gpu = [p for p, r in binding.items() if r != "GPU util."]
display(
    Markdown(
        "Most used resource per policy: "
        + ", ".join(f"{p}: {r} ({util.loc[p, r]:.0%})" for p, r in binding.items())
        + f". **Takeaway:** for {len(not_gpu)} of {len(binding)} policies the most used "
        "resource is not the GPU"
        + (
            f", so a load of {small.workload['load']:g} in GPUs does not mean GPUs "
            f"{small.workload['load']:.0%} busy: GPU utilisation runs "
            f"{util['GPU util.'].min():.0%}-{util['GPU util.'].max():.0%}."
            if not_gpu
            else "."
        )
    )
)
seed = SEEDS[0]
show(
    utilisation_figure(
        runs[seed]["smd"],
        title=f"Default scenario (seed {seed}): utilisation under " + policy_label("smd"),
    )
)

# %% [markdown]
# The distribution of JCTs for one seed, and when each job ran under SMD (one bar per job,
# coloured by its allocation):

# %%
show(jct_cdf_figure(runs[seed], title=f"Default scenario (seed {seed}): JCT distribution"))
show(
    job_gantt_figure(
        runs[seed]["smd"],
        max_jobs=60,
        title=f"Default scenario (seed {seed}): schedule under " + policy_label("smd"),
    )
)

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
from smdlab.policies.registry import list_policies, policy_class


def what_it_does(name):
    """The first line of a policy's module docstring (its one-line description)."""
    doc = sys.modules[policy_class(name).__module__].__doc__ or ""
    return doc.strip().splitlines()[0] if doc.strip() else ""


registered = pd.DataFrame(
    [
        {
            "policy": name,
            "what it does": what_it_does(name),
            "natural mode": natural_execution(policy_class(name)),
            "slot (s)": getattr(policy_class(name), "slot_s", None),
            "can run in": ", ".join(supported_executions(policy_class(name))),
        }
        for name in list_policies()
    ]
).set_index("policy")
counts = registered["natural mode"].value_counts()
table(
    registered,
    formats={"slot (s)": lambda v: "-" if pd.isna(v) else f"{v:,.0f}"},
    summary=f"{len(registered)} registered policies; natural mode: "
    + ", ".join(f"{n} {mode}" for mode, n in counts.items()),
)

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
table(
    modes,
    decimals={"mean JCT (h)": 2, "makespan (h)": 2, "mean workers": 2},
    formats={"GPU utilisation": lambda v: percent(v, 0)},
)

# %% [markdown]
# The schedule of SMD in both modes, one bar per job coloured by its number of workers: forced
# non-elastic, each job keeps its first allocation to the end; elastic, jobs grow as others finish.

# %%
for execution in ["non_elastic", "natural"]:
    r = runs["smd", execution]
    show(
        job_gantt_figure(
            r,
            title=f"Base batch under {policy_label('smd')}, {r.summary['execution']} execution",
        )
    )

# %% [markdown]
# ## The Philly workload
#
# The default Philly window (`data/scenarios/philly.toml`; `docs/simulator.md`, "Philly windows")
# has 2,000 trace jobs from job 60,000 in time order (November 2017). Each job is a GPU-only
# gang of its recorded GPU count and runs exactly its recorded duration. Arrivals are compressed
# to an offered load of 10 on 64 machines, so jobs queue and mean JCTs are hours. The two
# non-preemptive trace schedulers, strict FIFO and SJF, run it as Tiresias' simulator does (gang,
# no PS). Preemptive SRTF and Tiresias take longer to simulate:
# `smdlab simulate --scenario data/scenarios/philly.toml --policy fifo,sjf,srtf,tiresias`.

# %%
philly = load_scenario(data_dir() / "scenarios" / "philly.toml")
print(philly.description)
TRACE_POLICIES = ["fifo", "sjf"]
philly_results = run_scenario(philly, TRACE_POLICIES)
ph = pd.DataFrame([r.summary_row() for r in philly_results.values()]).set_index("policy")
ph.index = [policy_label(p) for p in ph.index]
ph[list(HOURS)] = ph[list(HOURS)] / 3600
ph = ph[["jobs_completed", *HOURS, "util_gpu"]].rename(
    columns={**HOURS, "jobs_completed": "jobs completed", "util_gpu": "GPU util."}
)
table(
    ph.rename_axis("policy"),
    decimals=dict.fromkeys(HOURS.values(), 2),
    formats={"GPU util.": lambda v: percent(v, 0)},
)

# %%
show(jct_cdf_figure(philly_results, title="Philly default window: JCT distribution"))
fifo = philly_results["fifo"]
u = fifo.utilization
busy = float((u["gpu"] >= 0.9).mean())
print(
    f"takeaway: the median JCT is {ph['median JCT (h)'].min():.2f}-{ph['median JCT (h)'].max():.2f} h "
    f"while the mean is {ph['mean JCT (h)'].min():.2f}-{ph['mean JCT (h)'].max():.2f} h: a few very "
    f"long trace jobs pull the mean up. GPU utilisation averages {ph['GPU util.'].iloc[0]:.0%}, but "
    f"peaks at {u['gpu'].max():.0%} during arrival bursts."
)
show(utilisation_figure(fifo, title="Philly default window: utilisation under FIFO"))

# %% [markdown]
# In the GPU-only window, jobs reserve nothing but GPUs, so CPU and NIC utilisation are zero by
# construction. To see which resource binds once tasks also need CPU cores and NIC bandwidth, the
# next cell runs a smaller piece of the same window (500 jobs on 16 machines, same load) with the
# per-network task demands of the synthetic scenario (`demands = "per_network"`: a worker and a
# PS each reserve CPU cores and NIC bandwidth), under FIFO.

# %%
demanding = dataclasses.replace(
    philly,
    workload={**philly.workload, "jobs": 500, "demands": "per_network"},
    cluster={**philly.cluster, "machines": 16},
)
r = run_scenario(demanding, ["fifo"])["fifo"]
peaks = r.utilization[["gpu", "cpu", "bw_gbps"]].max()
FULL = 0.95  # a resource counts as full from 95% of its capacity
full_first = {
    k: float(r.utilization.loc[r.utilization[k] >= FULL, "time"].iloc[0])
    for k in ("gpu", "cpu", "bw_gbps")
    if (r.utilization[k] >= FULL).any()
}
never = [SHARES["util_" + k] for k in ("gpu", "cpu", "bw_gbps") if k not in full_first]
takeaway = Markdown(
    "Peak utilisation: "
    + ", ".join(f"{SHARES['util_' + k]} {v:.0%}" for k, v in peaks.items())
    + f"; mean JCT {r.summary['mean_jct'] / 3600:.2f} h. "
    + (
        "**Takeaway:** "
        + ", ".join(
            f"{SHARES['util_' + k]} first reaches {FULL:.0%} of its capacity at {t / 3600:.1f} h"
            for k, t in sorted(full_first.items(), key=lambda kv: kv[1])
        )
        + (f"; {' and '.join(never)} never does" if never else "")
        + ". Arriving jobs wait for whichever resource is full, even while others are free, and a "
        "non-preemptive, non-elastic policy frees nothing until running jobs finish."
        if full_first
        else f"No resource reaches {FULL:.0%} of its capacity in this run."
    )
)
show(
    utilisation_figure(
        r, title="Philly, 500 jobs with per-network CPU and NIC demands: utilisation under FIFO"
    )
)
takeaway

# %% [markdown]
# The JCT-versus-parameter curves of every policy (number of jobs, cluster size, bandwidth,
# communication/computation ratio) are in `05_paper_figures.ipynb` and in `figures/`
# (`smdlab reproduce`, see `EXPERIMENTS.md`).
