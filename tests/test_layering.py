"""Dependencies flow one way: model -> solve -> policies -> sim -> experiments/viz/widgets -> CLI."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "smdlab"
# Rank of each layer; a module may import only from its own rank or below.
RANK = {
    "errors": 0,
    "paths": 0,
    "caches": 0,
    "execution": 0,
    "model": 1,
    "testing": 1,
    "solve": 2,
    "policies": 3,
    "workloads": 3,
    "sim": 4,
    "viz": 5,
    "experiments": 6,
    "widgets": 6,
    "rl": 6,
    "cli": 7,
}


def _layer(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if parts[0] == "smdlab" and len(parts) > 1 else None


def _imports(path: Path) -> list[tuple[int, str]]:
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out.append((node.lineno, node.module))
    return out


FILES = sorted(p for p in PACKAGE.rglob("*.py") if p.parent != PACKAGE or p.name != "__init__.py")


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_no_upward_imports(path):
    rel = path.relative_to(PACKAGE)
    own = rel.parts[0].removesuffix(".py")
    assert own in RANK, f"{rel}: add its layer to RANK"
    for line, module in _imports(path):
        target = _layer(module)
        if target is not None:
            assert target in RANK, f"{rel}:{line} imports unknown layer {module}"
            assert RANK[target] <= RANK[own], (
                f"{rel}:{line} ({own}) imports {module} ({target}), a higher layer"
            )
