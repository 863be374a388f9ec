"""Write every notebook (01 model, 02 SMD step by step, 03 explorer; 04 and 05 from build_more_notebooks.py).

The cells live here as Python lists so reviews read plain text; the .ipynb files are generated.
Run ``python notebooks/build_notebooks.py`` after editing a cell; ``--check`` exits 1 if a notebook
on disk differs from what this script would write (the test suite runs it). Notebook 01 includes
the model-validation cells of ``notebooks/_validation_cells.py`` (written with smdlab.model.speed_fit).
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

HERE = Path(__file__).resolve().parent
KERNEL = {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"}


def _nb(cells: list) -> nbformat.NotebookNode:
    nb = new_notebook(
        cells=cells, metadata={"kernelspec": KERNEL, "language_info": {"name": "python"}}
    )
    for i, cell in enumerate(
        nb.cells
    ):  # stable ids: an unchanged notebook regenerates byte for byte
        cell["id"] = f"cell-{i:02d}"
    return nb


def md(text: str):
    """A markdown cell (leading/trailing blank lines dropped)."""
    return new_markdown_cell(text.strip("\n"))


def code(text: str):
    """A code cell (leading/trailing blank lines dropped)."""
    return new_code_cell(text.strip("\n"))


def _sibling(name: str):
    """Load a module of this folder by file (the generator runs as a script, not a package)."""
    spec = importlib.util.spec_from_file_location(name, HERE / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def validation_cells() -> list:
    """The validation section of notebook 01, from ``_validation_cells.py``."""
    return [
        md(src) if kind == "markdown" else code(src)
        for kind, src in _sibling("_validation_cells").CELLS
    ]


MODEL = _nb(
    [
        md("""
# 1. The layered model of one training iteration

smdlab schedules data-parallel DNN training jobs on the parameter-server (PS) architecture. How
fast a job trains on `w` workers and `p` PSs comes from a **layered analytical model**: every layer
has a forward and a backward time per sample and a number of parameter bytes; one iteration is
the forward pass, the backward pass, the push of every layer's gradient to the PSs and the pull
of its new parameters. The model is smdlab's reconstruction of the one in Yu et al. (INFOCOM
2021), written down in `docs/model.md`; results in this notebook come from **the reconstructed
model**.

This notebook shows one iteration's timeline, how overlapping communication with computation
changes it, how that changes the number of PSs a worker needs, and how well the model predicts
measured training speeds.
"""),
        code("""
from smdlab import make_job, iteration_time, speed, MODES
from smdlab.viz.model import overlap_figure, ps_needed_table, ratio_figure, timeline_figure

job = make_job("resnet50-demo", "resnet50", samples=1.28e6 * 90)  # 90 ImageNet epochs, V100 times
job.profile.to_frame().head(8)
"""),
        md("""
## One iteration, layer by layer

With **wait-free backpropagation** (`wfbp`, the default overlap mode) the gradient of a layer is
pushed as soon as that layer's backward pass ends, while the backward pass of the layers below
continues; each pull follows its push on the other direction of the full-duplex link, and the
next forward pass starts when every pull has arrived. Hover over a bar to see its layer.
"""),
        code("""
W, P = 4, 2
timeline_figure(job, W, P, "wfbp").show()
print(f"iteration time on {W} workers and {P} PSs: {iteration_time(job, W, P, 'wfbp') * 1e3:.1f} ms")
"""),
        md("""
## What the overlap buys

`sequential` mode waits for the whole backward pass before the first push and for every pull
before the next iteration; `wfbp` hides most of the pushes behind the backward pass. Same job,
same allocation:
"""),
        code("""
overlap_figure(job, W, P).show()
for mode in MODES:
    print(f"{mode:>14}: tau = {iteration_time(job, W, P, mode) * 1e3:7.1f} ms, "
          f"speed = {speed(job, W, P, mode):8.1f} samples/s")
"""),
        md("""
## Overlap changes how many PSs a worker needs

Each PS receives `w / p` of every gradient, so PSs relieve the PS side of the network. When the
communication hides behind the backward pass, fewer PSs are enough: below, a job on a faster
network (each task reserves 100 Gbps) and, for each worker count, the fewest PSs that reach 97%
of the best speed at that worker count.
"""),
        code("""
fast_nic = {"gpu": 1, "cpu": 4, "mem_gb": 16, "bw_gbps": 100}
fast = make_job("resnet50-100G", "resnet50", samples=1.28e6 * 90, worker_demand=fast_nic,
                ps_demand={**fast_nic, "gpu": 0})
ratio_figure(fast).show()
needed = ps_needed_table(fast)
needed[needed["workers"].isin([4, 8, 12, 16])].pivot(index="workers", columns="mode", values="ps")
"""),
        *validation_cells(),
    ]
)


SMD = _nb(
    [
        md("""
# 2. SMD step by step: a sum of ratios, decomposed into knapsacks

At a decision point the scheduler gives each job `w_i` workers and `p_i` PSs so that the total
(weighted) job completion time is smallest without exceeding the cluster's capacity. A job's
completion time is its work `N_i` divided by its speed `D_i(w_i, p_i)`, so the objective is a
**sum of ratios**. SMD (Yu et al., INFOCOM 2021) attacks it with Jong's parametric method: fix
parameters (beta, u), solve a **multiple-choice multi-dimensional knapsack** (the subproblem),
update the parameters by a Newton step, repeat. Everything below runs **the reconstructed SMD
model** (`docs/solver.md`); the exact MILP and the LP relaxation are the yardsticks.

The jobs here are small synthetic ones (random layer profiles, random NIC bandwidths per task,
`smdlab.testing.random_job`, seeded), because jobs whose tasks all demand the same resources
make the problem too easy to show a gap; notebook 3 uses the bundled real networks.
"""),
        code("""
import numpy as np

from smdlab import Cluster
from smdlab.solve import build_instance, solve
from smdlab.testing import random_job
from smdlab.viz.decomposition import ratio_table, speed_heatmap_figure, subproblem_step
from smdlab.viz.solution import allocation_figure, bounds_figure, smd_trace_figure


def instance(n, seed):
    \"\"\"n seeded jobs with random layer profiles and per-task demands, on a pooled cluster sized to them.\"\"\"
    rng = np.random.default_rng(seed)
    jobs = [random_job(rng, f"job{i}") for i in range(n)]
    cluster = Cluster.pooled(("gpu", "cpu", "bw_gbps"), gpu=2 * n, cpu=6.7 * n, bw_gbps=43 * n)
    return jobs, cluster


jobs, cluster = instance(6, seed=4)
inst = build_instance(jobs, cluster, cluster.capacity_vector, "wfbp")
print(cluster)
for j in jobs:
    print(j, dict(j.worker_demand))
"""),
        md("""
## The sum of ratios

Start with every job on one worker and one PS. Each row is one ratio `N_i / D_i`: the job's work
(samples times its weight) over its speed, i.e. its completion time in seconds. Jong's
parameters at this point are `beta_i = N_i / D_i` and `u_i = 1 / D_i`.
"""),
        code("""
start_w, start_p = np.ones(inst.n, dtype=int), np.ones(inst.n, dtype=int)
start = ratio_table(inst, start_w, start_p)
print("every job fits on one worker and one PS:", not inst.allow_defer)
print(f"objective at the start: {start['ratio'].sum():,.0f} s")
start
"""),
        md("""
## One knapsack subproblem

With (beta, u) fixed, the subproblem maximises `sum_i lambda_i * S_i(w_i, p_i)` with
`lambda_i = u_i * beta_i`: each job offers one configuration `(w, p)` with profit
`lambda_i * speed` and weight "its workers' and PSs' resources", and the capacity is the
cluster's. Solved exactly here; a job whose completion time weighs more gets a larger lambda
and so more resources.
"""),
        code("""
step, w1, p1 = subproblem_step(inst, start_w, start_p)
print(f"objective after one subproblem: {step['new_ratio'].sum():,.0f} s")
step
"""),
        code("""
big = int(step["lambda"].idxmax())
speed_heatmap_figure(inst, big, {"start": (1, 1), "after one subproblem": (int(w1[big]), int(p1[big]))}).show()
"""),
        md("""
## The iteration converging

`solve(..., method="smd")` runs the whole method: outer job selection (which jobs start now; all
of them when every job fits on one worker and one PS), a start allocation, then damped Newton
steps on (beta, u), each solving one subproblem. The trace records `||psi||` (how far the
parameters are from a fixed point) and the true objective of each iterate; the result is the
best iterate.
"""),
        code("""
smd = solve(jobs, cluster, "smd")
exact = solve(jobs, cluster, "milp", time_limit=30)
smd_trace_figure(smd, exact).show()
smd.trace_frame()
"""),
        md("""
## The bound closing, against the exact optimum

The LP relaxation of the configuration MILP bounds every allocation from below. The gap between
SMD's objective and that bound is reported with every run; where the exact MILP solves, it shows
how far from optimal SMD really is.
"""),
        code("""
lp_round = solve(jobs, cluster, "lp_round")
bounds_figure([smd, lp_round], exact).show()
lp_bound = smd.lower_bound  # the LP relaxation's value, computed with every SMD run
print(f"LP lower bound: {lp_bound:12,.1f} s")
for s in (smd, lp_round, exact):
    print(f"{s.method:>9}: objective {s.objective:12,.1f} s, {(s.objective - lp_bound) / s.objective:7.3%} above "
          f"the LP bound, {s.wall_time_s * 1e3:7.1f} ms, status {s.status}")
"""),
        code("""
allocation_figure(smd, jobs, cluster).show()
"""),
        md("""
## Larger instances

The same comparison as the job count grows (the cluster grows with it): SMD's gap to the exact
optimum, the LP bound's distance below it, and both methods' times, measured here.
`benchmarks/` runs the full-size comparison.
"""),
        code("""
import pandas as pd

rows = []
for n in (4, 8, 16, 32):
    jb, cl = instance(n, seed=n)
    a, b = solve(jb, cl, "smd"), solve(jb, cl, "milp", time_limit=30)
    rows.append({"jobs": n, "smd": a.objective, "milp": b.objective, "milp status": b.status,
                 "smd above optimum": (a.objective - b.objective) / b.objective,
                 "optimum above LP bound": (b.objective - a.lower_bound) / b.objective,
                 "smd ms": a.wall_time_s * 1e3, "milp ms": b.wall_time_s * 1e3})
pd.DataFrame(rows)
"""),
    ]
)


EXPLORER = _nb(
    [
        md("""
# 3. The live explorer

Change the cluster (machines, machine shape, the NIC bandwidth each task gets), the job mix
(which bundled networks, how many jobs), one network's layer profile (device, compute and
parameter scales, communication-to-computation ratio), the overlap mode, the batch convention
and the solver method, and watch three outputs follow:

- the **allocation** (workers and PSs per job; each job's share of every resource),
- the **JCT bounds**: LP lower bound, the chosen method's result and the exact MILP optimum,
- the **per-layer timeline** of one iteration of the job chosen under "Layer profile".

The allocation comes from the fast path (SMD of **the reconstructed model**, or LP + rounding),
computed inside the control's callback. The exact MILP runs in a background thread with a short
time limit; an hourglass shows while it runs, and its point is drawn hollow when it stopped at
the limit without proving optimality. Results of a change that was overtaken by a newer one are
discarded. `make dashboard` serves this notebook as a Voila dashboard.
"""),
        code("""
from smdlab.widgets import explorer

app = explorer()
app
"""),
        md("""
The app can be driven from Python as well: every control is an attribute (`app.machines`,
`app.bandwidth`, `app.mode`, ...), so `app.machines.value = 6` has the same effect as moving the
slider, and `app.wait()` blocks until the background MILP is done. The allocation shown:
"""),
        code("""
app.shown_solution.to_frame()
"""),
        md("""
## Policies side by side

`smdlab.widgets.compare()` is the companion app: one workload (the default scenario's synthetic
job mix, scaled down to stay interactive) scheduled by each policy, with load, cluster size and
job count as controls, every simulation on a background thread, JCT distributions, a summary
table and utilisation over time. Run `compare()` in a cell of its own to open it; notebook 4
compares the policies on the full scenarios. (It is not opened here: each plotly FigureWidget
carries plotly.js with it, so this dashboard stays at the explorer's three.)
"""),
    ]
)

NOTEBOOKS = {
    "01_model.ipynb": MODEL,
    "02_smd_step_by_step.ipynb": SMD,
    "03_explorer.ipynb": EXPLORER,
}
# 04 policies, 05 paper figures: (kind, source) pairs, as in _validation_cells.py
NOTEBOOKS.update(
    (name, _nb([md(src) if kind == "markdown" else code(src) for kind, src in cells]))
    for name, cells in _sibling("build_more_notebooks").NOTEBOOKS.items()
)


def render(nb: nbformat.NotebookNode) -> str:
    """The notebook as the text written to disk."""
    nbformat.validate(nb)
    return nbformat.writes(nb) + "\n"


def main(argv: list[str]) -> int:
    """Write the notebooks, or with ``--check`` report whether the files on disk are current."""
    check = "--check" in argv
    stale = []
    for name, nb in NOTEBOOKS.items():
        path = HERE / name
        text = render(nb)
        if check:
            if not path.exists() or path.read_text(encoding="utf-8") != text:
                stale.append(name)
        else:
            path.write_text(text, encoding="utf-8")
            print(f"wrote {path}")
    if stale:
        print(
            f"out of date: {', '.join(stale)} (run python notebooks/build_notebooks.py)",
            file=sys.stderr,
        )
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
