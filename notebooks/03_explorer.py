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
# # 3. The live explorer
#
# Change the cluster (machines, machine shape, the NIC bandwidth each task gets), the job mix
# (which bundled networks, how many jobs), one network's layer profile (device, compute and
# parameter scales, communication-to-computation ratio), the overlap mode, the batch convention
# and the solver method, and watch four figures follow:
#
# - the **allocation** (workers and PSs per job; each job's share of every resource),
# - the **JCT bounds**: LP lower bound, the chosen method's result and the exact MILP optimum,
# - the **per-layer timeline** of one iteration of the job chosen under "Layer profile",
# - the **schedule**: every policy's simulated run of the same jobs.
#
# A fifth, the **rack view**, appears when the cluster has racks. The allocation comes from the
# fast path (SMD of **the reconstructed model**, or LP + rounding), computed inside the control's
# callback. The exact MILP runs in a background thread with a short time limit; an hourglass
# shows while it runs, and its point is drawn hollow when it stopped at the limit without proving
# optimality. Results of a change that was overtaken by a newer one are discarded.
# `make dashboard` serves this notebook as a Voila dashboard.
#
# The first cell builds the app: it solves the default instance, and the bar below shows how far
# it got.
#
# Terms and abbreviations: [docs/glossary.md](../docs/glossary.md).

# %%
import time

import ipywidgets as widgets
from IPython.display import display

t0 = time.perf_counter()
steps = ["importing smdlab", "solving the default instance and drawing the figures", "ready"]
progress = widgets.IntProgress(value=0, max=len(steps) - 1, description="Building:")
label = widgets.Label(steps[0] + "…")
display(widgets.HBox([progress, label]))

import pandas as pd  # after the progress bar: it shows while these import

from smdlab.solve import solve
from smdlab.widgets import explorer
from smdlab.widgets.scenario import build_cluster, build_jobs

progress.value, label.value = 1, steps[1] + "…"
app = explorer()
# The timeline follows one job: show the first job the allocation runs (a job that waits has no
# iteration to draw), set through the app's control as a user would.
app.controls["focus"].value = int(app.shown_solution.to_frame()["started"].idxmax())
progress.value = 2
label.value = f"{steps[2]}: built in {time.perf_counter() - t0:.1f} s"
app

# %% [markdown]
# The default state (`docs/explorer.md`) is a CPU-poor cluster, 4 machines of 8 GPUs with 4 cores
# per GPU and 25 Gbps per task, running 16 jobs. Cores run out before GPUs, so some jobs get fewer
# PSs than workers and the LP bound is not tight. Each job reserves what its network needs
# (per-network task demands), so the lower panel of the allocation figure shows shares that differ
# from job to job. Try the NIC bandwidth slider: the allocation moves. Tick **large instance**
# (2,000 jobs on 500 machines) to see the exact MILP run in the background (an hourglass) and stop
# at its 5 s time limit (a hollow diamond in the bounds figure), while SMD answers in the callback.
#
# The status line appears after the first change: the headline names the chosen method, and the
# line below it is the time from your input to the last figure repainted, measured in this browser
# the same way as `benchmarks/bench_explorer_browser.py` (`docs/explorer.md`).
#
# The app can be driven from Python as well (`docs/explorer.md`, "Scripting interface"):
# `app.controls` maps each control's name to its widget, so `app.controls["machines"].value = 6`
# has the same effect as moving the slider. `app.wait()` blocks until the background MILP is done,
# and `app.solution` / `app.exact_solution` hold the fast and the exact `Solution`. The allocation
# shown (bold: jobs whose PS count differs from their worker count; "waits": not started now):

# %%
from smdlab.viz.notebook import table

frame = app.shown_solution.to_frame()
print(app.headline().replace("<b>", "").replace("</b>", ""))
if app.exact_solution is not None:
    above = (app.exact_solution.objective - app.solution.lower_bound) / app.exact_solution.objective
    print(f"exact MILP {app.exact_solution.objective:,.0f} s, {above:.2%} above the LP bound")
allocation = pd.DataFrame(
    {
        "job": frame["job"],
        "workers": frame["workers"],
        "PSs": frame["ps"],
        "duration on its allocation (h)": frame["duration"] / 3600,
        "machines": [", ".join(str(m) for m in ms) or "waits" for ms in frame["machines"]],
    }
)
waiting = int((frame["workers"] == 0).sum())
(
    table(
        allocation,
        decimals={"duration on its allocation (h)": 2},
        summary=f"{len(allocation)} jobs: {len(allocation) - waiting} start now, {waiting} wait "
        "(bold: fewer or more PSs than workers)",
    ).apply(
        lambda row: ["font-weight: bold" if 0 < row["workers"] != row["PSs"] else ""] * len(row),
        axis=1,
    )
)

# %% [markdown]
# ## A guided exercise: the NIC bandwidth
#
# 1. **Move** the "NIC bandwidth per task" slider (Cluster) from its default down to 10 Gbps.
# 2. **Predict** before you look: every push and pull now takes longer, by the ratio of the two
#    bandwidths. Will SMD give the jobs more parameter servers or fewer? Will the sum of
#    completion times (the bounds figure) rise or fall, and by more or less than that ratio?
# 3. **Observe** the allocation and bounds figures. The cell below computes the same two
#    allocations without touching the app (the app's own fast solve on its settings at 25 and
#    at 10 Gbps), so you can check what you saw.
# 4. **Explain**: the cell below writes what changed, with the numbers of this run.

# %%
from IPython.display import Markdown


def totals(solution):
    """Workers, PSs, started jobs and the sum of completion times (s) of a solution."""
    f = solution.to_frame()
    return int(f["workers"].sum()), int(f["ps"].sum()), int(f["started"].sum()), solution.objective


def fast_solve(s):
    """The explorer's fast allocation for settings ``s`` (its method, SMD by default)."""
    return solve(build_jobs(s), build_cluster(s), s.method, mode=s.mode)


before_gbps = app.settings.bandwidth_gbps
before = totals(fast_solve(app.settings))
after = totals(fast_solve(app.settings.replace(bandwidth_gbps=10.0)))
w0, p0, n0, obj0 = before
w1, p1, n1, obj1 = after
slower = before_gbps / 10
if p1 > p0:
    ps_why = (
        f"SMD answers with {p1 - p0} more PSs: each PS receives w·s/p bytes of every gradient, "
        "so more PSs shorten the PS side of each push and pull."
    )
elif p1 < p0:
    ps_why = f"SMD uses {p0 - p1} fewer PSs, and gives the resources to workers or other jobs."
else:
    ps_why = f"The number of PSs stays at {p0}."
sum_why = (
    f"less than the {slower:g} times of communication alone: the computation in each "
    "iteration does not slow down"
    if obj1 / obj0 < slower
    else f"more than the {slower:g} times of communication alone"
)
Markdown(
    f"**Observed.** At {before_gbps:g} Gbps per task SMD starts {n0} jobs on {w0} workers and "
    f"{p0} PSs; at 10 Gbps it starts {n1} jobs on {w1} workers and {p1} PSs. The sum of "
    f"completion times goes from {obj0:,.0f} s to {obj1:,.0f} s, {obj1 / obj0:.2f} times, "
    f"{sum_why}. **Why:** every push and pull takes {slower:g} times as long. {ps_why}"
)

# %% [markdown]
# ## Why Tiresias sits far from the bound in the schedule panel
#
# The schedule panel simulates each policy on the current jobs, all submitted at once, and draws
# the lower bound on the mean JCT of any schedule. The cell below reruns Tiresias on the same
# jobs with its history, measures how far above the bound it lands and says why, with numbers.

# %%
from smdlab.sim import simulate

app.wait()
means, bound = app.schedule
tiresias = simulate(
    build_jobs(app.settings), build_cluster(app.settings), "tiresias", mode=app.settings.mode
)
ts = tiresias.summary
busy = tiresias.history["end"] - tiresias.history["start"]
workers = float((tiresias.history["workers"] * busy).sum() / busy.sum())
ps = float((tiresias.history["ps"] * busy).sum() / busy.sum())
running = float(busy.sum() / ts["makespan"])
binding = max(ts["utilization"], key=ts["utilization"].get)
Markdown(
    f"Mean JCT over the {len(build_jobs(app.settings))} jobs: Tiresias {ts['mean_jct']:,.0f} s "
    f"({ts['mean_jct'] / bound:.1f} times the bound of {bound:,.0f} s; the panel drew "
    f"{means['tiresias']:,.0f} s), SMD {means['smd']:,.0f} s ({means['smd'] / bound:.1f} times). "
    f"**Why:** Tiresias runs every job on its full request, here {workers:.1f} workers and "
    f"{ps:.1f} PSs on average while it runs, so the cluster holds {running:.1f} jobs at a time on "
    f"average ({binding} is the most used resource, {ts['utilization'][binding]:.0%}). The other "
    f"jobs queue: waiting is {ts['mean_queueing_delay'] / ts['mean_jct']:.0%} of Tiresias' mean "
    f"JCT. Its least-attained-service order decides who waits, not how many resources each job "
    f"needs. SMD sizes each job's allocation instead: its first decision starts "
    f"{int((app.solution.to_frame()['workers'] > 0).sum())} jobs at once."
)
