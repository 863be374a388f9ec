"""One weights file format for every agent: named nets of ``smdlab.rl.networks`` in an .npz.

Arrays ``{net}_w{k}`` and ``{net}_b{k}`` hold layer k of each named net (DL2: ``actor``; the
placement agents: ``row`` and ``wait``); ``meta`` is a JSON string with ``format``, ``agent``,
``{net}_layers`` per net and the agent's own settings (window, job types, training run).
"""

from __future__ import annotations

import json
import zipfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from smdlab.errors import InvalidInput
from smdlab.rl.networks import Layers

WEIGHTS_FORMAT = 1  # version of the files ``save_weights`` writes


def save_weights(
    path: str | Path,
    nets: Mapping[str, Sequence[tuple[np.ndarray, np.ndarray]]],
    meta: dict,
) -> None:
    """Write the named nets (weight (out x in), bias per layer) and ``meta`` to an .npz at ``path``."""
    arrays: dict[str, np.ndarray] = {}
    for name, net in nets.items():
        for k, (w, b) in enumerate(net):
            arrays[f"{name}_w{k}"] = np.asarray(w, dtype=np.float32)
            arrays[f"{name}_b{k}"] = np.asarray(b, dtype=np.float32)
    meta = {
        **meta,
        "format": WEIGHTS_FORMAT,
        **{f"{name}_layers": len(net) for name, net in nets.items()},
    }
    with open(path, "wb") as fh:
        np.savez(fh, meta=np.array(json.dumps(meta, sort_keys=True)), **arrays)  # type: ignore[arg-type]


def load_weights(
    path: str | Path, agent: str, nets: Sequence[str]
) -> tuple[dict[str, Layers], dict[str, Any]]:
    """(the named ``nets``, meta) of ``agent``'s weights file; InvalidInput if it is unreadable,
    of a newer format or another agent's."""
    try:
        with np.load(path, allow_pickle=False) as z:
            meta = json.loads(str(z["meta"]))
            if not isinstance(meta, dict):
                raise TypeError("meta")
            other = meta.get("agent") != agent  # another agent's nets: say whose, below
            out = {
                n: [(z[f"{n}_w{k}"], z[f"{n}_b{k}"]) for k in range(int(meta[f"{n}_layers"]))]
                for n in ([] if other else nets)
            }
    except FileNotFoundError:
        raise InvalidInput(f"weights: no {agent} weights file at {str(path)!r}") from None
    except (OSError, ValueError, KeyError, TypeError, zipfile.BadZipFile) as exc:
        # json.JSONDecodeError is a ValueError
        raise InvalidInput(
            f"weights: {str(path)!r} is not a readable {agent} weights file ({type(exc).__name__})"
        ) from None
    fmt = meta.get("format")
    if not isinstance(fmt, int) or fmt > WEIGHTS_FORMAT:
        raise InvalidInput(
            f"weights: {str(path)!r} has format {fmt!r}; this smdlab reads format <= {WEIGHTS_FORMAT}"
        )
    if meta.get("agent") != agent:
        raise InvalidInput(
            f"weights: {str(path)!r} holds {meta.get('agent')!r} weights, not {agent!r}"
        )
    return out, meta
