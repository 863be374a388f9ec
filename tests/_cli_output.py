"""What ``smdlab simulate`` writes on stderr besides errors and warnings."""

from __future__ import annotations

WORKLOAD_PREFIX = "smdlab: workload: "


def without_workload_line(err: str) -> str:
    """``err`` without its first line when that line is the workload ``simulate`` built."""
    first, _, rest = err.partition("\n")
    return rest if first.startswith(WORKLOAD_PREFIX) else err
