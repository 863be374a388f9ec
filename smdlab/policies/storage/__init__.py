"""Storage-aware policies: CBA, AutoCBA and SiloD (docs/storage.md), and the cache rules."""

from smdlab.policies.storage._common import reference_speed, utility_kind

__all__ = ["reference_speed", "utility_kind"]
