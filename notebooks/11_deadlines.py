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
# # 11. Deadlines: one Chronus lease decision, and misses against load
#
# Some jobs must finish by a deadline (SLO jobs); the others only want to finish soon
# (best-effort jobs). Chronus (Gao et al., SoCC 2021) splits time into leases of 20 minutes. At
# each lease boundary it releases every job and solves a small MILP: which SLO jobs hold which
# future leases, and which of its deadline options each job takes. Best-effort jobs fill the GPUs
# the plan leaves free. This notebook builds one such decision by hand, solves it, and then reads
# the `slo_vs_load` experiment: how often each policy misses deadlines, and how long best-effort
# jobs wait, as the offered load grows.
# Specification: `docs/deadlines.md` (job classes, metrics, the Chronus rules and SMD with
# deadlines). Terms and abbreviations: [docs/glossary.md](../docs/glossary.md).

# %%
from pathlib import Path

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from IPython.display import Markdown, display

from smdlab.experiments import figure, make_figure
from smdlab.model.slo import SLO
from smdlab.policies.deadline._lease import Row, greedy_selection, milp_selection
from smdlab.solve.instance import ValueTerm, build_instance
from smdlab.viz.notebook import show, table
from smdlab.viz.style import PALETTE, base_layout
from smdlab.viz.takeaways import slo_tradeoff
from smdlab.widgets.scenario import ExplorerSettings, build_cluster, build_jobs

# %% [markdown]
# ## One lease decision
#
# One machine of 8 GPUs, four leases ahead (lease 0 starts now). Three SLO jobs. Each row is one
# (job, deadline option): the job needs `req` whole leases of `gpus` GPUs, all before the
# option's deadline, that is among the first `leases_before_deadline` leases; meeting that option
# is worth `value`. Job `b` is soft: it is worth 10 if it finishes within three leases, 5 within
# four. Job `c` needs the whole machine for one lease: worth 10 within two leases, 8 within four.

# %%
rows = [
    Row("a", 0, res=4, req=2, maxl=2, value=10.0),
    Row("b", 0, res=4, req=2, maxl=3, value=10.0),
    Row("b", 1, res=4, req=2, maxl=4, value=5.0),
    Row("c", 0, res=8, req=1, maxl=2, value=10.0),
    Row("c", 1, res=8, req=1, maxl=4, value=8.0),
]
GPUS, LEASES = 8, 4
table(
    pd.DataFrame(
        [(r.job, r.vid, r.res, r.req, r.maxl, r.value) for r in rows],
        columns=["job", "option", "gpus", "req", "leases_before_deadline", "value"],
    ),
    decimals={"value": 0},
)

# %% [markdown]
# **The model** (`smdlab.policies.deadline._lease.milp_selection`). Binary variables:
# $x_{r,l} = 1$ when row $r$ holds lease $l$ (only for leases before its deadline,
# $l < L_r$), and $s_r = 1$ when the job takes option $r$.
#
# $$\max \sum_r v_r s_r + \sigma \sum_r \frac{g_r\, x_{r,0}}{G}$$
# subject to
# $$\sum_{l < L_r} x_{r,l} = q_r s_r \quad \forall r, \qquad
#   \sum_{r \in \text{job } j} s_r = 1 \quad \forall j, \qquad
#   \sum_{r:\, l < L_r} g_r x_{r,l} \le G \quad \forall l,$$
#
# with $q_r$ the leases needed, $g_r$ the GPUs, $G$ the GPUs of a lease and $L_r$ the leases
# before the option's deadline. The second term is small (at most 1, below any value): with
# $\sigma = +1$ it breaks ties towards using GPUs now; Chronus sets $\sigma = -1$ while
# SLO jobs it could not accept wait, so that the plan leaves lease 0 to them.

# %%
n_x = sum(r.maxl for r in rows)
n_jobs = len({r.job for r in rows})
print(f"{n_x} lease variables x, {len(rows)} option variables s")
print(
    f"{len(rows)} lease-count rows + {n_jobs} one-option rows + {LEASES} GPU rows "
    f"= {len(rows) + n_jobs + LEASES} constraints"
)

# %%
plan, status = milp_selection(rows, [GPUS] * LEASES, GPUS, use_now=+1, time_limit=5.0)
value = {(r.job, r.vid): r.value for r in rows}


def plan_table(plan):
    """Job, option taken, its value and the leases it holds."""
    return pd.DataFrame(
        [
            (j, v, value[(j, v)], ", ".join(map(str, sorted(ls))))
            for j, (v, ls) in sorted(plan.items())
        ],
        columns=["job", "option", "value", "leases"],
    )


print(f"HiGHS: {status}; value {sum(value[(j, v)] for j, (v, _) in plan.items()):g}")
table(plan_table(plan), decimals={"value": 0})

# %% [markdown]
# `a` must hold both of the first two leases, so `c` cannot have a whole lease before its first
# deadline: it takes its second option. `b` meets its first option beside `a`. GPUs per lease:


# %%
def lease_figure(plan, title):
    """GPUs each job holds per lease, against the lease's GPUs."""
    fig = go.Figure()
    for k, (job, (_, leases)) in enumerate(sorted(plan.items())):
        res = next(r.res for r in rows if r.job == job)
        fig.add_bar(
            x=[f"lease {lease}" for lease in sorted(leases)],
            y=[res] * len(leases),
            name=f"job {job}",
            marker_color=PALETTE[k],
        )
    fig.add_hline(y=GPUS, line_dash="dot", annotation_text="GPUs per lease")
    fig.update_layout(**base_layout(title, height=320), barmode="stack")
    fig.update_xaxes(categoryorder="array", categoryarray=[f"lease {i}" for i in range(LEASES)])
    fig.update_yaxes(title_text="GPUs held", range=[0, GPUS + 1])
    return fig


show(lease_figure(plan, "The MILP's plan (sigma = +1)"))

# %% [markdown]
# With $\sigma = -1$ (SLO jobs wait that Chronus could not accept) the MILP reaches the same
# value with as few GPUs as possible in lease 0, which it leaves to those jobs and to best-effort
# jobs. The greedy fall-back, used when the MILP has no solution within its time limit, takes
# the rows by value, then most GPUs, then least slack, each in the latest leases with room: a job
# whose rows all fail gets no plan (Chronus then treats it as unaccepted).

# %%
late, status_late = milp_selection(rows, [GPUS] * LEASES, GPUS, use_now=-1, time_limit=5.0)
greedy = greedy_selection(rows, [GPUS] * LEASES, GPUS)
both = pd.concat(
    [plan_table(late).assign(plan="MILP, sigma = -1"), plan_table(greedy).assign(plan="greedy")]
)
for name, p in (("MILP, sigma = -1", late), ("greedy", greedy)):
    missing = sorted({r.job for r in rows} - set(p))
    print(
        f"{name}: value {sum(value[(j, v)] for j, (v, _) in p.items()):g}, GPUs in lease 0: "
        f"{sum(next(r.res for r in rows if r.job == j) for j, (_, ls) in p.items() if 0 in ls)}"
        + (f", no plan for {', '.join(missing)}" if missing else "")
    )
table(both[["plan", "job", "option", "value", "leases"]], decimals={"value": 0})

# %% [markdown]
# ## Misses and best-effort JCT against offered load
#
# The `slo_vs_load` experiment runs FIFO, EDF, least slack first (LSF), Chronus, the
# UniSched-inspired policy and SMD with deadlines on windows of Chronus' Philly MIX2 trace (its
# own deadlines), scaling each window's arrivals to an offered load. `SOURCE = "committed"` draws
# the figure from `figures/slo_vs_load.csv` (full configuration); `"quick"` or `"tiny"`
# recomputes it (about a minute, or seconds).

# %%
SOURCE = "committed"
if SOURCE == "committed":
    df = pd.read_csv(Path("..") / "figures" / "slo_vs_load.csv")
    fig = make_figure("slo_vs_load", df)
else:
    fig, df = figure("slo_vs_load", SOURCE)
show(fig)

# %%
display(Markdown(slo_tradeoff(df)))

# %% [markdown]
# ## SMD with deadlines: the value term of (P)
#
# SMD's problem (P) charges each job its weighted duration omega_i d_i(c) at the configuration c
# it starts with (docs/solver.md). `smd_slo` puts each SLO job's value into its weight; with
# `value_kappa` > 0 it also charges each configuration the share of the job's value lost when
# the job completes at that configuration's estimate, kappa H (1 - V(t + d_i(c)) / V_max), H
# being (P)'s expected wait (ours; docs/deadlines.md). Below: the explorer's default first job,
# given a deadline that only its faster configurations meet (two options, worth 10 and 4), and
# the cost of each of its configurations with and without that term.

# %%
small = ExplorerSettings(machines=1, n_jobs=2, max_tasks=4)
vt_jobs, vt_cluster = build_jobs(small), build_cluster(small)
grid = build_instance(vt_jobs, vt_cluster, vt_cluster.capacity_vector).duration[0]
due = float(np.sqrt(grid[np.isfinite(grid)].min() * grid[0, 0]))  # between fastest and slowest
vt_jobs = [vt_jobs[0].replace(slo=SLO((due, 1.5 * due), (10.0, 4.0), "soft")), vt_jobs[1]]
plain = build_instance(vt_jobs, vt_cluster, vt_cluster.capacity_vector)
valued = build_instance(
    vt_jobs, vt_cluster, vt_cluster.capacity_vector, value_term=ValueTerm(now=0.0, kappa=1.0)
)
vt_rows = []
for w, p in [(1, 1), (2, 1), (2, 2), (4, 2), (4, 4)]:
    d = plain.duration[0, w - 1, p - 1]
    vt_rows.append(
        {
            "workers, PSs": f"{w}, {p}",
            "duration (h)": d / 3600,
            "meets": "first" if d <= due else ("second" if d <= 1.5 * due else "none"),
            "omega d (h)": plain.cost[0, w - 1, p - 1] / 3600,
            "with value term (h)": valued.cost[0, w - 1, p - 1] / 3600,
        }
    )
print(
    f"deadlines {due / 3600:.2f} h and {1.5 * due / 3600:.2f} h; H = {valued.horizon / 3600:.2f} h"
)
table(pd.DataFrame(vt_rows), decimals=dict.fromkeys(list(vt_rows[0])[1:], 2))

# %% [markdown]
# A configuration that misses both deadlines costs one expected wait H more, one that meets only
# the second 0.6 H more (value 4 of 10 kept). SMD's job selection and its closing local search
# see these costs; its sum-of-ratios step does not (EXPERIMENTS.md, "SMD with deadlines: the
# value term", measures what that changes). The live explorer shows deadlines too: tick
# "attach deadlines to the job mix" in its Deadlines section (docs/explorer.md).
