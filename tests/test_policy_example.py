"""The complete example policy of docs/policies.md runs as printed and follows its rule."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

import numpy as np

from smdlab.policies import Policy
from smdlab.policies.registry import _EXTRA
from smdlab.solve.instance import base_speeds

DOC = Path(__file__).resolve().parents[1] / "docs" / "policies.md"


def _example() -> str:
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(encoding="utf-8"), flags=re.S)
    assert len(blocks) == 1, "docs/policies.md has one complete example"
    return blocks[0]


def test_the_example_is_about_thirty_lines_of_policy():
    code = _example()
    body = code.split("class ShortestFirst", 1)[1].split("register_policy(", 1)[0]
    assert 15 <= len([line for line in body.splitlines() if line.strip()]) <= 35


def test_the_example_runs_and_starts_the_shortest_job_first():
    ns: dict = {}
    try:
        with contextlib.redirect_stdout(io.StringIO()) as out:
            exec(compile(_example(), str(DOC), "exec"), ns)
        result, jobs = ns["result"], ns["jobs"]
        assert isinstance(ns["ShortestFirst"](), Policy)
        assert float(out.getvalue()) == result.summary["mean_jct"] > 0
        assert result.summary["jobs_completed"] == len(jobs)
        # All arrive at 0 on two machines: the shortest job alone starts first (or together).
        starts = result.jobs.set_index("job")["start"]
        alone = np.array([j.samples for j in jobs]) / base_speeds(jobs)
        shortest = jobs[int(np.argmin(alone))].name
        assert starts[shortest] == starts.min()
    finally:
        _EXTRA.pop("shortest_first", None)
