"""The data stage (input pipeline): saturation equals the layered model, monotonicity, bad input."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest

import smdlab
from smdlab.errors import InvalidInput
from smdlab.model.interleave import GROUP_OVERHEAD, interleaved_time, stage_times
from smdlab.model.pipeline import (
    InputPipeline,
    check_sensitivity,
    data_stage_times,
    pipeline_table,
    synergy_image_cpu_s_per_sample,
    synergy_sensitivity,
    with_worker_resources,
)
from smdlab.model.timing import saturation_cpu

NETWORKS = smdlab.list_profiles()


@pytest.mark.parametrize("network", NETWORKS)
def test_saturation_equals_layered_model_exactly(network):
    plain = smdlab.make_job("j", network, 1e6, max_workers=4, max_ps=4)
    piped = smdlab.make_job("j", network, 1e6, max_workers=4, max_ps=4, pipeline=True)
    assert piped.pipeline is not None
    for w, p in itertools.product((1, 2, 4), (1, 4)):
        for mode in ("wfbp", "sequential"):
            old = smdlab.speed(plain, w, p, mode)
            assert smdlab.speed(piped, w, p, mode, cpu=1e6, mem_gb=1e6) == old
            # enough cores and cache to saturate: exactly the layered model, not approximately
            need = saturation_cpu(piped, w, p, mode)
            assert smdlab.speed(piped, w, p, mode, cpu=need * 1.0001, mem_gb=1e6) == old


def test_no_pipeline_ignores_levels_and_demand_calls_unchanged():
    job = smdlab.make_job("j", "resnet50", 1e6)
    assert job.pipeline is None
    base = smdlab.speed(job, 2, 2)
    assert smdlab.speed(job, 2, 2, cpu=1, mem_gb=1) == base
    piped = smdlab.make_job("j", "resnet50", 1e6, pipeline=True)
    # None means the job's demand: the same call as passing the demand explicitly
    assert smdlab.speed(piped, 2, 2) == smdlab.speed(
        piped, 2, 2, cpu=piped.worker_demand["cpu"], mem_gb=piped.worker_demand["mem_gb"]
    )
    # resnet50's demand rule gives it enough cores: today's speed
    assert smdlab.speed(piped, 2, 2) == base


def test_more_cpu_or_memory_never_slows():
    rng = np.random.default_rng(0)
    for network in NETWORKS:
        job = smdlab.make_job("j", network, 1e6, max_workers=8, max_ps=8, pipeline=True)
        levels_c = np.sort(rng.uniform(0.25, 40, 6))
        levels_m = np.sort(rng.uniform(0, 300, 6))
        w, p = (int(x) for x in rng.integers(1, 9, 2))
        grid = np.array(
            [[smdlab.speed(job, w, p, cpu=c, mem_gb=m) for m in levels_m] for c in levels_c]
        )
        assert np.all(np.diff(grid, axis=0) >= 0), network
        assert np.all(np.diff(grid, axis=1) >= 0), network


def test_iteration_is_slowest_of_data_and_layered():
    job = smdlab.make_job("j", "mobilenet_v2", 1e6, pipeline=True)
    for cpu, mem in ((1, 0), (4, 50), (64, 200)):
        io, c = data_stage_times(job, 2, cpu, mem)
        tau = smdlab.iteration_time(job, 2, 1, cpu=cpu, mem_gb=mem)
        assert tau == max(smdlab.layered_iteration_time(job, 2, 1), float(io), float(c))


def test_memory_as_page_cache_cuts_storage_reads():
    job = smdlab.make_job("j", "resnet50", 1e6, pipeline=True)
    p = job.pipeline
    io_small, _ = data_stage_times(job, 1, mem_gb=p.process_mem_gb)
    io_half, _ = data_stage_times(job, 1, mem_gb=p.process_mem_gb + p.dataset_gb / 2)
    io_all, _ = data_stage_times(job, 1, mem_gb=p.process_mem_gb + p.dataset_gb)
    assert float(io_half) == pytest.approx(float(io_small) / 2)
    assert float(io_all) == 0.0


def test_stage_times_add_up_to_layered_iteration():
    job = smdlab.make_job("j", "resnet50", 1e6, pipeline=True)
    st = stage_times(job, 2, 2)
    assert st["gpu"] + st["network"] == pytest.approx(smdlab.layered_iteration_time(job, 2, 2))
    assert min(st.values()) >= 0


def test_timeline_shows_data_stage_and_ends_at_tau():
    job = smdlab.make_job("j", "mobilenet_v2", 1e6, pipeline=True)
    for cpu in (1, 64):
        df = smdlab.layer_timeline(job, 1, 1, cpu=cpu)
        assert set(df[df["layer"] == "input"]["phase"]) == {"read", "preprocess"}
        assert df["end"].max() == pytest.approx(smdlab.iteration_time(job, 1, 1, cpu=cpu))


def test_variant_is_cached_and_keeps_demand_job():
    job = smdlab.make_job("j", "resnet50", 1e6, pipeline=True)
    assert with_worker_resources(job) is job
    a = with_worker_resources(job, cpu=3)
    assert a is with_worker_resources(job, cpu=3)
    assert a.worker_demand["cpu"] == 3 and a.name == job.name


def test_interleaving_hides_complementary_stages():
    a, b = (2.0, 0.0, 0.0, 0.0), (0.0, 2.0, 0.0, 0.0)
    assert interleaved_time([a]) == 2.0
    assert interleaved_time([a, b], overhead=False) == 2.0
    assert interleaved_time([a, b]) == pytest.approx(2.0 * GROUP_OVERHEAD[2])
    # never worse than running the group's iterations back to back (before overhead)
    rng = np.random.default_rng(1)
    for k in (2, 3, 4):
        t = rng.uniform(0, 1, (k, 4))
        assert max(t.sum(1)) <= interleaved_time(t, overhead=False) <= t.sum() + 1e-12


def test_bundled_image_rate_comes_from_synergy():
    table = pipeline_table().set_index("network")
    assert table.loc["resnet50", "cpu_s_per_sample"] == pytest.approx(
        synergy_image_cpu_s_per_sample(), rel=1e-3
    )
    syn = synergy_sensitivity()
    assert set(syn["model"]) >= {"res50", "alexnet", "transformer"}


@pytest.mark.parametrize(
    "call, field",
    [
        (lambda j: smdlab.speed(j, 1, 1, cpu=-1), "cpu"),
        (lambda j: smdlab.speed(j, 1, 1, mem_gb=-2), "mem_gb"),
        (lambda j: smdlab.iteration_time(j, 1, 1, cpu=float("nan")), "cpu"),
        (lambda j: smdlab.speed(j, 1, 1, cpu=0), "cpu"),
        (lambda j: interleaved_time([[1, -1, 0, 0]]), "stage time"),
        (lambda j: interleaved_time([[1, 1, 1, 1]] * 5), "group size"),
        (lambda j: InputPipeline(-1, 0, 1), "cpu_s_per_sample"),
        (lambda j: InputPipeline(1, 0, 0), "dataset_gb"),
    ],
)
def test_bad_input_is_one_clear_line(call, field):
    job = smdlab.make_job("j", "resnet50", 1e6, pipeline=True)
    with pytest.raises(InvalidInput, match=field):
        call(job)


def test_non_monotone_table_raises_or_repairs():
    t = pd.DataFrame(
        {
            "model": ["m"] * 4,
            "cpu_per_gpu": [1, 1, 2, 2],
            "mem_gb_per_gpu": [10, 20, 10, 20],
            "relative_throughput": [1.0, 1.2, 0.8, 1.5],
        }
    )
    with pytest.raises(InvalidInput, match=r"non-decreasing.*cpu_per_gpu=2"):
        check_sensitivity(t)
    with pytest.warns(UserWarning, match="repaired: 1"):
        fixed = check_sensitivity(t, repair=True)
    assert fixed["relative_throughput"].tolist() == [1.0, 1.2, 1.0, 1.5]
    with pytest.raises(InvalidInput, match="negative"):
        check_sensitivity(t.assign(cpu_per_gpu=-1))


def test_demand_saturates_every_bundled_network_but_mobilenet():
    # docs/model.md: the demand rule feeds every network at (1, 1) except MobileNetV2
    slowed = [
        n
        for n in NETWORKS
        if smdlab.speed(smdlab.make_job("j", n, 1e6, pipeline=True), 1, 1)
        != smdlab.speed(smdlab.make_job("j", n, 1e6), 1, 1)
    ]
    assert slowed == ["mobilenet_v2"]
