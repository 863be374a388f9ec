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
# Everything below runs **SMD (reconstructed model)** (Yu et al., INFOCOM 2021; our reconstruction
# is specified in `docs/solver.md`). The exact MILP and the LP relaxation are the yardsticks.
#
# ## The problem
#
# At a decision point the scheduler gives each job $i$ some workers $w_i$ and parameter servers
# $p_i$. Job $i$ has work $N_i$ (its samples times its weight $\omega_i$) and runs at speed
# $S_i(w_i, p_i)$ samples/s, so it needs $N_i / S_i(w_i, p_i)$ seconds. One worker of job $i$ uses
# $\alpha_{ik}$ of resource $k$, one PS uses $\gamma_{ik}$, and the cluster has $C_k$:
#
# $$
# \min_{w, p} \; \sum_i \frac{N_i}{S_i(w_i, p_i)}
# \quad \text{s.t.} \quad \sum_i \alpha_{ik} w_i + \gamma_{ik} p_i \le C_k \;\; \forall k .
# $$
#
# The objective is a **sum of ratios**, which no knapsack solver handles directly.
#
# ## Jong's parameters and the subproblem
#
# Jong's parametric method introduces one pair $(\beta_i, u_i)$ per job. With the parameters
# fixed, the subproblem
#
# $$
# \mathrm{SUB}(\beta, u) = \min_{w, p} \sum_i u_i \bigl(N_i - \beta_i S_i(w_i, p_i)\bigr)
# \quad \text{s.t. the same capacities}
# $$
#
# is a **multiple-choice multi-dimensional knapsack**. Each job picks one configuration $(w, p)$
# with profit $\lambda_i S_i(w, p)$, where $\lambda_i = u_i \beta_i$.
#
# An allocation $x^* = (w^*, p^*)$ solves the original problem when it solves
# $\mathrm{SUB}(\beta, u)$ and the parameters satisfy
#
# $$
# \psi(\beta, u) = \Bigl(\; \beta_i S_i(x^*_i) - N_i ,\;\; u_i S_i(x^*_i) - 1 \;\Bigr)_i = 0,
# $$
#
# that is, $\beta_i = N_i / S_i$ (job $i$'s completion time) and $u_i = 1 / S_i$ at that
# allocation. ‖ψ‖ below is measured in relative form, $(\beta_i S_i - N_i)/N_i$ and
# $u_i S_i - 1$.
#
# ## The Newton step and the step rule
#
# At the current $(\beta, u)$, solve SUB for $x$. The Jacobian of ψ is
# $\mathrm{diag}(S(x), S(x))$, so the Newton direction is
#
# $$
# \Delta\beta_i = \frac{N_i}{S_i(x_i)} - \beta_i, \qquad \Delta u_i = \frac{1}{S_i(x_i)} - u_i .
# $$
#
# **Step rule (Armijo damping).** Try the step lengths $\sigma = \xi^j$ for $j = 0, 1, 2, 3$
# ($\xi = 0.5$). Accept the first one whose new SUB solution shrinks ψ enough:
#
# $$
# \|\psi(\beta + \sigma\Delta\beta,\, u + \sigma\Delta u)\| \le (1 - \varepsilon\sigma)\,\|\psi(\beta, u)\|,
# \qquad \varepsilon = 0.1 .
# $$
#
# If no trial passes, the iteration stops. It also stops when ‖ψ‖ falls below the tolerance, or
# after three accepted steps that leave the allocation unchanged. The result is the **best
# iterate** by the true objective. By default a **local search** ("polish") then follows. It
# moves one job to another configuration, or exchanges one task between jobs, while that lowers
# the true objective.
#
# The jobs here are small synthetic ones (random layer profiles, random NIC bandwidths per task,
# `smdlab.testing.random_job`, seeded). Jobs whose tasks all demand the same resources make the
# problem too easy to show a gap; notebook 3 uses the bundled real networks.
#
# Terms and abbreviations: [docs/glossary.md](../docs/glossary.md).

# %%
import numpy as np
import pandas as pd
import plotly.graph_objects as go

from smdlab import Cluster
from smdlab.solve import build_instance, solve
from smdlab.solve.knapsack import knapsack_exact, knapsack_lp_round
from smdlab.solve.smd import sum_of_ratios
from smdlab.testing import random_job
from smdlab.viz.decomposition import ratio_table, speed_heatmap_figure, subproblem_step
from smdlab.viz.notebook import percent, show, table
from smdlab.viz.solution import allocation_figure, bounds_figure
from smdlab.viz.style import BOUND_COLORS, SMD_LABEL, TEMPLATE, base_layout, color


def instance(n, seed):
    """n seeded jobs with random layer profiles and per-task demands, on a pooled cluster sized to them."""
    rng = np.random.default_rng(seed)
    jobs = [random_job(rng, f"job{i}") for i in range(n)]
    cluster = Cluster.pooled(("gpu", "cpu", "bw_gbps"), gpu=2 * n, cpu=6.7 * n, bw_gbps=43 * n)
    return jobs, cluster


jobs, cluster = instance(6, seed=4)
inst = build_instance(jobs, cluster, cluster.capacity_vector, "wfbp")
capacity = dict(zip(inst.resources, inst.capacity))
print(
    f"{len(jobs)} jobs on a pooled cluster: {capacity['gpu']:.0f} GPUs, {capacity['cpu']:.1f} CPU cores, "
    f"{capacity['bw_gbps']:.0f} Gbps of NIC bandwidth"
)
table(
    pd.DataFrame(
        {
            "job": [j.name for j in jobs],
            "samples": [j.samples for j in jobs],
            "max workers": [j.max_workers for j in jobs],
            "max PSs": [j.max_ps for j in jobs],
            "worker CPU (cores)": inst.alpha[:, inst.resources.index("cpu")],
            "worker NIC (Gbps)": inst.alpha[:, inst.resources.index("bw_gbps")],
            "PS CPU (cores)": inst.gamma[:, inst.resources.index("cpu")],
            "PS NIC (Gbps)": inst.gamma[:, inst.resources.index("bw_gbps")],
        }
    ),
    decimals={
        "samples": 0,
        "worker CPU (cores)": 1,
        "worker NIC (Gbps)": 1,
        "PS CPU (cores)": 1,
        "PS NIC (Gbps)": 1,
    },
)

# %% [markdown]
# ## The sum of ratios at a hand-picked start
#
# Start with every job on one worker and one PS. Each row is one ratio $N_i / S_i$, the job's
# completion time in seconds. Jong's parameters at this point are $\beta_i = N_i / S_i$ and
# $u_i = 1 / S_i$, so ψ = 0 for this allocation, but it is not the SUB solution at these parameters.

# %%
start_w, start_p = np.ones(inst.n, dtype=int), np.ones(inst.n, dtype=int)
start = ratio_table(inst, start_w, start_p)
print(
    "every job fits on one worker and one PS:",
    bool(np.all(inst.base_use.sum(axis=0) <= inst.capacity)),
)
print(f"objective at the start: {start['ratio'].sum():,.0f} s")
start.rename(
    columns={
        "N": "N_i (samples)",
        "D": "S_i (samples/s)",
        "ratio": "N_i/S_i (s)",
        "beta": "β_i (s)",
        "u": "u_i (s/sample)",
    }
).style.format(
    {
        "N_i (samples)": "{:,.0f}",
        "S_i (samples/s)": "{:,.1f}",
        "N_i/S_i (s)": "{:,.0f}",
        "β_i (s)": "{:,.0f}",
        "u_i (s/sample)": "{:.2e}",
    }
).hide(axis="index")

# %% [markdown]
# ## One knapsack subproblem, worked by hand
#
# With $(\beta, u)$ from the start, SUB gives each job profit $\lambda_i S_i(w, p)$. A job whose
# completion time weighs more gets a larger $\lambda_i$ and so more resources. This is the first
# SUB of the iteration, solved exactly.

# %%
step, w1, p1 = subproblem_step(inst, start_w, start_p)
hand_after = step["new_ratio"].sum()
print(
    f"objective: {start['ratio'].sum():,.0f} s at the start -> {hand_after:,.0f} s after one subproblem"
)
step.rename(
    columns={
        "lambda": "λ_i (s²/sample)",
        "speed": "S_i (samples/s)",
        "new_speed": "new S_i (samples/s)",
        "ratio": "N_i/S_i (s)",
        "new_ratio": "new N_i/S_i (s)",
    }
).style.format(
    {
        "λ_i (s²/sample)": "{:.3g}",
        "S_i (samples/s)": "{:,.1f}",
        "new S_i (samples/s)": "{:,.1f}",
        "N_i/S_i (s)": "{:,.0f}",
        "new N_i/S_i (s)": "{:,.0f}",
    }
).hide(axis="index")

# %%
big = int(step["lambda"].idxmax())
show(
    speed_heatmap_figure(
        inst, big, {"start": (1, 1), "after one subproblem": (int(w1[big]), int(p1[big]))}
    )
)

# %% [markdown]
# ## The iteration from the same start: alone, then with the local search
#
# Jong's iteration (`smdlab.solve.smd.sum_of_ratios`, the core of `solve(..., method="smd")`) runs
# from the same all-(1, 1) start. Iteration 0 is the subproblem above, so its objective is the
# hand-worked value. We run it twice: without the local search (`polish=False`) and with it (the
# default). The local search is drawn as its own final point.

# %%
numer = inst.weight * np.array([j.samples for j in jobs])
args = (numer, inst.speed, inst.alpha, inst.gamma, inst.capacity)
alone = sum_of_ratios(*args, start=(start_w, start_p), polish=False)
polished = sum_of_ratios(*args, start=(start_w, start_p), polish=True)
# With every job started, the objective is a sum over jobs of a per-configuration cost: the exact
# optimum and an LP bound of this problem come from a multiple-choice knapsack on the ratios.
ratios = inst.cost  # omega_i d_i(w, p) = N_i / S_i(w, p); +inf beyond a job's caps
exact_all = knapsack_exact(ratios, inst.alpha, inst.gamma, inst.capacity)
bound_all = knapsack_lp_round(ratios, inst.alpha, inst.gamma, inst.capacity).bound
trace = pd.DataFrame(
    {
        "iteration": [r.iteration for r in alone.trace],
        "‖ψ‖": [r.psi_norm for r in alone.trace],
        "objective (s)": [r.objective for r in alone.trace],
        "accepted step σ": [r.step for r in alone.trace],
        "knapsack solves": [r.knapsack_solves for r in alone.trace],
    }
)
print(
    f"iteration 0 objective {trace['objective (s)'][0]:,.0f} s = hand-worked subproblem {hand_after:,.0f} s"
)

last = int(trace["iteration"].max())
fig = go.Figure()
fig.add_scatter(
    x=trace["iteration"],
    y=trace["objective (s)"],
    mode="lines+markers",
    name="iteration alone",
    line={"color": color(0)},
)
fig.add_scatter(
    x=[alone.best_iteration],
    y=[alone.objective],
    mode="markers",
    name="best iterate (returned without polish)",
    marker={"symbol": "circle-open", "size": 16, "color": color(0), "line": {"width": 3}},
)
fig.add_scatter(
    x=[last + 1],
    y=[polished.objective],
    mode="markers",
    name=f"after local search ({polished.polish_moves} move(s))",
    marker={"symbol": "star", "size": 16, "color": color(1)},
)
fig.add_hline(
    y=exact_all.objective,
    line={"color": BOUND_COLORS["exact"], "dash": "dot"},
    annotation_text="exact optimum (every job started)",
)
fig.add_hline(
    y=bound_all,
    line={"color": BOUND_COLORS["lower"], "dash": "dash"},
    annotation_text="LP lower bound (every job started)",
    annotation_position="bottom right",
)
fig.update_layout(
    base_layout(
        title=f"{SMD_LABEL}: objective per iteration, then the local search",
        template=TEMPLATE,
        height=380,
    )
)
fig.update_xaxes(title_text="iteration (last point: local search)", dtick=1)
fig.update_yaxes(title_text="sum of completion times (s)")
show(fig)
trace.style.format({"‖ψ‖": "{:.3f}", "objective (s)": "{:,.0f}", "accepted step σ": "{:.3g}"}).hide(
    axis="index"
)

# %% [markdown]
# ## Why the iteration stopped
#
# The cell below reads the stopping reason from the trace.

# %%
visited = sorted(set(trace["objective (s)"].round(1)))
if alone.converged:
    print(f"converged: ‖ψ‖ fell below the tolerance at iteration {last}")
elif trace["accepted step σ"].iloc[-1] == 0:
    print(
        f"stopped at iteration {last} without converging: no step length σ in (1, 0.5, 0.25, 0.125) "
        f"shrank ‖ψ‖ by the Armijo factor (last ‖ψ‖ {trace['‖ψ‖'].iloc[-1]:.3f})."
    )
    print(
        f"the subproblem's solutions visited only {len(visited)} objective values: "
        + ", ".join(f"{v:,.0f} s" for v in visited)
    )
else:
    print(f"stopped at iteration {last}: the allocation stopped changing")
print(
    f"best iterate: {alone.objective:,.0f} s (iteration {alone.best_iteration}); "
    f"after the local search: {polished.objective:,.0f} s; exact optimum {exact_all.objective:,.0f} s; "
    f"LP bound {bound_all:,.0f} s"
)
print(
    f"the iteration alone is {(alone.objective - exact_all.objective) / exact_all.objective:.2%} above the optimum; "
    f"with the local search {(polished.objective - exact_all.objective) / exact_all.objective:.2%}"
)

# %% [markdown]
# The allocations are discrete, so SUB's solution jumps between a few allocations as
# $(\beta, u)$ moves. The parameter point where ψ = 0 lies *between* them, and no allocation
# reaches it. The Newton steps then circle the fixed point. ‖ψ‖ stops shrinking by the Armijo
# factor, and the iteration ends with the best allocation it saw. The printout above says whether
# that best iterate is optimal. Where it is not, the local search (the star in the figure) closes
# the gap or part of it. The optimum credited to SMD below therefore belongs to iteration **plus**
# local search, not to the iteration alone.
#
# ## The full method: job selection, iteration and local search, against the bounds
#
# `solve(..., method="smd")` adds an outer **job selection** in front of the iteration: which jobs
# start now, chosen by the objective. A job may wait for a larger configuration even when it fits.
# The selection also picks a greedy start instead of all-(1, 1), so its trace starts elsewhere.
# Because jobs may wait, its objective also charges waiting jobs (`docs/solver.md`), so its values
# are not those of the every-job-started problem above. The LP relaxation of this problem bounds
# every allocation from below.

# %%
exact = solve(jobs, cluster, "milp", time_limit=30)
full = {
    "SMD, iteration alone": solve(jobs, cluster, "smd", polish=False),
    "SMD, iteration + local search (default)": solve(jobs, cluster, "smd"),
    "LP relaxation + rounding": solve(jobs, cluster, "lp_round"),
    "exact MILP": exact,
}
lp_bound = full[
    "SMD, iteration + local search (default)"
].lower_bound  # LP relaxation, with every SMD run
show(
    bounds_figure(
        [full["SMD, iteration + local search (default)"], full["LP relaxation + rounding"]], exact
    )
)
pd.DataFrame(
    {
        "method": list(full),
        "objective (s)": [s.objective for s in full.values()],
        "above LP bound": [(s.objective - lp_bound) / s.objective for s in full.values()],
        "above optimum": [(s.objective - exact.objective) / exact.objective for s in full.values()],
        "time (ms)": [s.wall_time_s * 1e3 for s in full.values()],
        "status": [s.status for s in full.values()],
    }
).style.format(
    {
        "objective (s)": "{:,.1f}",
        "above LP bound": "{:.2%}",
        "above optimum": "{:.2%}",
        "time (ms)": "{:,.1f}",
    }
).hide(axis="index")

# %%
show(allocation_figure(full["SMD, iteration + local search (default)"], jobs, cluster))

# %% [markdown]
# ## When SMD pays off: the pooled and the placement-aware problem
#
# SMD exists to be fast with a guarantee, so it pays off where the exact solver is slow and SMD
# stays close to the exact solver's proven bound. The cell below measures both on growing
# instances of two problems:
#
# - **pooled** (P): the capacity of all machines pooled, as above; SMD against the MILP.
# - **placement-aware**: every task on a machine, each machine's capacity respected, and each
#   job's speed the simulator's speed on its placement (rack uplinks, GPU types). SMD is
#   followed by smdlab's placement (on the typed cluster: SMD on pools of one GPU type, our
#   extension, docs/solver.md); the exact model (`smdlab.solve.placement_milp.solve_placed`)
#   chooses configurations and machines together. Two cluster kinds: *flat* (identical servers)
#   and *typed* (half K80, half V100 servers). Both methods are priced the same way: the
#   simulator's speed on the placement each returns.
#
# The sizes are small, so the sweep runs in seconds; each exact call gets 2 s and reports the
# bound it proved by then. Each instance's speed tables are built before either clock. Times are
# CPU seconds (on a shared machine wall time counts other processes too), and the takeaway is
# written from this run's numbers. `benchmarks/bench_placement_exact.py` runs the placement-aware
# problem at sizes where the exact model needs more than 10 s (results in `docs/performance.md`).

# %%
from IPython.display import Markdown, display
from plotly.subplots import make_subplots

from smdlab.solve.payoff import payoff_row
from smdlab.solve.placement_milp import placement_instance
from smdlab.viz.takeaways import benchmark_note, payoff_by_problem

LIMIT = 2.0  # seconds per exact call
rows = []
for n in (8, 32, 128):
    jb, cl = instance(n, seed=n)
    rows.append(payoff_row("pooled", jb, cl, LIMIT) | {"problem": "pooled"})
for kind in ("flat", "typed"):
    for n, m in ((4, 2), (8, 2), (16, 4)):
        jb, cl = placement_instance(kind, n, m)
        rows.append(payoff_row("placement", jb, cl, LIMIT) | {"problem": f"placement, {kind}"})
payoff = pd.DataFrame(rows)
payoff["exact / SMD CPU"] = payoff["exact CPU (s)"] / payoff["SMD CPU (s)"]
table(
    payoff[["problem", "jobs", "machines", "SMD CPU (s)", "exact CPU (s)", "exact status",
            "exact / SMD CPU", "SMD above bound", "proven gap"]],
    decimals={"SMD CPU (s)": 3, "exact CPU (s)": 3},
    formats={"exact / SMD CPU": "{:.1f}x".format, "SMD above bound": lambda g: percent(g, 2),
             "proven gap": lambda g: percent(g, 2)},
)  # fmt: skip

# %%
fig = make_subplots(
    rows=1, cols=2, subplot_titles=("CPU time per decision", "SMD above the exact bound")
)
lines = [  # (column, name, dash, panel): SMD's and the exact model's time, then SMD's gap in %
    ("SMD CPU (s)", SMD_LABEL, "solid", 1),
    ("exact CPU (s)", "exact", "dot", 1),
    ("SMD above bound (%)", "gap", "solid", 2),
]
payoff["SMD above bound (%)"] = 100 * payoff["SMD above bound"]
for k, (problem, df) in enumerate(payoff.groupby("problem", sort=False)):
    for column, name, dash, panel in lines:
        trace = go.Scatter(
            x=df["jobs"],
            y=df[column],
            mode="lines+markers",
            name=f"{name}, {problem}",
            showlegend=panel == 1,
            line={"color": color(k), "dash": dash},
        )
        fig.add_trace(trace, row=1, col=panel)
fig.update_layout(base_layout(title="When SMD pays off", template=TEMPLATE, height=420))
fig.update_xaxes(title_text="jobs", type="log")
fig.update_yaxes(title_text="CPU time (s)", type="log", row=1, col=1)
fig.update_yaxes(title_text="% above the exact bound", row=1, col=2)
show(fig)

# %%
Markdown(payoff_by_problem(payoff))

# %% [markdown]
# The benchmark (`benchmarks/bench_solver.py`, results in `benchmarks/RESULTS.md`, generated by
# `make bench`) times the MILP and the default SMD with repeats. The cell below reads its table
# from that file, so the numbers are the benchmark's, not typed here.

# %%
import re
from pathlib import Path

results = Path("..") / "benchmarks" / "RESULTS.md"
section = results.read_text().split("## bench_solver", 1)[1].split("\n## ", 1)[0]
lines = section[section.index("\n|") :].split("\n\n", 1)[0]  # its first table: the solver runs
cells = [[c.strip() for c in ln.split("|")[1:-1]] for ln in lines.strip().splitlines()]
bench = pd.DataFrame([c for c in cells[1:] if "---" not in c[0]], columns=cells[0])
bench = bench[bench["method"].isin(["milp", "smd/hull/objective-selection"])]
bench = bench.pivot(index="n", columns="method", values="wall (s)").astype(float)
bench.index = bench.index.astype(int).rename("jobs")
bench = bench.sort_index().rename(
    columns={"milp": "MILP wall (s)", "smd/hull/objective-selection": "SMD wall (s)"}
)
bench["MILP / SMD"] = bench["MILP wall (s)"] / bench["SMD wall (s)"]
mode = re.search(r"Mode: (\w+)", results.read_text()).group(1)
display(Markdown(benchmark_note(bench, mode)))
table(
    bench,
    decimals={"MILP wall (s)": 3, "SMD wall (s)": 3},
    formats={"MILP / SMD": "{:.1f}x".format},
)
