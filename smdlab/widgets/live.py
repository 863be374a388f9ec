"""Plumbing shared by the apps: in-place FigureWidget updates and background work that never blocks controls."""

from __future__ import annotations

import html
import importlib
import importlib.util
import sys
import threading
import time
import traceback
import types
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import ipywidgets as widgets
import numpy as np
import plotly.graph_objects as go

# Re-exported: the apps import them from here.
from smdlab.widgets.sim_pool import Superseded as Superseded, stoppable_policy as stoppable_policy

_IGNORED_TRACE_KEYS = {"type", "uid"}


def defer_iri_grammar() -> None:
    """Put off ``rfc3987_syntax``'s parser build from the first FigureWidget to the first IRI validation.

    plotly's first FigureWidget imports nbformat, whose jsonschema imports ``rfc3987_syntax`` for
    its "iri" format checker; that module builds Lark parsers at import, which cost most of a
    kernel's CPU before a dashboard's first figure (seconds, measured in bench_voila.py). A
    stand-in module gives jsonschema the same ``is_valid_syntax`` and loads the real module at
    its first use, so no validation changes. Nothing happens when it is imported already.
    """
    name = "rfc3987_syntax"
    if name in sys.modules:
        return
    spec = importlib.util.find_spec(name)
    if spec is None:
        return
    stand_in = types.ModuleType(name)
    stand_in.__spec__ = spec

    def real() -> types.ModuleType:
        if sys.modules.get(name) is stand_in:
            del sys.modules[name]
        return importlib.import_module(name)

    def is_valid_syntax(term: str, value: str) -> bool:
        return real().is_valid_syntax(term, value)

    def attribute(attr: str) -> Any:
        if attr.startswith("__"):  # the import system probes these (__path__): not a use
            raise AttributeError(attr)
        return getattr(real(), attr)

    stand_in.is_valid_syntax = is_valid_syntax  # type: ignore[attr-defined]
    stand_in.__getattr__ = attribute  # type: ignore[method-assign]
    sys.modules[name] = stand_in


defer_iri_grammar()


def _as_spec(fig: go.Figure | Mapping[str, Any]) -> tuple[list[dict], dict]:
    if isinstance(fig, go.Figure):
        # Per trace, not Figure.to_plotly_json(): that one encodes arrays as base64 blobs.
        return [tr.to_plotly_json() for tr in fig.data], fig.layout.to_plotly_json()
    return [dict(t) for t in fig.get("data", [])], dict(fig.get("layout", {}))


def _same(a: Any, b: Any) -> bool:
    """Whether two property values of a plain figure spec are equal (arrays by value)."""
    if a is b:
        return True
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple, np.ndarray)) and isinstance(b, (list, tuple, np.ndarray)):
        if len(a) != len(b):
            return False
        if isinstance(a, np.ndarray) and isinstance(b, np.ndarray) and a.dtype.kind in "biuf":
            return a.dtype == b.dtype and bool(np.array_equal(a, b, equal_nan=True))
        return all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return False
    try:
        return bool(a == b) and type(a) is type(b)
    except (TypeError, ValueError):
        return False


def figure_widget(fig: go.Figure | Mapping[str, Any]) -> go.FigureWidget:
    """A FigureWidget showing ``fig`` (a figure or a plain data/layout dict); later changes use ``sync_figure``."""
    from smdlab.widgets.plotly_bundle import shared_figure_widget

    data, layout = _as_spec(fig)
    # The page gets plotly's browser code once, not once per figure.
    fw = shared_figure_widget({"data": data, "layout": layout})
    # Plotly resizes a responsive figure on the window's resize event; the apps' RedrawTimer
    # (smdlab.widgets.browser) raises one when a figure's container changed width.
    fw._config = {**fw._config, "responsive": True}
    # What this module set last, so the next sync sends only what changed and resets properties
    # the new figure no longer has (reading them back from the widget costs more than the update).
    fw._smdlab_spec = ([_props(t) for t in data], _layout_props(layout))
    # Until a browser view has drawn the figure, each sync also sends the whole figure (see
    # ``_publish``); plotly's view reports its first drawing through these two properties.
    fw._smdlab_drawn = False

    def drawn(change: Any) -> None:
        fw._smdlab_drawn = True

    fw.observe(drawn, names=["_js2py_layoutDelta", "_js2py_traceDeltas"])
    return fw


def _publish(target: go.FigureWidget) -> None:
    """Make the widget's synced state the figure as it is now, for views that do not exist yet.

    plotly sends a change as a delta that only a frontend model with its handlers attached
    applies; its full state (``_widget_data``, ``_widget_layout``) stays as first built. A view
    created later (a Voila page, a reload, a figure changed before its first display) would
    draw that first state. So the kernel's copy points at the live figure (nothing is copied or
    sent), and until a view has drawn the figure the full state is sent as well, replacing what
    a frontend model that missed deltas holds.
    """
    values = target._trait_values
    values["_widget_data"], values["_widget_layout"] = target._data, target._layout
    if not getattr(target, "_smdlab_drawn", True) and target.comm is not None:
        target.send_state(["_widget_data", "_widget_layout"])


def _props(trace: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in trace.items() if k not in _IGNORED_TRACE_KEYS}


def _layout_props(layout: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in layout.items() if k != "template"}


def sync_figure(target: go.FigureWidget, fig: go.Figure | Mapping[str, Any]) -> None:
    """Make ``target`` show ``fig`` by updating its traces and layout in place (one message).

    Only top-level properties that differ from what the last sync set are sent (plotly validates
    everything it is given, which is most of the cost). Traces at the same position and of the
    same type are updated property by property (properties the new trace lacks are reset); extra
    old traces are dropped and missing ones appended. The layout's template is left as it is (it
    never changes in the apps, and resending it is slow). Nothing is sent when nothing changed.
    """
    data, layout = _as_spec(fig)
    new_traces, new_layout = [_props(t) for t in data], _layout_props(layout)
    old = getattr(target, "_smdlab_spec", None)
    if old is None or len(old[0]) != len(target.data):
        old = (
            [_props(t.to_plotly_json()) for t in target.data],
            _layout_props(target.layout.to_plotly_json()),
        )
    old_traces, old_layout = old
    keep = 0
    for tr_old, tr in zip(target.data, data):
        if tr_old.type != tr.get("type", "scatter"):
            break
        keep += 1
    changes = []
    for i in range(keep):
        before, after = old_traces[i], new_traces[i]
        diff = {k: v for k, v in after.items() if k not in before or not _same(before[k], v)}
        gone = [k for k in before if k not in after]
        if diff or gone:
            changes.append((i, diff, gone))
    layout_diff = {
        k: v for k, v in new_layout.items() if k not in old_layout or not _same(old_layout[k], v)
    }
    layout_gone = [k for k in old_layout if k not in new_layout]
    structural = keep < len(target.data) or keep < len(data)
    if changes or layout_diff or layout_gone or structural:
        with target.batch_update():
            if keep < len(target.data):
                target.data = target.data[:keep]
            for i, diff, gone in changes:
                for key in gone:
                    target.data[i][key] = None
                target.data[i].update(diff, overwrite=True)
            if keep < len(data):
                target.add_traces(data[keep:])
            for key in layout_gone:
                target.layout[key] = None
            target.layout.update(layout_diff, overwrite=True)
        _publish(target)
    target._smdlab_spec = (new_traces, new_layout)


def failure_line(what: str, exc: BaseException) -> str:
    """One line saying what failed and why (the exception's first line), for a status line."""
    text = str(exc).strip().splitlines()
    return f"{what} failed: {type(exc).__name__}" + (f": {text[0]}" if text else "")


class Background:
    """One worker thread for slow work, with per-channel request ids so stale results are dropped.

    ``submit(channel, fn, apply)`` runs ``fn()`` off the caller's thread and then ``apply(result)``,
    unless a newer request on the same channel was submitted meanwhile (then both are skipped).
    ``busy`` (an ipywidgets.HTML) shows what is running; ``wait()`` blocks until all work is done.
    A failure (in ``fn`` or ``apply``) of the newest request of its channel goes, as one line, to
    the request's ``on_error`` (else the Background's); with neither, ``busy`` shows it in red.
    Tracebacks are kept in ``errors``.
    """

    def __init__(
        self,
        label: str = "working",
        lock: threading.RLock | None = None,
        on_error: Callable[[str], None] | None = None,
    ) -> None:
        # ``lock`` is held while checking staleness and applying a result, so a caller that takes
        # it around "submit a new request and redraw" can never be overwritten by an older result.
        self.lock = lock or threading.RLock()
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="smdlab-widget")
        self._lock = threading.Lock()
        self._latest: dict[str, int] = {}
        self._pending: dict[str, int] = {}
        self._counter = 0
        self.label = label
        self.on_error = on_error
        self.errors: list[str] = []
        self.last_error: str | None = None  # the last failure's line shown, if any
        self._failed = ""  # shown by ``busy`` when idle and nobody else shows the failure
        self.busy = widgets.HTML(value="", layout=widgets.Layout(min_height="1.6em"))
        self._idle = threading.Event()
        self._idle.set()

    def is_latest(self, channel: str, request: int) -> bool:
        """Whether ``request`` is still the newest request of ``channel``."""
        with self._lock:
            return self._latest.get(channel) == request

    def submit(
        self,
        channel: str,
        fn: Callable[..., Any],
        apply: Callable[[Any], None],
        label: str | None = None,
        *,
        cancellable: bool = False,
        progressive: bool = False,
        on_error: Callable[[str], None] | None = None,
    ) -> int:
        """Queue ``fn`` (then ``apply`` on its result) on the worker thread; returns the request id.

        cancellable: call ``fn(still_wanted)``, where ``still_wanted()`` turns False once a newer
        request is queued on the channel, so long work can stop early (raise ``Superseded``).
        progressive: call ``fn(still_wanted, emit)``; each ``emit(partial)`` applies ``partial`` at
        once (or raises ``Superseded`` when stale), and ``fn``'s return value is not applied.
        on_error: receives the failure's line instead of the Background's ``on_error``.
        """
        what = label or self.label
        with self._lock:
            self._counter += 1
            request = self._counter
            self._latest[channel] = request
            self._pending[channel] = self._pending.get(channel, 0) + 1
            self._idle.clear()
            self._failed = ""
            self._show(what)

        def wanted() -> bool:
            return self.is_latest(channel, request)

        def emit(partial: Any) -> None:
            with self.lock:
                if not wanted():
                    raise Superseded
                apply(partial)

        def run() -> None:
            try:
                if not wanted():
                    return  # superseded before it started: skip the work
                if progressive:
                    fn(wanted, emit)
                    return
                result = fn(wanted) if cancellable else fn()
                with self.lock:
                    if wanted():
                        apply(result)
            except Superseded:
                pass
            except Exception as exc:
                self.errors.append(traceback.format_exc())
                self._fail(failure_line(what, exc), wanted(), on_error or self.on_error)
            finally:
                self._done(channel)

        self._pool.submit(run)
        return request

    def _fail(self, line: str, current: bool, report: Callable[[str], None] | None) -> None:
        """Show a failure of the newest request (an older request's is only recorded)."""
        if not current:
            return
        self.last_error = line
        if report is None:
            with self._lock:
                self._failed = '<span style="color:#c00">' + html.escape(line) + "</span>"
            return
        try:
            with self.lock:
                report(line)
        except Exception:  # the reporter itself failed: keep the line visible here
            self.errors.append(traceback.format_exc())
            with self._lock:
                self._failed = '<span style="color:#c00">' + html.escape(line) + "</span>"

    def show(self, label: str) -> None:
        """Change the busy text (background work may report its progress)."""
        self._show(label)

    def _show(self, label: str) -> None:
        self.busy.value = (
            '<span style="color:#b35c00">&#9203; ' + label + "&hellip;</span>"  # hourglass + text
        )

    def _done(self, channel: str) -> None:
        with self._lock:
            self._pending[channel] -= 1
            if not any(self._pending.values()):
                self.busy.value = self._failed
                self._idle.set()

    @property
    def running(self) -> bool:
        """Whether background work is queued or running."""
        return not self._idle.is_set()

    def wait(self, timeout: float | None = 60.0) -> bool:
        """Block until every queued request has finished; False if ``timeout`` passed first."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            if not self._idle.wait(left):
                return False
            with self._lock:  # a request may have been queued just as the event was set
                if not any(self._pending.values()):
                    return True

    def close(self) -> None:
        """Stop the worker thread (queued requests are dropped)."""
        with self._lock:
            self._latest.clear()
            self._pending.clear()
        self._pool.shutdown(wait=False, cancel_futures=True)
        self._idle.set()
        self.busy.value = ""


class BackgroundApp:
    """Mixin of the apps that run heavy work on ``self.background``: waiting for it and closing."""

    background: Background
    WAIT_TIMEOUT_S: float = 60.0

    def wait(self, timeout: float | None = None) -> bool:
        """Block until the background work of the last change has finished and been drawn."""
        return self.background.wait(self.WAIT_TIMEOUT_S if timeout is None else timeout)

    def close(self) -> None:
        """Stop the background thread and close the widgets."""
        background = getattr(self, "background", None)  # absent when __init__ failed early
        if background is not None:
            background.close()
        super().close()  # type: ignore[misc]  # the widget class after this mixin in the MRO has close()
