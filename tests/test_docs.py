"""The repository is self-contained: no file points at notes or data outside it."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# Names of the workspace's private notes and the relative path that reaches outside the repository.
FORBIDDEN = ("smd-model.md", "field.md", "../shared", "shared/notes", "shared/data")
# Code and docs name a property or target itself, not the tracker entry that asked for it;
# CHANGELOG.md is history and may cite them.
ISSUE_NUMBER = re.compile(r"\b[Ii]ssues? ?#?[0-9]+")


def _tracked_text_files() -> list[Path]:
    out = subprocess.run(
        ["git", "ls-files", "-co", "--exclude-standard"], cwd=ROOT, capture_output=True, text=True
    )
    if out.returncode != 0:  # not a git checkout (an sdist): walk the tree instead
        names = [str(p.relative_to(ROOT)) for p in ROOT.rglob("*") if p.is_file()]
    else:
        names = out.stdout.splitlines()
    keep = {".py", ".md", ".toml", ".yml", ".yaml", ".cfg", ".txt", ".ipynb", ""}
    return [ROOT / n for n in names if Path(n).suffix in keep and (ROOT / n).is_file()]


def test_no_reference_outside_the_repository():
    this = Path(__file__).resolve()
    hits = []
    for path in _tracked_text_files():
        if path.resolve() == this:
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        hits += [f"{path.relative_to(ROOT)}: {word}" for word in FORBIDDEN if word in text]
    assert not hits, "references outside the repository:\n" + "\n".join(hits)


def test_specification_docs_exist_and_are_linked_from_the_readme():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    for name in ("model", "solver", "simulator", "performance", "reliability"):
        assert (ROOT / "docs" / f"{name}.md").is_file()
        assert f"docs/{name}.md" in readme
    assert (ROOT / "CHANGELOG.md").is_file()


def test_no_issue_numbers_outside_the_changelog():
    this = Path(__file__).resolve()
    hits = []
    for path in _tracked_text_files():
        if path.resolve() == this or path.name == "CHANGELOG.md":
            continue
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
        for n, line in enumerate(lines, 1):
            if ISSUE_NUMBER.search(line):
                hits.append(f"{path.relative_to(ROOT)}:{n}: {line.strip()[:100]}")
    assert not hits, "issue numbers (name the property instead):\n" + "\n".join(hits)
