"""Interactive apps built from smdlab's figures: the live ``explorer`` and the policy ``compare``.

Each app is an ipywidgets container whose plotly FigureWidgets are updated in place; slow work
runs on a background thread behind a busy indicator (``smdlab.widgets.live``).
"""

from smdlab.widgets.compare_app import Compare, compare
from smdlab.widgets.explorer_app import Explorer, explorer

__all__ = ["Compare", "Explorer", "compare", "explorer"]
