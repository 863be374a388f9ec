"""The explorer's rack view: shown when a rack layout is chosen, following the placement."""

from __future__ import annotations

import pytest

from smdlab import InvalidInput
from smdlab.widgets import explorer
from smdlab.widgets.scenario import ExplorerSettings, build_cluster


def test_rack_layout_setting_builds_racks():
    c = build_cluster(ExplorerSettings(machines=5, racks=2))
    assert [r.name for r in c.topology] == ["r0", "r1"]
    assert [m.rack for m in c.machines] == ["r0", "r0", "r0", "r1", "r1"]
    assert c.gpu_types == ()  # untyped: speeds are the flat cluster's
    flat = build_cluster(ExplorerSettings(machines=5))
    assert c.capacity == flat.capacity and flat.topology == ()
    with pytest.raises(InvalidInput, match="racks"):
        ExplorerSettings(machines=2, racks=3)


def test_explorer_rack_view_follows_the_layout():
    app = explorer(ExplorerSettings(machines=4, n_jobs=4, max_tasks=6, racks=2), run_exact=False)
    try:
        assert app.wait(30)
        assert app.rack_box.layout.display == ""
        gpus = int(app._cluster.capacity["gpu"])
        assert (
            sum(len(t.x) for t in app.rack_fig.data if t.name != "parameter servers (hover: whose)")
            == gpus
        )
        headers = [a.text for a in app.rack_fig.layout.annotations]
        assert len(headers) == 2 and headers[0].startswith("<b>r0</b>")
        held = sum(
            len(t.x)
            for t in app.rack_fig.data
            if t.name not in ("free GPU", "parameter servers (hover: whose)")
        )
        assert held == sum(
            w * j.worker_demand.get("gpu", 0)
            for w, j in zip(app.solution.workers, app._jobs, strict=True)
        )
        app.controls["racks"].value = 0
        assert app.wait(30)
        assert app.rack_box.layout.display == "none" and app._cluster.topology == ()
        app.controls["racks"].value = 3
        assert app.wait(30)
        assert app.rack_box.layout.display == ""
        assert len(app.rack_fig.layout.annotations) == 3
    finally:
        app.close()
