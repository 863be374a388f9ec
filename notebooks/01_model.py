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

# %%
from smdlab import MODES, iteration_time, make_job, speed
from smdlab.viz.model import overlap_figure, ps_needed_table, ratio_figure, timeline_figure

job = make_job("resnet50-demo", "resnet50", samples=1.28e6 * 90)  # 90 ImageNet epochs, V100 times
job.profile.to_frame().head(8)

# %% [markdown]
# ## One iteration, layer by layer
#
# With **wait-free backpropagation** (`wfbp`, the default overlap mode) the gradient of a layer is
# pushed as soon as that layer's backward pass ends, while the backward pass of the layers below
# continues; each pull follows its push on the other direction of the full-duplex link, and the
# next forward pass starts when every pull has arrived. Hover over a bar to see its layer.

# %%
W, P = 4, 2
timeline_figure(job, W, P, "wfbp").show()
print(
    f"iteration time on {W} workers and {P} PSs: {iteration_time(job, W, P, 'wfbp') * 1e3:.1f} ms"
)

# %% [markdown]
# ## What the overlap buys
#
# `sequential` mode waits for the whole backward pass before the first push and for every pull
# before the next iteration; `wfbp` hides most of the pushes behind the backward pass. Same job,
# same allocation:

# %%
overlap_figure(job, W, P).show()
for mode in MODES:
    print(
        f"{mode:>14}: tau = {iteration_time(job, W, P, mode) * 1e3:7.1f} ms, "
        f"speed = {speed(job, W, P, mode):8.1f} samples/s"
    )

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
ratio_figure(fast).show()
needed = ps_needed_table(fast)
needed[needed["workers"].isin([4, 8, 12, 16])].pivot(index="workers", columns="mode", values="ps")

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
from smdlab.model.speed_fit import holdout_report

report = holdout_report(seed=0, test_fraction=0.3)  # warns that failed runs (speed 0) are dropped
print(*report.attrs["notes"], sep="\n")
print(
    "mean MAPE over the 8 networks (%):", {k: round(v, 2) for k, v in report.attrs["mean"].items()}
)
report[["model", "n_train", "n_test", "mape_layered", "mape_optimus"]].round(2)

# %% [markdown]
# The fitted parameters per network (units in `smdlab.model.speed_fit.LAYERED_PARAMS`):

# %%
from smdlab.model.speed_fit import DEFAULT_LAYERED_FREE, LAYERED_PARAMS

print({k: LAYERED_PARAMS[k].unit for k in DEFAULT_LAYERED_FREE})
report[["model", *DEFAULT_LAYERED_FREE]].round(3)

# %% [markdown]
# Predicted against measured speed on the held-out points: on the diagonal a prediction is exact.

# %%
import pandas as pd
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
fig
