"""Multi-resource family: Synergy (GPU-proportional, Synergy-Tune, Synergy-Opt), Muri, and SMD and
MILP over CPU/memory levels (docs/multiresource.md). ``_rounds`` is Synergy's round machinery."""
