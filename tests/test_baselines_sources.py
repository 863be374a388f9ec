"""The PS-world baselines as their sources define them differ where smdlab's earlier ports tied (docs/baselines.md)."""

from __future__ import annotations

import pytest

from smdlab.experiments.config import CONFIGS
from smdlab.experiments.scenario import base_cluster, batch_jobs
from smdlab.policies.registry import get_policy
from smdlab.sim import simulate

SEEDS = range(6)


def _mean_jct(policy: str, seed: int) -> float:
    cfg = CONFIGS["full"]  # the default figure scenario: 24 jobs, 4 servers, per-network demands
    res = simulate(
        batch_jobs(cfg, seed),
        base_cluster(cfg),
        get_policy(policy),
        mode=cfg.mode,
        execution=cfg.execution,  # each policy in its natural mode
        restart_s=cfg.restart_s,
        record_history=False,
    )
    return float(res.summary["mean_jct"])


def test_default_figure_scenario_uses_per_network_demands():
    cfg = CONFIGS["full"]
    jobs = batch_jobs(cfg, 0)
    assert cfg.demands == "per_network"
    assert len({tuple(sorted(j.worker_demand.items())) for j in jobs}) > 1
    uniform = batch_jobs(cfg.replace(demands="uniform"), 0)
    assert len({tuple(sorted(j.worker_demand.items())) for j in uniform}) == 1


@pytest.mark.parametrize("a, b", [("optimus", "drf"), ("tetris", "srtf")])
def test_baselines_differ_on_the_default_figure_scenario(a, b):
    differ = [_mean_jct(a, s) != pytest.approx(_mean_jct(b, s), rel=1e-9) for s in SEEDS]
    assert sum(differ) >= 5, differ


def test_figures_can_be_regenerated_with_uniform_demands_and_the_ports_are_gone(capsys):
    from smdlab import InvalidInput
    from smdlab.cli import main

    cfg = CONFIGS["tiny"]
    for name in ("optimus", "drf", "tetris"):  # smdlab's earlier ports were removed in 0.2
        with pytest.raises(InvalidInput, match=r"variant is a former option, removed in 0\.2"):
            get_policy(name, variant="smdlab")
    with pytest.raises(SystemExit) as info:
        main(["reproduce", "--tiny", "--baselines", "smdlab"])
    assert info.value.code == 2 and "--baselines was removed in 0.2" in capsys.readouterr().err
    with pytest.raises(InvalidInput, match="demands"):
        cfg.replace(demands="gpu")
