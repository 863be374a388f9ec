"""One module owns every cache; results never depend on what the caches hold."""

from __future__ import annotations

import re
import threading
from pathlib import Path

import numpy as np

import smdlab
from smdlab.caches import Cache, cache_info, clear_caches
from smdlab.sim import TIMING_KEYS, simulate
from smdlab.solve.instance import job_speeds
from smdlab.workloads import synthetic

PACKAGE = Path(smdlab.__file__).parent


def _workload():
    cluster = smdlab.Cluster.homogeneous(2)
    return synthetic(6, cluster, seed=3, networks=["resnet50", "vgg16", "alexnet"]), cluster


def _results():
    jobs, cluster = _workload()
    sol = smdlab.solve_allocation(jobs, cluster, "smd")
    sims = {}
    for policy in ("fifo", "smd", "tetris"):
        summary = simulate(jobs, cluster, policy).summary
        sims[policy] = {k: v for k, v in summary.items() if k not in TIMING_KEYS}  # not wall time
    return (sol.workers, sol.ps, sol.objective), sims


def test_results_do_not_depend_on_cache_state():
    clear_caches()
    cold = _results()
    warm = _results()  # every table now comes from the caches (built from equal, new objects)
    assert sum(c.hits for c in cache_info()) > 0
    clear_caches()
    again = _results()
    assert cold == warm == again


def test_caches_key_by_value_not_by_object():
    clear_caches()
    a = smdlab.make_job("a", "resnet50", 1e5)
    twin = smdlab.make_job("a", "resnet50", 1e5)  # equal by value, another object
    other = a.replace(worker_demand={**a.worker_demand, "bw_gbps": 1.0})
    t1 = job_speeds(a)
    misses = sum(c.misses for c in cache_info())
    assert job_speeds(twin) is t1  # a hit: same key
    assert sum(c.misses for c in cache_info()) == misses
    assert not np.array_equal(job_speeds(other), t1)  # another bandwidth, another entry


def test_every_cache_documents_key_lifetime_and_bound():
    infos = cache_info()
    assert len({i.name for i in infos}) == len(infos) >= 10
    for i in infos:
        assert i.key and i.lifetime and i.maxsize >= 1, i.name


def test_no_cache_outside_the_caches_module():
    # Module-level memoisation goes through smdlab.caches (documented, bounded, clearable).
    for path in PACKAGE.rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        assert not re.search(r"\blru_cache\b|functools\.cache\b|@cache\b", text), path
        if path.name != "caches.py":
            assert not re.search(r"^_?[A-Z_]*CACHES?\s*[:=]", text, flags=re.M), path


def test_cache_is_bounded_lru_and_thread_safe():
    c: Cache[int] = Cache("test.cache", key="int", lifetime="this test", maxsize=2)
    try:
        c.put(1, 1)
        c.put(2, 2)
        assert c.get(1) == 1  # 1 is now the most recently used
        c.put(3, 3)
        assert c.get(2) is None and c.get(1) == 1 and len(c) == 2
        c.clear()
        out: list[int] = []

        def work(k: int) -> None:
            for _ in range(200):
                out.append(c.get_or_compute(k % 5, lambda k=k: (k % 5) * 10))

        threads = [threading.Thread(target=work, args=(k,)) for k in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert len(out) == 1600 and set(out) <= {0, 10, 20, 30, 40} and len(c) <= 2
        c.clear()
        assert len(c) == 0
    finally:
        from smdlab import caches

        caches._REGISTRY.pop("test.cache", None)
