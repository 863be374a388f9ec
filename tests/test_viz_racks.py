"""Rack drawing: snapshots of a run's placements and the racks-of-machines figure."""

from __future__ import annotations

import pytest

from smdlab.errors import InvalidInput
from smdlab.model.cluster import Cluster
from smdlab.model.job import make_job
from smdlab.sim.simulator import simulate
from smdlab.sim.snapshot import Snapshot, placements_at
from smdlab.viz.racks import FREE_COLOR, job_color, rack_figure


def _cluster() -> Cluster:
    return Cluster.groups(
        [
            {"name": "ra", "machines": 2, "gpu_type": "k80", "gpu": 4},
            {"name": "rb", "machines": 1, "gpu_type": "v100", "gpu": 4, "oversubscription": 2},
        ]
    )


def _jobs():
    kw = {"requested_workers": 2, "max_workers": 2, "max_ps": 1}
    return [
        make_job(f"j{i}", net, samples=2e5, arrival=600.0 * i, **kw)
        for i, net in enumerate(("resnet50", "lstm_lm", "bert_base", "resnet50"))
    ]


def test_snapshots_follow_the_run():
    jobs, cluster = _jobs(), _cluster()
    result = simulate(jobs, cluster, "fifo")
    end = float(result.jobs["finish"].max())
    times = [0.0, 700.0, 1900.0, end + 1]
    snaps = placements_at(jobs, cluster, "fifo", times)
    assert [s.time for s in snaps] == times
    hist = result.history
    for s in snaps:
        running = set(hist[(hist["start"] <= s.time) & (hist["end"] > s.time)]["job"])
        assert set(s.tasks) == running
        for name, tasks in s.tasks.items():
            assert sum(w for _, w, _ in tasks) >= 1
            assert all(0 <= m < len(cluster.machines) for m, _, _ in tasks)
            assert s.networks[name] == next(j for j in jobs if j.name == name).profile.network
    assert snaps[-1].tasks == {} and snaps[-1].queued == ()
    assert "j0" in snaps[0].tasks  # the first job starts at its arrival, t = 0
    with pytest.raises(InvalidInput):
        placements_at(jobs, cluster, "fifo", [])


def test_rack_figure_colours_each_job_on_its_gpus():
    cluster = _cluster()
    snap = Snapshot(
        3600.0,
        cluster,
        {"a": ((0, 2, 1),), "b": ((1, 1, 0), (2, 3, 0))},
        {"a": "resnet50", "b": "lstm_lm"},
        {"a": 1.0, "b": 1.0},
        ("c",),
    )
    fig = rack_figure(snap)
    by_name = {t.name: t for t in fig.data}
    assert len(by_name["a (resnet50)"].x) == 2 and len(by_name["b (lstm_lm)"].x) == 4
    assert by_name["a (resnet50)"].marker.color == job_color("a")
    free = by_name["free GPU"]
    assert free.marker.color == FREE_COLOR and len(free.x) == 12 - 6
    # b's squares sit in two racks: two blocks of columns, one square each on machine 1.
    b_machine2 = [x for x in by_name["b (lstm_lm)"].x if x > 5]
    assert len(b_machine2) == 3
    assert "1 PS of a" in by_name["parameter servers (hover: whose)"].hovertext[0]
    headers = [a.text for a in fig.layout.annotations]
    assert any("ra" in h and "K80" in h for h in headers)
    assert any("rb" in h and "V100" in h and "/2" in h for h in headers)
    assert "waiting: 1" in fig.layout.title.text
    assert job_color("a") == job_color("a")  # stable across drawings


def test_rack_figure_flat_and_large_clusters():
    flat = Snapshot(0.0, Cluster.homogeneous(2, gpu=2), {"x": ((1, 2, 0),)}, {}, {"x": 1.0})
    fig = rack_figure(flat)
    assert [a.text.split("<br>")[0] for a in fig.layout.annotations] == ["cluster"]
    big = Cluster.racks(32, 16)
    fig = rack_figure(Snapshot(0.0, big, {"y": ((500, 8, 0),)}, {}, {"y": 1.0}))
    assert sum(len(t.x) for t in fig.data) == 32 * 16 * 8
    assert fig.data[-1].text is None  # too many squares to label
