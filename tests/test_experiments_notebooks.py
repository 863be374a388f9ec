"""Notebooks 04 (policies) and 05 (paper figures): their cells (build_more_notebooks.py) make every figure.

Running every notebook (and checking that none is stored with outputs) is tests/test_notebooks.py's job.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import nbformat

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"


def _builder():
    spec = importlib.util.spec_from_file_location(
        "build_more_notebooks", NOTEBOOKS / "build_more_notebooks.py"
    )
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_notebooks_match_their_generator():
    builder = _builder()
    assert set(builder.NOTEBOOKS) == {"04_policies.ipynb", "05_paper_figures.ipynb"}
    # that the files on disk are current is checked by tests/test_notebooks.py (one generator writes all)


def test_paper_notebook_makes_every_figure_through_the_reproduce_functions():
    from smdlab.experiments import list_figures

    nb = nbformat.read(NOTEBOOKS / "05_paper_figures.ipynb", as_version=4)
    source = "\n".join(c.source for c in nb.cells if c.cell_type == "code")
    assert "from smdlab.experiments import" in source
    for name in list_figures():
        assert f'figure("{name}", CONFIG)' in source, name
