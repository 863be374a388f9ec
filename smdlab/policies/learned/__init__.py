"""Learned family: DL2, DeepRM-MM and SCHED² as policies (docs/rl.md). Their state builders,
networks and weights are in ``smdlab.rl`` (its pure modules; training and environments load on
first use). ``_placement_agent`` is the policy base of the two placement agents."""
