"""The top-level names keep their meaning whatever else is imported (no name shadows a subpackage)."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import types

import smdlab


def _subpackages() -> set[str]:
    return {m.name for m in pkgutil.iter_modules(smdlab.__path__) if m.ispkg}


def _modules() -> set[str]:
    return {m.name for m in pkgutil.iter_modules(smdlab.__path__)}


def test_subpackages_are_listed_and_no_top_level_name_shadows_a_module():
    assert set(smdlab.SUBPACKAGES) == _subpackages()
    assert not set(smdlab.__all__) & _modules(), "a top-level name equals a module's name"


def test_dir_shows_only_the_api():
    names = dir(smdlab)
    assert names == sorted({*smdlab.__all__, *smdlab.SUBPACKAGES, "__version__"})
    assert not {"Any", "annotations", "importlib"} & set(names)
    assert all(hasattr(smdlab, n) for n in names)


def _colocation_fit(fn):
    from smdlab.model.colocation import load_gavel_pairs, load_gavel_solo

    return fn(load_gavel_pairs(), load_gavel_solo())


def _call(name: str, fn, jobs, cluster):
    """Call a top-level function with small valid arguments chosen from its parameter names."""
    job = jobs[0]
    special = {
        "make_job": lambda: fn("j", "resnet50", 1e5),
        "profile_info": lambda: fn("resnet50"),
        "task_demands": lambda: fn(job.profile),
        "bundled_pipeline": lambda: fn(job.profile),
        "solve_allocation": lambda: fn(jobs, cluster, "smd"),
        "check_policy": lambda: fn("fifo", worlds_to_run=1),
        "place": lambda: fn(jobs, [(1, 1)] * len(jobs), cluster),
        "simulate": lambda: fn(jobs, cluster, "fifo"),
        "get_policy": lambda: fn("fifo"),
        "fit_epoch_model": lambda: fn(smdlab.load_epoch_times()),
        "fit_colocation_model": lambda: _colocation_fit(fn),
    }
    if name in special:
        return special[name]()
    params = list(inspect.signature(fn).parameters)
    required = [
        p
        for p, spec in inspect.signature(fn).parameters.items()
        if spec.default is inspect.Parameter.empty
        and spec.kind in (spec.POSITIONAL_ONLY, spec.POSITIONAL_OR_KEYWORD)
    ]
    if not required:
        return fn()
    if params[:3] == ["job", "workers", "ps"]:
        return fn(job, 1, 1)
    if required == ["job"]:
        return fn(job)
    if required == ["jobs"]:
        return fn(jobs)
    raise AssertionError(
        f"tests/test_api_names.py does not know how to call smdlab.{name}{inspect.signature(fn)}: "
        "add it to `special`"
    )


def test_every_top_level_name_works_after_every_subpackage_is_imported():
    for sub in sorted(_subpackages()):
        importlib.import_module(f"smdlab.{sub}")
    jobs = [smdlab.make_job("a", "resnet50", 2e5), smdlab.make_job("b", "vgg16", 1e5)]
    cluster = smdlab.Cluster.homogeneous(2)
    called = []
    for name in smdlab.__all__:
        obj = getattr(smdlab, name)
        assert not isinstance(obj, types.ModuleType), f"smdlab.{name} is a module"
        if inspect.isfunction(obj):
            _call(name, obj, jobs, cluster)
            called.append(name)
    for sub in smdlab.SUBPACKAGES:
        assert isinstance(getattr(smdlab, sub), types.ModuleType)
    assert {"solve_allocation", "simulate", "place", "get_policy", "clear_caches"} <= set(called)


def test_solve_allocation_is_the_solver_and_smdlab_solve_the_package():
    import smdlab.sim

    jobs = [smdlab.make_job("a", "resnet50", 2e5)]
    sol = smdlab.solve_allocation(jobs, smdlab.Cluster.homogeneous(1), "smd")
    assert isinstance(sol, smdlab.Solution) and sol.workers[0] >= 1
    assert smdlab.solve.solve is smdlab.solve_allocation
