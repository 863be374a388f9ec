"""A real browser: every notebook run in JupyterLab, and every figure it draws checked.

One JupyterLab server on loopback (temporary Jupyter folders) serves a temporary copy of
``notebooks/``: each notebook built from its ``.py`` source (as ``make notebooks`` does) and paired
with it (``notebooks/jupytext.toml``). Headless Debian chromium opens each notebook, runs all its
cells and then checks every Plotly figure on the page:

- it is drawn inside its output area (nothing cut off or scrolled out of sight);
- no axis disagrees with the data drawn on it: an axis with two or more data values shows at
  least two tick labels, a category axis (up to 12 categories) labels each of its categories,
  and each end of a numeric axis's data lies within one tick interval of a tick.

The file browser (with ``make lab``'s setting) lists one entry per notebook. Then the notebook is
saved: its paired ``.py`` must come out byte for byte as the repository's source (a run never
changes a tracked file). Screenshots go to ``test-artifacts/``.
"""

from __future__ import annotations

import contextlib
import json
import re
import shutil
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import jupytext
import pytest
from _browser import CHROMIUM, _jupyter_env, jupyter_lab

pytestmark = pytest.mark.browser

REPO = Path(__file__).resolve().parents[1]
NOTEBOOKS = REPO / "notebooks"
SOURCES = tuple(p.name for p in sorted(NOTEBOOKS.glob("[0-9]*.py")))
ARTIFACTS = REPO / "test-artifacts"
SERVER_START_S = 90
RUN_ALL_S = 240  # the whole notebook, on a shared 2-core machine
VIEWPORT = {"width": 1400, "height": 1000}
SETTLE_S = 30  # for a widget figure to take its container's width on a loaded machine


def _make_variable(name: str) -> str:
    """The value the Makefile gives ``name`` (one line, ``NAME := value`` or ``NAME ?= value``)."""
    for line in (REPO / "Makefile").read_text().splitlines():
        m = re.match(rf"{name}\s*[:?]?=\s*(.*)$", line)
        if m:
            return m.group(1).strip()
    raise AssertionError(f"the Makefile sets no {name}")


# `make lab`'s file-browser setting, read from the Makefile (the shell would drop the quotes).
LAB_HIDE = [_make_variable("LAB_HIDE").replace('"', "")]

if CHROMIUM is None:
    pytest.skip(
        "Debian's chromium is not on PATH (install it with tools/system-deps.sh)",
        allow_module_level=True,
    )

# Every figure of the open notebook: problems (one line each) and how many figures were checked.
FIGURE_CHECK_JS = r"""() => {
    const problems = [];
    let count = 0;
    const panel = document.querySelector('.jp-NotebookPanel:not(.lm-mod-hidden)');
    for (const g of panel.querySelectorAll('.js-plotly-plot')) {
        if (!g.clientWidth || !g._fullLayout) continue;  // hidden (the explorer's flat-cluster racks)
        count += 1;
        const fl = g._fullLayout;
        const name = `figure ${count} ("${((fl.title && fl.title.text) || '').slice(0, 60)}")`;
        const area = g.closest('.jp-OutputArea-output').getBoundingClientRect();
        const svg = g.querySelector('svg.main-svg').getBoundingClientRect();
        if (svg.right > area.right + 1 || svg.left < area.left - 1) {
            problems.push(`${name}: drawn over ${Math.round(svg.left)}-${Math.round(svg.right)} px ` +
                          `in an output area of ${Math.round(area.left)}-${Math.round(area.right)} px`);
        }
        for (const key of Object.keys(fl).filter(k => /^[xy]axis\d*$/.test(k))) {
            const ax = fl[key];
            if (!ax.visible || ax.showticklabels === false) continue;
            const letter = key[0];
            const values = [];
            for (const t of g._fullData) {
                if (t.visible !== true || (t[letter + 'axis'] || letter) !== ax._id) continue;
                for (const v of (t[letter] || [])) if (v !== null && v !== undefined) values.push(v);
            }
            const distinct = new Set(values.map(String));
            if (distinct.size < 2) continue;
            const ticks = (ax._vals || []).filter(v => String(v.text ?? '').trim() !== '');
            if (ticks.length < 2) {
                problems.push(`${name}: ${key} shows ${ticks.length} tick label(s) ` +
                              `for ${distinct.size} data values`);
                continue;
            }
            if (ax.type === 'category' && distinct.size <= 12) {
                const texts = new Set(ticks.map(v => String(v.text)));
                const missing = [...distinct].filter(c => !texts.has(c));
                if (missing.length) {
                    problems.push(`${name}: ${key} does not label its categories ${missing.join(', ')}`);
                }
            } else if (ax.type === 'linear' || ax.type === 'log') {
                const log = ax.type === 'log';
                const nums = values.map(Number).filter(v => isFinite(v) && (!log || v > 0));
                if (!nums.length) continue;
                const scale = log ? Math.log10 : (v => v);
                const lo = scale(Math.min(...nums)), hi = scale(Math.max(...nums));
                const at = ticks.map(v => v.x).sort((a, b) => a - b);  // on a log axis, log10
                let step = 0;
                for (let i = 1; i < at.length; i++) step = Math.max(step, at[i] - at[i - 1]);
                const near = d => at.some(p => Math.abs(p - d) <= 1.01 * step);
                if (!(near(lo) && near(hi))) {
                    problems.push(`${name}: ${key} ticks ${ticks.map(v => v.text).join(', ')} do not ` +
                                  `reach both ends of its data (${Math.min(...nums)} to ${Math.max(...nums)})`);
                }
            }
        }
    }
    return {count, problems};
}"""

ALL_RUN_JS = """() => {
    const panel = document.querySelector('.jp-NotebookPanel:not(.lm-mod-hidden)');
    const prompts = Array.from(panel.querySelectorAll('.jp-CodeCell .jp-InputArea-prompt'));
    return prompts.length > 0 && prompts.every(p => /\\[\\d+\\]/.test(p.textContent));
}"""


@pytest.fixture(scope="module")
def served(tmp_path_factory) -> tuple[Path, dict[str, str]]:
    """A temporary copy of the repository's notebooks, each built from its source and paired;
    with the text of every source as copied."""
    root = tmp_path_factory.mktemp("lab") / "root"
    (root / "notebooks").mkdir(parents=True)
    texts = {name: (NOTEBOOKS / name).read_text() for name in SOURCES}
    for name, text in texts.items():
        (root / "notebooks" / name).write_text(text)
    shutil.copy(NOTEBOOKS / "jupytext.toml", root / "notebooks" / "jupytext.toml")
    for name in SOURCES:
        jupytext.write(jupytext.read(NOTEBOOKS / name), root / "notebooks" / f"{name[:-3]}.ipynb")
    for folder in ("figures", "benchmarks"):  # notebooks 02 and 05 read ../benchmarks, ../figures
        (root / folder).symlink_to(REPO / folder, target_is_directory=True)
    return root, texts


@pytest.fixture(scope="module")
def lab(served: tuple[Path, dict[str, str]], tmp_path_factory) -> Iterator[tuple[str, str]]:
    """JupyterLab on ``served`` with every cell of a notebook rendered (no windowing)."""
    tmp = tmp_path_factory.mktemp("jupyter")
    env = _jupyter_env(tmp)
    tracker = tmp / "settings" / "@jupyterlab" / "notebook-extension"
    tracker.mkdir(parents=True, exist_ok=True)
    (tracker / "tracker.jupyterlab-settings").write_text('{"windowingMode": "none"}')
    with jupyter_lab(served[0], env, tmp / "jupyterlab.log", SERVER_START_S, *LAB_HIDE) as lab:
        yield lab


def _menu(page, menu: str, item: str) -> None:
    """Click ``item`` of the menu bar's ``menu`` (no waiting for a navigation: there is none)."""
    page.locator(".lm-MenuBar-itemLabel", has_text=re.compile(rf"^{menu}$")).click(
        no_wait_after=True
    )
    page.locator(".lm-Menu-itemLabel", has_text=re.compile(rf"^{item}$")).click(no_wait_after=True)


def _shutdown_kernels(base: str, token: str) -> None:
    """Stop every kernel of the server (each test runs one notebook's kernel)."""
    headers = {"Authorization": f"token {token}"}
    with urllib.request.urlopen(
        urllib.request.Request(f"{base}/api/kernels", headers=headers)
    ) as r:
        kernels = json.load(r)
    for k in kernels:
        req = urllib.request.Request(
            f"{base}/api/kernels/{k['id']}", headers=headers, method="DELETE"
        )
        urllib.request.urlopen(req).close()


@pytest.mark.parametrize("source", SOURCES)
def test_notebook_runs_in_lab_and_every_figure_draws_right(lab, served, page, source):
    """Run All in JupyterLab: no traceback, every figure fits and agrees with its data, save is clean."""
    base, token = lab
    stem = source[:-3]
    page.set_viewport_size(VIEWPORT)
    # ?reset: a fresh workspace, without the notebooks the earlier tests opened.
    page.goto(
        f"{base}/lab/tree/notebooks/{stem}.ipynb?reset&token={token}",
        timeout=SERVER_START_S * 1000,
    )
    page.wait_for_selector("text=Python 3 (ipykernel) | Idle", timeout=SERVER_START_S * 1000)
    _menu(page, "Run", "Run All Cells")
    page.wait_for_function(ALL_RUN_JS, timeout=RUN_ALL_S * 1000)
    page.wait_for_selector("text=Python 3 (ipykernel) | Idle", timeout=RUN_ALL_S * 1000)
    time.sleep(1.0)  # the last figures' first paint
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"notebook-{stem}.png"), full_page=True)
    errors = page.locator(
        ".jp-NotebookPanel:not(.lm-mod-hidden) "
        ".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stderr']"
    )
    tracebacks = [t for t in errors.all_inner_texts() if "Traceback" in t or "Error" in t]
    assert not tracebacks, f"{stem} raised: {tracebacks[:2]}"
    # Widget figures (03, 08) take their container's width once shown: show each, then wait.
    figures = page.locator(".jp-NotebookPanel:not(.lm-mod-hidden) .js-plotly-plot")
    for i in range(figures.count()):
        with contextlib.suppress(Exception):  # a hidden figure (a flat cluster's racks)
            figures.nth(i).scroll_into_view_if_needed(timeout=2000)
    with contextlib.suppress(Exception):
        page.wait_for_function(
            f"() => ({FIGURE_CHECK_JS})().problems.length === 0", timeout=SETTLE_S * 1000
        )
    result = page.evaluate(FIGURE_CHECK_JS)
    assert result["count"] > 0
    assert not result["problems"], "\n".join(result["problems"])
    # The file browser: one entry per notebook (the .ipynb; its paired .py is hidden).
    listed = page.locator(".jp-DirListing-itemText").all_inner_texts()
    assert sorted(t for t in listed if t[:2].isdigit()) == sorted(
        f"{n[:-3]}.ipynb" for n in SOURCES
    )
    root, texts = served
    paired = root / "notebooks" / source
    before = paired.stat().st_mtime_ns
    _menu(page, "File", "Save Notebook")
    deadline = time.monotonic() + 30
    while paired.stat().st_mtime_ns == before and time.monotonic() < deadline:
        time.sleep(0.25)
    assert paired.stat().st_mtime_ns != before, f"saving {stem} did not write its paired source"
    assert paired.read_text() == texts[source], f"saving {stem} changed its source"
    _shutdown_kernels(base, token)
