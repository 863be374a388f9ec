"""``smdlab reproduce``: run every experiment, write each figure as PNG and SVG plus the CSV of its data.

The output folder is guarded like every smdlab output (``smdlab.sim.output``): files are written
atomically and recorded with their SHA-256 in ``.smdlab-manifest.json``; a file smdlab did not
write, or one changed since, is never overwritten (``SmdlabError``; ``force`` overrides) and
nothing is ever deleted. All images are exported by kaleido through one Chromium kept open for
the whole run. CSV files hold no timings and are written with a fixed float format, so two runs
of the same configuration write byte-identical CSVs.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import io
import json
import os
import shutil
import sys
import time
import warnings
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from smdlab.errors import InvalidInput, SmdlabError, check_int
from smdlab.experiments.config import ExperimentConfig, get_config

FORMATS = ("png", "svg", "pdf", "csv")
IMAGE_FORMATS = ("png", "svg", "pdf")
DEFAULT_FORMATS = ("png", "svg", "csv")
# 6 significant digits: exact enough to re-plot and to compare, and coarse enough that the
# last-bit differences of another machine's floating point (BLAS, SIMD paths) rarely reach a
# printed digit. No fixed number of digits can exclude it: a value that lies on a rounding
# boundary prints either way (docs/reliability.md, section 5).
CSV_FLOAT_FORMAT = "%.6g"
# Seconds before a render is tried again when kaleido's page was not ready (ImageExporter.render).
KALEIDO_RETRY_S = 0.5


@dataclass(frozen=True)
class FigureSpec:
    """One figure of the reproduction: how its data is computed and how it is drawn.

    name: file stem of its PNG/SVG/CSV.
    title: one-line description (EXPERIMENTS.md and ``--list``).
    compute: (configuration, worker processes) -> tidy DataFrame (the CSV).
    draw: DataFrame -> plotly figure.
    """

    name: str
    title: str
    compute: Callable[[ExperimentConfig, int], pd.DataFrame]
    draw: Callable[[pd.DataFrame], object]


def _jct(sweep: str) -> Callable[[ExperimentConfig, int], pd.DataFrame]:
    def compute(cfg: ExperimentConfig, workers: int) -> pd.DataFrame:
        from smdlab.experiments.jct import jct_sweep

        return jct_sweep(sweep, cfg, workers=workers)

    return compute


def _draw_jct(sweep: str) -> Callable[[pd.DataFrame], object]:
    def draw(df: pd.DataFrame):
        from smdlab.experiments.jct import SWEEPS
        from smdlab.viz.experiments import jct_sweep_figure

        # Axis settings from the sweep, not the frame's attrs: a frame read back from its CSV draws the same.
        spec = SWEEPS[sweep]
        return jct_sweep_figure(
            df, x=spec.column, x_title=spec.axis_title, log_x=spec.log_x, log_y=spec.log_y
        )

    return draw


def _gap(cfg: ExperimentConfig, workers: int) -> pd.DataFrame:
    from smdlab.experiments.gap import optimality_gap

    return optimality_gap(cfg, workers=workers)


def _draw_gap(df: pd.DataFrame):
    from smdlab.viz.experiments import gap_figure

    return gap_figure(df)


def _multiresource(name: str) -> Callable[[ExperimentConfig, int], pd.DataFrame]:
    def compute(cfg: ExperimentConfig, workers: int) -> pd.DataFrame:
        from smdlab.experiments import multiresource

        return getattr(multiresource, name)(cfg, workers=workers)

    return compute


def _draw_multiresource(x: str, x_title: str) -> Callable[[pd.DataFrame], object]:
    def draw(df: pd.DataFrame):
        from smdlab.viz.experiments import jct_sweep_figure

        return jct_sweep_figure(df, x=x, x_title=x_title, log_x=False, log_y=False)

    return draw


def _validation(cfg: ExperimentConfig, workers: int) -> pd.DataFrame:
    from smdlab.experiments.validation import model_validation

    return model_validation(cfg)


def _draw_validation(df: pd.DataFrame):
    from smdlab.viz.experiments import validation_figure

    return validation_figure(df)


def _epoch_validation(cfg: ExperimentConfig, workers: int) -> pd.DataFrame:
    from smdlab.experiments.allreduce import epoch_validation

    return epoch_validation(cfg)


def _draw_epoch_validation(df: pd.DataFrame):
    from smdlab.viz.allreduce import epoch_validation_figure

    return epoch_validation_figure(df)


def _makespan(cfg: ExperimentConfig, workers: int) -> pd.DataFrame:
    from smdlab.experiments.allreduce import makespan_vs_nodes

    return makespan_vs_nodes(cfg, workers)


def _draw_makespan(df: pd.DataFrame):
    from smdlab.viz.allreduce import makespan_figure

    return makespan_figure(df)


def _philly(cfg: ExperimentConfig, workers: int) -> pd.DataFrame:
    from smdlab.experiments.philly import philly_window

    return philly_window(cfg, workers=workers)


def _draw_philly(df: pd.DataFrame):
    from smdlab.viz.experiments import philly_window_figure

    return philly_window_figure(df)


def _heterogeneity(cfg: ExperimentConfig, workers: int) -> pd.DataFrame:
    from smdlab.experiments.heterogeneity import heterogeneity_gain

    return heterogeneity_gain(cfg, workers)


def _draw_heterogeneity(df: pd.DataFrame):
    from smdlab.viz.heterogeneity import heterogeneity_figure

    return heterogeneity_figure(df)


def _consolidation(cfg: ExperimentConfig, workers: int) -> pd.DataFrame:
    from smdlab.experiments.consolidation import consolidation_validation

    return consolidation_validation(cfg)


def _draw_consolidation(df: pd.DataFrame):
    from smdlab.viz.heterogeneity import consolidation_validation_figure

    return consolidation_validation_figure(df)


def _learned(cfg: ExperimentConfig, workers: int) -> pd.DataFrame:
    from smdlab.experiments.learned import learned_vs_heuristics

    return learned_vs_heuristics(cfg, workers=workers)


def _draw_learned(df: pd.DataFrame):
    from smdlab.viz.learned import learned_vs_heuristics_figure

    return learned_vs_heuristics_figure(df)


def _curves(cfg: ExperimentConfig, workers: int) -> pd.DataFrame:
    from smdlab.experiments.learned import learning_curves

    return learning_curves(cfg, workers=workers)


def _draw_curves(df: pd.DataFrame):
    from smdlab.viz.learned import learning_curves_figure

    return learning_curves_figure(df)


def _deeprm(cfg: ExperimentConfig, workers: int) -> pd.DataFrame:
    from smdlab.experiments.deeprm import deeprm_slowdown_vs_load

    return deeprm_slowdown_vs_load(cfg, workers=workers)


def _draw_deeprm(df: pd.DataFrame):
    from smdlab.viz.deeprm import deeprm_slowdown_figure

    return deeprm_slowdown_figure(df)


def _oversubscription(cfg: ExperimentConfig, workers: int) -> pd.DataFrame:
    from smdlab.experiments.oversubscription import jct_vs_oversubscription

    return jct_vs_oversubscription(cfg, workers)


def _draw_oversubscription(df: pd.DataFrame):
    from smdlab.viz.oversubscription import oversubscription_figure

    return oversubscription_figure(df)


def _contention(cfg: ExperimentConfig, workers: int) -> pd.DataFrame:
    from smdlab.experiments.contention import jct_vs_contention

    return jct_vs_contention(cfg, workers)


def _draw_contention(df: pd.DataFrame):
    from smdlab.viz.contention import contention_figure

    return contention_figure(df)


def _ablation(cfg: ExperimentConfig, workers: int) -> pd.DataFrame:
    from smdlab.experiments.ablation import multiresource_ablation

    return multiresource_ablation(cfg, workers=workers)


def _draw_ablation(df: pd.DataFrame):
    from smdlab.viz.ablation import ablation_figure

    return ablation_figure(df)


def _sharing_validation(cfg: ExperimentConfig, workers: int) -> pd.DataFrame:
    from smdlab.experiments.sharing import sharing_validation

    return sharing_validation(cfg)


def _draw_sharing_validation(df: pd.DataFrame):
    from smdlab.viz.sharing import sharing_validation_figure

    return sharing_validation_figure(df)


def _sharing_degree(cfg: ExperimentConfig, workers: int) -> pd.DataFrame:
    from smdlab.experiments.sharing import jct_vs_sharing_degree

    return jct_vs_sharing_degree(cfg, workers=workers)


def _draw_sharing_degree(df: pd.DataFrame):
    from smdlab.viz.sharing import sharing_degree_figure

    return sharing_degree_figure(df)


def _gavel_sweep(cfg: ExperimentConfig, workers: int) -> pd.DataFrame:
    from smdlab.experiments.gavel_sweep import gavel_rate_sweep

    return gavel_rate_sweep(cfg, workers=workers)


def _interruption(cfg: ExperimentConfig, workers: int) -> pd.DataFrame:
    from smdlab.experiments.batch import interruption_vs_load

    return interruption_vs_load(cfg, workers, progress=_log)


def _draw_interruption(df: pd.DataFrame):
    from smdlab.viz.batch import interruption_figure

    return interruption_figure(df)


def _draw_gavel_sweep(df: pd.DataFrame):
    from smdlab.viz.gavel_sweep import gavel_rate_sweep_figure

    return gavel_rate_sweep_figure(df)


def _slo(cfg: ExperimentConfig, workers: int) -> pd.DataFrame:
    from smdlab.experiments.deadlines import slo_vs_load

    return slo_vs_load(cfg, workers=workers)


def _draw_slo(df: pd.DataFrame):
    from smdlab.viz.deadlines import slo_vs_load_figure

    return slo_vs_load_figure(df)


def _storage(cfg: ExperimentConfig, workers: int) -> pd.DataFrame:
    from smdlab.experiments.storage import io_cost_vs_cache

    return io_cost_vs_cache(cfg)


def _draw_storage(df: pd.DataFrame):
    from smdlab.viz.storage import io_cost_vs_cache_figure

    return io_cost_vs_cache_figure(df)


FIGURES: dict[str, FigureSpec] = {
    spec.name: spec
    for spec in (
        FigureSpec(
            "jct_vs_jobs",
            "mean JCT of every policy vs the number of jobs in the batch",
            _jct("jobs"),
            _draw_jct("jobs"),
        ),
        FigureSpec(
            "jct_vs_cluster",
            "mean JCT of every policy vs the number of servers",
            _jct("machines"),
            _draw_jct("machines"),
        ),
        FigureSpec(
            "jct_vs_bandwidth",
            "mean JCT of every policy vs the NIC bandwidth per task",
            _jct("bandwidth"),
            _draw_jct("bandwidth"),
        ),
        FigureSpec(
            "jct_vs_comm_ratio",
            "mean JCT of every policy vs the per-layer communication/computation ratio",
            _jct("comm_scale"),
            _draw_jct("comm_scale"),
        ),
        FigureSpec(
            "jct_vs_cpu_per_gpu",
            "mean JCT of GPU-proportional, Synergy-TUNE, Synergy-OPT, SMD (with and without levels) and the levels MILP vs CPU cores per GPU",
            _multiresource("jct_vs_cpu_per_gpu"),
            _draw_multiresource("cpu_per_gpu", "CPU cores per GPU"),
        ),
        FigureSpec(
            "muri_jct_vs_load",
            "mean JCT of Muri-S, Muri-L, SRTF, Tiresias and SMD vs offered load",
            _multiresource("muri_jct_vs_load"),
            _draw_multiresource("load", "offered load"),
        ),
        FigureSpec(
            "multiresource_ablation",
            "Synergy's and Muri's gain ratios from the authors' settings to smdlab's, one change at a time",
            _ablation,
            _draw_ablation,
        ),
        FigureSpec(
            "philly_window",
            "mean and p95 JCT, JCT CDF and GPU utilisation of FIFO, SJF, SRTF and Tiresias on the default Philly window",
            _philly,
            _draw_philly,
        ),
        FigureSpec(
            "optimality_gap",
            "gap of SMD to the exact MILP optimum and to the LP bound vs instance size",
            _gap,
            _draw_gap,
        ),
        FigureSpec(
            "model_validation",
            "layered model vs measured PS training speeds (held-out points)",
            _validation,
            _draw_validation,
        ),
        FigureSpec(
            "allreduce_validation",
            "all-reduce epoch models vs OMRU's measured V100 epoch times (held-out GPU counts)",
            _epoch_validation,
            _draw_epoch_validation,
        ),
        FigureSpec(
            "makespan_vs_nodes",
            "makespan and GPU utilisation of OMRU and its baselines vs machines (assumed epochs)",
            _makespan,
            _draw_makespan,
        ),
        FigureSpec(
            "heterogeneity_gain",
            "mean JCT of Gavel max-min and max-sum, heterogeneity-aware vs agnostic, on K80/P100/V100",
            _heterogeneity,
            _draw_heterogeneity,
        ),
        FigureSpec(
            "consolidation_validation",
            "layered model vs Gavel's measured spread/consolidated (2-8 GPUs) and GPU-type throughput ratios",
            _consolidation,
            _draw_consolidation,
        ),
        FigureSpec(
            "learned_vs_heuristics",
            "mean JCT of the learned schedulers (DL2, DeepRM-MM, SCHED², those registered) vs DRF, Optimus, Tiresias and SMD on held-out seeds and a Philly window",
            _learned,
            _draw_learned,
        ),
        FigureSpec(
            "learning_curves",
            "learning curves of the shipped learned schedulers (their training logs in data/)",
            _curves,
            _draw_curves,
        ),
        FigureSpec(
            "deeprm_slowdown_vs_load",
            "average job slowdown of DeepRM, SJF, Packer, Tetris* and random vs load in DeepRM's own environment (held-out jobsets)",
            _deeprm,
            _draw_deeprm,
        ),
        FigureSpec(
            "jct_vs_oversubscription",
            "mean JCT and cross-rack traffic of SMD, Liquid, FIFO and Tiresias as the rack uplinks shrink",
            _oversubscription,
            _draw_oversubscription,
        ),
        FigureSpec(
            "jct_vs_contention",
            "mean JCT and GPU utilisation of the fair, SCF, LCoF, Crux and JCS-inspired communication policies on a shared fabric as the rack uplinks shrink",
            _contention,
            _draw_contention,
        ),
        FigureSpec(
            "sharing_validation",
            "co-location model vs Gavel's measured co-located throughput (held-out job-type pairs)",
            _sharing_validation,
            _draw_sharing_validation,
        ),
        FigureSpec(
            "jct_vs_sharing_degree",
            "mean JCT, makespan and GPU utilisation of no sharing, Gandiva, Horus, SJF-BSBF, SJF-FFS and Tiresias vs jobs per GPU",
            _sharing_degree,
            _draw_sharing_degree,
        ),
        FigureSpec(
            "gavel_rate_sweep",
            "Gavel's heterogeneity-aware/agnostic average-JCT ratio vs arrival rate on Gavel traces: smdlab's Gavel mode beside Gavel's simulator (reference data) and the paper's 3.5x",
            _gavel_sweep,
            _draw_gavel_sweep,
        ),
        FigureSpec(
            "slo_vs_load",
            "hard and value-weighted deadline miss rates and best-effort mean JCT of FIFO, EDF, LSF, Chronus, UniSched-inspired and SMD with deadlines vs offered load on Chronus' Philly MIX2 trace",
            _slo,
            _draw_slo,
        ),
        FigureSpec(
            "io_cost_vs_cache",
            "IO cost, welfare and mean JCT of CBA, AutoCBA, SiloD, SMD with and without storage rows and FIFO with no cache, LRU and GPU-proportional caches vs cluster cache size",
            _storage,
            _draw_storage,
        ),
        FigureSpec(
            "interruption_vs_load",
            "chains on a Slurm-like queue (EASY backfilling, 12 h limit, Philly window): interruption, zero-interruption share and overlap of the reactive, fixed-lead, oracle, learned and deep Q-network provisioners vs load",
            _interruption,
            _draw_interruption,
        ),
    )
}


def list_figures() -> list[str]:
    """Names of the figures ``reproduce`` makes, in order."""
    return list(FIGURES)


def _names(only: Iterable[str] | None) -> list[str]:
    if only is None:
        return list(FIGURES)
    names = list(dict.fromkeys(only))
    unknown = [n for n in names if n not in FIGURES]
    if unknown or not names:
        raise InvalidInput(
            f"figure must be among {', '.join(FIGURES)}; got {unknown[0] if unknown else 'none'!r}"
        )
    return names


def _formats(formats: Iterable[str]) -> tuple[str, ...]:
    fmts = tuple(dict.fromkeys(f.lower().lstrip(".") for f in formats))
    bad = [f for f in fmts if f not in FORMATS]
    if bad or not fmts:
        raise InvalidInput(
            f"formats must be among {', '.join(FORMATS)}; got {bad[0] if bad else 'none'!r}"
        )
    return fmts


def run_experiment(
    name: str, config: str | ExperimentConfig = "quick", *, workers: int = 1
) -> pd.DataFrame:
    """The tidy DataFrame behind figure ``name`` (what its CSV holds)."""
    spec = FIGURES[_names([name])[0]]
    df = spec.compute(get_config(config), check_int("workers", workers, 1, 256))
    df.attrs.setdefault("figure", name)
    return df


def make_figure(name: str, df: pd.DataFrame):
    """The plotly figure ``name`` drawn from its DataFrame (as ``reproduce`` exports it)."""
    return FIGURES[_names([name])[0]].draw(df)


def figure(name: str, config: str | ExperimentConfig = "quick", *, workers: int = 1):
    """Compute and draw figure ``name``: returns (figure, DataFrame)."""
    df = run_experiment(name, config, workers=workers)
    return make_figure(name, df), df


def csv_bytes(df: pd.DataFrame) -> bytes:
    """The CSV of ``df`` as written by ``reproduce``: no index, fixed float format, ``\\n`` line ends."""
    clean = df.copy()
    for col in clean.columns:
        if pd.api.types.is_float_dtype(clean[col]):
            # Round-off around zero (e.g. -6e-17 for a zero gap) would print as noise: write 0.
            clean[col] = clean[col].mask(clean[col].abs() < 1e-12, 0.0)
    buf = io.StringIO()
    clean.to_csv(buf, index=False, float_format=CSV_FLOAT_FORMAT, lineterminator="\n")
    return buf.getvalue().encode("utf-8")


def find_chromium() -> str | None:
    """The Chromium kaleido will use ($BROWSER_PATH, or one found on PATH), or None."""
    env = os.environ.get("BROWSER_PATH")
    if env:
        return env if os.path.isfile(env) and os.access(env, os.X_OK) else None
    try:
        from choreographer.browsers.chromium import Chromium

        found = Chromium.find_browser(skip_local=False)
        if found:
            return str(found)
    except Exception:
        pass
    for exe in ("chromium", "chromium-browser", "google-chrome", "chrome"):
        path = shutil.which(exe)
        if path:
            return path
    return None


class ImageExporter:
    """Static export through one kaleido browser, kept open between ``start`` and ``stop`` (a context manager)."""

    def __init__(self, scale: float = 1.0) -> None:
        self.scale = scale
        self._started_here = False

    def __enter__(self) -> ImageExporter:
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def start(self) -> None:
        """Open the browser (unless a kaleido server is already running, which is then reused)."""
        if find_chromium() is None:
            raise SmdlabError(
                "static figure export needs a Chromium and none was found: install Debian's 'chromium' "
                "(make system-deps) or set BROWSER_PATH, or write only CSV files (--formats csv)"
            )
        import kaleido

        server = getattr(kaleido, "_global_server", None)
        running = bool(server is not None and server.is_running())
        if not running:
            kaleido.start_sync_server(silence_warnings=True)
            self._started_here = True

    def stop(self) -> None:
        """Close the browser if ``start`` opened it."""
        if self._started_here:
            import kaleido

            kaleido.stop_sync_server(silence_warnings=True)
            self._started_here = False

    def render(self, fig, fmt: str) -> bytes:
        """``fig`` as ``fmt`` (png, svg or pdf) bytes."""
        import plotly.io as pio

        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="The kopts argument is ignored")
            scale = self.scale if fmt == "png" else None
            try:
                return pio.to_image(fig, format=fmt, scale=scale)
            except RuntimeError as e:
                # kaleido 1.x can run a render before its page's script has loaded (seen on a
                # loaded machine right after the server started); the page is ready later
                if "kaleido_scopes is not defined" not in str(e):
                    raise
            time.sleep(KALEIDO_RETRY_S)
            return pio.to_image(fig, format=fmt, scale=scale)


@contextlib.contextmanager
def each_warning_once() -> Iterator[None]:
    """Within it, each distinct warning (category and text) is shown once, however many of a
    figure's tasks issue it."""
    seen: set[tuple[type, str]] = set()
    with warnings.catch_warnings():
        show = warnings.showwarning

        def once(message, category, filename, lineno, file=None, line=None) -> None:
            key = (category, str(message))
            if key not in seen:
                seen.add(key)
                show(message, category, filename, lineno, file, line)

        warnings.showwarning = once
        yield


def _log(msg: str) -> None:
    print(f"smdlab reproduce: {msg}", file=sys.stderr, flush=True)


def check_outputs(out: str | os.PathLike, names: Sequence[str], *, force: bool = False) -> None:
    """Raise ``SmdlabError`` listing every file in ``names`` that may not be written into ``out``."""
    from smdlab.sim.output import check_replaceable

    folder = Path(out)
    if folder.exists() and not folder.is_dir():
        raise SmdlabError(f"output folder {str(folder)!r} exists and is not a folder")
    problems = []
    for name in names:
        path = folder / name
        if path.exists() and not path.is_file():
            problems.append(f"{name} (not a regular file)")
            continue
        try:
            check_replaceable(path, force=force)
        except SmdlabError:
            problems.append(name)
    if problems:
        raise SmdlabError(
            f"refusing to overwrite {len(problems)} file(s) in {str(folder)!r} that smdlab did not write "
            f"(or that changed since): {', '.join(problems)}; move them away, choose another --out, or use --force"
        )


INPUTS = ".smdlab-inputs.json"


def _tree_hash(root: Path, pattern: str) -> str:
    """SHA-256 over the names and contents of the files under ``root`` matching ``pattern``."""
    h = hashlib.sha256()
    for path in sorted(
        p for p in root.rglob(pattern) if p.is_file() and "__pycache__" not in p.parts
    ):
        h.update(str(path.relative_to(root)).encode("utf-8") + b"\0")
        h.update(hashlib.sha256(path.read_bytes()).digest())
    return h.hexdigest()


def input_trees() -> dict[str, str]:
    """smdlab's version and the hashes of its source files and of the data folder."""
    from smdlab.paths import data_dir, package_version

    return {
        "smdlab": package_version(),
        "source": _tree_hash(Path(__file__).resolve().parents[1], "*.py"),
        "data": _tree_hash(data_dir(), "*"),
    }


def inputs_hash(name: str, cfg: ExperimentConfig, trees: dict[str, str] | None = None) -> str:
    """What figure ``name``'s data depends on: its configuration and ``input_trees()``."""
    body = {"figure": name, "config": dataclasses.asdict(cfg), **(trees or input_trees())}
    return hashlib.sha256(json.dumps(body, sort_keys=True, default=str).encode("utf-8")).hexdigest()


def _up_to_date(out: Path, name: str, digest: str, record: dict, fmts: Sequence[str]) -> list[str]:
    """The files of figure ``name`` to (re)write: none when its inputs and files are unchanged.

    The data counts as current when the record holds the same inputs hash and its CSV (or, without
    csv among the formats, every requested file) is still the one smdlab wrote.
    """
    from smdlab.sim.output import read_manifest, written_by_smdlab

    wanted = [f"{name}.{f}" for f in fmts]
    if record.get(name) != digest:
        return wanted
    manifest = read_manifest(out)

    def current(file: str) -> bool:
        return written_by_smdlab(out / file, manifest)

    data = f"{name}.csv"
    if not current(data):
        return wanted
    return [f for f in wanted if not current(f)]


def _read_record(folder: Path) -> dict[str, str]:
    """Figure name -> inputs hash of the CSV smdlab last wrote there (empty if none or unreadable)."""
    try:
        data = json.loads((folder / INPUTS).read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError, UnicodeDecodeError):
        return {}
    return {k: v for k, v in data.items() if isinstance(v, str)} if isinstance(data, dict) else {}


def _record_text(record: dict[str, str]) -> str:
    return json.dumps(record, indent=1, sort_keys=True) + "\n"


def reproduce(
    out: str | os.PathLike = "figures",
    config: str | ExperimentConfig = "full",
    *,
    only: Iterable[str] | None = None,
    formats: Iterable[str] = DEFAULT_FORMATS,
    force: bool = False,
    workers: int | None = None,
    log: Callable[[str], None] | None = _log,
    execution: str | None = None,
    demands: str | None = None,
    recompute: bool = False,
) -> list[Path]:
    """Run the experiments of ``config`` and write their figures and CSVs into ``out``; returns the files written.

    execution: force one execution mode on every policy (None: the configuration's, by default
    each policy's natural mode). demands: ``per_network`` or ``uniform`` (None:
    the configuration's, by default ``per_network``).
    A figure whose CSV smdlab wrote from the same inputs (``inputs_hash``, recorded in
    ``.smdlab-inputs.json``) is not computed again, unless ``recompute``; its missing images are
    drawn from that CSV. An interrupted run therefore continues where it stopped.
    """
    from smdlab.sim.output import write_files

    cfg = get_config(config)
    if execution is not None:
        cfg = cfg.replace(execution=execution)
    if demands is not None:
        cfg = cfg.replace(demands=demands)
    names = _names(only)
    fmts = _formats(formats)
    if workers is None:
        workers = 1 if cfg.name == "tiny" else min(2, os.cpu_count() or 1)
    workers = check_int("workers", workers, 1, 256)
    say = log or (lambda _msg: None)
    files = [f"{n}.{f}" for n in names for f in fmts] + ([INPUTS] if "csv" in fmts else [])
    check_outputs(out, files, force=force)  # before any work: a refusal costs nothing
    images = [f for f in fmts if f in IMAGE_FORMATS]
    exporter = ImageExporter()
    if images and find_chromium() is None:
        exporter.start()  # raises the explanatory SmdlabError now, not after the experiments
    t_all = time.perf_counter()
    written: list[Path] = []
    frames: dict[str, pd.DataFrame] = {}
    todo: dict[str, list[str]] = {}
    folder = Path(out)
    record = _read_record(folder)
    trees = input_trees()  # hashed once per run
    computed: list[float] = []
    digests = {name: inputs_hash(name, cfg, trees) for name in names}
    for k, name in enumerate(names, start=1):
        digest = digests[name]
        todo[name] = (
            [f"{name}.{f}" for f in fmts]
            if recompute
            else _up_to_date(folder, name, digest, record, fmts)
        )
        if not todo[name]:
            say(f"[{k}/{len(names)}] {name}: up to date (same inputs; --recompute to run it)")
            continue
        if f"{name}.csv" not in todo[name]:
            frames[name] = pd.read_csv(folder / f"{name}.csv")  # current data, images missing
            say(f"[{k}/{len(names)}] {name}: data up to date; drawing its missing images")
            continue
        t0 = time.perf_counter()
        with each_warning_once():
            df = run_experiment(name, cfg, workers=workers)
        frames[name] = df
        if "csv" in fmts:
            written += write_files(out, {f"{name}.csv": csv_bytes(df)}, force=force)
            record[name] = digest  # after the CSV: a record never vouches for a file not written
            write_files(out, {INPUTS: _record_text(record)}, force=force)
        computed.append(time.perf_counter() - t0)
        left = sum(1 for n in names[k:] if recompute or record.get(n) != digests[n])
        eta = f"; about {left * sum(computed) / len(computed):.0f} s left" if left else ""
        say(f"[{k}/{len(names)}] {name}: {len(df)} rows in {computed[-1]:.1f} s{eta}")
    draw = [n for n in names if any(not f.endswith(".csv") for f in todo[n])]
    if images and draw:
        t0 = time.perf_counter()
        count = 0
        with exporter:
            for name in draw:
                fig = make_figure(name, frames[name])
                blobs = {
                    f"{name}.{fmt}": exporter.render(fig, fmt)
                    for fmt in images
                    if f"{name}.{fmt}" in todo[name]
                }
                written += write_files(out, blobs, force=force)
                count += len(blobs)
        say(f"exported {count} image(s) in {time.perf_counter() - t0:.1f} s")

    say(
        f"wrote {len(written)} file(s) to {out} in {time.perf_counter() - t_all:.1f} s (config {cfg.name})"
    )
    return written
