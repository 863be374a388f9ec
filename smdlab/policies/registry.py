"""Policy names -> classes, imported lazily (so listing policies never imports a solver).

To register a policy, add one line to ``_BUILTIN``: ``"name": "module.path:ClassName"``. The class
takes its options as keyword arguments and has a ``name`` attribute and ``decide(state)``.
``register_policy`` does the same at run time (e.g. for a policy defined in a notebook).

Wherever a policy name is accepted, so is ``"module:Class"`` (or ``"module:function"`` returning
a policy) for a policy in any importable module: the module is imported on use, so it reaches
every process that can import it (Dask workers included). The spec string is then the policy's
name in results.
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Iterable
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
    "smd_pools": "smdlab.policies.ps.smd_pools:SMDPools",
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
    "gavel_max_min_fairness": "smdlab.policies.heterogeneity.gavel_own:GavelMaxMinFairness",
    "gavel_max_min_fairness_perf": "smdlab.policies.heterogeneity.gavel_own:GavelMaxMinFairnessPerf",
    "gavel_max_sum_throughput_perf": (
        "smdlab.policies.heterogeneity.gavel_own:GavelMaxSumThroughputPerf"
    ),
    "gavel_fifo_perf": "smdlab.policies.heterogeneity.gavel_own:GavelFifoPerf",
    "gavel_max_min_fairness_packed": (
        "smdlab.policies.heterogeneity.gavel_own:GavelMaxMinFairnessPacked"
    ),
    "hetero_placement": "smdlab.policies.heterogeneity.hetero_placement:HeteroPlacement",
    "liquid": "smdlab.policies.heterogeneity.liquid:Liquid",
    "edf": "smdlab.policies.deadline.edf:EDF",
    "lsf": "smdlab.policies.deadline.lsf:LSF",
    "chronus": "smdlab.policies.deadline.chronus:Chronus",
    "unisched": "smdlab.policies.deadline.unisched:UniSched",
    "smd_slo": "smdlab.policies.deadline.smd_slo:SMDSLO",
    "cba": "smdlab.policies.storage.cba:CBA",
    "autocba": "smdlab.policies.storage.autocba:AutoCBA",
    "silod": "smdlab.policies.storage.silod:SiloD",
    "cache_baseline": "smdlab.policies.storage.baselines:CacheBaseline",
    "smd_storage": "smdlab.policies.storage.smd_storage:SMDStorage",
}
_EXTRA: dict[str, Any] = {}


def register_policy(name: str, target: str | type | Any) -> None:
    """Register ``target`` (a class, a function returning a policy, or ``"module:Class"``) as ``name``."""
    if (
        not isinstance(name, str)
        or not name
        or "," in name
        or ":" in name
        or name != name.strip().lower()
    ):
        raise InvalidInput(
            "policy name must be a non-empty lower-case string without commas or colons, "
            f"got {name!r}"
        )
    if isinstance(target, str):
        if not is_spec(target):
            raise InvalidInput(
                f"policy {name!r}: target must be a class or 'module:Class', got {target!r}"
            )
    elif not callable(target):
        raise InvalidInput(
            f"policy {name!r}: target must be a class, a function returning a policy or "
            f"'module:Class', got {target!r}"
        )
    else:
        _check_decide(target, name)
    _EXTRA[name] = target


def list_policies() -> list[str]:
    """Names of the registered policies (sorted)."""
    return sorted({*_BUILTIN, *_EXTRA})


def is_spec(name: object) -> bool:
    """Whether ``name`` is a ``"module:attribute"`` spec (rather than a registered name)."""
    if not isinstance(name, str):
        return False
    module, sep, attr = name.partition(":")
    return bool(sep) and all(p.isidentifier() for p in module.split(".")) and attr.isidentifier()


def known_policy(name: object) -> bool:
    """Whether ``name`` is a registered policy name or a ``module:Class`` spec."""
    return isinstance(name, str) and (name in _EXTRA or name in _BUILTIN or is_spec(name))


def _import_spec(spec: str, name: str) -> Any:
    """The attribute a ``module:attribute`` spec names; InvalidInput naming what is missing."""
    module, _, attr = spec.partition(":")
    try:
        mod = importlib.import_module(module)
    except ModuleNotFoundError as exc:
        missing = exc.name or module
        raise InvalidInput(
            f"policy {name!r}: cannot import module {module!r} (no module named {missing!r}; "
            "is its folder on PYTHONPATH?)"
        ) from None
    try:
        return getattr(mod, attr)
    except AttributeError:
        raise InvalidInput(
            f"policy {name!r}: module {module!r} has no attribute {attr!r}"
        ) from None


def _check_decide(target: Any, name: str) -> None:
    """Raise InvalidInput unless ``target`` (a policy class or instance) has ``decide(state)``."""
    decide = getattr(target, "decide", None)
    label = getattr(target, "__qualname__", type(target).__qualname__)
    if not callable(decide):
        if isinstance(target, type) or not callable(target):
            kind = f"class {label}" if isinstance(target, type) else f"an object of type {label}"
            raise InvalidInput(
                f"policy {name!r}: {name.rpartition(':')[2]} is not a policy class or a function "
                f"returning one ({kind} without a decide(state) method)"
            )
        return  # a function returning a policy: its result is checked when it is called
    try:
        sig = inspect.signature(decide)
    except (TypeError, ValueError):
        return  # a builtin or C callable: nothing to check
    # decide looked up on a class is the plain function (self first), unless static or class-level
    unbound = isinstance(target, type) and not isinstance(
        inspect.getattr_static(target, "decide"), (staticmethod, classmethod)
    )
    try:
        sig.bind(*((None, None) if unbound else (None,)))
    except TypeError:
        raise InvalidInput(
            f"policy {name!r}: {label}.decide must take one argument, the state, as "
            f"decide(self, state); its signature is {sig}"
        ) from None
    if not callable(getattr(target, "reset", None)):
        raise InvalidInput(
            f"policy {name!r}: {label} has no reset() method (subclass smdlab.policies.Policy "
            "for the default)"
        )


def policy_class(name: str) -> Any:
    """The class (or function returning a policy) registered as ``name`` or named by a spec."""
    target = _EXTRA.get(name, _BUILTIN.get(name)) if isinstance(name, str) else None
    if target is None:
        if not is_spec(name):
            raise InvalidInput(
                f"policy must be one of {', '.join(list_policies())}, or module:Class for a "
                f"policy in an importable module; got {name!r}"
            )
        target = name
    if isinstance(target, str):
        builtin = _BUILTIN.get(name) == target
        if builtin:  # the package's own code: a missing module is an ImportError, not bad input
            module, _, attr = target.partition(":")
            target = getattr(importlib.import_module(module), attr)
        else:
            target = _import_spec(target, name)
            _check_decide(target, name)
    return target


def get_policy(name: str, /, **options: Any) -> Policy:
    """A fresh instance of the policy ``name`` (registered, or ``module:Class``) with ``options``."""
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
        policy = cls(**options)
    except InvalidInput as exc:  # say which policy the bad option belongs to
        raise InvalidInput(f"policy {name!r}: {exc}") from None
    if not isinstance(cls, type):  # a function: check what it returned
        _check_decide(policy, name)
        if not callable(getattr(policy, "decide", None)):
            raise InvalidInput(
                f"policy {name!r}: the function returned a {type(policy).__name__}, not a policy"
            )
    return policy


def registrations(names: Iterable[str]) -> dict[str, Any]:
    """What ``register_policy`` gave for each of ``names`` that it registered, ready to send to
    another process: a ``module:Class`` string for a class its process can import, else the
    class itself (Dask's pickler sends a notebook's class by value)."""
    out: dict[str, Any] = {}
    for name in names:
        if name not in _EXTRA:
            continue
        target = _EXTRA[name]
        module = getattr(target, "__module__", None)
        qualname = getattr(target, "__qualname__", "")
        if (
            not isinstance(target, str)
            and module not in (None, "__main__")
            and "<" not in qualname
            and "." not in qualname
        ):
            target = f"{module}:{qualname}"
        out[name] = target
    return out


def available_policies() -> list[str]:
    """Registered policies whose module imports here (skips ones whose code is not present)."""
    out = []
    for name in list_policies():
        try:
            policy_class(name)
        except (ImportError, AttributeError, InvalidInput):
            continue
        out.append(name)
    return out
