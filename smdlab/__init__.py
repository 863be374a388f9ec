"""smdlab: a workbench for scheduling DNN training jobs on shared clusters (reconstructed SMD model)."""

from smdlab.errors import Infeasible, InvalidInput, SmdlabError, SolverError
from smdlab.model import *  # noqa: F401,F403
from smdlab.model import __all__ as _model_all

__version__ = "0.1.0"

__all__ = ["Infeasible", "InvalidInput", "SmdlabError", "SolverError", *_model_all]
