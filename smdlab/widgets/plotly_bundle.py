"""FigureWidgets that share one copy of plotly's browser code instead of carrying one each.

plotly's FigureWidget is an anywidget whose synced ``_esm`` is plotly's whole browser bundle (about
5 MB): every figure sends it to the page again and the browser evaluates it again, which made up
most of a dashboard's time between its cells running and its first figure (bench_voila.py). Here
one hidden carrier widget per kernel sends the bundle once; each figure's ``_esm`` is a small
module that waits for the carrier's copy, evaluated once per page, and re-exports it.
"""

from __future__ import annotations

import hashlib
import threading
from typing import Any

import traitlets

# The figures' module: the page-wide promise of the bundle (the carrier resolves it), re-exported.
_FIGURE_ESM = """const slot = (globalThis["{key}"] ??= (() => {{
    let resolve;
    const promise = new Promise((r) => (resolve = r));
    return {{ promise, resolve }};
}})());
const bundle = await slot.promise;
export const FigureModel = bundle.FigureModel;
export const FigureView = bundle.FigureView;
export default bundle.default;
"""
# The carrier's module: evaluate the bundle it was sent once per page and hand it to the figures.
_CARRIER_ESM = """export default {{
    async initialize({{ model }}) {{
        const slot = (globalThis["{key}"] ??= (() => {{
            let resolve;
            const promise = new Promise((r) => (resolve = r));
            return {{ promise, resolve }};
        }})());
        if (slot.loading) return;
        slot.loading = true;
        const url = URL.createObjectURL(new Blob([model.get("bundle")], {{ type: "text/javascript" }}));
        try {{
            slot.resolve(await import(/* webpackIgnore: true */ url));
        }} finally {{
            URL.revokeObjectURL(url);
        }}
    }},
}};
"""
_LOCK = threading.Lock()
_CARRIER: Any = None  # the kernel's carrier widget, created with the first figure
_CLASSES: tuple[type, type] | None = None  # built at the first figure (see ``_classes``)


def _bundle() -> tuple[str, str]:
    """plotly's browser bundle and the page-wide key of its shared copy (one per bundle version)."""
    import plotly.graph_objects as go

    source = str(go.FigureWidget._esm)
    return source, "__smdlab_plotly_" + hashlib.sha256(source.encode()).hexdigest()[:16]


def _classes() -> tuple[type, type]:
    """The carrier and figure widget classes, built once (on first use: importing FigureWidget costs time)."""
    global _CLASSES
    with _LOCK:
        if _CLASSES is None:
            _CLASSES = _build_classes()
        return _CLASSES


def _build_classes() -> tuple[type, type]:
    """The carrier and figure widget classes for the installed plotly bundle."""
    import anywidget
    import plotly.graph_objects as go

    source, key = _bundle()

    class PlotlyBundle(anywidget.AnyWidget):
        """Hidden: sends plotly's browser bundle to the page once for every ``SharedFigureWidget``."""

        _esm = _CARRIER_ESM.format(key=key)
        bundle = traitlets.Unicode(source).tag(sync=True)

    class SharedFigureWidget(go.FigureWidget):
        """A FigureWidget whose browser code is the page's shared copy of plotly's bundle."""

        _esm = _FIGURE_ESM.format(key=key)

    return PlotlyBundle, SharedFigureWidget


def shared_figure_widget(figure: dict) -> Any:
    """A FigureWidget of ``figure`` (a data/layout dict) using the kernel's one copy of plotly's bundle."""
    global _CARRIER
    carrier_class, figure_class = _classes()
    with _LOCK:
        # A carrier closed by hand (Widget.close_all) is replaced: later pages need one.
        if _CARRIER is None or _CARRIER.comm is None:
            _CARRIER = carrier_class()
    return figure_class(figure)
