"""Per-policy agreement of smdlab with Muri's own simulator on one trace, and the gain ratios.

    python tools/muri_parity.py --ref DIR [--trace data/muri/trace3.csv] [--policies srtf,...]

DIR holds the authors' simulator's per-job outputs, ``<trace stem>__<policy>.csv`` with at least
``job_id`` and ``jct_s`` (run outside this repository; docs/multiresource.md says how). smdlab
runs the trace in the ``muri_n8g8`` scenario (``smdlab.experiments.muri_parity``). Prints one
Markdown row per policy (share of jobs within 5 % of the authors' JCT, both mean JCTs, smdlab's
wall seconds), then SRTF / Muri-S and Tiresias / Muri-L from both simulators.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def main() -> int:
    """Print the parity table of one trace."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ref", required=True, help="folder of the authors' per-job CSVs")
    ap.add_argument("--trace", default=str(REPO / "data" / "muri" / "trace3.csv"))
    ap.add_argument("--policies", default="srtf,muri_s,tiresias,muri_l")
    ap.add_argument("--tol", type=float, default=0.05, help="relative JCT tolerance per job")
    args = ap.parse_args()
    from smdlab.errors import InvalidInput
    from smdlab.experiments.muri_parity import parity_table

    try:
        table = parity_table(args.trace, args.ref, args.policies.split(","), args.tol)
    except InvalidInput as exc:
        print(f"muri_parity: error: {exc}", file=sys.stderr)
        return 2
    within = f"within_{args.tol:g}"
    print(f"trace {Path(args.trace).stem}, {int(table['jobs'].iloc[0])} jobs")
    print(
        "| policy | authors' `--schedule` | jobs within "
        f"{args.tol:.0%} | mean JCT smdlab (s) | mean JCT authors (s) | mean error | smdlab wall (s) |"
    )
    print("|---|---|---|---|---|---|---|")
    for d in table.to_dict("records"):
        print(
            f"| {d['policy']} | `{d['authors']}` | {d[within]:.1%} | {d['mean_jct_smdlab_s']:,.0f} "
            f"| {d['mean_jct_authors_s']:,.0f} | {d['mean_error']:+.2%} | {d['wall_s']:.1f} |"
        )
    means = table.set_index("policy")
    for a, b in (("srtf", "muri_s"), ("tiresias", "muri_l")):
        if a in means.index and b in means.index:
            ours = means.at[a, "mean_jct_smdlab_s"] / means.at[b, "mean_jct_smdlab_s"]
            ref = means.at[a, "mean_jct_authors_s"] / means.at[b, "mean_jct_authors_s"]
            print(f"{a}/{b}: smdlab {ours:.3f}x, authors {ref:.3f}x ({ours / ref - 1:+.1%})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
