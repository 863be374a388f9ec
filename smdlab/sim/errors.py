"""What the simulator raises when a policy's decision cannot be applied or the run cannot go on."""

from __future__ import annotations

from smdlab.errors import InvalidInput, SmdlabError

__all__ = ["CapacityExceeded", "InvalidDecision", "Stalled"]


class InvalidDecision(InvalidInput):
    """A policy returned a decision the simulator cannot apply (unknown job, bad counts, ...)."""


class CapacityExceeded(InvalidDecision):
    """A policy's decision would put more on a machine than it has."""


class Stalled(SmdlabError):
    """The policy starts nothing on an idle cluster while jobs wait and nothing else can happen."""
