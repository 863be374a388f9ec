"""smdlab: a workbench for scheduling DNN training jobs on shared clusters (reconstructed SMD model).

The model layer is imported eagerly; the solver, policies and simulator load on first use
(``smdlab.solve``, ``smdlab.simulate``, ``smdlab.get_policy``) so that ``import smdlab`` stays light.
"""

from __future__ import annotations

import importlib
from typing import Any

from smdlab.errors import Infeasible, InvalidInput, SmdlabError, SolverError
from smdlab.model import *  # noqa: F403
from smdlab.model import __all__ as _model_all

__version__ = "0.1.0"

_LAZY: dict[str, str] = {
    "solve": "smdlab.solve",
    "Solution": "smdlab.solve",
    "place": "smdlab.solve",
    "simulate": "smdlab.sim",
    "SimResult": "smdlab.sim",
    "get_policy": "smdlab.policies.registry",
    "fit_epoch_model": "smdlab.model.epochs",
    "load_epoch_times": "smdlab.model.epochs",
    "list_policies": "smdlab.policies.registry",
}

__all__ = ["Infeasible", "InvalidInput", "SmdlabError", "SolverError", *_model_all, *_LAZY]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'smdlab' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
