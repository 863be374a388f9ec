"""Plotly figure builders over smdlab's results; each returns a ``plotly.graph_objects.Figure``.

- model: ``timeline_figure`` (one iteration, layer by layer), ``overlap_figure``, ``ratio_figure``.
- solution: ``allocation_figure``, ``bounds_figure`` (lower bound vs achieved vs exact), ``smd_trace_figure``.
- sim: ``jct_cdf_figure``, ``policy_summary_figure``, ``utilisation_figure``, ``job_gantt_figure``.
- decomposition: the SMD subproblem taken apart (``ratio_table``, ``subproblem_step``, ``speed_heatmap_figure``).
- experiments: figures of the numerical experiments (``smdlab reproduce``).
- notebook: how the notebooks show figures and tables (``show``: at the output area's width,
  axes checked against their data; ``table``: the one table style).
- takeaways: the notebooks' takeaways, written from the values their cells computed.
SMD results are labelled "SMD (reconstructed model)" (``smdlab.viz.style.SMD_LABEL``).
"""

from smdlab.viz.model import overlap_figure, ps_needed_table, ratio_figure, timeline_figure
from smdlab.viz.sim import (
    jct_cdf_figure,
    job_gantt_figure,
    policy_summary_figure,
    utilisation_figure,
)
from smdlab.viz.solution import allocation_figure, bounds_figure, smd_trace_figure
from smdlab.viz.style import SMD_LABEL

__all__ = [
    "SMD_LABEL",
    "allocation_figure",
    "bounds_figure",
    "jct_cdf_figure",
    "job_gantt_figure",
    "overlap_figure",
    "policy_summary_figure",
    "ps_needed_table",
    "ratio_figure",
    "smd_trace_figure",
    "timeline_figure",
    "utilisation_figure",
]
