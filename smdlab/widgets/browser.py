"""Browser-side help for the apps: figures that follow their container's width, and change-to-redraw time.

``RedrawTimer`` is an anywidget placed inside an app (an ipywidgets container carrying the CSS
class ``APP_CLASS``). Its script, in the page:

- keeps every Plotly figure of the app as wide as its container: a ResizeObserver on each figure
  compares the figure's drawn width with its element's width and, when they differ (a figure first
  drawn before it was attached gets Plotly's default 700 px; the file browser opens or closes),
  asks Plotly to resize (the figures are created with ``responsive: true``, whose handler listens
  to the window's resize event);
- measures each change as ``benchmarks/bench_explorer_browser.py`` does: an input event in the
  app (key press, pointer release, value change) starts it; every change of a figure's SVG stamps
  the next animation frame as a repaint (hover labels and the mode bar are ignored); once no figure
  has repainted for ``quiet_ms``, the time from the input to the last repaint is shown and sent to
  the kernel as ``latency_ms``. Nothing is shown before the first change.
"""

from __future__ import annotations

import anywidget
import traitlets

APP_CLASS = "smdlab-app"
QUIET_MS = 1000.0  # the browser benchmark's default --quiet

_ESM = (
    r"""
function render({ model, el }) {
  const box = document.createElement("span");
  box.className = "smdlab-redraw-timer";
  box.style.fontSize = "90%";
  el.appendChild(box);
  let root = null, plots = new Set(), resizeObs = null, mutObs = null;
  let start = null, lastPaint = null, quietTimer = null, resizeTimer = null;

  function show() {
    const ms = model.get("latency_ms");
    if (ms < 0) { box.textContent = ""; return; }
    box.textContent = `change to redraw: ${Math.round(ms)} ms (input to the last figure ` +
      `repainted, in this browser)`;
    box.dataset.latencyMs = String(ms);
  }
  function finish() {
    quietTimer = null;
    if (start === null || lastPaint === null) return;
    const ms = lastPaint - start;
    start = null; lastPaint = null;
    model.set("latency_ms", ms);
    model.set("measured", model.get("measured") + 1);
    model.save_changes();
    show();
  }
  function paint() {
    if (start === null) return;
    requestAnimationFrame(() => {
      if (start === null) return;
      lastPaint = performance.now();
      if (quietTimer) clearTimeout(quietTimer);
      quietTimer = setTimeout(finish, model.get("quiet_ms"));
    });
  }
  function onInput(ev) {
    if (el.contains(ev.target)) return;
    if (start === null || lastPaint !== null) { start = performance.now(); lastPaint = null; }
    if (quietTimer) clearTimeout(quietTimer);
    // An input that repaints nothing is dropped after 30 s.
    quietTimer = setTimeout(() => { if (lastPaint === null) { start = null; } else { finish(); } }, 30000);
  }
  function ignored(node) {
    const e = node.nodeType === 1 ? node : node.parentElement;
    return !e || !!e.closest(".hoverlayer, .modebar-container, .modebar, .dragcover");
  }
  const tries = new Map(); // figure -> resizes asked for in a row without effect
  function fit() {
    resizeTimer = null;
    for (const gd of plots) {
      const full = gd._fullLayout;
      if (!full || !gd.isConnected || gd.clientWidth === 0) continue;
      if (Math.abs(full.width - gd.clientWidth) <= 1) { tries.delete(gd); continue; }
      const n = tries.get(gd) || 0;
      if (n < 5) {
        tries.set(gd, n + 1);
        window.dispatchEvent(new Event("resize"));
        // Plotly resizes after a short timer; check again once it has.
        scheduleFit(300);
        return;
      }
    }
  }
  function scheduleFit(ms) {
    if (!resizeTimer) resizeTimer = setTimeout(fit, ms);
  }
  function attach() {
    root = el.closest("."""
    + APP_CLASS
    + r"""");
    if (!root) return false;
    resizeObs = new ResizeObserver(() => scheduleFit(50));
    mutObs = new MutationObserver((records) => {
      if (!records.some((r) => !ignored(r.target))) return;
      paint();
      scheduleFit(100); // a figure drawn before it was attached has the default 700 px
    });
    const scan = () => {
      for (const gd of root.querySelectorAll(".js-plotly-plot")) {
        if (plots.has(gd)) continue;
        plots.add(gd);
        resizeObs.observe(gd);
        mutObs.observe(gd, { subtree: true, childList: true, attributes: true, characterData: true });
      }
    };
    scan();
    // Figures render after this widget on a slow page: pick them up as they appear.
    const late = new MutationObserver(scan);
    late.observe(root, { subtree: true, childList: true });
    for (const t of ["keydown", "pointerup", "change"]) root.addEventListener(t, onInput, true);
    // A resize Plotly dropped (the figure was busy redrawing) is retried.
    const every = setInterval(() => scheduleFit(0), 1000);
    return () => {
      clearInterval(every);
      late.disconnect(); resizeObs.disconnect(); mutObs.disconnect();
      for (const t of ["keydown", "pointerup", "change"]) root.removeEventListener(t, onInput, true);
    };
  }
  let cleanup = null;
  const tryAttach = () => { if (!cleanup) { const c = attach(); if (c) cleanup = c; } };
  tryAttach();
  const poll = setInterval(() => { tryAttach(); if (cleanup) clearInterval(poll); }, 200);
  show();
  return () => { clearInterval(poll); if (cleanup) cleanup(); };
}
export default { render };
"""
)


class RedrawTimer(anywidget.AnyWidget):
    """Keeps the app's figures as wide as their container and shows the browser's change-to-redraw time."""

    _esm = _ESM
    # Set by the browser: input to the last figure repainted (ms) of the latest change; -1 before one.
    latency_ms = traitlets.Float(-1.0).tag(sync=True)
    measured = traitlets.Int(0).tag(sync=True)  # changes measured so far
    quiet_ms = traitlets.Float(QUIET_MS).tag(sync=True)
