"""The workload an environment's episode runs on: shared by DL2's and the placement environment."""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from smdlab.errors import check_int
from smdlab.model.cluster import Cluster
from smdlab.model.job import Job
from smdlab.workloads.scenario import Scenario


class EpisodeJobs:
    """Mixin: fixed jobs, or a seeded draw of the scenario, each seed's jobs built once."""

    fixed_jobs: list[Job] | None
    scenario: Scenario
    cluster: Cluster
    train_seeds: int
    workload_seed: int | None
    np_random: np.random.Generator
    _workloads: dict[int, list[Job]]

    def _episode_jobs(self, options: dict[str, Any]) -> list[Job]:
        """The episode's jobs: ``fixed_jobs``, else ``options["workload_seed"]`` or a training seed."""
        if self.fixed_jobs is not None:
            self.workload_seed = None
            return self.fixed_jobs
        ws = options.get("workload_seed")
        if ws is None:
            ws = int(self.np_random.integers(0, self.train_seeds))
        seed = check_int("workload_seed", ws, 0)
        self.workload_seed = seed
        if seed not in self._workloads:
            scn = dataclasses.replace(self.scenario, seed=seed)
            self._workloads[seed] = scn.build_jobs(self.cluster)
        return self._workloads[seed]
