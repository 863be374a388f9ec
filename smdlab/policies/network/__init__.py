"""Communication policies: who the fabric serves first (docs/network.md, contract and table).

A communication policy is separate from GPU allocation: any allocation policy runs with any
communication policy. It is told the fabric's state (``smdlab.model.fabric.FabricState``) and
returns one score per running job (lower: served first); the fabric compresses the scores into
at most the fabric's ``levels`` strict priority levels (``levels_from_scores``) and shares
bandwidth max-min fairly inside a level.
"""

from __future__ import annotations

from smdlab.errors import InvalidInput
from smdlab.policies.network.policies import (
    CommunicationPolicy,
    Crux,
    Fair,
    JcsInspired,
    LeastContentionFirst,
    SmallestCoflowFirst,
)

__all__ = [
    "COMMUNICATION_POLICIES",
    "CommunicationPolicy",
    "check_communication",
    "get_communication_policy",
]

COMMUNICATION_POLICIES: dict[str, type[CommunicationPolicy]] = {
    p.name: p for p in (Fair, SmallestCoflowFirst, LeastContentionFirst, Crux, JcsInspired)
}


def check_communication(name: object) -> str:
    """``name`` if it is a registered communication policy, else InvalidInput."""
    if not isinstance(name, str) or name not in COMMUNICATION_POLICIES:
        raise InvalidInput(
            f"fabric communication {name!r} is not a registered communication policy; "
            f"allowed: {', '.join(COMMUNICATION_POLICIES)}"
        )
    return name


def get_communication_policy(name: str) -> CommunicationPolicy:
    """A fresh instance of the communication policy registered as ``name``."""
    return COMMUNICATION_POLICIES[check_communication(name)]()
