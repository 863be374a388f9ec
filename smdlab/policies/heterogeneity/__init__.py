"""Heterogeneity family: Gavel-style max-min and max-sum, placement-aware heterogeneous scheduling
and Liquid (docs/heterogeneity.md). ``_rounds`` is the Gavel-style round machinery."""
