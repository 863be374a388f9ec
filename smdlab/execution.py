"""Simulation options every layer reads: execution modes, slot and restart defaults, GPU sharing.

The data layer (scenario files), the policies and the simulator all name these, so they live
below all three. ``smdlab.policies.base`` re-exports them for policies.
"""

from __future__ import annotations

from typing import Literal, get_args

__all__ = [
    "DEFAULT_RESTART_S",
    "DEFAULT_SLOT_S",
    "EXECUTIONS",
    "EXECUTION_CHOICES",
    "RESTART_RULES",
    "SHARING_KINDS",
    "TIME_SLICE_S",
    "TIME_SLICE_SWITCH_S",
    "UNFIT",
    "Execution",
    "RestartRule",
    "SharingKind",
]

# How a policy's decisions may act on running jobs (docs/simulator.md, "Execution modes"):
# non_elastic: an allocation is fixed for life (no resize, no preemption);
# preemptive: a running job may be stopped (back to the queue) and resumed later, possibly on
#   another allocation;
# elastic: running jobs may also be re-allocated in place, at events and every slot.
Execution = Literal["non_elastic", "preemptive", "elastic"]
EXECUTIONS: tuple[Execution, ...] = get_args(Execution)
# What a run may ask for: each policy's declared mode (natural) or one mode for all.
EXECUTION_CHOICES: tuple[str, ...] = ("natural", *EXECUTIONS)
# Slot of the elastic schedulers of SMD's authors' group: DL2's public simulator
# (pengyanghua/DL2, parameters.py: TS_DURATION = 1200.0 s), which also runs Optimus and DRF as
# baselines in the same slots.
DEFAULT_SLOT_S = 1200.0
# Checkpoint-restart cost: Pollux's public simulator (petuum/adaptdl, simulator/simulator.py)
# stops a job's progress for 30 s on every re-allocation (docs/simulator.md, "Restarts").
DEFAULT_RESTART_S = 30.0
# When the restart cost is paid (docs/simulator.md, "Restarts"): ``on_restart`` (a resumed or
# re-allocated job makes no progress for its restart seconds); ``every_event`` (the simulators
# derived from Tiresias', e.g. Rivendile/Muri simulator/run_sim.py: at every event each running job
# loses min(restart seconds, time since the previous event) of progress, and a resume costs
# nothing more; a job's own completion is not an event for it).
RestartRule = Literal["on_restart", "every_event"]
RESTART_RULES: tuple[RestartRule, ...] = get_args(RestartRule)
# How a group of jobs shares its GPUs (``Allocation.sharing``; docs/simulator.md, "GPU sharing").
SharingKind = Literal["space", "time"]
SHARING_KINDS: tuple[SharingKind, ...] = get_args(SharingKind)
# Time-slicing (Gandiva's suspend-resume at mini-batch boundaries): the GPU switches job every
# TIME_SLICE_S seconds and each switch costs TIME_SLICE_SWITCH_S without progress. Assumptions,
# not measured constants: Gandiva (Xiao et al., OSDI 2018) reports suspend-resume within a
# mini-batch's time, well under a second for the jobs it studies; a one-minute slice is ours.
TIME_SLICE_S = 60.0
TIME_SLICE_SWITCH_S = 0.5
# What the simulator does with a job that can never run on the cluster: skip it or raise.
UNFIT: tuple[str, ...] = ("skip", "raise")
