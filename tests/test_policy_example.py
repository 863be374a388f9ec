"""The complete example policies of docs/policies.md run as printed and follow their rules."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

import numpy as np

import smdlab
from smdlab.policies import Policy
from smdlab.policies.registry import _EXTRA
from smdlab.solve.instance import base_speeds

DOC = Path(__file__).resolve().parents[1] / "docs" / "policies.md"


def _example(cls: str) -> str:
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(encoding="utf-8"), flags=re.S)
    found = [b for b in blocks if f"class {cls}(" in b]
    assert len(found) == 1, f"docs/policies.md has one complete example of {cls}"
    return found[0]


def _policy_lines(code: str, cls: str, end: str) -> int:
    body = code.split(f"class {cls}", 1)[1].split(end, 1)[0]
    return len([line for line in body.splitlines() if line.strip()])


def _run(code: str) -> tuple[dict, str]:
    ns: dict = {"__name__": "__main__"}
    with contextlib.redirect_stdout(io.StringIO()) as out:
        exec(compile(code, str(DOC), "exec"), ns)
    return ns, out.getvalue()


def test_the_examples_are_about_thirty_lines_of_policy():
    assert 15 <= _policy_lines(_example("ShortestFirst"), "ShortestFirst", "register_policy(") <= 35
    assert 15 <= _policy_lines(_example("LeastAttained"), "LeastAttained", "if __name__") <= 35


def test_the_example_runs_and_starts_the_shortest_job_first():
    try:
        ns, out = _run(_example("ShortestFirst"))
        result, jobs = ns["result"], ns["jobs"]
        assert isinstance(ns["ShortestFirst"](), Policy)
        assert float(out) == result.summary["mean_jct"] > 0
        assert result.summary["jobs_completed"] == len(jobs)
        # All arrive at 0 on two machines: the shortest job alone starts first (or together).
        starts = result.jobs.set_index("job")["start"]
        alone = np.array([j.samples for j in jobs]) / base_speeds(jobs)
        shortest = jobs[int(np.argmin(alone))].name
        assert starts[shortest] == starts.min()
    finally:
        _EXTRA.pop("shortest_first", None)


def test_the_preemptive_example_runs_and_serves_the_least_attained_job_first():
    ns, out = _run(_example("LeastAttained"))
    result, jobs = ns["result"], ns["jobs"]
    mean_jct, preemptions = (float(x) for x in out.split())
    assert mean_jct == result.summary["mean_jct"] > 0
    assert preemptions == result.summary["preemptions"] > 0
    assert result.summary["jobs_completed"] == len(jobs)
    assert result.summary["execution"] == "preemptive"
    # A newcomer has attained nothing, so it always gets a GPU at once: every job starts on
    # arrival, and the job preempted is the one that has run longest.
    df = result.jobs.set_index("job")
    assert (df["start"] == df["arrival"]).all()
    assert df["preemptions"].idxmax() == "j0"
    assert smdlab.check_policy(ns["LeastAttained"]()) == []
