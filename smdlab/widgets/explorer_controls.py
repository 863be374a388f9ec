"""The explorer's controls (the left column) and how a change to one becomes new settings.

``ExplorerControls`` is the controls' part of ``smdlab.widgets.explorer_app.Explorer``: it builds
the widgets (each an attribute of the app), keeps them in step with the settings, and turns a
change into new ``ExplorerSettings`` before the app recomputes (``refresh``).
"""

from __future__ import annotations

import html
import threading
from collections.abc import Callable

import ipywidgets as widgets

from smdlab.errors import SmdlabError
from smdlab.model.job import BATCH_MODES, Job
from smdlab.model.pipeline import bundled_pipeline
from smdlab.model.profiles import list_profiles
from smdlab.model.timing import MODES
from smdlab.viz.style import SMD_LABEL
from smdlab.widgets.scenario import (
    DEVICES,
    LARGE_JOBS,
    LARGE_MACHINES,
    MACHINE_SHAPES,
    ExplorerSettings,
)

__all__ = ["METHOD_CHOICES", "ExplorerControls"]

# Methods offered by the method control: (label, method). ``milp`` shows LP + rounding at once and
# replaces it with the exact allocation when the background solve ends.
METHOD_CHOICES: tuple[tuple[str, str], ...] = (
    (SMD_LABEL, "smd"),
    ("LP + rounding", "lp_round"),
    ("exact MILP (background)", "milp"),
)
_CONTROL_WIDTH = "380px"


def _slider_layout() -> widgets.Layout:
    return widgets.Layout(width=_CONTROL_WIDTH)


class ExplorerControls:
    """The explorer's controls and their events (a base of ``Explorer``, which provides the rest)."""

    # Provided by Explorer: the settings shown, its lock, and what a change triggers.
    settings: ExplorerSettings
    _syncing: bool
    _lock: threading.RLock
    refresh: Callable[..., None]
    _show_error: Callable[[str], None]
    _queue_exact: Callable[[], None]

    def _build_controls(self) -> None:
        s = self.settings
        style = {"description_width": "110px"}
        self.machines = widgets.IntSlider(
            s.machines,
            min=1,
            max=max(32, s.machines),
            description="machines",
            style=style,
            continuous_update=False,
            layout=_slider_layout(),
        )
        self.shape = widgets.Dropdown(
            options=list(MACHINE_SHAPES),
            value=s.shape,
            description="machine",
            style=style,
            layout=_slider_layout(),
        )
        self.bandwidth = widgets.FloatLogSlider(
            s.bandwidth_gbps,
            base=10,
            min=0,
            max=2.5,
            step=0.05,
            description="task NIC (Gbps)",
            style=style,
            readout_format=".3g",
            continuous_update=False,
            layout=_slider_layout(),
        )
        # One control to an instance where the exact MILP needs its background thread and its
        # time limit; unticking restores the machines and jobs from before.
        self.large = widgets.Checkbox(
            s.machines == LARGE_MACHINES and s.n_jobs == LARGE_JOBS,
            description=f"large instance: {LARGE_JOBS:,} jobs on {LARGE_MACHINES} machines",
            indent=False,
            layout=_slider_layout(),
        )
        self._before_large = (min(s.machines, 4), min(s.n_jobs, 16))
        # A rack layout (0: flat): the machines split into racks, drawn beside the allocation.
        self.racks = widgets.IntSlider(
            s.racks,
            min=0,
            max=8,
            description="racks (0: flat)",
            style=style,
            continuous_update=False,
            layout=_slider_layout(),
        )
        self.profiles = widgets.SelectMultiple(
            options=list_profiles(),
            value=s.profiles,
            rows=len(list_profiles()),  # every network visible: no selection scrolled out of view
            description="networks",
            style=style,
            layout=_slider_layout(),
        )
        self.n_jobs = widgets.IntSlider(
            s.n_jobs,
            min=1,
            max=max(24, s.n_jobs),
            description="jobs",
            style=style,
            continuous_update=False,
            layout=_slider_layout(),
        )
        self.seed = widgets.BoundedIntText(
            s.seed, min=0, max=10**6, description="seed", style=style, layout=_slider_layout()
        )
        self.arch = widgets.ToggleButtons(
            options=[("PS", "ps"), ("all-reduce", "allreduce")],
            value=s.arch,
            description="training",
            style={**style, "button_width": "80px"},
        )
        self.demands = widgets.ToggleButtons(
            options=[("per network", "per_network"), ("uniform", "uniform")],
            value=s.demands,
            description="task demands",
            style={**style, "button_width": "100px"},
        )
        self.focus = widgets.Dropdown(
            options=self._focus_options(s),
            value=s.focus,
            description="job",
            style=style,
            layout=_slider_layout(),
        )
        edit = s.edit_for(s.network_of(s.focus))
        self.device = widgets.ToggleButtons(
            options=list(DEVICES),
            value=edit.device,
            description="device",
            style={**style, "button_width": "80px"},
        )
        log2 = dict(
            base=2,
            min=-3,
            max=3,
            step=0.25,
            readout_format=".3g",
            continuous_update=False,
            style=style,
            layout=_slider_layout(),
        )
        self.compute_scale = widgets.FloatLogSlider(edit.compute, description="compute ×", **log2)
        self.param_scale = widgets.FloatLogSlider(edit.params, description="parameters ×", **log2)
        self.comm_ratio = widgets.FloatLogSlider(edit.comm_ratio, description="comm/comp ×", **log2)
        self.mode = widgets.Dropdown(
            options=list(MODES),
            value=s.mode,
            description="overlap",
            style=style,
            layout=_slider_layout(),
        )
        self.batch = widgets.ToggleButtons(
            options=[(b.replace("_", " "), b) for b in BATCH_MODES],
            value=s.batch,
            description="batch",
            style={**style, "button_width": "100px"},
        )
        self.method = widgets.Dropdown(
            options=list(METHOD_CHOICES),
            value=s.method,
            description="method",
            style=style,
            layout=_slider_layout(),
        )
        self.exact = widgets.Checkbox(
            True, description="exact MILP in the background", indent=False
        )
        # Per-worker CPU and memory of the focused job's timeline (its data stage, docs/model.md);
        # None-like 0 means "the job's demand".
        self.cpu = widgets.FloatSlider(
            0.0,
            min=0.0,
            max=32.0,
            step=0.5,
            description="CPU / worker",
            readout_format=".1f",
            continuous_update=False,
            style=style,
            layout=_slider_layout(),
        )
        self.mem = widgets.FloatSlider(
            0.0,
            min=0.0,
            max=256.0,
            step=1.0,
            description="GB / worker",
            readout_format=".0f",
            continuous_update=False,
            style=style,
            layout=_slider_layout(),
        )
        self._levels_note = widgets.HTML(
            '<span style="font-size:90%">0: the job\'s demand; the data stage (read, '
            "preprocess) of the focused job's timeline</span>"
        )
        self._edit_note = widgets.HTML()
        self._update_edit_note()

        def section(title: str, *children: widgets.Widget) -> widgets.VBox:
            return widgets.VBox([widgets.HTML(f"<b>{title}</b>"), *children])

        self.control_panel = widgets.VBox(
            [
                section(
                    "Cluster", self.machines, self.shape, self.bandwidth, self.racks, self.large
                ),
                section("Job mix", self.profiles, self.n_jobs, self.seed, self.arch, self.demands),
                section(
                    "Layer profile",
                    self.focus,
                    self._edit_note,
                    self.device,
                    self.compute_scale,
                    self.param_scale,
                    self.comm_ratio,
                    self.cpu,
                    self.mem,
                    self._levels_note,
                ),
                section("Model and solver", self.mode, self.batch, self.method, self.exact),
            ],
            layout=widgets.Layout(width="400px", flex="0 0 400px"),
        )
        # Control name -> widget, for scripts and tests: setting ``.value`` acts like the user.
        self.controls: dict[str, widgets.Widget] = {
            name: getattr(self, name)
            for name in (
                "machines", "shape", "bandwidth", "large", "profiles", "n_jobs", "seed", "arch", "demands",
                "focus",
                "device", "compute_scale", "param_scale", "comm_ratio", "cpu", "mem", "mode",
                "batch", "method", "exact", "racks",
            )
        }  # fmt: skip

    @staticmethod
    def _focus_options(s: ExplorerSettings) -> list[tuple[str, int]]:
        return [(name, i) for i, name in enumerate(s.job_names())]

    def _update_edit_note(self) -> None:
        net = self.settings.network_of(self.settings.focus)
        self._edit_note.value = f'<span style="font-size:90%">edits apply to every <code>{html.escape(net)}</code> job</span>'

    def _observe(self) -> None:
        handlers = {
            "cluster": (self.machines, self.shape, self.bandwidth, self.racks),
            "jobs": (self.profiles, self.n_jobs, self.seed, self.arch, self.demands),
            "edit": (self.device, self.compute_scale, self.param_scale, self.comm_ratio),
            "model": (self.mode, self.batch, self.method),
        }
        for group, controls in handlers.items():
            for c in controls:
                c.observe(lambda change, g=group: self._on_change(g), names="value")
        self.focus.observe(lambda change: self._on_focus(), names="value")
        self.cpu.observe(lambda change: self._on_levels(), names="value")
        self.mem.observe(lambda change: self._on_levels(), names="value")
        self.exact.observe(lambda change: self._on_exact(), names="value")
        self.large.observe(lambda change: self._on_large(), names="value")

    def _read_settings(self, group: str) -> ExplorerSettings:
        s = self.settings
        if group == "cluster":
            return s.replace(
                machines=self.machines.value,
                shape=self.shape.value,
                bandwidth_gbps=float(self.bandwidth.value),
                racks=min(self.racks.value, self.machines.value),
            )
        if group == "jobs":
            profiles = (
                tuple(self.profiles.value) or s.profiles
            )  # an empty selection keeps the old mix
            n = self.n_jobs.value
            return s.replace(
                profiles=profiles,
                n_jobs=n,
                seed=int(self.seed.value),
                focus=min(s.focus, n - 1),
                arch=self.arch.value,
                demands=self.demands.value,
            )
        if group == "edit":
            return s.with_edit(
                s.network_of(s.focus),
                device=self.device.value,
                compute=float(self.compute_scale.value),
                params=float(self.param_scale.value),
                comm_ratio=float(self.comm_ratio.value),
            )
        return s.replace(mode=self.mode.value, batch=self.batch.value, method=self.method.value)

    def _on_change(self, group: str) -> None:
        if self._syncing:
            return
        try:
            new = self._read_settings(group)
        except SmdlabError as exc:
            self._show_error(str(exc))
            return
        self.settings = new
        self._untick_large()
        if group == "jobs":
            self._sync_focus_controls()
        self.refresh()

    def _on_large(self) -> None:
        if self._syncing:
            return
        s = self.settings
        if self.large.value:
            self._before_large = (s.machines, s.n_jobs)
            machines, n_jobs = LARGE_MACHINES, LARGE_JOBS
        else:
            machines, n_jobs = self._before_large
        self.settings = s.replace(machines=machines, n_jobs=n_jobs, focus=min(s.focus, n_jobs - 1))
        self._syncing = True
        try:
            for slider, value, floor in ((self.machines, machines, 32), (self.n_jobs, n_jobs, 24)):
                if value > slider.max:
                    slider.max = value
                slider.value = value
                slider.max = max(floor, value)
        finally:
            self._syncing = False
        self._sync_focus_controls()
        self.refresh()

    def _untick_large(self) -> None:
        """A machines or jobs change away from the large instance unticks its switch (no refresh)."""
        s = self.settings
        if self.large.value and (s.machines, s.n_jobs) != (LARGE_MACHINES, LARGE_JOBS):
            self._syncing = True
            try:
                self.large.value = False
            finally:
                self._syncing = False

    def _on_focus(self) -> None:
        if self._syncing:
            return
        self.settings = self.settings.replace(focus=int(self.focus.value))
        self._sync_edit_controls()
        self.refresh(timeline_only=True)

    def _on_levels(self) -> None:
        if self._syncing:
            return
        self.refresh(timeline_only=True)

    def _levels(self, job: Job) -> tuple[Job, float | None, float | None]:
        """The focused job with its network's input pipeline, and the CPU/memory of the sliders."""
        if job.pipeline is None:
            pipe = bundled_pipeline(job.profile)
            job = job if pipe is None else job.replace(pipeline=pipe)
        cpu = float(self.cpu.value) or None
        mem = float(self.mem.value) or None
        return job, cpu, mem

    def _on_exact(self) -> None:
        with self._lock:
            self._queue_exact()

    def _sync_focus_controls(self) -> None:
        self._syncing = True
        try:
            self.focus.options = self._focus_options(self.settings)
            self.focus.value = self.settings.focus
            if tuple(self.profiles.value) != self.settings.profiles:
                self.profiles.value = self.settings.profiles
        finally:
            self._syncing = False
        self._sync_edit_controls()

    def _sync_edit_controls(self) -> None:
        edit = self.settings.edit_for(self.settings.network_of(self.settings.focus))
        self._syncing = True
        try:
            self.device.value = edit.device
            self.compute_scale.value = edit.compute
            self.param_scale.value = edit.params
            self.comm_ratio.value = edit.comm_ratio
        finally:
            self._syncing = False
        self._update_edit_note()
