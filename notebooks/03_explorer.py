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
# and the solver method, and watch three outputs follow:
#
# - the **allocation** (workers and PSs per job; each job's share of every resource),
# - the **JCT bounds**: LP lower bound, the chosen method's result and the exact MILP optimum,
# - the **per-layer timeline** of one iteration of the job chosen under "Layer profile".
#
# The allocation comes from the fast path (SMD of **the reconstructed model**, or LP + rounding),
# computed inside the control's callback. The exact MILP runs in a background thread with a short
# time limit; an hourglass shows while it runs, and its point is drawn hollow when it stopped at
# the limit without proving optimality. Results of a change that was overtaken by a newer one are
# discarded. `make dashboard` serves this notebook as a Voila dashboard.

# %%
import pandas as pd

from smdlab.widgets import explorer

app = explorer()
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
frame = app.shown_solution.to_frame()
print(app.headline().replace("<b>", "").replace("</b>", ""))
if app.exact_solution is not None:
    above = (app.exact_solution.objective - app.solution.lower_bound) / app.exact_solution.objective
    print(f"exact MILP {app.exact_solution.objective:,.0f} s, {above:.2%} above the LP bound")
table = pd.DataFrame(
    {
        "job": frame["job"],
        "workers": frame["workers"],
        "PSs": frame["ps"],
        "duration on its allocation (h)": frame["duration"] / 3600,
        "machines": [", ".join(str(m) for m in ms) for ms in frame["machines"]],
    }
)
(
    table.style.hide(axis="index")
    .format({"duration on its allocation (h)": "{:.2f}"}, na_rep="waits")
    .apply(
        lambda row: ["font-weight: bold" if 0 < row["workers"] != row["PSs"] else ""] * len(row),
        axis=1,
    )
)

# %% [markdown]
# ## Policies side by side
#
# `smdlab.widgets.compare()` is the companion app: one workload (the default scenario's synthetic
# job mix, scaled down to stay interactive) scheduled by each policy, with load, cluster size and
# job count as controls, every simulation on a background thread, JCT distributions, a summary
# table and utilisation over time. Run `compare()` in a cell of its own to open it; notebook 4
# compares the policies on the full scenarios. (It is not opened here: each plotly FigureWidget
# carries plotly.js with it, so this dashboard stays at the explorer's three.)
