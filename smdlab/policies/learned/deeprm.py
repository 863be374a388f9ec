"""DeepRM-MM's trained agent as a policy (docs/rl.md, "Placement agents").

DeepRM (Mao, Alizadeh, Menache, Kandula, HotNets 2016) sees images of each resource's occupancy
over a time horizon, images of M waiting jobs and a backlog count; at each time step it picks
jobs one at a time, or waits, and learns by REINFORCE with a time-dependent baseline on the
reward -sum 1/T_j. Its multi-machine extension, DeepRM-MM (Chen, Xu, Wu, arXiv 1711.07440), adds
the machines to the state and the action: an action picks (job, machine). The agent is trained
by ``smdlab train deeprm`` (MaskablePPO, ``smdlab.rl.library``); the shipped weights are
``data/deeprm/weights.npz``.
"""

from __future__ import annotations

from smdlab.policies.learned._placement_agent import PlacementAgentPolicy


class DeepRM(PlacementAgentPolicy):
    """DeepRM-MM: at each decision point, start (job, machine) pairs greedily until "wait".

    Mode: non-elastic (a job runs on the allocation it starts on until it ends), as DeepRM: its
    jobs hold their resources for their whole duration and are never preempted (Mao et al.,
    HotNets 2016, section 2). Decision points are arrivals and completions (DeepRM steps a fixed
    clock; nothing changes between these events). Run in preemptive or elastic mode it still only
    starts waiting jobs. Each job starts at its request (``JobFacts``); tasks that do not fit on
    the chosen machine go to the machines with most free GPUs (a departure: DeepRM-MM puts a job
    on one machine). One scorer shared over machines replaces the paper's fully connected
    network, so the weights run on any number of machines (a departure; docs/rl.md).
    """

    name = "deeprm"
    agent = "deeprm"
    observation = "deeprm"
    action = "machine"
