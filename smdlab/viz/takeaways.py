"""The notebooks' takeaways, written from the values their cells computed (so they cannot drift).

Each function takes the table a notebook just computed and returns Markdown: a sentence per
finding, every number in it read from the table. A notebook displays the result with
``IPython.display.Markdown``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import cast

import numpy as np
import pandas as pd

from smdlab.errors import InvalidInput


def _require(df: pd.DataFrame, columns: Sequence[str], name: str) -> None:
    missing = [c for c in columns if c not in df.columns]
    if missing:
        raise InvalidInput(f"{name}: missing columns {missing} (has {list(df.columns)})")


def _join(items: Sequence[str]) -> str:
    """'a', 'a and b', 'a, b and c'."""
    items = list(items)
    if len(items) <= 1:
        return "".join(items)
    return ", ".join(items[:-1]) + " and " + items[-1]


def _times(r: float) -> str:
    return f"{r:.1f}x"


def smd_payoff(rows: pd.DataFrame, *, large: float = 2.0) -> str:
    """Where SMD is at least ``large`` times faster than the exact MILP, and at what gap.

    rows: one row per instance size with columns ``jobs``, ``MILP / SMD time`` (a ratio of wall
    times), ``SMD above optimum`` (a share) and ``MILP status``.
    """
    _require(rows, ["jobs", "MILP / SMD time", "SMD above optimum", "MILP status"], "rows")
    if not large > 1:
        raise InvalidInput(f"large: must be above 1, got {large}")
    rows = rows.sort_values("jobs")
    ratio = rows["MILP / SMD time"].to_numpy(dtype=float)
    sizes = rows["jobs"].astype(int).to_list()
    run = ", ".join(f"{_times(r)} at {n:,}" for n, r in zip(sizes, ratio, strict=True))
    pays = rows[rows["MILP / SMD time"] >= large]
    out = [f"**Takeaway.** MILP time over SMD time, by number of jobs: {run}."]
    if pays.empty:
        out.append(
            f"SMD is not {large:g}x faster than the exact MILP at any size here, so on these "
            f"instances the MILP is the better choice: it is exact and about as fast."
        )
    else:
        where = _join([f"{int(n):,}" for n in pays["jobs"]])
        gaps = _join([f"{g:.2%}" for g in pays["SMD above optimum"]])
        out.append(
            f"SMD is at least {large:g}x faster at {where} jobs, where it lands {gaps} above the "
            f"optimum: that is where it pays off."
        )
        slower = rows[rows["MILP / SMD time"] < 1]
        if len(slower):
            out.append(
                "The MILP is faster at "
                + _join([f"{int(n):,}" for n in slower["jobs"]])
                + " jobs, so the ratio does not grow steadily with size: branch-and-bound time "
                "depends on how hard each instance is, not only on its size."
            )
    stopped = rows[rows["MILP status"] != "optimal"]
    if len(stopped):
        out.append(
            "The MILP stopped without proving optimality at "
            + _join([f"{int(n):,}" for n in stopped["jobs"]])
            + " jobs, so its time there is the time limit and the gap is to its best solution."
        )
    return " ".join(out)


def benchmark_note(bench: pd.DataFrame, mode: str) -> str:
    """What the benchmark's MILP/SMD table covers, and how it compares with the notebook's run.

    bench: indexed by number of jobs, with a ``MILP / SMD`` column; mode: the benchmark's mode
    (``quick`` or ``full``).
    """
    _require(bench, ["MILP / SMD"], "bench")
    if bench.empty:
        raise InvalidInput("bench: the benchmark table has no rows")
    sizes = [int(n) for n in bench.index]
    r = bench["MILP / SMD"].to_numpy(dtype=float)
    return (
        f"The benchmark ran in **{mode}** mode over {sizes[0]:,}-{sizes[-1]:,} jobs, on its own "
        f"instances: MILP/SMD from {_times(float(r.min()))} to {_times(float(r.max()))}. Its "
        f"instances are not the notebook's, so its ratios say where SMD is cheap on that family, "
        f"not on the instances above."
    )


def reuse_effect(
    chromosomes: Mapping[str, Sequence[int]], without_h: Sequence[float], with_h: Sequence[float]
) -> str:
    """What GPU reuse does to each chromosome's makespan (hours), and why where it does nothing.

    chromosomes: name -> the batch number of each job; without_h, with_h: makespans in hours.
    """
    if not len(chromosomes) == len(without_h) == len(with_h):
        raise InvalidInput("chromosomes: need one makespan without and one with reuse for each")
    out = []
    for (name, genes), a, b in zip(chromosomes.items(), without_h, with_h, strict=True):
        batches = pd.Series(list(genes)).value_counts()
        if b < a - 0.05:
            out.append(
                f"GPU reuse shortens *{name}* from {a:.1f} h to {b:.1f} h ({b / a - 1:+.1%})."
            )
            continue
        if len(batches) == 1:
            why = "a single batch has no next batch whose jobs could pre-train"
        elif batches.max() == 1:
            why = "a job alone in its batch gets every GPU, so no GPU idles before the batch ends"
        else:
            why = "no job of a later batch gains from the GPUs that idle"
        out.append(f"GPU reuse leaves *{name}* at {a:.1f} h: {why}.")
    return " ".join(out)


def learned_against_committed(
    run: pd.DataFrame, committed: pd.DataFrame, *, policy: str = "dl2", baseline: str = "drf"
) -> str:
    """Every policy's mean JCT relative to ``baseline``, in this run against the committed figure.

    Lists ``policy`` per workload, then every (policy, workload) whose change against the
    baseline has the opposite sign in the two. run, committed: one row per (workload, seed,
    policy) with ``mean_jct_s`` (``smdlab.experiments.learned.learned_vs_heuristics``; the
    committed one read from its CSV).
    """
    for df, name in ((run, "run"), (committed, "committed")):
        _require(df, ["workload", "policy", "mean_jct_s"], name)

    def change(df: pd.DataFrame) -> pd.DataFrame:
        mean = df.groupby(["policy", "workload"], sort=False)["mean_jct_s"].mean().unstack()
        if policy not in mean.index or baseline not in mean.index:
            raise InvalidInput(f"policy: {policy!r} and {baseline!r} must both have been run")
        return mean / mean.loc[baseline] - 1

    here, there = change(run), change(committed)
    workloads = [w for w in here.columns if w in there.columns]
    if not workloads:
        raise InvalidInput("run: no workload in common with the committed figure")
    seeds_here = run.groupby("workload")["seed"].nunique() if "seed" in run else None
    seeds_there = committed.groupby("workload")["seed"].nunique() if "seed" in committed else None

    def seeds(counts: pd.Series | None, workload: str) -> str:
        return "" if counts is None else f" ({int(counts[workload])} seed(s))"

    def at(df: pd.DataFrame, p: str, w: str) -> float:
        return float(cast(float, df.loc[p, w]))

    def opposite(a: float, b: float) -> bool:
        return bool(np.sign(round(a, 3)) * np.sign(round(b, 3)) < 0)

    lines = [f"Mean JCT of {policy} relative to {baseline}, this run against the committed figure:"]
    for w in workloads:
        a, b = at(here, policy, w), at(there, policy, w)
        verdict = "**the opposite direction**" if opposite(a, b) else "the same direction"
        lines.append(
            f"- {w}: {a:+.1%} here{seeds(seeds_here, w)}, {b:+.1%} in the committed figure"
            f"{seeds(seeds_there, w)}: {verdict}."
        )
    pairs = [
        (p, w)
        for p in here.index
        if p != baseline and p in there.index
        for w in workloads
        if np.isfinite(at(here, p, w)) and np.isfinite(at(there, p, w))
    ]
    flipped = [(p, w) for p, w in pairs if opposite(at(here, p, w), at(there, p, w))]
    lines.append(
        f"\nOver every policy, {len(flipped)} of {len(pairs)} comparisons with {baseline} point the "
        "other way in this run"
        + (
            ": "
            + "; ".join(
                f"{p} on {w} ({at(here, p, w):+.1%} here, {at(there, p, w):+.1%} committed)"
                for p, w in flipped
            )
            + ". This run has fewer seeds; where they disagree, the committed figure's mean over "
            "its seeds is the better estimate."
            if flipped
            else "."
        )
    )
    return "\n".join(lines)


def consolidation_errors(validation: pd.DataFrame, *, nic_gbps: float = 10.0) -> str:
    """Why the layered model's consolidation and GPU-type errors are what they are, with numbers.

    validation: ``smdlab.experiments.consolidation.consolidation_validation`` (one row per point:
    ``quantity``, ``family``, ``gpu_type``, ``nic_gbps``, ``measured``, ``predicted``, ``error_pct``).
    """
    _require(
        validation,
        ["quantity", "family", "gpu_type", "nic_gbps", "measured", "predicted", "error_pct"],
        "validation",
    )
    spread = validation[
        (validation["quantity"] == "consolidation") & (validation["nic_gbps"] == nic_gbps)
    ]
    types = validation[validation["quantity"] == "gpu_type"]
    if spread.empty or types.empty:
        raise InvalidInput(
            f"validation: needs consolidation points at {nic_gbps:g} Gbps and GPU-type points"
        )
    out = [
        f"**Reading the errors.** Over the {len(spread)} consolidation points at {nic_gbps:g} Gbps "
        f"the MAPE is {spread['error_pct'].abs().mean():.1f}%, over the {len(types)} GPU-type "
        f"points {types['error_pct'].abs().mean():.1f}%."
    ]
    above = spread[spread["measured"] > 1]
    if len(above):
        out.append(
            f"{len(above)} of the {len(spread)} measured spread/consolidated ratios are above 1 "
            "(spread faster than consolidated), which a model of links alone cannot produce: "
            "GPUs on one server also share its PCIe switches, CPU and input pipeline."
        )
    comm = spread[spread["family"] != "ResNet-50"]
    if len(comm):
        below = float((comm["predicted"] < comm["measured"]).mean())
        out.append(
            f"For the communication-heavy families ({_join(sorted(comm['family'].unique()))}) the "
            f"model predicts a larger loss than measured at {below:.0%} of their points: with the "
            f"assumed {nic_gbps:g} Gbps NIC, spreading costs more than it did in the measurements."
        )
    k80 = types[types["gpu_type"] == "k80"]
    if len(k80):
        by_family = k80.groupby("family")[["measured", "predicted"]].median()
        out.append(
            "On a K80 relative to a V100 the datasheet peaks predict "
            + _join([f"{r.predicted:.2f} for {f}" for f, r in by_family.iterrows()])
            + "; measured: "
            + _join([f"{r.measured:.2f}" for _, r in by_family.iterrows()])
            + " (medians). One achieved fraction of peak per layer kind, shared by every GPU "
            "type, cannot follow a type that is slower on some kinds of layer than others."
        )
    return " ".join(out)


def training_curve(curve: pd.DataFrame, config: Mapping[str, float], *, window: int = 50) -> str:
    """How a learning curve moves around the end of its warm-up, and why it is noisy, with numbers.

    curve: one agent's training curve (``update``, ``mean_jct``: the mean JCT of that update's
    training episodes); config: the run's settings (``train.json``), with ``warmup`` (updates of
    imitation before reinforcement learning) and ``train_seeds`` (job sets episodes draw from).
    """
    _require(curve, ["update", "mean_jct"], "curve")
    for key in ("warmup", "train_seeds"):
        if key not in config:
            raise InvalidInput(f"config: missing {key!r} (has {sorted(config)})")
    warmup, seeds = int(config["warmup"]), int(config["train_seeds"])
    jct = curve.sort_values("update").set_index("update")["mean_jct"].astype(float)
    before = jct[(jct.index >= warmup - window) & (jct.index < warmup)]
    after = jct[(jct.index >= warmup) & (jct.index < warmup + window)]
    last = jct.iloc[-window:]
    if before.empty or after.empty:
        raise InvalidInput(f"curve: needs {window} updates on both sides of the warm-up ({warmup})")
    sd = float(jct.std())
    return (
        f"Per-update mean JCT runs from {jct.min():,.0f} s to {jct.max():,.0f} s (standard "
        f"deviation {sd:,.0f} s, {sd / jct.mean():.0%} of the mean): each update's episodes run "
        f"on job sets drawn from {seeds} seeds, so the curve moves with the job sets as well as "
        f"with the policy. Mean over the first {window} updates {jct.iloc[:window].mean():,.0f} s, "
        f"over the last {window} warm-up updates {before.mean():,.0f} s, over "
        f"the first {window} reinforcement-learning updates {after.mean():,.0f} s, over the last "
        f"{window} {last.mean():,.0f} s ({last.mean() / before.mean() - 1:+.0%} against the end of "
        "the warm-up)."
    )


def slo_tradeoff(df: pd.DataFrame, *, reference: str = "chronus") -> str:
    """Where deadline misses start, which policy misses least and which serves best-effort jobs best.

    df: the ``slo_vs_load`` table (one row per load, window and policy; columns ``load``,
    ``policy``, ``label``, ``hard_miss_rate``, ``best_effort_mean_jct_s``); means over windows.
    reference: the policy the others are compared with at the highest load.
    """
    _require(df, ["load", "policy", "label", "hard_miss_rate", "best_effort_mean_jct_s"], "df")
    if reference not in set(df["policy"]):
        raise InvalidInput(f"reference: {reference!r} is not a policy of df")
    from smdlab.viz.deadlines import SLO_LABELS

    means = df.groupby(["load", "policy"])[["hard_miss_rate", "best_effort_mean_jct_s"]].mean()
    label = {p: SLO_LABELS.get(p, lab) for p, lab in zip(df["policy"], df["label"], strict=False)}
    out = ["**Takeaway.**"]
    missed = means["hard_miss_rate"].groupby(level="load").max()
    clean = [float(cast(float, v)) for v, m in missed.items() if m == 0]
    first = [float(cast(float, v)) for v, m in missed.items() if m > 0]
    if not first:
        out.append("No policy misses a first deadline at any load here.")
        return " ".join(out)
    if clean:
        out.append(
            f"Up to offered load {max(clean):g} every policy meets every first deadline; misses "
            f"start by load {min(first):g}."
        )
    top = float(max(means.index.get_level_values("load")))
    at = means.xs(top, level="load")
    miss, be = at["hard_miss_rate"], at["best_effort_mean_jct_s"] / 3600
    low, fast = str(miss.idxmin()), str(be.idxmin())
    out.append(
        f"At load {top:g}, {label[low]} misses the fewest first deadlines ({miss[low]:.1%}) and "
        f"{label[fast]} gives best-effort jobs the shortest mean JCT ({be[fast]:.2f} h)"
        + ("." if low != fast else ": one policy wins both.")
    )
    ref_miss, ref_be = float(miss[reference]), float(be[reference])
    parts = []
    for p in at.index:
        if p == reference:
            continue
        m = f"{miss[p] / ref_miss:.2f}x" if ref_miss > 0 else f"{miss[p]:.1%} (against none)"
        parts.append(f"{label[p]} {m} and {be[p] / ref_be:.2f}x")
    out.append(
        f"Against {label[reference]} ({ref_miss:.1%} missed, best-effort JCT {ref_be:.2f} h), "
        f"the others' hard miss rate and best-effort JCT: {_join(parts)}."
    )
    return " ".join(out)


def payoff_by_problem(rows: pd.DataFrame, *, faster: float = 2.0, within: float = 0.02) -> str:
    """Per problem, where SMD pays off: ``faster`` times less CPU than the exact model and
    within ``within`` of its proven bound.

    rows: one row per problem and size with columns ``problem``, ``jobs``, ``SMD CPU (s)``,
    ``exact CPU (s)``, ``exact status`` and ``SMD above bound`` (a share; ``payoff_row``).
    """
    cols = ["problem", "jobs", "SMD CPU (s)", "exact CPU (s)", "exact status", "SMD above bound"]
    _require(rows, cols, "rows")
    if rows.empty:
        raise InvalidInput("rows: the benchmark table has no rows")
    if not faster > 1 or not 0 < within < 1:
        raise InvalidInput(f"faster must be > 1 and within in (0, 1), got {faster}, {within}")
    out = ["**Takeaway.**"]
    for problem, df in rows.groupby("problem", sort=False):
        df = df.sort_values("jobs")
        ratio = (df["exact CPU (s)"] / df["SMD CPU (s)"]).to_numpy(dtype=float)
        gaps = df["SMD above bound"].to_numpy(dtype=float)
        sizes = df["jobs"].astype(int).to_list()
        run = ", ".join(
            f"{_times(r)} at {n:,} ({g:.2%} above the bound)"
            for n, r, g in zip(sizes, ratio, gaps, strict=True)
        )
        pays = [
            n for n, r, g in zip(sizes, ratio, gaps, strict=True) if r >= faster and g <= within
        ]
        verdict = (
            f"it pays off at {_join([f'{n:,}' for n in pays])} jobs"
            if pays
            else f"it does not pay off at any size here (never both {faster:g}x faster and "
            f"within {within:.0%} of the bound)"
        )
        stopped = df[df["exact status"] != "optimal"]["jobs"].astype(int).to_list()
        limit = (
            f" The exact model stopped at its time limit at {_join([f'{n:,}' for n in stopped])} "
            "jobs: its time there is the limit, and the bound is what it had proven by then."
            if stopped
            else ""
        )
        out.append(
            f"*{problem}*: exact CPU time over SMD's, by number of jobs: {run}; {verdict}.{limit}"
        )
    return " ".join(out)
