"""Write SMD's sweep table (smdlab.experiments.sweep_table) into docs/performance.md.

The table sits between two marker lines, which this script replaces; the rest of the file is
kept. ``make reproduce`` runs it after regenerating the figures.

    python tools/sweep_table.py [--figures figures] [--doc docs/performance.md]
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from smdlab.experiments.sweep_table import sweep_table

BEGIN = "<!-- sweep-table: begin (tools/sweep_table.py writes this block) -->"
END = "<!-- sweep-table: end -->"


def main() -> None:
    """Replace the marked block of the doc with the table computed from the figures' CSVs."""
    repo = Path(__file__).resolve().parents[1]
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--figures", default=str(repo / "figures"))
    ap.add_argument("--doc", default=str(repo / "docs" / "performance.md"))
    args = ap.parse_args()
    doc = Path(args.doc)
    text = doc.read_text()
    if BEGIN not in text or END not in text:
        raise SystemExit(f"{doc}: marker lines not found ({BEGIN!r} ... {END!r})")
    head, rest = text.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    new = f"{head}{BEGIN}\n{sweep_table(args.figures)}{END}{tail}"
    tmp = doc.with_suffix(".md.tmp")
    tmp.write_text(new)
    os.replace(tmp, doc)


if __name__ == "__main__":
    main()
