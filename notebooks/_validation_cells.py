"""The model-validation cells of notebook 01, in percent format (``SOURCE``), as ``CELLS`` for the builder.

``notebooks/build_notebooks.py`` reads ``CELLS``: a list of ("markdown" | "code", source) pairs,
parsed from ``SOURCE`` (cells start at a ``# %%`` line; markdown lines drop their leading ``# ``).
"""

from __future__ import annotations

SOURCE = r"""
# %% [markdown]
# ## Validation against measurements
#
# Does the layered model predict real training speeds? DL2 (Peng et al., TPDS 2021) published
# measured synchronous PS training speeds of 8 networks on MXNet for many (PS, worker) counts
# (`data/measurements/`). For every network we fit, on a seeded 70% of its measurements, the
# layered model with five physical parameters (compute speed, the bandwidth the job's workers
# share, PS aggregation and update cost, a per-iteration overhead) and Optimus' five-coefficient
# form `tau = a*M/w + b + c*w/p + d*w + e*p`, and compare their mean absolute percentage error
# (MAPE) on the other 30%. `docs/model.md` explains the parameters, the batch convention and
# the fitting.

# %%
from smdlab.model.speed_fit import holdout_report

report = holdout_report(seed=0, test_fraction=0.3)  # warns that failed runs (speed 0) are dropped
print(*report.attrs["notes"], sep="\n")
print("mean MAPE over the 8 networks (%):", {k: round(v, 2) for k, v in report.attrs["mean"].items()})
report[["model", "n_train", "n_test", "mape_layered", "mape_optimus"]].round(2)

# %% [markdown]
# The fitted parameters per network (units in `smdlab.model.speed_fit.LAYERED_PARAMS`):

# %%
from smdlab.model.speed_fit import DEFAULT_LAYERED_FREE, LAYERED_PARAMS

print({k: LAYERED_PARAMS[k].unit for k in DEFAULT_LAYERED_FREE})
report[["model", *DEFAULT_LAYERED_FREE]].round(3)

# %% [markdown]
# Predicted against measured speed on the held-out points: on the diagonal a prediction is exact.

# %%
import pandas as pd
import plotly.express as px

from smdlab.model.speed_fit import fit_speed_form, holdout_split, load_measurements
from smdlab.viz.style import TEMPLATE

data = load_measurements()
data = data[data["total_speed"] > 0]  # failed runs
train, test = holdout_split(data, seed=0, test_fraction=0.3)
points = []
for form in ("layered", "optimus"):
    fit = fit_speed_form(train, form)
    points.append(test.assign(form=form, predicted=fit.predict(test)))
points = pd.concat(points, ignore_index=True)
fig = px.scatter(
    points, x="total_speed", y="predicted", color="model", facet_col="form", log_x=True, log_y=True,
    hover_data=["num_workers", "num_ps"], template=TEMPLATE,
    labels={"total_speed": "measured speed (samples/s)", "predicted": "predicted speed (samples/s)"},
    title="Held-out measurements (DL2, MXNet): predicted vs measured speed",
)
lo, hi = points[["total_speed", "predicted"]].min().min(), points[["total_speed", "predicted"]].max().max()
for col in (1, 2):
    fig.add_scatter(x=[lo, hi], y=[lo, hi], mode="lines", line=dict(color="grey", dash="dot"),
                    showlegend=False, hoverinfo="skip", row=1, col=col)
fig
"""


def _parse(source: str) -> list[tuple[str, str]]:
    cells: list[tuple[str, list[str]]] = []
    for line in source.strip("\n").splitlines():
        if line.startswith("# %%"):
            cells.append(("markdown" if "[markdown]" in line else "code", []))
        elif cells:
            kind, lines = cells[-1]
            lines.append(
                line[2:]
                if kind == "markdown" and line.startswith("# ")
                else ("" if kind == "markdown" and line == "#" else line)
            )
    return [(kind, "\n".join(lines).strip("\n")) for kind, lines in cells]


CELLS: list[tuple[str, str]] = _parse(SOURCE)
