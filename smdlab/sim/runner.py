"""Run several policies on one workload (a scenario), each on the same jobs and cluster."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from smdlab.errors import InvalidInput
from smdlab.model.cluster import Cluster
from smdlab.model.job import Job
from smdlab.policies.registry import get_policy, known_policy, list_policies
from smdlab.sim.result import SimResult
from smdlab.sim.simulator import resolve_execution, simulate
from smdlab.workloads.scenario import Scenario


def run_policies(
    jobs: Sequence[Job],
    cluster: Cluster,
    policies: Sequence[str],
    *,
    policy_options: Mapping[str, Mapping[str, Any]] | None = None,
    variants: Mapping[str, Mapping[str, Any]] | None = None,
    on_start: Callable[[], None] | None = None,
    **sim_options: Any,
) -> dict[str, SimResult]:
    """Simulate each named policy (a fresh instance each) on ``jobs``; results keyed by name.

    variants: named variants (``Scenario.variants``): name -> {"policy": ..., **options}; a name
    in ``policies`` that is a variant runs its policy with its options.
    on_start: called once the policies, their options and the execution mode are checked, before
    the first simulation (the CLI says there what it runs).
    """
    options = policy_options or {}
    if not isinstance(options, Mapping):
        raise InvalidInput(f"policy_options must map policy names to options, got {options!r}")
    unknown = [name for name in options if not known_policy(name)]
    if unknown:  # options for an unknown policy are a typo, not something to ignore
        raise InvalidInput(
            f"policy_options names policy {unknown[0]!r}; allowed: {', '.join(list_policies())} "
            "or module:Class"
        )
    instances = {name: policy_instance(name, options, variants) for name in policies}
    # fail fast on names
    # One name per policy: the result carries the name it was asked by, as the dict keys it.
    for policy in instances.values():  # and on a mode or slot a policy cannot run with
        resolve_execution(
            policy, sim_options.get("execution", "natural"), sim_options.get("slot_s")
        )
    if on_start is not None:
        on_start()
    return {
        name: dataclasses.replace(simulate(jobs, cluster, policy, **sim_options), policy=name)
        for name, policy in instances.items()
    }


def policy_instance(
    name: str,
    policy_options: Mapping[str, Mapping[str, Any]] | None = None,
    variants: Mapping[str, Mapping[str, Any]] | None = None,
) -> Any:
    """A fresh instance of ``name``: a named variant (its policy and options) or a policy."""
    spec = (variants or {}).get(name)
    if spec is not None:
        opts = {k: v for k, v in spec.items() if k != "policy"}
        return get_policy(spec["policy"], **opts)
    return get_policy(name, **dict((policy_options or {}).get(name, {})))


def simulation_options(scenario: Scenario) -> dict[str, Any]:
    """The scenario's simulator keyword arguments."""
    s = scenario.simulation
    return {
        "mode": s["mode"],
        "execution": s["execution"],
        "slot_s": s.get("slot_s"),
        "restart_s": s["restart_s"],
        "unfit": s["unfit"],
        "sharing_degree": s.get("sharing_degree"),
        "restart_rule": s.get("restart_rule", "on_restart"),
        **({} if scenario.storage is None else {"storage": _storage_spec(scenario.storage)}),
    }


def _storage_spec(table: Mapping[str, Any]) -> Any:
    """The scenario's ``[storage]`` table as the spec ``simulate`` binds to its jobs."""
    from smdlab.workloads.storage import StorageSpec

    return StorageSpec(**table)


def run_scenario(scenario: Scenario, policies: Sequence[str] | None = None) -> dict[str, SimResult]:
    """Build the scenario's cluster and jobs and simulate its policies (or ``policies``)."""
    cluster = scenario.build_cluster()
    jobs = scenario.build_jobs(cluster)
    return run_policies(
        jobs,
        cluster,
        policies or scenario.policies,
        policy_options=scenario.policy_options,
        variants=scenario.variants,
        **simulation_options(scenario),
    )
