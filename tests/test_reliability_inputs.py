"""Bad input, table-driven: every case through the library and through the command line.

Each row is one kind of bad input. Through the library it must raise an ``SmdlabError`` (the
class named in the row) whose message names the field, the value and the allowed range or set;
through ``smdlab`` it must give exit status 2, nothing on stdout and exactly one line
``smdlab: error: ...`` on stderr. Rows whose input the command line cannot express (a profile
built in Python) have no CLI part; rows only a file or option can express have no library call
beyond the loader. docs/reliability.md lists the same table.
"""

from __future__ import annotations

import json
import math
import os
import re
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pytest
from _cli_output import without_workload_line

from smdlab import (
    Cluster,
    Infeasible,
    InvalidInput,
    Job,
    LayerProfile,
    Machine,
    SmdlabError,
    make_job,
)
from smdlab.cli import main
from smdlab.policies.registry import get_policy
from smdlab.sim import simulate
from smdlab.sim.output import write_files
from smdlab.sim.runner import run_policies
from smdlab.solve import place, solve
from smdlab.testing import random_job
from smdlab.workloads import load_csv, load_job_table, load_philly, load_scenario, synthetic

SMALL = ["--jobs", "4", "--machines", "2", "--policy", "fifo"]
NETS = "alexnet, bert_base"  # the start of every "one of <bundled networks>" message


def _job(**overrides) -> Job:
    return random_job(np.random.default_rng(7), **overrides)


def _table(rows: str, header: str = "network,arrival,samples") -> str:
    return f"{header}\n{rows}\n"


def _trace(rows: str, header: str = "timestamp,duration,num_gpus") -> str:
    return f"{header}\n{rows}\n"


@dataclass(frozen=True)
class Case:
    """One bad input: files to write, the library call and the CLI arguments that meet it.

    library(d): the call, with ``d`` the folder holding ``files``; None: no library form.
    argv: CLI arguments (``{d}`` is that folder); None: no CLI form.
    lib / cli: regular expressions the library's and the CLI's message must contain.
    """

    id: str
    library: Callable[[Path], object] | None
    lib: str
    argv: list[str] | None = None
    cli: str = ""
    error: type[SmdlabError] = InvalidInput
    files: dict[str, str] = field(default_factory=dict)


CASES = [
    # ---- sizes: negative, zero, NaN, infinite -------------------------------------------------------
    Case(
        "negative samples",
        lambda d: _job(samples=-5),
        r"samples must be > 0 and finite, got -5",
        ["--workload", "{d}/t.csv", "--policy", "fifo"],
        r"column 'samples' must be > 0; line 3 has -5",
        files={"t.csv": _table("alexnet,0,100\nalexnet,1,-5")},
    ),
    Case(
        "NaN samples",
        lambda d: _job(samples=math.nan),
        r"samples must be > 0 and finite, got nan",
        ["--workload", "{d}/t.csv"],
        r"column 'samples' must be a finite number; line 2 has nan",
        files={"t.csv": _table("alexnet,0,nan")},
    ),
    Case(
        "infinite samples",
        lambda d: _job(samples=math.inf),
        r"samples must be > 0 and finite, got inf",
        ["--workload", "{d}/t.csv"],
        r"column 'samples' must be a finite number; line 2 has inf",
        files={"t.csv": _table("alexnet,0,1e400")},
    ),
    Case(
        "zero batch",
        lambda d: _job(global_batch=0),
        r"global_batch must be an integer in >= 1, got 0",
        ["--workload", "{d}/t.csv"],
        r"column 'global_batch' must be an integer in \[1, 2147483648\]; line 2 has 0",
        files={"t.csv": _table("alexnet,0,100,0", "network,arrival,samples,global_batch")},
    ),
    Case(
        "zero GPUs in a trace",
        lambda d: load_philly(d / "t.csv"),
        r"column 'num_gpus' must be an integer in \[1, 1024\]; line 2 has 0",
        ["--workload", "{d}/t.csv"],
        r"column 'num_gpus' must be an integer in \[1, 1024\]; line 2 has 0",
        files={"t.csv": _trace("0,60,0")},
    ),
    Case(
        "negative layer bytes",
        lambda d: LayerProfile(["a"], [1e-4], [2e-4], [-1.0]),
        r"param_bytes\[0\] must be finite and >= 0, got -1.0",
    ),
    Case(
        "zero job count",
        lambda d: synthetic(0, Cluster.homogeneous(2)),
        r"n_jobs must be an integer in \[1, 1000000\], got 0",
        ["--jobs", "0"],
        r"workload.jobs must be an integer in \[1, 1000000\], got 0",
    ),
    Case(
        "too many machines",
        lambda d: Cluster.homogeneous(10**9),
        r"machines must be an integer in \[1, 100000\], got 1000000000",
        ["--machines", "1000000000"],
        r"cluster.machines must be an integer in \[1, 100000\], got 1000000000",
    ),
    # ---- times --------------------------------------------------------------------------------------
    Case(
        "negative arrival",
        lambda d: _job(arrival=-1.0),
        r"arrival must be >= 0 and finite, got -1.0",
        ["--workload", "{d}/t.csv"],
        r"column 'arrival' must be >= 0 seconds; line 2 has -1",
        files={"t.csv": _table("alexnet,-1,100")},
    ),
    Case(
        "negative duration",
        lambda d: synthetic(3, Cluster.homogeneous(2), duration_median_s=-60),
        r"duration_median_s must be > 0 and finite, got -60",
        ["--workload", "{d}/t.csv"],
        r"column 'duration' must be > 0 seconds; line 3 has -10",
        files={"t.csv": _trace("0,60,1\n5,-10,1")},
    ),
    Case(
        "NaN duration",
        lambda d: synthetic(3, Cluster.homogeneous(2), duration_median_s=math.nan),
        r"duration_median_s must be > 0 and finite, got nan",
        ["--workload", "{d}/t.csv"],
        r"column 'duration' must be a finite number; line 2 has nan",
        files={"t.csv": _trace("0,nan,1")},
    ),
    Case(
        "infinite decision interval",
        lambda d: simulate([_job()], Cluster.homogeneous(1), "fifo", slot_s=math.inf),
        r"slot_s must be > 0 and finite, got inf",
        [*SMALL, "--slot-s", "inf"],
        r"simulation.slot_s must be > 0 and finite, got inf",
    ),
    Case(
        "negative latency",
        lambda d: _job(latency_s=-1e-3),
        r"latency_s must be >= 0 and finite, got -0.001",
    ),
    Case(
        "infinite timestamps",
        lambda d: load_philly(d / "t.csv"),
        r"column 'timestamp' must be a finite number of seconds .*; line 2 has inf",
        ["--workload", "{d}/t.csv"],
        r"column 'timestamp' must be a finite number of seconds .*; line 2 has inf",
        files={"t.csv": _trace("inf,60,1\n0,60,1")},
    ),
    # ---- bandwidths ---------------------------------------------------------------------------------
    Case(
        "zero task bandwidth",
        lambda d: _job(worker_demand={"gpu": 1, "bw_gbps": 0}),
        r"worker_demand\['bw_gbps'\] must be > 0 .*got 0",
    ),
    Case(
        "NaN machine bandwidth",
        lambda d: Cluster.homogeneous(2, bw_gbps=math.nan),
        r"bw_gbps must be >= 0 and finite, got nan",
        ["--scenario", "{d}/s.toml", *SMALL],
        r"cluster.bw_gbps must be > 0 and finite, got nan",
        files={"s.toml": "[cluster]\nbw_gbps = nan\n"},
    ),
    Case(
        "zero cluster bandwidth",
        lambda d: Cluster.homogeneous(2).scaled_bandwidth(0),
        r"bw_gbps must be > 0 and finite, got 0",
        ["--scenario", "{d}/s.toml", *SMALL],
        r"cluster.bw_gbps must be > 0 and finite, got 0",
        files={"s.toml": "[cluster]\nbw_gbps = 0\n"},
    ),
    # ---- capacities ---------------------------------------------------------------------------------
    Case(
        "negative capacity",
        lambda d: Cluster((Machine("m0", {"gpu": -1}),)),
        r"machine 'm0' capacity\['gpu'\] must be >= 0 and finite, got -1",
        ["--scenario", "{d}/s.toml", *SMALL],
        r"cluster.gpu must be >= 0 and finite, got -1",
        files={"s.toml": "[cluster]\ngpu = -1\n"},
    ),
    Case(
        "infinite capacity",
        lambda d: Cluster((Machine("m0", {"cpu": math.inf}),)),
        r"machine 'm0' capacity\['cpu'\] must be >= 0 and finite, got inf",
        ["--scenario", "{d}/s.toml", *SMALL],
        r"cluster.cpu must be >= 0 and finite, got inf",
        files={"s.toml": "[cluster]\ncpu = inf\n"},
    ),
    Case(
        "zero machines",
        lambda d: Cluster.homogeneous(0),
        r"machines must be an integer in \[1, 100000\], got 0",
        ["--machines", "0"],
        r"cluster.machines must be an integer in \[1, 100000\], got 0",
    ),
    # ---- unknown names ------------------------------------------------------------------------------
    Case(
        "unknown resource",
        lambda d: Cluster((Machine("m0", {"tpu": 4}),)),
        r"unknown resource 'tpu'; allowed: gpu, cpu, mem_gb, bw_gbps",
        ["--scenario", "{d}/s.toml", *SMALL],
        r"cluster has unknown key 'tpu'; allowed: machines, gpu, cpu, mem_gb, bw_gbps",
        files={"s.toml": "[cluster]\ntpu = 4\n"},
    ),
    Case(
        "unknown load resource",
        lambda d: synthetic(3, Cluster.homogeneous(2), load_resource="tpu"),
        r"load_resource must be one of gpu, cpu, mem_gb, bw_gbps; got 'tpu'",
        ["--scenario", "{d}/s.toml", *SMALL],
        r"workload.load_resource must be one of gpu, cpu, mem_gb, bw_gbps; got 'tpu'",
        files={"s.toml": '[workload]\nload_resource = "tpu"\n'},
    ),
    Case(
        "unknown profile",
        lambda d: make_job("j", "resnet9000", 1e5),
        rf"profile must be one of {NETS}.*; got 'resnet9000'",
        ["--workload", "{d}/t.csv"],
        rf"column 'network' must be one of {NETS}.*; line 2 has 'resnet9000'",
        files={"t.csv": _table("resnet9000,0,100")},
    ),
    Case(
        "unknown profile in a scenario",
        lambda d: synthetic(3, Cluster.homogeneous(2), networks=["resnet9000"]),
        rf"network must be one of {NETS}.*; got 'resnet9000'",
        ["--scenario", "{d}/s.toml", *SMALL],
        rf"workload.networks must be one of {NETS}.*; got 'resnet9000'",
        files={"s.toml": '[workload]\nnetworks = ["resnet9000"]\n'},
    ),
    Case(
        "unknown device",
        lambda d: make_job("j", "resnet50", 1e5, device="tpu"),
        r"device must be one of a100, v100; got 'tpu'",
        ["--scenario", "{d}/s.toml", *SMALL],
        r"workload.device must be one of a100, v100; got 'tpu'",
        files={"s.toml": '[workload]\ndevice = "tpu"\n'},
    ),
    Case(
        "unknown policy",
        lambda d: get_policy("fifo2"),
        r"policy must be one of [a-z0-9_, ]*\bfifo\b.*; got 'fifo2'",
        ["--jobs", "4", "--policy", "fifo2"],
        r"policy must be one of [a-z0-9_, ]*\bfifo\b.*; got 'fifo2'",
    ),
    Case(
        "options of an unknown policy",
        lambda d: run_policies(
            [_job()], Cluster.homogeneous(1), ["fifo"], policy_options={"smdd": {"tol": 1e-3}}
        ),
        r"policy_options names policy 'smdd'; allowed: [a-z0-9_, ]*\bfifo\b",
        ["--scenario", "{d}/s.toml", *SMALL],
        r"policy_options names policy 'smdd'; allowed: [a-z0-9_, ]*\bfifo\b",
        files={"s.toml": "[policy_options.smdd]\ntol = 1e-3\n"},
    ),
    Case(
        "bad policy option",
        lambda d: get_policy("optimus", noise=-1),
        r"policy 'optimus': noise must be >= 0 and finite, got -1",
        ["--scenario", "{d}/s.toml", "--jobs", "4", "--machines", "2", "--policy", "optimus"],
        r"policy 'optimus': noise must be >= 0 and finite, got -1",
        files={"s.toml": "[policy_options.optimus]\nnoise = -1\n"},
    ),
    Case(
        "unknown solver method",
        lambda d: solve([_job()], Cluster.homogeneous(1), "cplex"),
        r"method must be one of smd, milp, lp, lp_round, brute; got 'cplex'",
    ),
    Case(
        "unknown solver backend",
        lambda d: solve([_job()], Cluster.homogeneous(1), "milp", backend="cplex"),
        r"backend must be one of auto, highs, gurobi; got 'cplex'",
        ["--scenario", "{d}/s.toml", "--jobs", "2", "--machines", "1", "--policy", "smd"],
        r"backend must be one of auto, highs, gurobi; got 'cplex'",
        files={"s.toml": '[policy_options.smd]\nbackend = "cplex"\n'},
    ),
    Case(
        "unknown timing mode",
        lambda d: simulate([_job()], Cluster.homogeneous(1), "fifo", mode="async"),
        r"mode must be one of sequential, wfbp, wfbp_prefetch; got 'async'",
        [*SMALL, "--mode", "async"],
        r"simulation.mode must be one of sequential, wfbp, wfbp_prefetch; got 'async'",
    ),
    # ---- a job that fits on no machine --------------------------------------------------------------
    Case(
        "job fits on no machine",
        lambda d: simulate(
            [_job(name="big", worker_demand={"gpu": 16, "bw_gbps": 10})],
            Cluster.homogeneous(2),
            "fifo",
            unfit="raise",
        ),
        r"job 'big' fits on no machine even with 1 worker and 1 PS \(worker needs \{'gpu': 16.0",
        [
            "--scenario",
            "{d}/s.toml",
            "--workload",
            "{d}/t.csv",
            "--policy",
            "fifo",
            "--unfit",
            "raise",
        ],
        r"job 'a' fits on no machine even with 1 worker and 1 PS \(worker needs \{'gpu': 1.0",
        Infeasible,
        files={
            "s.toml": "[cluster]\nmachines = 2\ngpu = 0\n",
            "t.csv": _table("alexnet,0,100,a", "network,arrival,samples,name"),
        },
    ),
    Case(
        "cluster holds no job at all",
        lambda d: synthetic(3, Cluster.homogeneous(2, gpu=0)),
        r"cluster cannot hold even one worker\+PS bundle",
        ["--scenario", "{d}/s.toml", *SMALL],
        r"cluster cannot hold even one worker\+PS bundle",
        files={"s.toml": "[cluster]\ngpu = 0\n"},
    ),
    # ---- malformed scenarios ------------------------------------------------------------------------
    Case(
        "malformed TOML",
        lambda d: load_scenario(d / "s.toml"),
        r"s.toml: malformed TOML: .*line 4",
        ["--scenario", "{d}/s.toml"],
        r"s.toml: malformed TOML: .*line 4",
        files={"s.toml": 'name = "x"\nseed = 1\n\n[cluster\nmachines = 2\n'},
    ),
    Case(
        "TOML value of the wrong type",
        lambda d: load_scenario(d / "s.toml"),
        r"s.toml: seed must be an integer, got 'one'",
        ["--scenario", "{d}/s.toml"],
        r"s.toml: seed must be an integer, got 'one'",
        files={"s.toml": 'seed = "one"\n'},
    ),
    Case(
        "TOML unknown key",
        lambda d: load_scenario(d / "s.toml"),
        r"cluster has unknown key 'gpus'; allowed: machines, gpu",
        ["--scenario", "{d}/s.toml"],
        r"cluster has unknown key 'gpus'; allowed: machines, gpu",
        files={"s.toml": "[cluster]\ngpus = 8\n"},
    ),
    Case(
        "TOML table where a list belongs",
        lambda d: load_scenario(d / "s.toml"),
        r"workload.window_s must be a pair \(start, end\) in seconds, got \{'a': 1\}",
        ["--scenario", "{d}/s.toml"],
        r"workload.window_s must be a pair \(start, end\) in seconds",
        files={"s.toml": '[workload]\nkind = "philly"\nwindow_s = { a = 1 }\n'},
    ),
    Case(
        "TOML not UTF-8",
        lambda d: load_scenario(d / "s.toml"),
        r"s.toml: not a UTF-8 text file",
        ["--scenario", "{d}/s.toml"],
        r"s.toml: not a UTF-8 text file",
        files={"s.toml": "name = '\udcff'\n"},
    ),
    # ---- trace and job-table CSVs -------------------------------------------------------------------
    Case(
        "trace missing a column",
        lambda d: load_philly(d / "t.csv"),
        r"missing column\(s\) duration; the file has timestamp, num_gpus",
        ["--workload", "{d}/t.csv"],
        r"columns must include either timestamp, duration, num_gpus .* the file has timestamp, num_gpus",
        files={"t.csv": _trace("0,1", "timestamp,num_gpus")},
    ),
    Case(
        "job table missing a column",
        lambda d: load_job_table(d / "t.csv"),
        r"missing column\(s\) samples; the file has network, arrival",
        ["--workload", "{d}/t.csv"],
        r"the file has network, arrival",
        files={"t.csv": _table("alexnet,0", "network,arrival")},
    ),
    Case(
        "wrong type in a trace",
        lambda d: load_philly(d / "t.csv"),
        r"column 'num_gpus' must be a finite number; line 2 has 'two'",
        ["--workload", "{d}/t.csv"],
        r"column 'num_gpus' must be a finite number; line 2 has 'two'",
        files={"t.csv": _trace("0,60,two")},
    ),
    Case(
        "wrong type of timestamp",
        lambda d: load_philly(d / "t.csv"),
        r"column 'timestamp' must be a date-time or a number of seconds; line 3 has 'yesterday'",
        ["--workload", "{d}/t.csv"],
        r"column 'timestamp' must be a date-time or a number of seconds; line 3 has 'yesterday'",
        files={"t.csv": _trace("2017-10-03 12:00:00,60,1\nyesterday,60,1")},
    ),
    Case(
        "unsorted trace (on_unsorted=raise)",
        lambda d: load_philly(d / "t.csv", on_unsorted="raise"),
        r"rows must be in time order \(on_unsorted='raise'\); line 3 is earlier than line 2",
        ["--scenario", "{d}/s.toml", "--policy", "fifo"],
        r"rows must be in time order \(on_unsorted='raise'\); line 3 is earlier than line 2",
        files={
            "t.csv": _trace("50,60,1\n10,60,1"),
            "s.toml": '[workload]\nkind = "csv"\npath = "t.csv"\non_unsorted = "raise"\n',
        },
    ),
    Case(
        "unsorted job table (on_unsorted=raise)",
        lambda d: load_job_table(d / "t.csv", on_unsorted="raise"),
        r"rows must be in time order \(on_unsorted='raise'\); line 3 is earlier than line 2",
        files={"t.csv": _table("alexnet,50,100\nalexnet,10,100")},
    ),
    Case(
        "duplicate job names",
        lambda d: load_job_table(d / "t.csv"),
        r"column 'name' must hold unique job names",
        ["--workload", "{d}/t.csv"],
        r"column 'name' must hold unique job names",
        files={"t.csv": _table("alexnet,0,100,a\nalexnet,1,100,a", "network,arrival,samples,name")},
    ),
    Case(
        "binary file as a trace",
        lambda d: load_csv(d / "t.csv"),
        r"t.csv: not a readable CSV file",
        ["--workload", "{d}/t.csv"],
        r"t.csv: not a readable CSV file",
        files={"t.csv": "\udcff\udcfe\x00t"},
    ),
    # ---- files that are not there, and empty workloads ----------------------------------------------
    Case(
        "missing workload file",
        lambda d: load_csv(d / "nope.csv"),
        r"workload file not found: '.*nope.csv'",
        ["--workload", "{d}/nope.csv"],
        r"workload file not found: '.*nope.csv'",
    ),
    Case(
        "missing scenario file",
        lambda d: load_scenario(d / "nope.toml"),
        r"scenario file not found: '.*nope.toml'",
        ["--scenario", "{d}/nope.toml"],
        r"scenario file not found: '.*nope.toml'",
    ),
    Case(
        "folder given as a workload file",
        lambda d: load_csv(d),
        r"workload path is a folder, not a file: '.*'",
        ["--workload", "{d}"],
        r"workload path is a folder, not a file: '.*'",
    ),
    Case(
        "folder given as a scenario file",
        lambda d: load_scenario(d),
        r"scenario path is a folder, not a file: '.*'",
        ["--scenario", "{d}"],
        r"scenario path is a folder, not a file: '.*'",
    ),
    Case(
        "empty workload file",
        lambda d: load_csv(d / "t.csv"),
        r"t.csv: the workload is empty \(no header, no rows\)",
        ["--workload", "{d}/t.csv"],
        r"t.csv: the workload is empty \(no header, no rows\)",
        files={"t.csv": ""},
    ),
    Case(
        "header but no jobs",
        lambda d: load_csv(d / "t.csv"),
        r"t.csv: the workload is empty \(a header but no rows\)",
        ["--workload", "{d}/t.csv"],
        r"t.csv: the workload is empty \(a header but no rows\)",
        files={"t.csv": "network,arrival,samples\n"},
    ),
    Case(
        "empty job list",
        lambda d: simulate([], Cluster.homogeneous(1), "fifo"),
        r"jobs must list at least one job, got 0",
    ),
    Case(
        "trace window with no job",
        lambda d: load_philly(d / "t.csv", window_s=(1000, 2000)),
        r"holds no job: the workload is empty",
        ["--scenario", "{d}/s.toml", "--policy", "fifo"],
        r"holds no job: the workload is empty",
        files={
            "t.csv": _trace("0,60,1\n10,60,1"),
            "s.toml": '[workload]\nkind = "csv"\npath = "t.csv"\nwindow_s = [1000, 2000]\n',
        },
    ),
    # ---- outputs ------------------------------------------------------------------------------------
    Case(
        "--out is a file",
        lambda d: write_files(d / "f.txt", {"a.csv": "x\n"}),
        r"output folder '.*f.txt' exists and is not a folder",
        [*SMALL, "--out", "{d}/f.txt"],
        r"output folder '.*f.txt' exists and is not a folder",
        SmdlabError,
        files={"f.txt": "mine\n"},
    ),
]


def _write(d: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        (d / name).write_bytes(text.encode("utf-8", errors="surrogateescape"))


@pytest.mark.parametrize("case", [c for c in CASES if c.library is not None], ids=lambda c: c.id)
def test_library_raises_a_clear_smdlab_error(case, tmp_path):
    _write(tmp_path, case.files)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a warning instead of an error would be a silent failure
        with pytest.raises(case.error) as info:
            case.library(tmp_path)
    assert isinstance(info.value, SmdlabError)
    assert re.search(case.lib, str(info.value)), f"{info.value!s} !~ {case.lib}"


@pytest.mark.parametrize("case", [c for c in CASES if c.argv is not None], ids=lambda c: c.id)
def test_cli_prints_one_line_and_exits_2(case, tmp_path, capfd):
    _write(tmp_path, case.files)
    argv = ["simulate", *(a.replace("{d}", str(tmp_path)) for a in case.argv)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rc = main(argv)
    out, err = capfd.readouterr()
    err = without_workload_line(err)  # an error after the jobs were built follows that line
    assert rc == 2 and out == "", (rc, out)
    assert err.startswith("smdlab: error: ") and err.endswith("\n") and err.count("\n") == 1, err
    assert re.search(case.cli, err), f"{err!r} !~ {case.cli}"


def test_table_covers_every_kind_of_bad_input():
    ids = " | ".join(c.id for c in CASES)
    for word in (
        "negative",
        "zero",
        "NaN",
        "infinite",
        "unknown resource",
        "unknown profile",
        "unknown policy",
        "unknown solver",
        "fits on no machine",
        "malformed TOML",
        "missing a column",
        "wrong type",
        "negative duration",
        "unsorted",
        "missing workload file",
        "empty workload",
    ):
        assert word in ids, word
    assert (
        sum(c.library is not None for c in CASES) >= 40
        and sum(c.argv is not None for c in CASES) >= 35
    )


def test_unfit_job_is_skipped_with_a_warning_by_default(tmp_path, capfd):
    big = _job(name="big", worker_demand={"gpu": 16, "bw_gbps": 10})
    with pytest.warns(
        UserWarning, match=r"job 'big' fits on no machine even with 1 worker and 1 PS.*; skipped"
    ):
        res = simulate([big, _job(name="small")], Cluster.homogeneous(2), "fifo")
    assert res.skipped == ("big",)
    assert dict(zip(res.jobs["job"], res.jobs["status"])) == {
        "big": "skipped",
        "small": "completed",
    }
    # Only unfit jobs: the run ends at once (nothing to wait for), it does not hang.
    with pytest.warns(UserWarning):
        only = simulate([big], Cluster.homogeneous(2), "smd")
    assert (
        only.summary["jobs_skipped"] == 1
        and only.summary["jobs_completed"] == 0
        and only.summary["decisions"] == 0
    )
    # The CLI (--unfit skip, the scenario default): exit 0, the skipped jobs counted in the JSON,
    # one warning per job on stderr.
    _write(
        tmp_path,
        {
            "s.toml": "[cluster]\nmachines = 1\ngpu = 0\n",
            "t.csv": _table("alexnet,0,100,a\nalexnet,0,100,b", "network,arrival,samples,name"),
        },
    )
    rc = main(
        [
            "simulate",
            "--scenario",
            str(tmp_path / "s.toml"),
            "--workload",
            str(tmp_path / "t.csv"),
            "--policy",
            "fifo",
            "--json",
        ]
    )
    out, err = capfd.readouterr()
    summary = json.loads(out)["fifo"]
    assert (
        rc == 0
        and summary["jobs_skipped"] == 2
        and summary["jobs_completed"] == 0
        and summary["mean_jct"] is None
    )
    lines = without_workload_line(err).splitlines()
    assert [line.split(" fits")[0] for line in lines] == [
        "smdlab: warning: job 'a'",
        "smdlab: warning: job 'b'",
    ]


def test_mixed_time_zones_are_put_on_one_clock(tmp_path):
    p = tmp_path / "t.csv"
    p.write_text(
        _trace(
            "2017-10-03 12:00:00+01:00,60,1\n2017-10-03 12:00:00,60,1\n2017-10-03 14:00:00+02:00,60,1"
        )
    )
    jobs = load_philly(p)
    assert [j.arrival for j in jobs] == [0.0, 3600.0, 3600.0]


def test_far_apart_dates_do_not_overflow(tmp_path):
    p = tmp_path / "t.csv"
    p.write_text(_trace("2262-04-12,60,1\n1677-09-20,60,1"))  # beyond the span of int64 nanoseconds
    jobs = load_philly(p)
    assert jobs[1].arrival == pytest.approx(
        (np.datetime64("2262-04-12") - np.datetime64("1677-09-20")) / np.timedelta64(1, "s")
    )


def test_a_trace_rewritten_in_place_is_read_again(tmp_path):
    p = tmp_path / "t.csv"
    p.write_text(_trace("0,60,1\n10,60,1"))
    first = load_philly(p)
    st = p.stat()
    p.write_text(_trace("0,60,1\n10,60,1\n20,60,1"))
    os.utime(
        p, ns=(st.st_atime_ns, st.st_mtime_ns)
    )  # same modification time: only the size differs
    assert len(first) == 2 and len(load_philly(p)) == 3


# Arguments of the wrong type: each must raise InvalidInput naming the argument (they used to give a
# raw TypeError/ValueError/AttributeError: the error each gave is kept as the third item).
_SOLVE_GAPS = [
    (
        "solve(jobs=5)",
        lambda jobs, cl, mc: solve(5, cl),
        "TypeError: 'int' object is not iterable",
        "jobs",
    ),
    (
        "solve(cluster=None)",
        lambda jobs, cl, mc: solve(jobs, None),
        "AttributeError: no attribute 'has_machines'",
        "cluster",
    ),
    (
        "solve(free='x')",
        lambda jobs, cl, mc: solve(jobs, cl, free="x"),
        "ValueError: could not convert string to float",
        "free",
    ),
    (
        "place(jobs=5)",
        lambda jobs, cl, mc: place(5, [(1, 1)], mc),
        "TypeError: 'int' object is not iterable",
        "jobs",
    ),
    (
        "place(alloc='ab')",
        lambda jobs, cl, mc: place(jobs, "ab", mc),
        "ValueError: invalid literal for int()",
        "alloc",
    ),
]


@pytest.mark.parametrize("call", _SOLVE_GAPS, ids=[g[0] for g in _SOLVE_GAPS])
def test_solver_arguments_of_the_wrong_type_raise_invalid_input(call):
    rng = np.random.default_rng(0)
    jobs = [random_job(rng, name="a"), random_job(rng, name="b")]
    with pytest.raises(InvalidInput, match=rf"^{call[3]} must be"):
        call[1](
            jobs, Cluster.pooled(gpu=8, cpu=64, mem_gb=256, bw_gbps=100), Cluster.homogeneous(2)
        )


def _short(text: str, tmpdir: str) -> str:
    """One table cell: the message with the temporary directory named DIR, at most 200 chars."""
    clean = " ".join(text.replace(tmpdir, "DIR").split()).replace("|", "\\|")
    return clean if len(clean) <= 200 else clean[:197] + "..."


def _table_rows() -> list[str]:
    """The full table behind docs/reliability.md (section 1): each case's library and CLI message, as this code gives them."""
    import contextlib
    import io
    import tempfile

    rows = [
        "| Input | Library: exception and message | `smdlab simulate` (exit 2), stderr |",
        "|---|---|---|",
    ]
    for case in CASES:
        with tempfile.TemporaryDirectory() as tmp:
            d = Path(tmp)
            _write(d, case.files)
            lib = cli = "(no such form)"
            if case.library is not None:
                try:
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        case.library(d)
                    lib = "NO ERROR"
                except SmdlabError as exc:
                    lib = f"{type(exc).__name__}: {exc}"
            if case.argv is not None:
                err = io.StringIO()
                with (
                    contextlib.redirect_stderr(err),
                    contextlib.redirect_stdout(io.StringIO()),
                    warnings.catch_warnings(),
                ):
                    warnings.simplefilter("ignore")
                    rc = main(["simulate", *(a.replace("{d}", str(d)) for a in case.argv)])
                cli = f"{err.getvalue().strip()}" if rc == 2 else f"EXIT {rc}"
            rows.append(f"| {case.id} | `{_short(lib, str(d))}` | `{_short(cli, str(d))}` |")
    return rows


if __name__ == "__main__":  # python tests/test_reliability_inputs.py > table.md
    print("\n".join(_table_rows()))
