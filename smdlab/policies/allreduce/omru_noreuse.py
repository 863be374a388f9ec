"""OMRU without GPU reuse: the same genetic algorithm over batches, idle slices left idle.

Paper: OMRU (Li, Chang, Hu, Fu et al., Future Generation Computer Systems, 2021), which reports
this ablation as a baseline; rules, parameters and assumptions as in ``smdlab.policies.allreduce.omru``,
except that no job pre-trains on the GPUs a finished job of the previous batch leaves idle (the
fitness and the plan both skip the reuse step). Mode: offline, non-preemptive.
"""

from __future__ import annotations

from smdlab.policies.allreduce.omru import OMRU


class OMRUNoReuse(OMRU):
    """OMRU's GA without GPU reuse."""

    name = "omru_noreuse"
    reuse = False
    execution = "non_elastic"
