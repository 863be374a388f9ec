"""Runs do not depend on PYTHONHASHSEED (the order Python iterates sets of strings in).

Each run goes to a child process per hash seed (tests/_hash_seed_run.py); the children run at once.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from smdlab.policies.registry import list_policies

RUNNER = Path(__file__).with_name("_hash_seed_run.py")
ROOT = Path(__file__).resolve().parents[1]


def _digests(args: list[str], seeds: tuple[int, ...]) -> list[dict[str, str]]:
    """The runner's digests under each hash seed (one child process per seed, run together)."""
    procs = []
    for seed in seeds:
        env = {**os.environ, "PYTHONHASHSEED": str(seed)}
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
        procs.append(
            subprocess.Popen(
                [sys.executable, str(RUNNER), *args],
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
        )
    out = []
    for p in procs:
        stdout, stderr = p.communicate()
        assert p.returncode == 0, stderr
        out.append(json.loads(stdout))
    return out


def _same(runs: list[dict[str, str]]) -> None:
    first = runs[0]
    differ = sorted(k for k in first if any(r[k] != first[k] for r in runs[1:]))
    assert not differ, f"results depend on PYTHONHASHSEED: {differ}"


def test_policies_that_resize_or_group_do_not_depend_on_the_hash_seed():
    # SMD's levels and the work-conserving fill (elastic resizes), SJF-BSBF's and Gandiva's groups,
    # DRF's bundles: the decisions whose order once came from a set of job names or group ids
    policies = ["drf", "smd", "smd_levels", "sjf_bsbf", "gandiva"]
    _same(_digests(policies, (1, 2, 3)))


@pytest.mark.slow
def test_every_registered_policy_does_not_depend_on_the_hash_seed():
    _same(_digests(list_policies(), (1, 2)))


@pytest.mark.slow
def test_default_scenario_smd_history_does_not_depend_on_the_hash_seed():
    _same(_digests(["--default-scenario", "smd"], (1, 2, 3)))
