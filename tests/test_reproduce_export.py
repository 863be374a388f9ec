"""Static export of the figures through kaleido and Debian's chromium: one browser for all images."""

from __future__ import annotations

import shutil

import pytest

from smdlab.experiments import reproduce
from smdlab.experiments.reproduce import ImageExporter
from smdlab.viz.style import SMD_LABEL

pytestmark = pytest.mark.skipif(
    shutil.which("chromium") is None,
    reason="Debian's chromium is not on PATH (install it with tools/system-deps.sh)",
)


def test_png_svg_csv_written_with_one_browser(tmp_path, monkeypatch):
    import kaleido

    starts = []
    real_start = kaleido.start_sync_server
    monkeypatch.setattr(
        kaleido, "start_sync_server", lambda *a, **k: (starts.append(1), real_start(*a, **k))[1]
    )
    out = tmp_path / "out"
    names = ["jct_vs_jobs", "optimality_gap"]
    written = reproduce(out, "tiny", only=names, formats=["png", "svg", "csv"], log=None)
    assert sorted(p.name for p in written) == sorted(
        f"{n}.{f}" for n in names for f in ("png", "svg", "csv")
    )
    assert len(starts) == 1  # one browser for every image
    server = getattr(kaleido, "_global_server", None)
    assert server is None or not server.is_running()  # and it is closed afterwards
    for n in names:
        png = (out / f"{n}.png").read_bytes()
        assert png[:8] == b"\x89PNG\r\n\x1a\n" and 10_000 < len(png) < 400_000
        svg = (out / f"{n}.svg").read_text()
        assert svg.lstrip().startswith("<svg") and SMD_LABEL in svg


def test_exporter_reuses_a_running_server(tmp_path):
    import kaleido
    import plotly.graph_objects as go

    kaleido.start_sync_server(silence_warnings=True)
    try:
        with ImageExporter() as ex:
            assert ex.render(go.Figure(go.Scatter(y=[1, 2])), "svg").lstrip().startswith(b"<svg")
        assert kaleido._global_server.is_running()  # not ours to stop
    finally:
        kaleido.stop_sync_server(silence_warnings=True)


def test_a_render_before_kaleidos_page_loaded_is_tried_again(monkeypatch):
    """kaleido's race (its page's script not loaded yet) costs one retry; other errors raise."""
    import importlib

    import plotly.graph_objects as go
    import plotly.io as pio

    module = importlib.import_module(
        "smdlab.experiments.reproduce"
    )  # the package's name is a function
    calls: list[str] = []

    def flaky(fig, format, scale):
        calls.append(format)
        if len(calls) == 1:
            raise RuntimeError("{'description': 'ReferenceError: kaleido_scopes is not defined'}")
        return b"<svg/>"

    monkeypatch.setattr(pio, "to_image", flaky)
    monkeypatch.setattr(module, "KALEIDO_RETRY_S", 0.0)
    assert ImageExporter().render(go.Figure(), "svg") == b"<svg/>"
    assert calls == ["svg", "svg"]

    def broken(fig, format, scale):
        raise RuntimeError("another error")

    monkeypatch.setattr(pio, "to_image", broken)
    with pytest.raises(RuntimeError, match="another error"):
        ImageExporter().render(go.Figure(), "svg")
