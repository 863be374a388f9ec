"""Size targets of the package's architecture, read from its source (ast); the import graph is
checked in tests/test_layering.py."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "smdlab"
FILES = sorted(PACKAGE.rglob("*.py"))
MAX_CLASS_LINES = 400
MAX_SIMULATOR_LINES = 500


def test_no_class_over_400_lines():
    big = []
    for path in FILES:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef):
                lines = (node.end_lineno or node.lineno) - node.lineno + 1
                if lines > MAX_CLASS_LINES:
                    big.append(f"{path.relative_to(PACKAGE)}:{node.lineno} {node.name} ({lines})")
    assert not big, f"classes over {MAX_CLASS_LINES} lines: {', '.join(big)}"


def test_simulator_module_is_short():
    lines = len((PACKAGE / "sim" / "simulator.py").read_text(encoding="utf-8").splitlines())
    assert lines < MAX_SIMULATOR_LINES, f"smdlab/sim/simulator.py has {lines} lines"
