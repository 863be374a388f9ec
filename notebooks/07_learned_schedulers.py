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
# # 7. Learned schedulers: DL2 on the simulator
#
# DL2 (Peng et al., TPDS 2021) learns its scheduling policy: a neural network that, every
# 1,200 s slot, rebuilds every job's allocation one task at a time. smdlab wraps its simulator in
# a Gymnasium environment (`smdlab.rl.make_env`), so the same jobs, cluster and timing model serve
# learned and hand-written policies alike. This notebook steps through one slot, watches a short
# training run, and compares the shipped learned policies with the heuristics. The environment
# and the agent are specified in `docs/rl.md`; the measured results are in `EXPERIMENTS.md`,
# "Learned schedulers: results".
#
# Terms and abbreviations: [docs/glossary.md](../docs/glossary.md).

# %%
import tempfile
from pathlib import Path

import pandas as pd

from smdlab.rl import make_env
from smdlab.viz.notebook import show

env = make_env()
obs, info = env.reset(seed=0, options={"workload_seed": 1000})
print(f"observation: {obs.shape[0]} values ({env.window} jobs x {env.n_features} features)")
print(f"actions: {env.action_space.n} (3 per window job + 'end the slot')")
print(f"valid now: {int(info['action_mask'].sum())}")

# %% [markdown]
# ## One slot, step by step
#
# Each window job starts the slot with one worker+PS bundle. Action `3k + c` then adds a worker
# (`c = 0`), a PS (`c = 1`) or a bundle (`c = 2`) to window job `k`; the last action ends the slot
# and the simulator runs to the next boundary. Here DRF chooses (`env.expert_action()`: a bundle
# to the job of smallest dominant share), the teacher of DL2's supervised warm-up.

# %%
kinds = ("worker", "PS", "bundle")
rows = []
while True:
    a = env.expert_action()
    if a == env.end_action:
        break
    k, c = divmod(a, 3)
    env.step(a)
    rows.append({"job": env.builder.jobs[k].name, "adds": kinds[c]})
obs, reward, term, trunc, info = env.step(env.end_action)
steps = pd.DataFrame(rows)
print(f"{len(steps)} tasks added after the first bundles; reward of the slot: {reward:.3f}")
steps.value_counts().rename("times").reset_index().head(8)

# %% [markdown]
# The reward is the sum over jobs of the epochs done in the slot over each job's total epochs,
# so over an episode the rewards add up to the number of jobs completed.
#
# ## Watch a policy learn
#
# A short run of `smdlab train dl2` (here through its Python function): a supervised warm-up that
# imitates DRF, then MaskablePPO from sb3-contrib. The curve is the mean JCT of every training
# episode, by PPO rollout. The shipped weights came from a longer run (`data/dl2/README.md`); this
# one fits a notebook's time budget, so expect the imitation to be rough.

# %%
try:
    import torch  # noqa: F401  (the [rl] extra)

    HAVE_TORCH = True
except ImportError:
    HAVE_TORCH = False

from smdlab.experiments.learned import learning_curves
from smdlab.viz.learned import learning_curves_figure

if HAVE_TORCH:
    from smdlab.rl.library import PPOConfig, train

    out = Path(tempfile.mkdtemp(prefix="dl2_"))
    config = PPOConfig(
        agent="dl2", warmup=300, timesteps=512, n_envs=2, n_steps=64, batch_size=64, epochs=2
    )
    summary = train(out, config)
    print(
        f"{summary['warmup_steps']} warm-up steps and {summary['timesteps']} PPO steps "
        f"in {summary['seconds']:.1f} s"
    )
    curve = pd.read_csv(out / "curve.csv").assign(agent="dl2")
    show(learning_curves_figure(curve, title="A short DL2 run: MaskablePPO after the warm-up"))
else:
    print("PyTorch is not installed (pip install -e '.[rl]'): the short run is skipped")

# %% [markdown]
# The shipped weights' own training log (`data/dl2/curve.csv`), the same figure as
# `smdlab reproduce --only learning_curves`:

# %%
show(learning_curves_figure(learning_curves()))

# %% [markdown]
# Read the DeepRM-MM and SCHED² curves with care: both are training curves, not held-out
# measures. The cell below reads each run's log and measures how far the curve moves from one
# update to the next and between the phases of training. The held-out comparison is the next
# section.

# %%
import json

from IPython.display import Markdown

from smdlab.paths import data_dir
from smdlab.viz.takeaways import training_curve

shipped = learning_curves()
notes = []
for agent in ("deeprm", "sched2"):
    run = json.loads((data_dir() / agent / "train.json").read_text())
    part = shipped[shipped["agent"] == agent]
    # one point per teacher episode of the warm-up, then one per PPO rollout (its episodes' mean)
    teacher = part.loc[part["kind"] == "warmup", "mean_jct"].to_numpy()
    ppo = part[part["kind"] == "train"].groupby("update")["mean_jct"].mean().to_numpy()
    curve = pd.DataFrame({"update": range(len(teacher) + len(ppo)), "mean_jct": [*teacher, *ppo]})
    window = min(10, len(teacher), len(ppo))
    summary = run["summary"]
    notes.append(
        f"- **{agent}** ({summary['warmup_steps']:,} warm-up steps imitating a heuristic in "
        f"{len(teacher)} episodes, then {summary['timesteps']:,} steps of MaskablePPO in "
        f"{len(ppo)} rollouts; an update here is a teacher episode, then a rollout): "
        + training_curve(curve, {**run["config"], "warmup": len(teacher)}, window=window)
    )
Markdown("\n".join(notes))

# %% [markdown]
# ## Learned against heuristics
#
# The shipped learned policies run like any other policy (`smdlab simulate --policy dl2`). Here
# they meet DRF, Optimus, Tiresias and SMD on one held-out workload seed and on a small Philly
# window (the `tiny` configuration of `smdlab reproduce --only learned_vs_heuristics`; the
# committed figure in `figures/` uses ten seeds). DL2 acts only at slot boundaries, so new jobs
# wait for the next slot; the hatched bar is DRF run the same way.

# %%
from smdlab.experiments.learned import learned_vs_heuristics
from smdlab.viz.learned import learned_vs_heuristics_figure
from smdlab.viz.notebook import percent, table
from smdlab.viz.takeaways import learned_against_committed

df = learned_vs_heuristics("tiny")
show(learned_vs_heuristics_figure(df))
jct = df.pivot_table(index="policy", columns="workload", values="mean_jct_s", sort=False)
change = (jct / jct.loc["drf"] - 1).rename_axis(columns="mean JCT vs DRF, per workload")
table(change, formats=dict.fromkeys(change.columns, lambda c: ("+" if c > 0 else "") + percent(c)))

# %% [markdown]
# One seed is a small sample: the cell below sets this run beside the committed figure
# (`figures/learned_vs_heuristics.csv`, held-out seeds 1000-1009), workload by workload.

# %%
committed = pd.read_csv(Path("..") / "figures" / "learned_vs_heuristics.csv")
Markdown(learned_against_committed(df, committed))

# %% [markdown]
# To train your own agent: `smdlab train dl2 --steps N --out DIR`, then
# `smdlab simulate --policy dl2 ...` with `get_policy("dl2", weights="DIR/weights.npz")`.
