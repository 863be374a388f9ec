"""smdlab: a workbench for scheduling DNN training jobs on shared clusters (reconstructed SMD model).

The model layer is imported eagerly; the solver, policies and simulator load on first use
(``smdlab.solve_allocation``, ``smdlab.simulate``, ``smdlab.get_policy``) so that ``import smdlab``
stays light. A subpackage's name (``smdlab.solve``, ``smdlab.sim``, ...) always means the
subpackage: no top-level function shares a name with one.
"""

from __future__ import annotations

import importlib
from typing import Any

from smdlab.errors import Infeasible, InvalidInput, SmdlabError, SolverError
from smdlab.model import *  # noqa: F403
from smdlab.model import __all__ as _model_all

__version__ = "0.1.0"

# Top-level name -> (module, attribute there).
_LAZY: dict[str, tuple[str, str]] = {
    "solve_allocation": ("smdlab.solve.api", "solve"),
    "Solution": ("smdlab.solve", "Solution"),
    "place": ("smdlab.solve", "place"),
    "simulate": ("smdlab.sim", "simulate"),
    "SimResult": ("smdlab.sim", "SimResult"),
    "check_policy": ("smdlab.sim", "check_policy"),
    "get_policy": ("smdlab.policies.registry", "get_policy"),
    "list_policies": ("smdlab.policies.registry", "list_policies"),
    "fit_epoch_model": ("smdlab.model.epochs", "fit_epoch_model"),
    "load_epoch_times": ("smdlab.model.epochs", "load_epoch_times"),
    "clear_caches": ("smdlab.caches", "clear_caches"),
    "fit_colocation_model": ("smdlab.model.colocation", "fit_colocation_model"),
}
SUBPACKAGES = (
    "model",
    "solve",
    "policies",
    "sim",
    "workloads",
    "viz",
    "experiments",
    "widgets",
    "rl",
)

__all__ = ["Infeasible", "InvalidInput", "SmdlabError", "SolverError", *_model_all, *_LAZY]


def __getattr__(name: str) -> Any:
    if name in SUBPACKAGES:  # normally set by the import system; here for a first access
        return importlib.import_module(f"smdlab.{name}")
    target = _LAZY.get(name)
    if target is None:
        raise AttributeError(f"module 'smdlab' has no attribute {name!r}")
    value = getattr(importlib.import_module(target[0]), target[1])
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    """The API only: the names of ``__all__``, the subpackages and ``__version__``."""
    return sorted({*__all__, *SUBPACKAGES, "__version__"})
