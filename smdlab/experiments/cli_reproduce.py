"""Arguments and action of ``smdlab reproduce`` (registered in ``smdlab.cli.COMMANDS``).

Kept free of heavy imports: building the parser must stay fast for every subcommand.
"""

from __future__ import annotations

import argparse
import sys

HELP = "regenerate the paper-style figures: PNG, SVG and the CSV of each figure's data"


def _csv_names(text: str) -> list[str]:
    items = [t.strip() for t in text.split(",") if t.strip()]
    if not items:
        raise argparse.ArgumentTypeError(f"expected a comma-separated list, got {text!r}")
    return items


def add_arguments(p: argparse.ArgumentParser) -> None:
    """Declare the options of ``smdlab reproduce``."""
    level = p.add_mutually_exclusive_group()
    level.add_argument(
        "--quick",
        action="store_true",
        help="fewer sweep points and seeds (every figure, in about a minute on 2 cores)",
    )
    # Seconds-long sizes for the test suite; not a documented level.
    level.add_argument("--tiny", action="store_true", help=argparse.SUPPRESS)
    p.add_argument(
        "--out", metavar="DIR", default="figures", help="output folder (default: figures)"
    )
    p.add_argument(
        "--force", action="store_true", help="overwrite files in DIR that smdlab did not write"
    )
    p.add_argument(
        "--only",
        type=_csv_names,
        metavar="NAME[,NAME...]",
        help="make only these figures (see --list)",
    )
    p.add_argument(
        "--formats",
        type=_csv_names,
        metavar="FMT[,FMT...]",
        default=["png", "svg", "csv"],
        help="files per figure among png, svg, pdf, csv (default: png,svg,csv)",
    )
    p.add_argument(
        "--workers",
        type=int,
        metavar="N",
        help="worker processes for the experiments (default: up to 2)",
    )
    p.add_argument(
        "--execution",
        metavar="{natural,non_elastic,preemptive,elastic}",
        help="execution mode: each policy's own (natural, the default) or one for all",
    )
    p.add_argument("--baselines", action=_Removed, nargs="?", help=argparse.SUPPRESS)
    p.add_argument(
        "--demands",
        metavar="{per_network,uniform}",
        help="per-task demands of the batch jobs (default per_network)",
    )
    p.add_argument(
        "--recompute",
        action="store_true",
        help="compute every figure again (default: skip a figure whose CSV smdlab wrote from "
        "the same configuration, source and data)",
    )
    p.add_argument("--list", action="store_true", help="list the figures and exit")


class _Removed(argparse.Action):
    """``--baselines`` (removed in 0.2 with smdlab's earlier ports): a usage error saying so."""

    def __call__(self, parser, namespace, values, option_string=None) -> None:
        parser.error(
            f"{option_string} was removed in 0.2: Optimus, DRF and Tetris run as their sources "
            "define them (smdlab's earlier ports are gone); drop the flag"
        )


def run(args: argparse.Namespace) -> int:
    """Run ``smdlab reproduce``; returns the exit status (an SmdlabError propagates to the CLI: exit 2)."""
    from smdlab.experiments.reproduce import FIGURES, reproduce

    if args.list:
        for name, spec in FIGURES.items():
            print(f"{name:20s} {spec.title}")
        return 0
    config = "tiny" if args.tiny else "quick" if args.quick else "full"
    written = reproduce(
        args.out,
        config,
        only=args.only,
        formats=args.formats,
        force=args.force,
        workers=args.workers,
        execution=args.execution,
        demands=args.demands,
        recompute=args.recompute,
    )
    for path in written:
        print(path)
    sys.stdout.flush()
    return 0
