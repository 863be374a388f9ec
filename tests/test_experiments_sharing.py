"""GPU-sharing experiments (sharing_validation, jct_vs_sharing_degree) and their bad inputs."""

from __future__ import annotations

import numpy as np
import pytest

from smdlab import Cluster, make_job
from smdlab.cli import main
from smdlab.errors import Infeasible, InvalidInput
from smdlab.experiments.sharing import jct_vs_sharing_degree, sharing_validation
from smdlab.model.colocation import (
    colocation_metrics,
    fit_colocation_model,
    gavel_job_type,
    gpu_memory_floor_gb,
    load_gavel_pairs,
    load_gavel_solo,
    split_pairs,
    too_large_for_gpus,
)
from smdlab.model.job import Job
from smdlab.model.profiles import BYTES_PER_PARAM, LayerProfile
from smdlab.policies.base import Allocation, ClusterState, Decision, Placement, Policy
from smdlab.sim import simulate
from smdlab.sim.simulator import InvalidDecision


def test_sharing_validation_rows_match_the_holdout_metric():
    df = sharing_validation("tiny")
    assert set(df["model"]) == {"factorised", "log_additive"}
    assert (df["measured_steps_per_s"] > 0).all() and (df["predicted_steps_per_s"] > 0).all()
    pairs, solo = load_gavel_pairs(), load_gavel_solo()
    test = split_pairs(pairs, 0.2, seed=0)
    model = fit_colocation_model(pairs[~test], solo)
    mape = colocation_metrics(model, pairs[test])["mape_pct"]
    got = df.loc[df["model"] == "factorised", "error_pct"].abs().mean()
    assert got == pytest.approx(mape, rel=1e-9)  # the figure's MAPE is the documented metric


def test_jct_vs_sharing_degree_no_sharing_never_shares():
    df = jct_vs_sharing_degree("tiny")
    assert set(df["sharing_degree"]) == {1, 2}
    flat = df[df["policy"].isin(["no_sharing", "tiresias"])]
    assert np.allclose(flat["gpu_sharing"], 1.0)
    assert (df["jobs_completed"] == df["jobs"]).all()
    at1 = df[(df["sharing_degree"] == 1) & (df["policy"] == "sjf_ffs")]
    ref = df[(df["sharing_degree"] == 1) & (df["policy"] == "no_sharing")]
    assert at1["mean_jct_s"].to_numpy() == pytest.approx(ref["mean_jct_s"].to_numpy())


def test_cli_sharing_degree_below_one_exits_2_with_one_line(capfd):
    rc = main(["simulate", "--policy", "sjf_ffs", "--jobs", "4", "--sharing-degree", "0"])
    out, err = capfd.readouterr()
    assert rc == 2 and out == ""
    assert err.count("\n") == 1 and "sharing_degree must be an integer" in err


class _Accumulate(Policy):
    name = "accumulate"

    def decide(self, state: ClusterState) -> Decision:
        q = state.queued[:1]
        place = Placement(((0, 1, 1),))
        return Decision(
            tuple(
                Allocation(x.job.name, 1, 1, place, group="g", sharing="space", accumulation=0)
                for x in q
            )
        )


def test_accumulation_below_one_is_one_line():
    job = make_job("a", "resnet50", 1e5, global_batch=32)
    with pytest.raises(InvalidDecision, match=r"accumulation .* must be an integer >= 1, got 0"):
        simulate([job], Cluster.homogeneous(1), _Accumulate(), sharing_degree=2)
    with pytest.raises(InvalidInput, match="accumulation must be an integer"):
        gavel_job_type(job, 0)


def _huge_job(name: str = "huge") -> Job:
    f = np.full(2, 5e-5)
    # 1.5 billion parameters: 24 GB of training state, more than a 16 GB V100 holds
    prof = LayerProfile(["a", "b"], f, 2 * f, np.full(2, 0.75e9 * BYTES_PER_PARAM), network="huge")
    return Job(name, prof, 1e5, 32, {"gpu": 1, "cpu": 2, "bw_gbps": 10}, {"cpu": 4, "bw_gbps": 10})


def test_job_too_large_for_any_gpu_is_skipped_or_raised():
    small = make_job("small", "resnet50", 1e5, global_batch=32)
    assert gpu_memory_floor_gb(small) == pytest.approx(25.557032e6 * 16 / 1e9)
    jobs = [_huge_job(), small]
    with pytest.warns(UserWarning, match=r"job 'huge' needs at least 24.0 GB .* \(v100, 16 GB\)"):
        res = simulate(jobs, Cluster.homogeneous(1), "sjf_ffs")
    assert res.summary["jobs_completed"] == 1 and "huge" in set(
        res.jobs[res.jobs.status == "skipped"].job
    )
    with pytest.raises(Infeasible, match=r"needs at least 24\.0 GB of GPU memory"):
        simulate(jobs, Cluster.homogeneous(1), "sjf_ffs", unfit="raise")
    # a 40 GB A100 holds it
    a100 = Cluster.racks(1, 1, gpu_type="a100")
    assert too_large_for_gpus(jobs[0], a100) is None
    assert simulate(jobs, a100, "fifo").summary["jobs_completed"] == 2
