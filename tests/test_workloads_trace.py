"""Trace loaders: the Philly trace, job tables, and their input validation."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from smdlab import Cluster, InvalidInput, speed
from smdlab.workloads import load_csv, load_job_table, load_philly, offered_load, philly_path

NETS = ["resnet50", "alexnet"]


def _write(tmp_path, text: str, name: str = "t.csv"):
    p = tmp_path / name
    p.write_text(text)
    return p


def test_philly_first_jobs_are_sorted_and_calibrated():
    jobs = load_philly(first=40, networks=NETS, seed=1)
    trace = pd.read_csv(philly_path(), parse_dates=["timestamp"])
    trace["row"] = np.arange(len(trace))
    trace = trace.sort_values("timestamp", kind="stable").head(40)
    assert [j.name for j in jobs] == [f"philly{r:05d}" for r in trace["row"]]
    arrivals = np.array([j.arrival for j in jobs])
    expect = (trace["timestamp"] - trace["timestamp"].iloc[0]).dt.total_seconds().to_numpy()
    np.testing.assert_allclose(arrivals, expect)
    for j, (_, row) in zip(jobs, trace.iterrows()):
        g = int(row["num_gpus"])
        assert (j.max_workers, j.max_ps) == (g, g)  # PS count rule: one PS per worker
        assert j.samples / speed(j, g, g) == pytest.approx(row["duration"], rel=1e-12)


def test_philly_network_draw_is_per_row_and_seeded():
    a = {j.name: j.profile.network for j in load_philly(first=60, networks=NETS, seed=3)}
    b = {j.name: j.profile.network for j in load_philly(window_s=(0, 2e6), networks=NETS, seed=3)}
    shared = set(a) & set(b)
    assert shared and all(a[n] == b[n] for n in shared)
    c = {j.name: j.profile.network for j in load_philly(first=60, networks=NETS, seed=4)}
    assert a != c


def test_philly_window_rate_scale_and_load():
    window = load_philly(window_s=(1_000_000, 1_300_000), networks=NETS)
    stamps = pd.to_datetime(pd.read_csv(philly_path())["timestamp"])
    t = (stamps - stamps.min()).dt.total_seconds()
    assert len(window) == int(((t >= 1_000_000) & (t < 1_300_000)).sum()) > 0
    base = load_philly(first=100, networks=NETS)
    fast = load_philly(first=100, networks=NETS, rate_scale=4.0)
    np.testing.assert_allclose([j.arrival for j in fast], [j.arrival / 4 for j in base])
    cl = Cluster.homogeneous(8)
    loaded = load_philly(first=100, networks=NETS, load=0.9, cluster=cl)
    assert offered_load(loaded, cl) == pytest.approx(0.9, rel=1e-9)
    vc = load_philly(first=20, networks=NETS, vc="6214e9")
    assert len(vc) == 20
    with pytest.raises(InvalidInput, match="both"):
        load_philly(first=10, networks=NETS, load=0.5, rate_scale=2.0, cluster=cl)
    with pytest.raises(InvalidInput, match="needs a cluster"):
        load_philly(first=10, networks=NETS, load=0.5)
    with pytest.raises(InvalidInput, match="vc"):
        load_philly(first=10, networks=NETS, vc="nope")
    with pytest.raises(InvalidInput, match="empty"):
        load_philly(window_s=(1e9, 2e9), networks=NETS)


GOOD = "timestamp,duration,num_gpus\n2017-10-01 00:00:10,100,2\n2017-10-01 00:00:00,50,1\n"


def test_unsorted_traces_are_sorted_or_refused(tmp_path):
    p = _write(tmp_path, GOOD)
    jobs = load_philly(p, networks=NETS)
    assert [j.arrival for j in jobs] == [0.0, 10.0] and jobs[0].max_workers == 1
    with pytest.raises(InvalidInput, match=r"time order.*line 3"):
        load_philly(p, networks=NETS, on_unsorted="raise")
    numeric = _write(tmp_path, "timestamp,duration,num_gpus\n0,10,1\n5.5,20,4\n", "n.csv")
    assert [j.arrival for j in load_philly(numeric, networks=NETS)] == [0.0, 5.5]


@pytest.mark.parametrize(
    "text, match",
    [
        ("timestamp,num_gpus\n0,1\n", "missing column.*duration"),
        ("timestamp,duration,num_gpus\n0,abc,1\n", "'duration' must be a finite number; line 2"),
        ("timestamp,duration,num_gpus\n0,10,1\n1,-5,1\n", "'duration' must be > 0 seconds; line 3"),
        ("timestamp,duration,num_gpus\n0,10,1.5\n", "'num_gpus' must be an integer"),
        ("timestamp,duration,num_gpus\n0,10,0\n", "'num_gpus' must be an integer in \\[1, 1024\\]"),
        ("timestamp,duration,num_gpus\nyesterday,10,1\n", "'timestamp' must be a date-time"),
        ("timestamp,duration,num_gpus\n", "empty"),
        ("", "empty"),
    ],
)
def test_bad_traces(tmp_path, text, match):
    with pytest.raises(InvalidInput, match=match):
        load_philly(_write(tmp_path, text), networks=NETS)


def test_missing_file():
    with pytest.raises(InvalidInput, match="not found"):
        load_philly("/no/such/trace.csv")
    with pytest.raises(InvalidInput, match="not found"):
        load_csv("/no/such/jobs.csv")


def test_job_table_and_format_detection(tmp_path):
    p = _write(
        tmp_path,
        "name,network,arrival,samples,max_workers,weight\nb,alexnet,5,1000,2,2\na,resnet50,0,500,4,1\n",
    )
    jobs = load_job_table(p)
    assert [j.name for j in jobs] == ["a", "b"]
    assert (jobs[1].max_workers, jobs[1].max_ps, jobs[1].weight, jobs[1].samples) == (
        2,
        2,
        2.0,
        1000.0,
    )
    assert [j.name for j in load_csv(p)] == ["a", "b"]
    assert [j.name for j in load_csv(p, first=1)] == ["a"]
    assert len(load_csv(_write(tmp_path, GOOD, "trace.csv"), networks=NETS)) == 2
    with pytest.raises(InvalidInput, match="either timestamp"):
        load_csv(_write(tmp_path, "x,y\n1,2\n", "odd.csv"))
    with pytest.raises(InvalidInput, match="traces only"):
        load_csv(p, window_s=(0, 10))
    bad = _write(tmp_path, "network,arrival,samples\nalexnet,0,-1\n", "bad.csv")
    with pytest.raises(InvalidInput, match="'samples' must be > 0; line 2"):
        load_job_table(bad)
    with pytest.raises(InvalidInput, match=r"'network' must be one of .*; line 2 has 'nope'"):
        load_job_table(_write(tmp_path, "network,arrival,samples\nnope,0,1\n", "n.csv"))
