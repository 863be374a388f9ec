"""Scheduling policies: the ``Policy`` contract, the state a policy sees, and the registry.

A policy is a small class with a ``name``, ``decide(state) -> Decision`` and ``reset()``
(subclass ``Policy`` for the default ``reset``); it never owns the simulation loop. The shared
stages (admission order, bundles, placement, assembling a decision) are in
``smdlab.policies.toolkit``; docs/policies.md shows complete policies. Wherever a registered name
is accepted, so is ``"module:Class"``. The built-in policies load on first use
(``get_policy("smd")``), so importing this package imports no solver. ``smdlab.check_policy``
(in the simulation layer, since it runs the simulator) checks a policy against the contract.
"""

from smdlab.policies.base import (
    Allocation,
    ClusterState,
    Decision,
    Execution,
    Placement,
    Policy,
    PolicySettings,
    QueuedJob,
    RunningJob,
    SharingKind,
    policy_settings,
)
from smdlab.policies.registry import (
    available_policies,
    get_policy,
    list_policies,
    policy_class,
    register_policy,
)

__all__ = [
    "Allocation",
    "ClusterState",
    "Decision",
    "Execution",
    "Placement",
    "Policy",
    "PolicySettings",
    "QueuedJob",
    "RunningJob",
    "SharingKind",
    "available_policies",
    "get_policy",
    "list_policies",
    "policy_class",
    "policy_settings",
    "register_policy",
]
