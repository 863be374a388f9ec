"""Plumbing shared by the apps: in-place FigureWidget updates and background work that never blocks controls."""

from __future__ import annotations

import threading
import time
import traceback
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import ipywidgets as widgets
import plotly.graph_objects as go

_IGNORED_TRACE_KEYS = {"type", "uid"}


def _as_spec(fig: go.Figure | Mapping[str, Any]) -> tuple[list[dict], dict]:
    if isinstance(fig, go.Figure):
        # Per trace, not Figure.to_plotly_json(): that one encodes arrays as base64 blobs.
        return [tr.to_plotly_json() for tr in fig.data], fig.layout.to_plotly_json()
    return [dict(t) for t in fig.get("data", [])], dict(fig.get("layout", {}))


def figure_widget(fig: go.Figure | Mapping[str, Any]) -> go.FigureWidget:
    """A FigureWidget showing ``fig`` (a figure or a plain data/layout dict); later changes use ``sync_figure``."""
    data, layout = _as_spec(fig)
    fw = go.FigureWidget({"data": data, "layout": layout})
    # What this module set, so the next sync can reset properties the new figure no longer has
    # (reading them back from the widget would cost more than the update itself).
    fw._smdlab_keys = [set(t) - _IGNORED_TRACE_KEYS for t in data]
    fw._smdlab_layout_keys = set(layout) - {"template"}
    return fw


def sync_figure(target: go.FigureWidget, fig: go.Figure | Mapping[str, Any]) -> None:
    """Make ``target`` show ``fig`` by updating its traces and layout in place (one batched message).

    Traces at the same position and of the same type are updated property by property (properties
    the new trace lacks are reset); extra old traces are dropped and missing ones appended. The
    layout's template is left as it is (it never changes in the apps, and resending it is slow).
    """
    data, layout = _as_spec(fig)
    keys = getattr(target, "_smdlab_keys", None)
    if keys is None or len(keys) != len(target.data):
        keys = [set(t.to_plotly_json()) - _IGNORED_TRACE_KEYS for t in target.data]
    layout_keys = getattr(target, "_smdlab_layout_keys", None)
    if layout_keys is None:
        layout_keys = set(target.layout.to_plotly_json()) - {"template"}
    layout.pop("template", None)
    with target.batch_update():
        keep = 0
        for old, tr in zip(target.data, data):
            if old.type != tr.get("type", "scatter"):
                break
            keep += 1
        if keep < len(target.data):
            target.data = target.data[:keep]
        new_keys = []
        for i in range(keep):
            props = {k: v for k, v in data[i].items() if k not in _IGNORED_TRACE_KEYS}
            for key in keys[i] - set(props):
                target.data[i][key] = None
            target.data[i].update(props, overwrite=True)
            new_keys.append(set(props))
        if keep < len(data):
            target.add_traces(data[keep:])
            new_keys += [set(t) - _IGNORED_TRACE_KEYS for t in data[keep:]]
        for key in layout_keys - set(layout):
            target.layout[key] = None
        target.layout.update(layout, overwrite=True)
    target._smdlab_keys = new_keys
    target._smdlab_layout_keys = set(layout)


class Superseded(Exception):
    """Raised by background work that noticed a newer request made it pointless."""


class Background:
    """One worker thread for slow work, with per-channel request ids so stale results are dropped.

    ``submit(channel, fn, apply)`` runs ``fn()`` off the caller's thread and then ``apply(result)``,
    unless a newer request on the same channel was submitted meanwhile (then both are skipped).
    ``busy`` (an ipywidgets.HTML) shows what is running; ``wait()`` blocks until all work is done.
    """

    def __init__(self, label: str = "working", lock: threading.RLock | None = None) -> None:
        # ``lock`` is held while checking staleness and applying a result, so a caller that takes
        # it around "submit a new request and redraw" can never be overwritten by an older result.
        self.lock = lock or threading.RLock()
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="smdlab-widget")
        self._lock = threading.Lock()
        self._latest: dict[str, int] = {}
        self._pending: dict[str, int] = {}
        self._counter = 0
        self.label = label
        self.errors: list[str] = []
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
    ) -> int:
        """Queue ``fn`` (then ``apply`` on its result) on the worker thread; returns the request id.

        cancellable: call ``fn(still_wanted)``, where ``still_wanted()`` turns False once a newer
        request is queued on the channel, so long work can stop early (raise ``Superseded``).
        """
        with self._lock:
            self._counter += 1
            request = self._counter
            self._latest[channel] = request
            self._pending[channel] = self._pending.get(channel, 0) + 1
            self._idle.clear()
            self._show(label or self.label)

        def run() -> None:
            try:
                if not self.is_latest(channel, request):
                    return  # superseded before it started: skip the work
                result = fn(lambda: self.is_latest(channel, request)) if cancellable else fn()
                with self.lock:
                    if self.is_latest(channel, request):
                        apply(result)
            except Superseded:
                pass
            except Exception:
                self.errors.append(traceback.format_exc())
            finally:
                self._done(channel)

        self._pool.submit(run)
        return request

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
                self.busy.value = ""
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
