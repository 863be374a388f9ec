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
# # 2. SMD step by step: a sum of ratios, decomposed into knapsacks
#
# At a decision point the scheduler gives each job `w_i` workers and `p_i` PSs so that the total
# (weighted) job completion time is smallest without exceeding the cluster's capacity. A job's
# completion time is its work `N_i` divided by its speed `D_i(w_i, p_i)`, so the objective is a
# **sum of ratios**. SMD (Yu et al., INFOCOM 2021) attacks it with Jong's parametric method: fix
# parameters (beta, u), solve a **multiple-choice multi-dimensional knapsack** (the subproblem),
# update the parameters by a Newton step, repeat. Everything below runs **the reconstructed SMD
# model** (`docs/solver.md`); the exact MILP and the LP relaxation are the yardsticks.
#
# The jobs here are small synthetic ones (random layer profiles, random NIC bandwidths per task,
# `smdlab.testing.random_job`, seeded), because jobs whose tasks all demand the same resources
# make the problem too easy to show a gap; notebook 3 uses the bundled real networks.

# %%
import numpy as np

from smdlab import Cluster
from smdlab.solve import build_instance, solve
from smdlab.testing import random_job
from smdlab.viz.decomposition import ratio_table, speed_heatmap_figure, subproblem_step
from smdlab.viz.solution import allocation_figure, bounds_figure, smd_trace_figure


def instance(n, seed):
    """n seeded jobs with random layer profiles and per-task demands, on a pooled cluster sized to them."""
    rng = np.random.default_rng(seed)
    jobs = [random_job(rng, f"job{i}") for i in range(n)]
    cluster = Cluster.pooled(("gpu", "cpu", "bw_gbps"), gpu=2 * n, cpu=6.7 * n, bw_gbps=43 * n)
    return jobs, cluster


jobs, cluster = instance(6, seed=4)
inst = build_instance(jobs, cluster, cluster.capacity_vector, "wfbp")
print(cluster)
for j in jobs:
    print(j, dict(j.worker_demand))

# %% [markdown]
# ## The sum of ratios
#
# Start with every job on one worker and one PS. Each row is one ratio `N_i / D_i`: the job's work
# (samples times its weight) over its speed, i.e. its completion time in seconds. Jong's
# parameters at this point are `beta_i = N_i / D_i` and `u_i = 1 / D_i`.

# %%
start_w, start_p = np.ones(inst.n, dtype=int), np.ones(inst.n, dtype=int)
start = ratio_table(inst, start_w, start_p)
print(
    "every job fits on one worker and one PS:",
    bool(np.all(inst.base_use.sum(axis=0) <= inst.capacity)),
)
print(f"objective at the start: {start['ratio'].sum():,.0f} s")
start

# %% [markdown]
# ## One knapsack subproblem
#
# With (beta, u) fixed, the subproblem maximises `sum_i lambda_i * S_i(w_i, p_i)` with
# `lambda_i = u_i * beta_i`: each job offers one configuration `(w, p)` with profit
# `lambda_i * speed` and weight "its workers' and PSs' resources", and the capacity is the
# cluster's. Solved exactly here; a job whose completion time weighs more gets a larger lambda
# and so more resources.

# %%
step, w1, p1 = subproblem_step(inst, start_w, start_p)
print(f"objective after one subproblem: {step['new_ratio'].sum():,.0f} s")
step

# %%
big = int(step["lambda"].idxmax())
speed_heatmap_figure(
    inst, big, {"start": (1, 1), "after one subproblem": (int(w1[big]), int(p1[big]))}
).show()

# %% [markdown]
# ## The iteration converging
#
# `solve(..., method="smd")` runs the whole method: outer job selection (which jobs start now, by
# the objective: a job may wait for a larger configuration even when it fits), a start allocation,
# then damped Newton
# steps on (beta, u), each solving one subproblem. The trace records `||psi||` (how far the
# parameters are from a fixed point) and the true objective of each iterate; the result is the
# best iterate.

# %%
smd = solve(jobs, cluster, "smd")
exact = solve(jobs, cluster, "milp", time_limit=30)
smd_trace_figure(smd, exact).show()
smd.trace_frame()

# %% [markdown]
# ## The bound closing, against the exact optimum
#
# The LP relaxation of the configuration MILP bounds every allocation from below. The gap between
# SMD's objective and that bound is reported with every run; where the exact MILP solves, it shows
# how far from optimal SMD really is.

# %%
lp_round = solve(jobs, cluster, "lp_round")
bounds_figure([smd, lp_round], exact).show()
lp_bound = smd.lower_bound  # the LP relaxation's value, computed with every SMD run
print(f"LP lower bound: {lp_bound:12,.1f} s")
for s in (smd, lp_round, exact):
    print(
        f"{s.method:>9}: objective {s.objective:12,.1f} s, {(s.objective - lp_bound) / s.objective:7.3%} above "
        f"the LP bound, {s.wall_time_s * 1e3:7.1f} ms, status {s.status}"
    )

# %%
allocation_figure(smd, jobs, cluster).show()

# %% [markdown]
# ## Larger instances
#
# The same comparison as the job count grows (the cluster grows with it): SMD's gap to the exact
# optimum, the LP bound's distance below it, and both methods' times, measured here.
# `benchmarks/` runs the full-size comparison.

# %%
import pandas as pd

rows = []
for n in (4, 8, 16, 32):
    jb, cl = instance(n, seed=n)
    a, b = solve(jb, cl, "smd"), solve(jb, cl, "milp", time_limit=30)
    rows.append(
        {
            "jobs": n,
            "smd": a.objective,
            "milp": b.objective,
            "milp status": b.status,
            "smd above optimum": (a.objective - b.objective) / b.objective,
            "optimum above LP bound": (b.objective - a.lower_bound) / b.objective,
            "smd ms": a.wall_time_s * 1e3,
            "milp ms": b.wall_time_s * 1e3,
        }
    )
pd.DataFrame(rows)
