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
# # 8. The data stage: when CPU and memory, not the GPU, set the pace
#
# Before a GPU can train on a batch, the batch must be read from storage and preprocessed
# (decoded, cropped, augmented) on CPU cores. smdlab's model (`docs/model.md`, "The data stage")
# gives every worker of a job with an input pipeline:
#
# - a **storage read** of `n * sample_mb * (1 - h) / storage_mb_s` seconds per iteration, where
#   `h` is the share of the dataset the worker's spare memory holds as page cache;
# - a **CPU preprocessing** time of `n * cpu_s_per_sample / cores`.
#
# Loader processes prefetch the next batch while the GPU and the network work on this one, so the
# iteration takes the **longest** of the data stage and the layered model's compute and
# communication. With enough cores the data stage hides completely and the speed is exactly the
# layered model's; with too few, the GPU waits for data.
#
# The image networks' CPU cost per image comes from Synergy's profiles (msr-fiddle/synergy, MIT;
# `data/pipelines/README.md`).
#
# Terms and abbreviations: [docs/glossary.md](../docs/glossary.md).

# %%
import ipywidgets as widgets
import pandas as pd

import smdlab
from smdlab.model.pipeline import data_stage_times
from smdlab.model.timing import saturation_cpu
from smdlab.viz.model import timeline_spec
from smdlab.viz.notebook import percent, show, table
from smdlab.widgets.live import figure_widget, sync_figure

job = smdlab.make_job("demo", "googlenet", 1e6, pipeline=True)
pipe = job.pipeline
pd.DataFrame(
    {
        "value": [
            f"{pipe.cpu_s_per_sample * 1e3:.2f} core-ms",
            f"{pipe.sample_mb:.3f} MB",
            f"{pipe.dataset_gb:,.0f} GB",
            f"{pipe.storage_mb_s:,.0f} MB/s",
            f"{pipe.process_mem_gb:.1f} GB",
            ", ".join(f"{k} {v:g}" for k, v in job.worker_demand.items()),
        ]
    },
    index=[
        "preprocessing per sample",
        "read per sample",
        "dataset",
        "storage bandwidth per worker",
        "worker process memory",
        "worker demand (GPU, cores, GB, Gbps)",
    ],
).style.set_caption("GoogLeNet's input pipeline (data/pipelines/README.md)")

# %% [markdown]
# ## One slider: CPU cores per worker
#
# Move the slider from 1 core up. At first the **preprocessing** lane (the next batch, prepared
# while this iteration runs) is longer than the GPU's forward and backward passes plus the
# pushes and pulls: the iteration ends when the data is ready (data-bound). Past the saturation
# point the data stage fits inside the iteration and tau stops changing (compute-bound).

# %%
need = saturation_cpu(job, 1, 1)
print(f"Preprocessing stops binding at {need:.1f} cores per worker (1 worker, 1 PS).")


cores = widgets.FloatSlider(2.0, min=1.0, max=16.0, step=0.5, description="cores / worker")
timeline = figure_widget(timeline_spec(job, 1, 1, cpu=cores.value))
# The slider redraws the figure in place (no Output widget: see CHANGELOG on notebook 08).
cores.observe(
    lambda change: sync_figure(timeline, timeline_spec(job, 1, 1, cpu=change["new"])),
    names="value",
)
widgets.VBox([cores, timeline])

# %% [markdown]
# ## Speed versus cores and memory
#
# Speed never falls as a worker gets more cores or more memory (a property test in
# `tests/test_model_pipeline.py`), and once both suffice it equals the layered model's exactly.

# %%
rows = []
plain = smdlab.make_job("plain", "googlenet", 1e6)
for cores in (1, 2, 4, 8, 12, 16, 24):
    io, cpu = data_stage_times(job, 1, cpu=cores)
    rows.append(
        {
            "cores": cores,
            "preprocessing (ms)": 1e3 * float(cpu),
            "storage read (ms)": 1e3 * float(io),
            "iteration τ (ms)": 1e3 * smdlab.iteration_time(job, 1, 1, cpu=cores),
            "speed / layered model": smdlab.speed(job, 1, 1, cpu=cores) / smdlab.speed(plain, 1, 1),
        }
    )
table(
    pd.DataFrame(rows),
    decimals={"preprocessing (ms)": 1, "storage read (ms)": 1, "iteration τ (ms)": 1},
    formats={"speed / layered model": lambda v: percent(v, 0)},
)

# %% [markdown]
# ## Memory as page cache
#
# A worker whose memory exceeds its own process's holds part of the dataset in the page cache,
# and reads only the rest from storage. With the per-worker storage bandwidth of 500 MB/s a fast
# image network can also become storage-bound when memory is short and cores are many.

# %%
mem_rows = []
for mem in (job.pipeline.process_mem_gb, 20, 50, 100, 150):
    io, _ = data_stage_times(job, 1, cpu=64, mem_gb=mem)
    mem_rows.append(
        {
            "memory per worker (GB)": mem,
            "dataset in page cache": float(job.pipeline.cache_fraction(mem)),
            "storage read (ms)": 1e3 * float(io),
            "iteration τ at 64 cores (ms)": 1e3
            * smdlab.iteration_time(job, 1, 1, cpu=64, mem_gb=mem),
        }
    )
table(
    pd.DataFrame(mem_rows),
    decimals={
        "memory per worker (GB)": 1,
        "storage read (ms)": 1,
        "iteration τ at 64 cores (ms)": 1,
    },
    formats={"dataset in page cache": lambda v: percent(v, 0)},
)

# %% [markdown]
# ## Why schedulers care
#
# A cluster with few cores per GPU (the cell prints how many) that gives every worker the same share ("GPU-proportional")
# starves GoogLeNet and MobileNetV2 and wastes cores on the text models, which need two. Synergy
# (`synergy_tune`) gives each job its best-case demand where it fits; Muri (`muri_s`, `muri_l`)
# interleaves jobs whose stages use different resources on one GPU set. See
# `docs/multiresource.md` and the figures `jct_vs_cpu_per_gpu` and `muri_jct_vs_load` in
# notebook 05.

# %%
from smdlab.workloads.synthetic import synthetic

cluster = smdlab.Cluster.homogeneous(2, gpu=8, cpu=32, mem_gb=256)
jobs = synthetic(16, cluster, seed=3, load=1.0, gpu_mix={1: 0.6, 2: 0.4})
machine = cluster.machines[0]
print(f"{machine.capacity['cpu'] / machine.capacity['gpu']:g} CPU cores per GPU, {len(jobs)} jobs")
pd.DataFrame(
    {
        p: [smdlab.simulate(jobs, cluster, p, record_history=False).summary["mean_jct"] / 3600]
        for p in ("gpu_proportional", "synergy_tune")
    },
    index=["mean JCT (h)"],
).pipe(table, decimals={"gpu_proportional": 2, "synergy_tune": 2})

# %% [markdown]
# ## Where the published gains go
#
# In their authors' settings smdlab reproduces Synergy's and Muri's published gains (Synergy's
# Figure 8 at 9 jobs/h: GPU-proportional / TUNE about 3.7x; Muri's trace3: SRTF / Muri-S about
# 2.3x, Tiresias / Muri-L about 3.9x). The figure `multiresource_ablation` then changes one
# scenario option at a time towards smdlab's default world and measures the gain after each
# step (`docs/multiresource.md`, "Where the gains go"). Here it is drawn from its committed CSV
# (`figures/multiresource_ablation.csv`, made by `smdlab reproduce`), or, where that file is not
# there, recomputed on the test inputs (`SOURCE = "tiny"`: seconds; they only show the data's
# shape, not the published gains).

# %%
from pathlib import Path

from smdlab.experiments import figure, make_figure

COMMITTED = Path("..") / "figures" / "multiresource_ablation.csv"
# "committed" draws the CSV of `smdlab reproduce`; "tiny", "quick", "full" recompute it.
SOURCE = "committed" if COMMITTED.exists() else "tiny"
if SOURCE == "committed":
    ablation = pd.read_csv(COMMITTED)
    fig = make_figure("multiresource_ablation", ablation)
else:
    fig, ablation = figure("multiresource_ablation", SOURCE)
show(fig)  # at the output area's width
ends = ablation.sort_values("step_index").groupby(["system", "baseline", "policy"])["ratio"]
walk = "; ".join(
    f"{system} {base} / {pol}: {first:.2f}x to {last:.2f}x"
    for (system, base, pol), first, last in zip(
        ends.first().index, ends.first(), ends.last(), strict=True
    )
)
ablation.pivot_table(
    index=["system", "step_index", "label"], columns=["baseline", "policy"], values="ratio"
).pipe(table, summary=f"Gain ratio after each step, from the authors' setting to smdlab's: {walk}.")
