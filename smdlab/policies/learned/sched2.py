"""A scheduler inspired by SCHED² as a policy (docs/rl.md, "Placement agents").

SCHED² (Luan, Chen, Zhao, Yang, Dai, "SCHED²: Scheduling Deep Learning Training via Deep
Reinforcement Learning", GLOBECOM 2019) states that its DRL agent's state captures each job's
sensitivity to GPU locality and the cluster's fragmentation, "from job and cluster state
definitions to the neural network architecture", and that the agent places jobs with an
appropriate degree of locality. Its network, state layout and training details are not public:
everything below the level of that description is our guess, hence "inspired by". The agent is
trained by ``smdlab train sched2`` (MaskablePPO, ``smdlab.rl.library``); the shipped weights are
``data/sched2/weights.npz``.
"""

from __future__ import annotations

from smdlab.policies.learned._placement_agent import PlacementAgentPolicy


class Sched2(PlacementAgentPolicy):
    """Inspired by SCHED²: at each decision point, start (job, locality degree) pairs until "wait".

    Mode: non-elastic (a job keeps its placement until it ends; SCHED² places jobs and does not
    describe preemption or resizing, GLOBECOM 2019). Decision points are arrivals and
    completions; run in preemptive or elastic mode it still only starts waiting jobs. State
    (inspired): per job its locality sensitivity (the timing model's slow-down when its ring
    spreads), size, ideal duration, wait and whether a consolidated placement is free; the
    cluster's fragmentation (machines by free-GPU fraction, fragmentation index). Action: a
    job and a locality degree (consolidated, fewest machines now, fill fragments), or wait.
    Network (inspired): one scorer shared over jobs reads a job's features beside the cluster's,
    and a second scorer of the cluster's features values "wait".
    """

    name = "sched2"
    agent = "sched2"
    observation = "sched2"
    action = "locality"
