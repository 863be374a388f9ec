"""Fuzzing the scenario (TOML) and trace / job-table (CSV) loaders: every input is loaded or refused.

Each example takes a valid file from a small seed corpus, applies a few text mutations (a value
replaced by an odd token, a line dropped, duplicated or swapped, characters deleted or inserted, a
CSV cell or column changed) and, sometimes, byte mutations, then loads it. The only acceptable
outcomes are a result or an ``SmdlabError``; anything else (TypeError, ValueError, IndexError,
...) is a defect. A loaded scenario is also built (cluster, jobs capped at 8, policy objects), as
``smdlab simulate`` would.

Budgets (derandomised, so every run tries the same cases): ``SMDLAB_FUZZ_EXAMPLES`` examples per
loader (default 500); ``SMDLAB_FUZZ_SEED=N`` draws other cases. Counts go to stdout with ``-s``
and, with ``SMDLAB_FUZZ_REPORT=FILE``, one JSON line per loader is appended to FILE. ``SMDLAB_FUZZ_SURVEY=1`` records unexpected exceptions
(grouped by type and raising line) instead of failing at the first one: that is how the defects
listed in docs/reliability.md were counted before they were fixed. Rerun at a larger budget::

    SMDLAB_FUZZ_EXAMPLES=3000 SMDLAB_FUZZ_REPORT=fuzz.jsonl .venv/bin/pytest -q -s tests/test_fuzz_loaders.py
"""

from __future__ import annotations

import itertools
import json
import os
import traceback
import warnings
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, seed, settings, strategies as st

from smdlab import Cluster, SmdlabError
from smdlab.policies.registry import get_policy, list_policies
from smdlab.workloads import default_scenario_path, load_csv, load_scenario
from smdlab.workloads.scenario import Scenario

EXAMPLES = int(os.environ.get("SMDLAB_FUZZ_EXAMPLES", "500"))
SURVEY = os.environ.get("SMDLAB_FUZZ_SURVEY") == "1"
REPORT = os.environ.get("SMDLAB_FUZZ_REPORT")
SEED = os.environ.get("SMDLAB_FUZZ_SEED")  # explore other cases than the derandomised default


def FUZZ(test):
    """Hypothesis settings of the fuzz runs: derandomised, or seeded by SMDLAB_FUZZ_SEED."""
    test = settings(
        max_examples=EXAMPLES,
        deadline=None,
        derandomize=SEED is None,
        database=None,
        suppress_health_check=list(HealthCheck),
    )(test)
    return test if SEED is None else seed(int(SEED))(test)


# ---- seed corpus ------------------------------------------------------------------------------
TRACE = """timestamp,duration,num_gpus,gpu_time,cluster
2017-10-03 12:00:00,600,1,600,vc1
2017-10-03 12:05:00,1200,2,2400,vc2
2017-10-03 12:04:00,300,4,1200,vc1
2017-10-03 12:30:00,60,1,60,vc2
2017-10-03 13:00:00,3600,8,28800,vc1
2017-10-03 13:00:30,900,2,1800,vc1
"""
TRACE_SECONDS = """timestamp,duration,num_gpus
0,600,1
10.5,1200,2
30,300,4
30,60,1
"""
JOB_TABLE = """name,network,arrival,samples,max_workers,max_ps,weight,global_batch
a,resnet50,0,50000,2,2,1,256
b,alexnet,5.5,20000,1,1,2,128
c,vgg16,7,80000,4,2,0.5,64
"""
JOB_TABLE_MIN = """network,arrival,samples
lstm_lm,0,1000
mobilenet_v2,1,2000
"""
RICH_SYNTHETIC = """name = "rich"
description = "every synthetic key"
seed = 3
policies = ["fifo", "srtf", "tetris", "optimus", "tiresias"]

[cluster]
machines = 3
gpu = 4
cpu = 32
mem_gb = 128
bw_gbps = 40

[workload]
kind = "synthetic"
jobs = 6
load = 0.9
networks = ["resnet50", "alexnet"]
mix = { resnet50 = 2, alexnet = 1 }
gpu_mix = { 1 = 0.5, 2 = 0.5 }
duration_median_s = 600
duration_sigma = 0.5
duration_range_s = [60, 3600]
cap_factor = 2.0
device = "a100"
load_resource = "gpu"

[simulation]
mode = "wfbp"
execution = "elastic"
slot_s = 300
unfit = "raise"

[policy_options.tetris]
weight = 0.5

[policy_options.optimus]
noise = 0.1
seed = 2

[policy_options.tiresias]
thresholds = [3600, 36000]
starve_multiple = 10
max_workers = 4
ps_per_worker = 1.0
preemption = true

[policy_options.smd]
knapsack = "hull"
tol = 1e-6
max_iter = 20
backend = "highs"
time_limit = 5
"""
RICH_TRACE = """name = "trace"
seed = 2
policies = "fifo,drf"

[cluster]
machines = 2

[workload]
kind = "csv"
path = "trace.csv"
jobs = 5
window_s = [0, 7200]
vc = ["vc1", "vc2"]
rate_scale = 2.0
networks = ["resnet50", "gpt2_small"]
mix = { resnet50 = 1, gpt2_small = 1 }
cap_factor = 1.5
device = "v100"
on_unsorted = "sort"

[simulation]
mode = "sequential"
"""
RICH_PHILLY = """name = "philly-load"
seed = 1
policies = ["srtf"]

[cluster]
machines = 4

[workload]
kind = "philly"
jobs = 20
load = 1.2
vc = "11cb48"
load_resource = "gpu"

[simulation]
mode = "wfbp_prefetch"
"""
TABLE_SCENARIO = """policies = ["fifo"]
[workload]
kind = "csv"
path = "jobs.csv"
jobs = 2
on_unsorted = "raise"
"""
SCENARIOS = [
    default_scenario_path().read_text(),
    RICH_SYNTHETIC,
    RICH_TRACE,
    RICH_PHILLY,
    TABLE_SCENARIO,
]
CSVS = [TRACE, TRACE_SECONDS, JOB_TABLE, JOB_TABLE_MIN]

# Values a mutation puts where a value was (TOML) or into a cell (CSV).
TOML_TOKENS = [
    "0",
    "-1",
    "-0.5",
    "1e400",
    "nan",
    "inf",
    "-inf",
    "+inf",
    "99999999999999999999",
    "9223372036854775807",
    "1.5",
    "true",
    "false",
    '""',
    '"x"',
    '"nope"',
    '"1"',
    "[]",
    "[1]",
    '["a"]',
    "[[1, 2]]",
    "[1, 2, 3]",
    "{}",
    "{ a = 1 }",
    "{ 1 = -1 }",
    "1979-05-27",
    "07:32:00",
    "'''",
    '"\\u0000"',
    "[0, -1]",
    "[1e400, 1]",
    '"../../nonexistent.csv"',
    '"trace.csv"',
    '"jobs.csv"',
    "=",
    "[",
    "]",
]
CSV_TOKENS = [
    "",
    "nan",
    "NaN",
    "-1",
    "0",
    "-0",
    "1e400",
    "-1e400",
    "1.5",
    "abc",
    "True",
    " ",
    '"',
    '""',
    "\x00",
    "99999999999999999999",
    "1e-320",
    "2017-10-03 12:00:00+01:00",
    "2017-10-03 12:00:00+09:00",
    "2262-04-12",
    "1677-09-20",
    "0001-01-01",
    "9999-12-31",
    "2017-13-45",
    "nope",
    "resnet50",
    "1,2",
    "inf",
]
OPS = ("delete", "insert", "value", "drop_line", "dup_line", "swap_lines", "bytes")
CSV_OPS = ("cell", "drop_column", "swap_rows", "junk_line", "delete", "insert", "bytes")

_MUTATION = st.tuples(
    st.integers(0, 10_000),
    st.integers(0, 10_000),
    st.integers(0, 255),
    st.sampled_from(TOML_TOKENS) | st.text(max_size=6),
)
_CSV_MUTATION = st.tuples(
    st.integers(0, 10_000),
    st.integers(0, 10_000),
    st.integers(0, 255),
    st.sampled_from(CSV_TOKENS) | st.text(max_size=6),
)


def _lines(text: str) -> list[str]:
    return text.split("\n")


def _mutate_text(text: str, op: str, a: int, b: int, token: str) -> str:
    """One text mutation of ``text`` (indices taken modulo the length)."""
    lines = _lines(text)
    if op == "delete" and text:
        i = a % len(text)
        return text[:i] + text[i + 1 + b % 12 :]
    if op == "insert":
        i = a % (len(text) + 1)
        return text[:i] + token + text[i:]
    if op == "value":
        keyed = [k for k, line in enumerate(lines) if "=" in line] or [0]
        k = keyed[a % len(keyed)]
        key = lines[k].split("=", 1)[0]
        lines[k] = f"{key}= {token}"
    elif op == "drop_line":
        del lines[a % len(lines)]
    elif op == "dup_line":
        k = a % len(lines)
        lines.insert(b % (len(lines) + 1), lines[k])
    elif op == "swap_lines":
        i, j = a % len(lines), b % len(lines)
        lines[i], lines[j] = lines[j], lines[i]
    return "\n".join(lines)


def _mutate_csv(text: str, op: str, a: int, b: int, token: str) -> str:
    """One CSV mutation: a cell, a column, rows, or the plain text ones."""
    lines = _lines(text)
    rows = [k for k, line in enumerate(lines) if line]
    if op == "cell":
        k = rows[a % len(rows)]
        cells = lines[k].split(",")
        cells[b % len(cells)] = token
        lines[k] = ",".join(cells)
    elif op == "drop_column":
        width = max(len(lines[k].split(",")) for k in rows)
        c = a % width
        for k in rows:
            cells = lines[k].split(",")
            if c < len(cells):
                del cells[c]
            lines[k] = ",".join(cells)
    elif op == "swap_rows":
        i, j = rows[a % len(rows)], rows[b % len(rows)]
        lines[i], lines[j] = lines[j], lines[i]
    elif op == "junk_line":
        lines.insert(a % (len(lines) + 1), token)
    else:
        return _mutate_text(text, op, a, b, token)
    return "\n".join(lines)


def _apply(text: str, mutations, mutate) -> bytes:
    data = text
    flips = []
    for op, (a, b, byte, token) in mutations:
        if op == "bytes":
            flips.append((a, byte))
        else:
            data = mutate(data, op, a, b, token)
    raw = bytearray(data.encode("utf-8", errors="surrogatepass"))
    for a, byte in flips:
        if raw:
            raw[a % len(raw)] = byte
    return bytes(raw)


# ---- outcome bookkeeping --------------------------------------------------------------------------
def _signature(exc: BaseException) -> str:
    """Exception type and the innermost smdlab frame that raised it (groups one defect's cases)."""
    frames = [
        f
        for f in traceback.extract_tb(exc.__traceback__)
        if "smdlab" in f.filename and "/tests/" not in f.filename
    ]
    where = f"{Path(frames[-1].filename).name}:{frames[-1].lineno}" if frames else "?"
    return f"{type(exc).__name__} at {where}"


class Outcomes:
    """Counts of one fuzzing run: tried, loaded, refused (SmdlabError), unexpected (by signature)."""

    def __init__(self, name: str):
        self.name = name
        self.counts: Counter[str] = Counter()
        self.unexpected: Counter[str] = Counter()
        self.examples: dict[str, str] = {}

    def run(self, target, *args) -> None:
        self.counts["tried"] += 1
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                target(*args)
        except SmdlabError:
            self.counts["refused"] += 1
        except Exception as exc:
            if not SURVEY:
                raise
            sig = _signature(exc)
            self.unexpected[sig] += 1
            self.examples.setdefault(sig, f"{exc!s}"[:200])
        else:
            self.counts["loaded"] += 1

    def report(self) -> dict:
        out = {
            "loader": self.name,
            "examples": EXAMPLES,
            "seed": SEED,
            **self.counts,
            "unexpected": sum(self.unexpected.values()),
            "distinct_defects": len(self.unexpected),
            "defects": {k: [v, self.examples[k]] for k, v in self.unexpected.items()},
        }
        print(json.dumps(out))
        if REPORT:
            with open(REPORT, "a", encoding="utf-8") as fh:
                fh.write(json.dumps(out) + "\n")
        return out


# ---- fuzz targets ---------------------------------------------------------------------------------
def load_and_build(path: Path) -> None:
    """What ``smdlab simulate`` does with a scenario file, short of simulating (jobs capped at 8)."""
    scenario = load_scenario(path)
    assert isinstance(scenario, Scenario)
    small = scenario.with_changes(
        workload={"jobs": min(scenario.workload.get("jobs") or 8, 8)},
        cluster={"machines": min(scenario.cluster["machines"], 8)},
    )
    cluster = small.build_cluster()
    jobs = small.build_jobs(cluster)
    assert 1 <= len(jobs) <= 8
    for name in dict.fromkeys(
        [*small.policies, *(p for p in small.policy_options if p in list_policies())]
    ):
        get_policy(name, **dict(small.policy_options.get(name, {})))


def load_table(path: Path, options: dict) -> None:
    jobs = load_csv(path, **options)
    assert jobs and all(j.samples > 0 and j.arrival >= 0 for j in jobs)


@pytest.fixture(scope="module")
def corpus_dir(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("fuzz")
    (d / "trace.csv").write_text(TRACE)
    (d / "jobs.csv").write_text(JOB_TABLE)
    return d


def test_seed_corpus_is_valid(corpus_dir):
    for k, text in enumerate(SCENARIOS):
        p = corpus_dir / f"seed{k}.toml"
        p.write_text(text)
        load_and_build(p)
    for k, text in enumerate(CSVS):
        p = corpus_dir / f"seed{k}.csv"
        p.write_text(text)
        load_table(p, {})


def test_fuzz_scenario_loader(corpus_dir):
    outcomes = Outcomes("scenario (TOML)")
    names = itertools.count()

    @FUZZ
    @given(
        st.integers(0, len(SCENARIOS) - 1),
        st.lists(st.tuples(st.sampled_from(OPS), _MUTATION), min_size=1, max_size=3),
    )
    def run(seed, mutations):
        p = corpus_dir / f"s{next(names)}.toml"  # a fresh name: no cache can see an old version
        p.write_bytes(_apply(SCENARIOS[seed], mutations, _mutate_text))
        outcomes.run(load_and_build, p)

    run()
    out = outcomes.report()
    assert (out["tried"] >= EXAMPLES and out["unexpected"] == 0) or SURVEY
    assert (
        out.get("loaded", 0) > 0 and out.get("refused", 0) > 0
    )  # the mutations reach both outcomes


def test_fuzz_csv_loaders(corpus_dir):
    outcomes = Outcomes("trace / job table (CSV)")
    names = itertools.count()
    cluster = Cluster.homogeneous(2)
    option_sets = [
        {},
        {"first": 2},
        {"on_unsorted": "raise"},
        {"load": 0.7, "cluster": cluster, "seed": 4},
        {"window_s": (0, 1800), "rate_scale": 3.0},
        {"device": "a100"},
    ]

    @FUZZ
    @given(
        st.integers(0, len(CSVS) - 1),
        st.lists(st.tuples(st.sampled_from(CSV_OPS), _CSV_MUTATION), min_size=1, max_size=3),
        st.integers(0, len(option_sets) - 1),
    )
    def run(seed, mutations, opt):
        p = corpus_dir / f"t{next(names)}.csv"
        p.write_bytes(_apply(CSVS[seed], mutations, _mutate_csv))
        options = (
            option_sets[opt]
            if seed < 2
            else {
                k: v for k, v in option_sets[opt].items() if k in ("first", "on_unsorted", "device")
            }
        )
        outcomes.run(load_table, p, options)

    run()
    out = outcomes.report()
    assert (out["tried"] >= EXAMPLES and out["unexpected"] == 0) or SURVEY
    assert out.get("loaded", 0) > 0 and out.get("refused", 0) > 0
