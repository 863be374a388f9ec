"""Names removed in 0.2 (CHANGELOG.md): each one given is one line naming its replacement."""

from __future__ import annotations

import numpy as np
import pytest

from smdlab import Cluster, make_job, simulate
from smdlab.cli import main
from smdlab.errors import InvalidInput
from smdlab.policies.base import ClusterState
from smdlab.workloads.scenario import load_scenario


def _run():
    return [make_job("a", "resnet50", 1e4)], Cluster.homogeneous(1)


@pytest.mark.parametrize(
    "former, use",
    [({"elastic": True}, "execution='elastic'"), ({"delta": 60.0}, "slot_s")],
)
def test_simulate_keyword_names_its_replacement(former, use):
    jobs, cluster = _run()
    with pytest.raises(InvalidInput) as info:
        simulate(jobs, cluster, "fifo", **former)
    text = str(info.value)
    assert "\n" not in text and f"{next(iter(former))} is a former option" in text and use in text


def test_an_unknown_keyword_is_still_a_type_error():
    jobs, cluster = _run()
    with pytest.raises(TypeError, match="unexpected keyword argument 'elastc'"):
        simulate(jobs, cluster, "fifo", elastc=True)


def test_cluster_state_has_one_execution_field():
    cluster = Cluster.homogeneous(1)
    free = np.zeros((1, len(cluster.resources)))
    state = ClusterState(0.0, cluster, (), (), free, execution="elastic")
    assert state.execution == "elastic" and state.preemptive
    assert ClusterState(0.0, cluster, (), (), free).execution == "non_elastic"
    with pytest.raises(AttributeError, match=r"use state.execution == 'elastic'"):
        _ = state.elastic
    with pytest.raises(AttributeError, match="no attribute 'nothing'"):
        _ = state.nothing
    with pytest.raises(InvalidInput, match="execution must be one of"):
        ClusterState(0.0, cluster, (), (), free, "wfbp", True)  # the former positional elastic


@pytest.mark.parametrize(
    "text, use",
    [("elastic = true", 'simulation.execution = "elastic"'), ("delta = 60", "simulation.slot_s")],
)
def test_scenario_key_names_its_replacement(tmp_path, text, use):
    path = tmp_path / "s.toml"
    path.write_text(f"[simulation]\n{text}\n")
    with pytest.raises(InvalidInput, match=r"is a former key, removed in 0\.2") as info:
        load_scenario(path)
    assert use in str(info.value)


@pytest.mark.parametrize(
    "flag, use", [(["--elastic"], "--execution elastic"), (["--delta", "60"], "--slot-s")]
)
def test_cli_flag_exits_2_naming_its_replacement(capsys, flag, use):
    with pytest.raises(SystemExit) as info:
        main(["simulate", "--jobs", "2", "--machines", "1", *flag])
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"{flag[0]} is a former flag, removed in 0.2" in err
    assert use in err
