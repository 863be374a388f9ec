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

# %%
import ipywidgets as widgets
import pandas as pd

import smdlab
from smdlab.model.pipeline import data_stage_times, saturation_cpu
from smdlab.viz.model import timeline_figure

job = smdlab.make_job("demo", "googlenet", 1e6, pipeline=True)
print(job.pipeline)
print("worker demand:", dict(job.worker_demand))

# %% [markdown]
# ## One slider: CPU cores per worker
#
# Move the slider from 1 core up. At first the **preprocessing** lane (the next batch, prepared
# while this iteration runs) is longer than the GPU's forward and backward passes plus the
# pushes and pulls: the iteration ends when the data is ready (data-bound). Past the saturation
# point the data stage fits inside the iteration and tau stops changing (compute-bound).

# %%
need = saturation_cpu(job, 1, 1)
print(f"cores at which preprocessing stops binding on (1 worker, 1 PS): {need:.1f}")


def show(cores: float = 2.0) -> None:
    """The timeline of one iteration with ``cores`` CPU cores per worker."""
    timeline_figure(job, 1, 1, cpu=cores).show()


widgets.interact(show, cores=widgets.FloatSlider(2.0, min=1.0, max=16.0, step=0.5))

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
            "preprocess_ms": 1e3 * float(cpu),
            "read_ms": 1e3 * float(io),
            "tau_ms": 1e3 * smdlab.iteration_time(job, 1, 1, cpu=cores),
            "speed / layered model": smdlab.speed(job, 1, 1, cpu=cores) / smdlab.speed(plain, 1, 1),
        }
    )
pd.DataFrame(rows)

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
            "mem_gb": mem,
            "cached share": float(job.pipeline.cache_fraction(mem)),
            "read_ms": 1e3 * float(io),
            "tau_ms (64 cores)": 1e3 * smdlab.iteration_time(job, 1, 1, cpu=64, mem_gb=mem),
        }
    )
pd.DataFrame(mem_rows)

# %% [markdown]
# ## Why schedulers care
#
# A cluster with 8 cores per GPU that gives every worker the same share ("GPU-proportional")
# starves GoogLeNet and MobileNetV2 and wastes cores on the text models, which need two. Synergy
# (`synergy_tune`) gives each job its best-case demand where it fits; Muri (`muri_s`, `muri_l`)
# interleaves jobs whose stages use different resources on one GPU set. See
# `docs/multiresource.md` and the figures `jct_vs_cpu_per_gpu` and `muri_jct_vs_load` in
# notebook 05.

# %%
from smdlab.workloads.synthetic import synthetic

cluster = smdlab.Cluster.homogeneous(2, gpu=8, cpu=32, mem_gb=256)
jobs = synthetic(16, cluster, seed=3, load=1.0, gpu_mix={1: 0.6, 2: 0.4})
pd.DataFrame(
    {
        p: smdlab.simulate(jobs, cluster, p, record_history=False).summary["mean_jct"]
        for p in ("gpu_proportional", "synergy_tune")
    },
    index=["mean JCT (s)"],
)
