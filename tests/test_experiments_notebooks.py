"""Notebook 05 (paper figures) makes every figure through the reproduce functions.

Running every notebook (and checking that none is stored with outputs) is tests/test_notebooks.py's job.
"""

from __future__ import annotations

from pathlib import Path

import jupytext

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"


def test_paper_notebook_makes_every_figure_through_the_reproduce_functions():
    from smdlab.experiments import list_figures

    nb = jupytext.read(NOTEBOOKS / "05_paper_figures.py")
    source = "\n".join(c.source for c in nb.cells if c.cell_type == "code")
    assert "from smdlab.experiments import" in source
    assert "figure(name, SOURCE)" in source  # recomputing goes through the reproduce functions
    for name in list_figures():
        assert f'draw("{name}")' in source, name
