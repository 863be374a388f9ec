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
# # 9. GPU sharing: how much two jobs slow each other, and the policies that share
#
# Two training jobs can share one GPU when both fit in its memory; each then runs slower than
# alone. smdlab predicts by how much with a co-location model fitted to Gavel's measurements
# (26 job types on K80, P100 and V100; `data/measurements/README.md`). Each job type has a compute
# demand, a sensitivity, a pressure, a sharing overhead and a memory footprint; a bundled network
# shares a GPU like the Gavel type of the same family and nearest per-GPU batch. Specification and
# validation: `docs/model.md`, "GPU sharing"; the simulator's sharing groups and the policies:
# `docs/simulator.md`, "GPU sharing".
#
# Terms and abbreviations: [docs/glossary.md](../docs/glossary.md).

# %%
import ipywidgets as widgets
import pandas as pd

import smdlab
from smdlab.experiments.config import get_config
from smdlab.experiments.sharing import jct_vs_sharing_degree
from smdlab.model.colocation import (
    default_colocation_model,
    evaluate_colocation,
    gavel_job_type,
    load_gavel_pairs,
    shared_rate_factors,
)
from smdlab.model.profiles import list_profiles
from smdlab.viz.notebook import show, table
from smdlab.viz.sharing import sharing_degree_figure

model = default_colocation_model()
print(f"fitted on every measured pair: {len(model.jobs)} job types, GPU types {model.gpus}")

# %% [markdown]
# ## How good is the model on pairs it never saw?
#
# 20% of the job-type pairs are held out (seed 0), both models are fitted on the rest. MAPE is
# over the co-located rates of held-out pairs that fit; the fit accuracy is the memory call
# (fits / does not fit). The log-additive baseline adds a job's own and its partner's effect.

# %%
ev = evaluate_colocation(seed=0)
held_out = ev[ev["split"] == "holdout"]
table(
    held_out[["model", "mape_pct", "fit_accuracy", "fit_accuracy_single_gpu", "fitting_pairs"]]
    .rename(
        columns={
            "mape_pct": "MAPE (%)",
            "fit_accuracy": "memory call right",
            "fit_accuracy_single_gpu": "memory call right, one GPU",
            "fitting_pairs": "held-out pairs that fit",
        }
    )
    .reset_index(drop=True),
    decimals={"MAPE (%)": 1},
    percent_cols=["memory call right", "memory call right, one GPU"],
)

# %% [markdown]
# ## Pick two networks and a GPU type
#
# Each job trains a bundled network at a batch size on one GPU. The table shows the Gavel type
# each is assumed to share like, the fraction of its solo speed it keeps beside the other, its
# slowdown (solo time / shared time), and whether the pair fits in the GPU's memory. When Gavel
# measured that very pair on that GPU, the measured fraction is shown beside the prediction.

# %%
MEASURED = load_gavel_pairs()
SOLO = model.solo


def measured_fraction(own: str, partner: str, gpu: str) -> float | None:
    """Gavel's measured co-located/solo rate of ``own`` beside ``partner`` (None: not measured)."""
    rows = MEASURED[(MEASURED.gpu_type == gpu) & (MEASURED.scale_factor_a == 1)]
    for a, b, col in ((own, partner, "steps_per_s_a"), (partner, own, "steps_per_s_b")):
        hit = rows[(rows.job_a == a) & (rows.job_b == b)]
        if len(hit):
            rate = float(hit[col].iloc[0])
            return rate / float(SOLO.loc[(gpu, "consolidated", own, 1)]) if rate > 0 else 0.0
    return None


def pair_table(net_a: str, batch_a: int, net_b: str, batch_b: int, gpu: str) -> pd.DataFrame:
    """Predicted fraction of solo speed, slowdown and memory fit of two jobs sharing one GPU."""
    jobs = [
        smdlab.make_job("job A", net_a, 1e6, global_batch=batch_a),
        smdlab.make_job("job B", net_b, 1e6, global_batch=batch_b),
    ]
    types = [gavel_job_type(j) for j in jobs]
    f = shared_rate_factors(types, gpu_type=gpu)
    rows = []
    for i, (job, t) in enumerate(zip(jobs, types, strict=True)):
        m = measured_fraction(t, types[1 - i], gpu)
        rows.append(
            {
                "job": job.name,
                "network": job.profile.network,
                "batch": job.global_batch,
                "shares like (Gavel type)": t,
                "fits together": f is not None,
                "predicted fraction of solo speed": None if f is None else round(float(f[i]), 3),
                "predicted slowdown": None if f is None else round(1 / float(f[i]), 2),
                "measured fraction (Gavel)": None if m is None else round(m, 3),
            }
        )
    return pd.DataFrame(rows).set_index("job")


def show_pair(net_a="resnet50", batch_a=32, net_b="lstm_lm", batch_b=20, gpu="v100") -> None:
    """Print the pair table for the chosen networks, batches and GPU type."""
    print(pair_table(net_a, batch_a, net_b, batch_b, gpu).T.to_string())


networks = list_profiles()
_ = widgets.interact(
    show_pair,
    net_a=widgets.Dropdown(options=networks, value="resnet50", description="network A"),
    batch_a=widgets.IntSlider(32, min=8, max=256, step=8, description="batch A"),
    net_b=widgets.Dropdown(options=networks, value="lstm_lm", description="network B"),
    batch_b=widgets.IntSlider(20, min=8, max=256, step=4, description="batch B"),
    gpu=widgets.Dropdown(options=list(model.gpus), value="v100", description="GPU"),
)

# %% [markdown]
# Without the widgets (for example in a static rendering), the same table for one pair:

# %%
pair_table("resnet50", 128, "bert_base", 32, "p100")

# %% [markdown]
# ## Does sharing pay?
#
# Whether sharing pays depends on how much work two jobs do together on one GPU. The cell below
# measures it on Gavel's pairs (both jobs at scale factor 1, on one GPU, pairs that fit) and
# sets it beside the committed full-size `jct_vs_sharing_degree` figure (notebook 05).

# %%
from pathlib import Path

from IPython.display import Markdown

pairs = MEASURED[
    (MEASURED.scale_factor_a == 1)
    & (MEASURED.scale_factor_b == 1)
    & (MEASURED.placement == "consolidated")
]


def together(row) -> float:
    """The two jobs' co-located rates as fractions of their solo rates, added (NaN: no solo rate)."""
    try:
        a = row.steps_per_s_a / SOLO.loc[(row.gpu_type, "consolidated", row.job_a, 1)]
        b = row.steps_per_s_b / SOLO.loc[(row.gpu_type, "consolidated", row.job_b, 1)]
    except KeyError:
        return float("nan")
    return float(a + b)


combined = pairs.assign(combined=[together(r) for r in pairs.itertuples()])
combined = combined[combined["combined"] > 0]  # pairs that fit in the GPU's memory
median = combined.groupby("gpu_type")["combined"].median()
overall = float(combined["combined"].median())
full = pd.read_csv(Path("..") / "figures" / "jct_vs_sharing_degree.csv")
jct = full.groupby(["label", "sharing_degree"])["mean_jct_s"].mean().unstack() / 3600
alone = float(jct.loc["no sharing", 1])
sharing = [p for p in jct.index if p not in ("no sharing", "tiresias")]
best = {p: float(jct.loc[p, [d for d in jct.columns if d > 1]].min()) for p in sharing}
slower = [p for p, h in best.items() if h > alone]
Markdown(
    f"In Gavel's {len(combined)} measured pairs that fit, two jobs on one GPU together do "
    f"{overall:.2f} times the work of one job alone (median; "
    + ", ".join(f"{g.upper()} {m:.2f}" for g, m in median.items())
    + f"). A shared GPU adds about {overall - 1:.0%} of work, while each of its jobs runs at about "
    f"{overall / 2:.0%} of its solo speed, so a job that shares finishes later unless it would "
    f"otherwise have waited. In the committed figure ({full['seed'].nunique()} seeds), no sharing "
    f"has a mean JCT of {alone:.2f} h; at its best sharing degree (2-4) "
    + ", ".join(f"{p} has {h:.2f} h ({h / alone - 1:+.0%})" for p, h in best.items())
    + f": {len(slower)} of {len(best)} sharing policies are slower than no sharing at every degree."
)

# %% [markdown]
# ## Sharing policies on a small workload
#
# A short run of the `jct_vs_sharing_degree` experiment, smaller than its `tiny` size allows for
# a curve (one seed, 24 online jobs at load 2.0 on 2 machines of 8 GPUs, a GPU holding 1 to 3
# jobs): Gandiva (packing, time-slicing, migration), Horus (lowest predicted combined
# utilisation), SJF-BSBF (best sharing benefit, with gradient accumulation), SJF-FFS (pack when
# possible), Tiresias and no sharing. One seed says little either way; the full-size figure is
# `figures/jct_vs_sharing_degree.png` (notebook 05). "jobs per busy GPU" is the mean number of
# jobs running at once on a busy GPU (time-sliced jobs take turns: they count once together);
# utilisation counts a shared GPU once.

# %%
small = get_config("tiny").replace(online_jobs=24, sharing_degree_values=(1, 2, 3))
runs = jct_vs_sharing_degree(small)
summary = runs.pivot_table(
    index="label", columns="sharing_degree", values=["mean_jct_s", "gpu_sharing"], sort=False
)
short = pd.DataFrame(
    {
        **{f"mean JCT at {d} per GPU (h)": summary["mean_jct_s"][d] / 3600 for d in (1, 2, 3)},
        **{f"jobs per busy GPU at {d}": summary["gpu_sharing"][d] for d in (2, 3)},
    }
).rename_axis("policy")
table(short, decimals=dict.fromkeys(short.columns, 2))

# %%
show(sharing_degree_figure(runs))
