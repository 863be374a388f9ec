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
# # 1. The layered model of one training iteration
#
# smdlab schedules data-parallel DNN training jobs on the parameter-server (PS) architecture. How
# fast a job trains on `w` workers and `p` PSs comes from a **layered analytical model**: every layer
# has a forward and a backward time per sample and a number of parameter bytes; one iteration is
# the forward pass, the backward pass, the push of every layer's gradient to the PSs and the pull
# of its new parameters. The model is smdlab's reconstruction of the one in Yu et al. (INFOCOM
# 2021), written down in `docs/model.md`; results in this notebook come from **the reconstructed
# model**.
#
# This notebook shows one iteration's timeline, how overlapping communication with computation
# changes it, how that changes the number of PSs a worker needs, and how well the model predicts
# measured training speeds.
#
# Terms and abbreviations: [docs/glossary.md](../docs/glossary.md).

# %%
import pandas as pd

from smdlab import MODES, iteration_time, make_job, speed
from smdlab.viz.model import overlap_figure, ps_needed_table, ratio_figure, timeline_figure
from smdlab.viz.notebook import show, table

job = make_job("resnet50-demo", "resnet50", samples=1.28e6 * 90)  # 90 ImageNet epochs, V100 times
layers = job.profile.to_frame()
table(
    pd.DataFrame(
        {
            "layer": layers["layer"],
            "kind": layers["kind"],
            "forward (µs per sample)": layers["forward_s"] * 1e6,
            "backward (µs per sample)": layers["backward_s"] * 1e6,
            "parameters (KB)": layers["param_bytes"] / 1e3,
        }
    ).head(8),
    decimals={"forward (µs per sample)": 3, "backward (µs per sample)": 3, "parameters (KB)": 1},
    summary=f"The first 8 of {len(layers)} layers of {job.profile.network}, input side first",
)

# %% [markdown]
# ## One iteration, layer by layer
#
# With **wait-free backpropagation** (`wfbp`, the default overlap mode) the gradient of a layer is
# pushed as soon as that layer's backward pass ends, while the backward pass of the layers below
# continues; each pull follows its push on the other direction of the full-duplex link, and the
# next forward pass starts when every pull has arrived. Hover over a bar to see its layer.

# %%
W, P = 4, 2
show(timeline_figure(job, W, P, "wfbp"))
print(
    f"iteration time on {W} workers and {P} PSs: {iteration_time(job, W, P, 'wfbp') * 1e3:.1f} ms"
)

# %% [markdown]
# ## The equations behind the timeline
#
# The model (`docs/model.md`) in symbols. A job on $w$ workers and $p$ PSs with a global batch
# of $M$ samples gives each worker $M/w$ samples. Layer $l$ has forward and backward times
# $f_l, b_l$ per sample and $s_l$ parameter bytes; a worker's NIC share is $B_w$ and a PS's
# $B_{ps}$ (bytes/s).
#
# **Push and pull.** A worker sends the $s_l$ bytes of layer $l$'s gradient through its own NIC,
# and each PS receives $w\,s_l/p$ bytes through its NIC; the slower side sets the time of one
# push, and a pull (the new parameters, the same size) takes as long:
#
# $$ c_l = s_l \max\left(\frac{1}{B_w},\; \frac{w}{p\,B_{ps}}\right) + \mathit{lat},
# \qquad u_l = \mathit{upd}\cdot s_l\,\frac{w}{p} \quad\text{(the PS update)} $$
#
# **Iteration time.** With $F = \frac{M}{w}\sum_l f_l$ and $B = \frac{M}{w}\sum_l b_l$:
#
# $$ \tau_{\text{sequential}} = F + B + \sum_l \left(2 c_l + u_l\right) $$
#
# With wfbp, the backward pass of layer $l$ ends at $T_b(l)$, its push at $P(l)$ and its pull
# at $Q(l)$; layers are pushed from the last ($L$) to the first, with $P(L+1) = Q(L+1) = 0$:
#
# $$ T_b(l) = F + \frac{M}{w}\sum_{j \ge l} b_j, \qquad
# P(l) = \max\bigl(P(l+1),\, T_b(l)\bigr) + c_l, \qquad
# Q(l) = \max\bigl(Q(l+1),\, P(l) + u_l\bigr) + c_l, \qquad
# \tau_{\text{wfbp}} = Q(1) $$
#
# The cell below computes these formulas by hand with numpy and sets them beside the library's
# `iteration_time`.

# %%
import numpy as np

cs = job.global_batch / W  # samples per worker
f, b, s = job.profile.forward_s * cs, job.profile.backward_s * cs, job.profile.param_bytes
c = s * np.maximum(1 / job.worker_bw_bytes, W / (P * job.ps_bw_bytes)) + job.latency_s
u = job.profile.update_s_per_byte * s * W / P
F, B = f.sum(), b.sum()
tau_sequential = F + B + (2 * c + u).sum()
T_b = F + np.cumsum(b[::-1])[::-1]  # end of each layer's backward pass
push_end = pull_end = 0.0
for l in reversed(range(len(f))):  # the last layer's gradient is ready first
    push_end = max(push_end, T_b[l]) + c[l]
    pull_end = max(pull_end, push_end + u[l]) + c[l]
by_hand = {"sequential": tau_sequential, "wfbp": pull_end}
table(
    pd.DataFrame(
        {
            "mode": list(by_hand),
            "τ by hand (ms)": [t * 1e3 for t in by_hand.values()],
            "τ from iteration_time (ms)": [iteration_time(job, W, P, m) * 1e3 for m in by_hand],
            "F + B (ms)": [(F + B) * 1e3] * 2,
            "Σ push + pull (ms)": [2 * c.sum() * 1e3] * 2,
        }
    ),
    decimals={
        "τ by hand (ms)": 3,
        "τ from iteration_time (ms)": 3,
        "F + B (ms)": 3,
        "Σ push + pull (ms)": 3,
    },
)

# %% [markdown]
# ## What the overlap buys: the three overlap modes
#
# - `sequential` waits for the whole backward pass before the first push, and for every pull
#   before the next iteration.
# - `wfbp` (wait-free backpropagation) pushes each layer's gradient as soon as its backward pass
#   ends, so most pushes hide behind the backward pass.
# - `wfbp_prefetch` is `wfbp` plus **prefetching** of the next forward pass. Layer $l$'s forward
#   pass in the next iteration starts as soon as layer $l$'s pull and layer $l-1$'s forward pass
#   are done, instead of waiting for every pull. Pulls are served lowest layer first (as P3 and
#   ByteScheduler do), so the first layers' parameters arrive first. Iterations then overlap, and
#   $\tau$ is the period of the steady state (`docs/model.md`).
#
# Same job, same allocation, all three modes. The prefetch panel draws wfbp's bars (one iteration
# on its own) with prefetch's shorter period marked.

# %%
import pandas as pd

show(overlap_figure(job, W, P, modes=MODES))
pd.DataFrame(
    {
        "mode": list(MODES),
        "τ (ms)": [iteration_time(job, W, P, m) * 1e3 for m in MODES],
        "speed (samples/s)": [speed(job, W, P, m) for m in MODES],
    }
).style.format({"τ (ms)": "{:.1f}", "speed (samples/s)": "{:,.0f}"}).hide(axis="index")

# %% [markdown]
# ## Overlap changes how many PSs a worker needs
#
# Each PS receives `w / p` of every gradient, so PSs relieve the PS side of the network. When the
# communication hides behind the backward pass, fewer PSs are enough: below, a job on a faster
# network (each task reserves 100 Gbps) and, for each worker count, the fewest PSs that reach 97%
# of the best speed at that worker count.

# %%
fast_nic = {"gpu": 1, "cpu": 4, "mem_gb": 16, "bw_gbps": 100}
fast = make_job(
    "resnet50-100G",
    "resnet50",
    samples=1.28e6 * 90,
    worker_demand=fast_nic,
    ps_demand={**fast_nic, "gpu": 0},
)
show(ratio_figure(fast))
needed = ps_needed_table(fast)
table(
    needed[needed["workers"].isin([4, 8, 12, 16])]
    .pivot(index="workers", columns="mode", values="ps")
    .rename_axis(index="workers", columns="fewest PSs for 97% of the best speed, per mode")
)

# %% [markdown]
# **The 16-worker row.** At 16 workers, `wfbp` needs as many PSs as `sequential`. Each PS
# receives $w/p$ shares of every gradient, so the PS side grows with $w$. At 16 workers it takes
# longer than the backward pass can hide, and every extra PS still helps. The overlap still pays,
# but as speed rather than as fewer PSs. The cell below measures both effects at 16 workers.

# %%
rows16 = []
for m in MODES:
    best = speed(fast, 16, 16, m)
    rows16.append(
        {
            "mode": m,
            "speed at 16 PSs (samples/s)": best,
            "with 8 PSs (share of that)": speed(fast, 16, 8, m) / best,
            "with 12 PSs (share of that)": speed(fast, 16, 12, m) / best,
        }
    )
pd.DataFrame(rows16).style.format(
    {
        "speed at 16 PSs (samples/s)": "{:,.0f}",
        "with 8 PSs (share of that)": "{:.0%}",
        "with 12 PSs (share of that)": "{:.0%}",
    }
).hide(axis="index")

# %% [markdown]
# ## Validation against measurements
#
# Does the layered model predict real training speeds? DL2 (Peng et al., TPDS 2021) published
# measured synchronous PS training speeds of 8 networks on MXNet for many (PS, worker) counts
# (`data/measurements/`). For every network we fit, on a seeded 70% of its measurements, the
# layered model with five physical parameters (compute speed, the bandwidth the job's workers
# share, PS aggregation and update cost, a per-iteration overhead) and Optimus' five-coefficient
# form `tau = a*M/w + b + c*w/p + d*w + e*p`, and compare their mean absolute percentage error
# (MAPE) on the other 30%. `docs/model.md` explains the parameters, the batch convention and
# the fitting.

# %%
import warnings

from smdlab.model.speed_fit import holdout_report

with warnings.catch_warnings():
    # holdout_report warns that failed runs (speed 0) are dropped; the note is printed below
    warnings.simplefilter("ignore", UserWarning)
    report = holdout_report(seed=0, test_fraction=0.3)
print(*report.attrs["notes"], sep="\n")
mean = report.attrs["mean"]
print(
    f"mean MAPE over the 8 networks: layered {mean['mape_layered']:.1f}%, "
    f"Optimus {mean['mape_optimus']:.1f}%"
)
report[["model", "n_train", "n_test", "mape_layered", "mape_optimus"]].rename(
    columns={
        "n_train": "fit points",
        "n_test": "held-out points",
        "mape_layered": "layered MAPE (%)",
        "mape_optimus": "Optimus MAPE (%)",
    }
).style.format(precision=1).hide(axis="index")

# %% [markdown]
# The fitted parameters per network, units in the headers
# (`smdlab.model.speed_fit.LAYERED_PARAMS`):

# %%
from smdlab.model.speed_fit import DEFAULT_LAYERED_FREE, LAYERED_PARAMS

headers = {k: f"{k} ({LAYERED_PARAMS[k].unit})" for k in DEFAULT_LAYERED_FREE}
params = report[["model", *DEFAULT_LAYERED_FREE]]
at_bound = [
    f"{row.model}: {k}"
    for row in params.itertuples()
    for k in DEFAULT_LAYERED_FREE
    if getattr(row, k) <= 1.01 * LAYERED_PARAMS[k].lower
]
print("parameters at their lower bound:", ", ".join(at_bound) or "none")
far = params[(params["compute_scale"] < 0.5) | (params["compute_scale"] > 2)]
print(
    "compute_scale outside 0.5-2x:",
    ", ".join(f"{m} {c:.2f}x" for m, c in zip(far["model"], far["compute_scale"])) or "none",
)
params.rename(columns=headers).style.format(precision=3).hide(axis="index")

# %% [markdown]
# **Reading the fit.** A parameter at its lower bound (shown as 0.000) is one the measurements
# do not need. For those networks a PS update cost adds nothing that the fabric bandwidth and
# the per-iteration overhead do not already explain, so the fit switches it off. `compute_scale`
# multiplies the profile's per-sample V100 compute times. DL2's runs used other GPUs, MXNet, and
# their own batch convention. A scale far from 1 (for example resnet-50's, printed above) says
# the profile's times do not match that setup. It is a calibration, not a claim about the
# hardware. The error that matters is the held-out MAPE above.

# %% [markdown]
# Predicted against measured speed on the held-out points: on the diagonal a prediction is exact.

# %%
import plotly.express as px

from smdlab.model.speed_fit import fit_speed_form, holdout_split, load_measurements
from smdlab.viz.style import TEMPLATE

data = load_measurements()
data = data[data["total_speed"] > 0]  # failed runs
train, test = holdout_split(data, seed=0, test_fraction=0.3)
points = []
for form in ("layered", "optimus"):
    fit = fit_speed_form(train, form)
    points.append(test.assign(form=form, predicted=fit.predict(test)))
points = pd.concat(points, ignore_index=True)
fig = px.scatter(
    points,
    x="total_speed",
    y="predicted",
    color="model",
    facet_col="form",
    log_x=True,
    log_y=True,
    hover_data=["num_workers", "num_ps"],
    template=TEMPLATE,
    labels={
        "total_speed": "measured speed (samples/s)",
        "predicted": "predicted speed (samples/s)",
    },
    title="Held-out measurements (DL2, MXNet): predicted vs measured speed",
)
lo, hi = (
    points[["total_speed", "predicted"]].min().min(),
    points[["total_speed", "predicted"]].max().max(),
)
for col in (1, 2):
    fig.add_scatter(
        x=[lo, hi],
        y=[lo, hi],
        mode="lines",
        line=dict(color="grey", dash="dot"),
        showlegend=False,
        hoverinfo="skip",
        row=1,
        col=col,
    )
show(fig)
