"""Dependencies flow one way: model -> solve -> policies -> sim -> experiments/viz/widgets -> CLI.

Rules checked over the import graph of the package (read with ``ast``, nothing imported):

- A module imports only from its own rank or below (``RANK``). A module's rank is that of its
  most specific entry: ``rl.networks`` before ``rl``. The pure modules of ``smdlab.rl`` (the
  agents' state builders, network and weights) rank with the policies, because the learned
  policies run them; the rest of ``rl`` (environments, training, evaluation) drives the
  simulator and ranks above it.
- Importing a module runs its packages' ``__init__``: so a package's ``__init__`` imports, at
  module level, nothing above the lowest rank of a module inside it (``smdlab.rl`` loads its
  environments on first use).
- No import cycle, counting imports inside functions too (deferring an import into a function
  hides a cycle, it does not remove it); imports under ``if TYPE_CHECKING`` do not count.
- ``smdlab/policies/`` holds only the contract (``CONTRACT``); every family of policies is a
  subpackage, and a family's private modules (``_name``) are imported only inside that family.
"""

from __future__ import annotations

import ast
import functools
import subprocess
import sys
from pathlib import Path

import networkx as nx
import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "smdlab"
# Rank of each layer (or named module); a module may import only from its own rank or below.
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
    # the pure learning machinery the learned policies use: no simulator, gymnasium or torch
    "rl.networks": 3,
    "rl.weights": 3,
    "rl.slot_builder": 3,
    "rl.placement_builder": 3,
    "sim": 4,
    "viz": 5,
    "experiments": 6,
    "widgets": 6,
    "rl": 6,
    "cli": 7,
}
# The policy contract and the shared stages; everything else in policies/ is a family subpackage.
CONTRACT = {"__init__", "base", "registry", "toolkit", "check"}
FAMILIES = {
    "ps",
    "allreduce",
    "multiresource",
    "sharing",
    "heterogeneity",
    "learned",
    "deadline",
    "network",
    "storage",
    "batch",
}


def _name(path: Path) -> str:
    """Dotted module name of a file in the package (a package's ``__init__`` is the package)."""
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


FILES = sorted(PACKAGE.rglob("*.py"))
MODULES = {_name(p): p for p in FILES}


def _rank(module: str) -> int | None:
    """Rank of ``smdlab.x.y...``: its most specific entry in ``RANK`` (None: not in a layer)."""
    parts = module.split(".")[1:]
    for k in range(len(parts), 0, -1):
        rank = RANK.get(".".join(parts[:k]))
        if rank is not None:
            return rank
    return None


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _targets(node: ast.Import | ast.ImportFrom, module: str, is_pkg: bool) -> list[str]:
    """The package modules an import statement names (a submodule where it is one)."""
    if isinstance(node, ast.Import):
        return [a.name for a in node.names]
    base = node.module or ""
    if node.level:  # relative: resolved against the importing module's package
        pkg = module.split(".")
        pkg = pkg if is_pkg else pkg[:-1]
        pkg = pkg[: len(pkg) - (node.level - 1)]
        base = ".".join([*pkg, *([base] if base else [])])
    out = []
    for a in node.names:
        sub = f"{base}.{a.name}"
        out.append(sub if sub in MODULES else base)
    return out


@functools.cache
def _imports(
    path: Path, *, functions: bool = True, type_checking: bool = True
) -> list[tuple[int, str]]:
    """(line, imported module) of a file's imports of the package: with those inside functions
    or not, with those under ``if TYPE_CHECKING`` or not."""
    module = _name(path)
    is_pkg = path.name == "__init__.py"
    out: list[tuple[int, str]] = []

    def visit(nodes: list[ast.stmt]) -> None:
        for node in nodes:
            if isinstance(node, ast.Import | ast.ImportFrom):
                out.extend((node.lineno, t) for t in _targets(node, module, is_pkg))
            elif not functions and isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            elif not type_checking and isinstance(node, ast.If) and _is_type_checking(node):
                visit(node.orelse)
            else:
                for field in ("body", "orelse", "finalbody", "handlers"):
                    child = getattr(node, field, None)
                    if isinstance(child, list):
                        visit([c for c in child if isinstance(c, ast.stmt | ast.ExceptHandler)])
                if isinstance(node, ast.ExceptHandler):
                    visit(node.body)

    visit(ast.parse(path.read_text(encoding="utf-8")).body)
    return [(line, m) for line, m in out if m.split(".")[0] == "smdlab"]


LAYERED = [p for p in FILES if p != PACKAGE / "__init__.py"]


@pytest.mark.parametrize("path", LAYERED, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_no_upward_imports(path):
    rel = path.relative_to(PACKAGE)
    own = _rank(_name(path))
    assert own is not None, f"{rel}: add its layer to RANK"
    for line, module in _imports(path):
        target = _rank(module)
        assert target is not None, f"{rel}:{line} imports unknown layer {module}"
        assert target <= own, f"{rel}:{line} (rank {own}) imports {module} (rank {target}), higher"


PACKAGES = [p for p in LAYERED if p.name == "__init__.py"]


@pytest.mark.parametrize("path", PACKAGES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_package_init_imports_nothing_above_its_lowest_module(path):
    pkg = _name(path)
    inside = [_rank(m) for m in MODULES if m.startswith(pkg + ".")]
    lowest = min([r for r in inside if r is not None], default=_rank(pkg))
    assert lowest is not None
    for line, module in _imports(path, functions=False, type_checking=False):
        target = _rank(module)
        assert target is not None and target <= lowest, (
            f"{path.relative_to(PACKAGE)}:{line} imports {module} at module level; a module of "
            f"rank {lowest} inside the package would load it (import it on first use instead)"
        )


def test_no_import_cycle():
    graph = nx.DiGraph()
    graph.add_nodes_from(MODULES)
    for module, path in MODULES.items():
        for _, target in _imports(path, type_checking=False):
            if target in MODULES and target != module:
                graph.add_edge(module, target)
    cycles = [sorted(c) for c in nx.strongly_connected_components(graph) if len(c) > 1]
    assert not cycles, "import cycles: " + "; ".join(" <-> ".join(c) for c in cycles)


def test_policies_holds_only_the_contract_and_family_subpackages():
    root = PACKAGE / "policies"
    modules = {p.stem for p in root.glob("*.py")}
    assert modules <= CONTRACT, (
        f"modules in smdlab/policies/ beyond the contract: {modules - CONTRACT}"
    )
    subpackages = {p.name for p in root.iterdir() if p.is_dir() and p.name != "__pycache__"}
    assert subpackages == FAMILIES
    for family in FAMILIES:
        assert (root / family / "__init__.py").is_file(), f"policies/{family}/ is not a package"
        assert not [p for p in (root / family).iterdir() if p.is_dir() and p.name != "__pycache__"]


def test_private_family_modules_are_imported_only_inside_their_family():
    for module, path in MODULES.items():
        for line, target in _imports(path):
            parts = target.split(".")
            if parts[:2] != ["smdlab", "policies"] or len(parts) < 4:
                continue
            family = ".".join(parts[:3])
            if parts[3].startswith("_") and not (
                module == family or module.startswith(family + ".")
            ):
                pytest.fail(
                    f"{path.relative_to(PACKAGE)}:{line} imports {target}, private to its family"
                )


def test_importing_every_policy_loads_no_simulator_or_learning_framework():
    # The static ranks above say so; this checks what actually loads (package __init__s included).
    names = sorted(m for m in MODULES if m.startswith("smdlab.policies"))
    code = (
        "import importlib, sys\n"
        f"for m in {names!r}: importlib.import_module(m)\n"
        "bad = [m for m in sys.modules if m.split('.')[:2] == ['smdlab', 'sim']\n"
        "       or m in ('smdlab.rl.env', 'smdlab.rl.library', 'gymnasium', 'torch')]\n"
        "print(','.join(sorted(bad)))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=PACKAGE.parent
    )
    assert out.stdout.strip() == "", f"importing the policies loads {out.stdout.strip()}"
