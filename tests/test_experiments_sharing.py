"""GPU-sharing experiments (sharing_validation, jct_vs_sharing_degree) and their bad inputs."""

from __future__ import annotations

import numpy as np
import pytest

from smdlab import Cluster, make_job
from smdlab.cli import main
from smdlab.errors import InvalidInput
from smdlab.experiments.sharing import jct_vs_sharing_degree, sharing_validation
from smdlab.model.colocation import (
    colocation_metrics,
    fit_colocation_model,
    gavel_job_type,
    load_gavel_pairs,
    load_gavel_solo,
    split_pairs,
)
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
