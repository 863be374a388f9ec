"""Policy names -> classes, imported lazily (so listing policies never imports a solver).

To register a policy, add one line to ``_BUILTIN``: ``"name": "module.path:ClassName"``. The class
takes its options as keyword arguments and has a ``name`` attribute and ``decide(state)``.
``register_policy`` does the same at run time (e.g. for a policy defined in a notebook).
"""

from __future__ import annotations

import importlib
import inspect
from typing import Any

from smdlab.errors import InvalidInput
from smdlab.policies.base import Policy

_BUILTIN: dict[str, str] = {
    "fifo": "smdlab.policies.ps.fifo:FIFO",
    "srtf": "smdlab.policies.ps.srtf:SRTF",
    "sjf": "smdlab.policies.ps.srtf:SJF",
    "drf": "smdlab.policies.ps.drf:DRF",
    "tetris": "smdlab.policies.ps.tetris:Tetris",
    "optimus": "smdlab.policies.ps.optimus:Optimus",
    "tiresias": "smdlab.policies.ps.tiresias:Tiresias",
    "smd": "smdlab.policies.ps.smd:SMD",
    "milp": "smdlab.policies.ps.milp:MILP",
    "omru": "smdlab.policies.allreduce.omru:OMRU",
    "omru_noreuse": "smdlab.policies.allreduce.omru_noreuse:OMRUNoReuse",
    "seqex": "smdlab.policies.allreduce.seqex:SeqEx",
    "parallel": "smdlab.policies.allreduce.parallel:Parallel",
    "optimus_like": "smdlab.policies.allreduce.optimus_like:OptimusLike",
    "sjf_bco": "smdlab.policies.allreduce.sjf_bco:SJFBCO",
    "gpu_proportional": "smdlab.policies.multiresource.gpu_proportional:GPUProportional",
    "synergy_tune": "smdlab.policies.multiresource.synergy_tune:SynergyTune",
    "synergy_opt": "smdlab.policies.multiresource.synergy_opt:SynergyOpt",
    "milp_levels": "smdlab.policies.multiresource.milp_levels:MILPLevels",
    "smd_levels": "smdlab.policies.multiresource.smd_levels:SMDLevels",
    "muri_s": "smdlab.policies.multiresource.muri:MuriS",
    "muri_l": "smdlab.policies.multiresource.muri:MuriL",
    "dl2": "smdlab.policies.learned.dl2:DL2",
    "deeprm": "smdlab.policies.learned.deeprm:DeepRM",
    "sched2": "smdlab.policies.learned.sched2:Sched2",
    "sjf_ffs": "smdlab.policies.sharing.sjf_ffs:SJFFFS",
    "sjf_bsbf": "smdlab.policies.sharing.sjf_bsbf:SJFBSBF",
    "horus": "smdlab.policies.sharing.horus:Horus",
    "gandiva": "smdlab.policies.sharing.gandiva:Gandiva",
    "gavel_max_sum": "smdlab.policies.heterogeneity.gavel_max_sum:GavelMaxSum",
    "gavel_max_min": "smdlab.policies.heterogeneity.gavel_max_min:GavelMaxMin",
    "hetero_placement": "smdlab.policies.heterogeneity.hetero_placement:HeteroPlacement",
    "liquid": "smdlab.policies.heterogeneity.liquid:Liquid",
}
_EXTRA: dict[str, Any] = {}


def register_policy(name: str, target: str | type) -> None:
    """Register ``target`` (a class, or ``"module:Class"``) under ``name`` (replacing a previous one)."""
    if not isinstance(name, str) or not name or "," in name or name != name.strip().lower():
        raise InvalidInput(
            f"policy name must be a non-empty lower-case string without commas, got {name!r}"
        )
    _EXTRA[name] = target


def list_policies() -> list[str]:
    """Names of the registered policies (sorted)."""
    return sorted({*_BUILTIN, *_EXTRA})


def policy_class(name: str) -> type:
    """The class registered under ``name``."""
    target = _EXTRA.get(name, _BUILTIN.get(name)) if isinstance(name, str) else None
    if target is None:
        raise InvalidInput(f"policy must be one of {', '.join(list_policies())}; got {name!r}")
    if isinstance(target, str):
        module, _, attr = target.partition(":")
        target = getattr(importlib.import_module(module), attr)
    return target


def get_policy(name: str, /, **options: Any) -> Policy:
    """A fresh instance of the policy ``name`` with ``options``."""
    cls = policy_class(name)
    try:
        inspect.signature(cls).bind(**options)
    except TypeError as exc:
        params = [
            p for p in inspect.signature(cls).parameters if p not in ("self", "args", "kwargs")
        ]
        raise InvalidInput(
            f"options of policy {name!r} must be among {', '.join(params) or '(none)'}; got {sorted(options)} ({exc})"
        ) from None
    try:
        return cls(**options)
    except InvalidInput as exc:  # say which policy the bad option belongs to
        raise InvalidInput(f"policy {name!r}: {exc}") from None


def available_policies() -> list[str]:
    """Registered policies whose module imports here (skips ones whose code is not present)."""
    out = []
    for name in list_policies():
        try:
            policy_class(name)
        except (ImportError, AttributeError):
            continue
        out.append(name)
    return out
