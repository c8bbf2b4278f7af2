"""The main job: execute the analysis notebooks once, export their figures, build the site.

Order of work (``trainperf report``):

0. everything that can be refused is refused before anything runs: the cluster config
   (:mod:`trainperf.config`; the demo's ``configs/sakuraone.yaml`` by default), every ``#|`` cell-option block
   of the notebooks, chapters and talk must be YAML (Quarto parses them so), and every notebook's
   parameters are resolved in one place (:func:`plan_report`: notebook defaults, :data:`NOTEBOOKS`,
   what the job provides, the user's overrides) with every input path checked for existence;
1. ``<out>/comparison.csv``: the config's cluster against the reference's logs
   (:func:`trainperf.compare.cluster_comparison`); then every notebook in :data:`NOTEBOOKS` whose
   input the config gives is executed with papermill into ``<out>/notebooks/`` (each
   written to a temporary name and renamed, so a killed run leaves no half-written notebook); the
   notebooks export their charts to ``figures/`` while they run, so nothing is executed twice;
2. with ``quarto`` on PATH, ``quarto render`` builds the book from the chapters, which embed the
   executed notebooks' outputs (Quarto does not execute them again), in a staging copy of the
   project, ``<out>/quarto/`` (:func:`stage_book`: links to this run's outputs and figures, the
   cluster's name in the title), for any ``--out``; the book is ``<out>/quarto/_book/`` (and
   ``_book/`` for the default ``--out _output``);
3. without Quarto, the preview site is built in ``<out>/site/`` by pandoc from the same chapters and
   executed notebooks (numbered chapters, cross-references, the notebooks as an appendix), and one
   line says so and how to install Quarto.

Each executed notebook's full-detail tables (the ``text/csv`` outputs of
:func:`trainperf.report.display.table`) are written next to it, ``<out>/notebooks/<name>/<label>.csv``.

Executing a notebook is :mod:`trainperf.report.notebooks`, the numbers for the prose
:mod:`trainperf.report.values`, the preview site :mod:`trainperf.report.preview`.
"""

from __future__ import annotations

import ast
import hashlib
import json
import os
import time
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

import polars as pl

from trainperf import __version__, project_root
from trainperf.atomic import write_text_atomic
from trainperf.compare import round_warnings
from trainperf.config import (
    DEMO_CONFIG,
    ClusterConfig,
    config_values,
    load_config,
    report_overrides,
)
from trainperf.errors import ConfigError
from trainperf.report import batch
from trainperf.report.appendix import write_appendix_notebooks
from trainperf.report.book_build import (
    build_book,
    figure_setup,
    quarto_available,
    site_figures,
)
from trainperf.report.book_words import (
    DEFAULT_TELEMETRY_LOG,
    benchmarks_studied,
    bundled_measurements_absent,
    input_phrases,
    logs_flags,
    telemetry_log_phrase,
)
from trainperf.report.compare_cli import config_comparison
from trainperf.report.demo import demo_overrides, is_demo
from trainperf.report.execution import ReportJob, rel_path, write_table_csvs
from trainperf.report.notebooks import (
    NotebookSpec,
    check_cell_options,
)
from trainperf.report.outdir import claim_out, record_files, unlink_owned
from trainperf.report.schedule import default_jobs
from trainperf.report.staging import stage_book  # noqa: F401  (public: trainperf.report.job.stage_book)
from trainperf.report.values import merge_values

__all__ = [
    "BATCH_GRIDS",
    "NOTEBOOKS",
    "NotebookSpec",
    "ReportPlan",
    "ReportSummary",
    "plan_report",
    "quarto_available",
    "run_report",
    "site_figures",
    "write_table_csvs",
]


NOTEBOOKS: list[NotebookSpec] = [
    NotebookSpec("mlperf_runs", "MLPerf Training runs and scores", {"mlperf_path": "data/mlperf"}),
    NotebookSpec(
        "eos_comparison",
        "Per-GPU comparison with the published MLPerf results",
        {
            "mlperf_path": "data/mlperf",
            "published_path": "data/reference/published_results.csv",
            "record_path": "data/reference/mlperf_record.csv",
            # filled in by run_report with the summary of the per-system batch (BATCH_GRIDS)
            "batch_summary_path": "",
            # filled in by run_report: <out>/comparison.csv, the config's cluster against the reference
            "comparison_path": "",
        },
    ),
    NotebookSpec("memory_model", "Memory model"),
    NotebookSpec(
        "telemetry",
        "GPU telemetry aligned with the MLPerf run",
        # scratch_dir is set by run_report to <out>/scratch/telemetry (the synthetic default data)
        {
            "mlperf_log": DEFAULT_TELEMETRY_LOG,
            "scratch_dir": "",
        },
    ),
    NotebookSpec(
        "telemetry_capture",
        "A real capture: MFU from model FLOPs against tensor activity",
        {
            "capture_dir": "data/telemetry/h200_1gpu_1.3b_20261129T1852Z",
            "ddp_capture_dir": "data/telemetry/h200_2gpu_1.3b_20261129T1852Z",
        },
    ),
    NotebookSpec(
        "energy",
        "Energy to train",
        {
            "power_runs_path": "data/reference/mlperf_power_runs.csv",
            "record_path": "data/reference/mlperf_record.csv",
            "capture_paths": [
                "data/telemetry/h100_1gpu_1.3b_20261207T1901Z",
                "data/telemetry/h200_1gpu_1.3b_20261129T1852Z",
                "data/telemetry/h200_2gpu_1.3b_20261129T1852Z",
            ],
            # filled in by run_report: <out>/comparison.csv, the evaluated cluster's times to train
            "comparison_path": "",
        },
    ),
    NotebookSpec(
        "trace",
        "Inside a step: a PyTorch profiler trace against the MLPerf log and DCGM",
        {"capture_dir": "data/traces/h200_1gpu_1.3b_20261201T0923Z"},
    ),
    NotebookSpec("slurm_jobs", "Slurm accounting: jobs, states, sizes and run times"),
    NotebookSpec("reliability", "Reliability: failures, MTTF and goodput"),
    NotebookSpec(
        "cluster",
        "The cluster: configuration and TOP500",
        {"systems_path": "data/reference/systems.csv", "top500_path": "data/reference/top500.csv"},
    ),
]


#: Batch grids the main job runs before the notebooks: (grid file, notebook parameter that receives the
#: summary path). The per-system MLPerf runs go through the batch path; the comparison notebook reads
#: the collected summary instead of recomputing.
BATCH_GRIDS: list[tuple[str, str]] = [("grids/mlperf_systems.yaml", "batch_summary_path")]

#: Parameters that name what a notebook *writes*; never checked for existence.
OUTPUT_PARAMETERS = frozenset({"figures_dir", "values_path", "scratch_dir", "results_path"})

#: A parameter whose name ends like this names an input file or folder (or a list of them, or a
#: URL for ``*_source``), checked for existence before the first notebook runs.
INPUT_PATH_SUFFIXES = ("_path", "_paths", "_log", "_dir", "_source")


def is_input_path_parameter(name: str) -> bool:
    """Whether a notebook parameter names an input path (see :data:`INPUT_PATH_SUFFIXES`)."""
    return name.endswith(INPUT_PATH_SUFFIXES) and name not in OUTPUT_PARAMETERS


@dataclass
class ReportPlan:
    """Everything a run will do, computed before anything runs (:func:`plan_report`).

    Attributes:
        notebooks: (spec, parameters passed to papermill) in run order.
        batches: (grid file, grid with its output folder set) to run first.
        produced: parameter values the run itself produces before the notebook reads them
            (batch summaries): ``{(notebook, parameter)}``.
        fingerprints: what the re-run check fingerprints instead of a produced file: a batch
            summary is rewritten on every run (a reused run's status reads ``skipped``, not
            ``success``), so its runs' result files stand for it.
    """

    notebooks: list[tuple[NotebookSpec, dict]]
    batches: list[tuple[str, object]] = field(default_factory=list)
    produced: set[tuple[str, str]] = field(default_factory=set)
    fingerprints: dict[str, str] = field(default_factory=dict)


def _declared(root: Path, spec: NotebookSpec) -> dict[str, dict]:
    # deferred: papermill costs 2-4 s at import (-X importtime); `trainperf compare` never needs it
    import papermill as pm  # noqa: PLC0415

    path = root / "notebooks" / f"{spec.name}.ipynb"
    if not path.is_file():
        raise ConfigError(f"notebooks/{spec.name}.ipynb: no such notebook")
    return pm.inspect_notebook(str(path))


def _default_value(info: dict):
    try:
        return ast.literal_eval(str(info.get("default", "")))
    except (ValueError, SyntaxError):
        return None


def _missing_paths(value, base: Path) -> list[str]:
    items = value if isinstance(value, list | tuple) else [value]
    missing = []
    for v in items:
        if (
            not isinstance(v, str | Path)
            or not str(v)
            or str(v).startswith(("http://", "https://"))
        ):
            continue
        p = Path(v)
        if not (p if p.is_absolute() else base / p).exists():
            missing.append(str(v))
    return missing


def plan_report(
    root: Path,
    out: Path,
    figures: Path,
    specs: list[NotebookSpec],
    overrides: dict[str, dict] | None = None,
    run_batches: bool = True,
    produced: dict[tuple[str, str], str] | None = None,
    reference_mlperf: str | Path | None = None,
    batch_cache: Path | None = None,
) -> ReportPlan:
    """Every notebook's parameters for one run, from one place, checked before anything runs.

    A notebook gets, in increasing precedence: its own defaults (the ``parameters`` cell), the
    main job's :data:`NOTEBOOKS` values (relative input paths taken from ``root``), what the job
    provides (``figures_dir``, ``values_path``, ``scratch_dir`` and batch summaries, to notebooks
    that declare them) and ``overrides`` (the user's own data: command line ``-p``, ``--params``).

    ``produced`` names values the job writes itself before the notebook runs
    (``{(notebook, parameter): path}``, e.g. ``<out>/comparison.csv``): set, never checked for
    existence. ``reference_mlperf``: the folder the MLPerf batch grids discover instead of their
    own ``discover.path`` (the config's reference logs; unchanged when it is that same folder).
    ``batch_cache``: run the batch grids into ``<batch_cache>/<grid>-<fingerprint>`` (shared by
    every ``--out``, :func:`_grid_fingerprint`) instead of ``<out>/batch/<grid>``.

    Raises:
        ConfigError: an override for a notebook not in the job, a parameter a notebook does not
            declare, or an input path that does not exist (the message names
            ``notebook.parameter`` and the path; a relative default is taken from ``notebooks/``).
    """
    overrides = overrides or {}
    unknown_nb = sorted(set(overrides) - {s.name for s in specs})
    if unknown_nb:
        raise ConfigError(
            f"no notebook {', '.join(unknown_nb)} in the main job; notebooks: {', '.join(s.name for s in specs)}"
        )
    declared = {s.name: _declared(root, s) for s in specs}
    for nb, kv in overrides.items():
        bad = sorted(set(kv) - set(declared[nb]))
        if bad:
            raise ConfigError(
                f"notebooks/{nb}.ipynb does not declare parameter(s) {', '.join(bad)}; "
                f"it declares: {', '.join(sorted(declared[nb]))}"
            )
    plan = ReportPlan([])
    batch_params: dict[str, str] = {}
    if run_batches:
        for grid_file, param in BATCH_GRIDS:
            if not any(param in declared[s.name] for s in specs):
                continue
            grid = replace(
                batch.load_grid(root / grid_file), output=out / "batch" / Path(grid_file).stem
            )
            if reference_mlperf:
                grid = _rediscover(grid, Path(reference_mlperf))
            if batch_cache is not None:
                grid = replace(
                    grid,
                    output=batch_cache / f"{Path(grid_file).stem}-{_grid_fingerprint(grid)}",
                )
            plan.batches.append((grid_file, grid))
            batch_params[param] = str(grid.output / "summary.parquet")
            plan.fingerprints[batch_params[param]] = str(grid.runs_dir)
    for spec in specs:
        decl = declared[spec.name]
        params = {k: _from_root(root, k, v) for k, v in spec.parameters.items()}
        for k, v in batch_params.items():
            if k in decl:
                params[k] = v
                plan.produced.add((spec.name, k))
        for (nb, k), v in (produced or {}).items():
            if nb == spec.name and k in decl:
                params[k] = v
                plan.produced.add((spec.name, k))
        provided = {
            "figures_dir": str(figures),
            "values_path": str(out / "values" / f"{spec.name}.json"),
            "scratch_dir": str(out / "scratch" / spec.name),
        }
        params.update({k: v for k, v in provided.items() if k in decl})
        for k, v in overrides.get(spec.name, {}).items():
            params[k] = v
            plan.produced.discard((spec.name, k))
        unknown = sorted(set(params) - set(decl))
        if unknown:
            raise ConfigError(
                f"notebooks/{spec.name}.ipynb does not declare parameter(s) {', '.join(unknown)}"
            )
        for k, info in decl.items():
            if not is_input_path_parameter(k) or (spec.name, k) in plan.produced:
                continue
            value = params[k] if k in params else _default_value(info)
            missing = _missing_paths(value, root / "notebooks")
            if missing:
                raise ConfigError(f"{spec.name}.{k}: no such file or folder: {missing[0]}")
        plan.notebooks.append((spec, params))
    return plan


def _from_root(root: Path, name: str, value):
    """A :data:`NOTEBOOKS` input path (or list of them) relative to the repository root, made absolute."""
    if not is_input_path_parameter(name) or not value:
        return value
    if isinstance(value, str):
        return str(root / value)
    if isinstance(value, list):
        return [str(root / v) if isinstance(v, str) and v else v for v in value]
    return value


def batch_cache_dir() -> Path:
    """Where the reference batch runs are kept across ``--out`` folders: ``$TRAINPERF_CACHE``,
    else ``$XDG_CACHE_HOME/trainperf``, else ``~/.cache/trainperf``; then ``batch/``."""

    base = os.environ.get("TRAINPERF_CACHE") or (
        Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "trainperf"
    )
    return Path(base) / "batch"


def _grid_fingerprint(grid) -> str:
    """16 hex digits of sha256 over what a batch grid's results depend on: the notebook's bytes,
    every run's parameters, each input file's path, size and modification time (the files under
    each run's path parameters) and the trainperf version. Same inputs, same folder: the runs are
    reused (the batch runner skips a run whose done-marker matches)."""

    h = hashlib.sha256(__version__.encode())
    h.update(Path(grid.notebook).read_bytes())
    for run in sorted(grid.runs, key=lambda r: r.slug):
        h.update(json.dumps(run.parameters, sort_keys=True, default=str).encode())
        for v in run.parameters.values():
            if not isinstance(v, str) or not v:
                continue
            p = Path(v) if Path(v).is_absolute() else Path(grid.base) / v
            if not p.exists():
                continue
            files = sorted(p.rglob("*")) if p.is_dir() else [p]
            for f in files:
                if f.is_file():
                    st = f.stat()
                    h.update(f"{f}:{st.st_size}:{st.st_mtime_ns}".encode())
    return h.hexdigest()[:16]


def _rediscover(grid, folder: Path):
    """``grid`` with its runs discovered under ``folder`` (MLPerf result folders), the other
    parameters kept; unchanged when ``folder`` is where the grid already looks."""

    param = "mlperf_path"
    current = {
        (grid.base / r.parameters[param]).resolve() for r in grid.runs if param in r.parameters
    }
    if not current:
        return grid
    found = batch.discover_mlperf(folder, parameter=param)
    if {Path(f[param]).resolve() for f in found} == current:
        return grid
    common = {k: v for k, v in grid.runs[0].parameters.items() if k != param}
    runs = []
    for f in found:
        params = {**common, param: str(Path(f[param]).resolve())}
        runs.append(
            batch.Run(name=f["name"], parameters=params, slug=batch.slugify_run(params, f["name"]))
        )
    return replace(grid, runs=runs)


def _option_documents(root: Path, specs: list[NotebookSpec]) -> list[Path]:
    docs = [root / "notebooks" / f"{s.name}.ipynb" for s in specs]
    docs += sorted(root.glob("*.qmd")) + sorted((root / "chapters").glob("*.qmd"))
    docs += sorted((root / "talk").glob("*.qmd"))
    return [d for d in docs if d.is_file()]


def _config(config, root: Path):
    """The cluster config to run with (see :func:`run_report`)."""

    if isinstance(config, ClusterConfig):
        return config
    if config is None:  # the demo's config, of this checkout (or of the installed one)
        config = root / DEMO_CONFIG
        if not config.is_file():
            config = project_root() / DEMO_CONFIG
    return load_config(config)


def _comparison_line(comparison: pl.DataFrame, cfg) -> str:
    """``2 rows (none scored: gpt3 at 32 nodes: no valid score: 3 of 3 runs failed or damaged)``;
    says why there are none (no MLPerf input given)."""
    if not comparison.height:
        if cfg.mlperf is None and cfg.published is None:
            return "0 rows (no MLPerf logs or published rows given: config keys `mlperf:`, `published:`)"
        return "0 rows (no result of the evaluated system in the logs or published rows given)"
    unscored = comparison.filter(pl.col("evaluated_min").is_null()).unique(
        ["benchmark", "n_gpus"], maintain_order=True
    )
    line = f"{comparison.height} row{'s' if comparison.height != 1 else ''}"
    if unscored.height:
        which = (
            "none"
            if unscored.height == comparison.unique(["benchmark", "n_gpus"]).height
            else f"{unscored.height}"
        )
        why = "; ".join(
            f"{r['benchmark']} at {r['n_gpus']} GPUs: {r['note'] or 'no valid score'}"
            for r in unscored.iter_rows(named=True)
        )
        line += f" ({which} scored: {why})" if which == "none" else f" ({which} not scored: {why})"
    return line


def _counts(ran: list, not_given: list, skipped: list, failed: dict) -> str:
    """``6 executed, 2 not given (telemetry, slurm_jobs), 0 unchanged, 1 failed (x)``."""

    def part(n: int, what: str, names) -> str:
        return f"{n} {what}" + (f" ({', '.join(names)})" if names else "")

    parts = [
        f"{len(ran)} executed",
        part(len(not_given), "not given", not_given),
        part(len(skipped), "unchanged", skipped),
    ]
    if failed:
        parts.append(part(len(failed), "failed", failed))
    return ", ".join(parts)


@dataclass(frozen=True)
class ReportSummary:
    """What one run of the main job made (:func:`run_report`); also written, as JSON, to
    ``<out>/report_summary.json`` (:meth:`to_dict`). Paths are strings; ``tables`` and
    ``figures`` relative to the repository root."""

    #: executed notebooks (paths of the copies in ``<out>/notebooks``)
    notebooks: list[str] = field(default_factory=list)
    #: full-detail CSV files the notebooks wrote
    tables: list[str] = field(default_factory=list)
    #: files in the figures folder
    figures: list[str] = field(default_factory=list)
    #: the index page of the site built (the Quarto book or the preview site)
    site: str = ""
    #: the book was rendered by Quarto (else the pandoc preview site was built)
    quarto: bool = False
    #: preview cross-references that did not resolve, pages left out, pages that load from the network
    problems: list[str] = field(default_factory=list)
    #: wall time of the run, seconds (one decimal)
    seconds: float = 0.0
    #: notebooks executed in this run, in the job's order
    executed: list[str] = field(default_factory=list)
    #: notebooks not executed again (their inputs unchanged)
    skipped: list[str] = field(default_factory=list)
    #: notebooks not executed (their input not given)
    not_given: list[str] = field(default_factory=list)
    #: ``{notebook: one-line error}`` of the notebooks that failed
    failed: dict[str, str] = field(default_factory=dict)

    def to_dict(self) -> dict:
        """The fields as a plain dict (what ``report_summary.json`` holds)."""
        return asdict(self)


def run_report(
    out: str | Path = "_output",
    figures: str | Path = "figures",
    root: str | Path | None = None,
    notebooks: list[NotebookSpec] | None = None,
    use_quarto: bool | None = None,
    log=print,
    run_batches: bool = True,
    progress: bool = True,
    overrides: dict[str, dict] | None = None,
    config=None,
    force: bool = False,
    fail_fast: bool = False,
    jobs: int | None = None,
    force_out: bool = False,
) -> ReportSummary:
    """Run the main job (see the module docstring) and return what it made.

    Args:
        out: output folder for executed notebooks and the preview site (relative to ``root``).
        figures: folder the notebooks export figures to (relative to ``root``).
        root: repository root; default: the checkout trainperf is installed from.
        notebooks: which notebooks (default :data:`NOTEBOOKS`).
        use_quarto: force (True) or skip (False) ``quarto render``; None: use it when on PATH.
        log: where progress lines go.
        run_batches: run the :data:`BATCH_GRIDS` first (into ``<out>/batch/<grid>``) and pass their
            summaries to the notebooks that declare the matching parameter.
        progress: progress bars for notebook cells and batch runs.
        overrides: ``{notebook name: {parameter: value}}`` applied last (the user's own data); an
            unknown notebook, a parameter the notebook does not declare or an input path that does
            not exist is refused before anything runs (:func:`plan_report`).
        config: the cluster config (a file or a :class:`trainperf.config.ClusterConfig`); None:
            the demo's, :data:`trainperf.config.DEMO_CONFIG`. It sets the notebooks' parameters
            (``overrides`` still come last), the reference logs the batch grids discover, the
            book's ``values.config`` and ``values.inputs``, and ``<out>/comparison.csv``
            (:func:`trainperf.compare.cluster_comparison`); a notebook whose input the config
            does not give is not executed (:mod:`trainperf.report.absent`).
        force: execute every notebook; by default a notebook whose source, parameters, inputs,
            data folder and library are unchanged since its last run, and whose outputs are still
            there, is skipped (:mod:`trainperf.report.rerun`).
        fail_fast: let the first :class:`~trainperf.report.notebooks.NotebookError` propagate;
            by default a failed notebook is logged in one line, replaced by a stand-in page
            saying it failed and why (:mod:`trainperf.report.absent`), and the other notebooks
            and the site are still built: one bad input never costs the others.
        jobs: notebooks and batch runs executed side by side, each in a worker process with its
            own kernel (:mod:`trainperf.report.schedule`); None: one per CPU this process may use,
            at most 4 (:func:`~trainperf.report.schedule.default_jobs`); 1: one after another in
            this process, with per-cell progress bars when ``progress``.
        force_out: write into an existing non-empty ``out`` that no earlier run created
            (:func:`trainperf.report.outdir.claim_out`: never ``/``, the home folder or the
            repository root, and never over a file trainperf did not write).

    Returns:
        :class:`ReportSummary`: the executed notebooks, tables, figures, the site, whether Quarto
        rendered it, its problems, the seconds taken and which notebooks were executed, skipped,
        not given or failed.

    Raises:
        ConfigError: a parameter refused before the run, a ``#|`` cell-option block that is
            not YAML (:class:`~trainperf.report.notebooks.CellOptionsError`), or an ``out``
            refused by :func:`~trainperf.report.outdir.claim_out`.
        NotebookError: with ``fail_fast``, a notebook cell failed (one line: notebook, cell, the
            library's message).
        subprocess.CalledProcessError: ``quarto render`` failed.
    """
    t0 = time.monotonic()
    root = Path(root) if root else project_root()
    out = root / out
    figures = root / figures
    specs = notebooks if notebooks is not None else NOTEBOOKS

    # everything that can be refused is refused before the first notebook runs
    check_cell_options(_option_documents(root, specs))
    cfg = _config(config, root)
    demo = is_demo(cfg, root)
    plan, absent = _plan_with_config(
        root, out, figures, specs, cfg, overrides, run_batches, demo=demo
    )

    claim_out(out, root, force=force_out)  # a folder trainperf did not create is never touched
    comparison = _write_comparison(root, out, cfg, log)
    shown = {s.name for s, _ in plan.notebooks}
    measured = {
        k: nb in shown and nb not in absent
        for k, nb in (("capture", "telemetry_capture"), ("trace", "trace"), ("energy", "energy"))
    }
    _reset_values(out, plan, cfg, comparison, demo=demo, root=root, flags=measured)
    job = ReportJob(
        root,
        out,
        figures,
        log,
        progress,
        force,
        fail_fast,
        *figure_setup(out, log),
        is_input_path_parameter,
    )
    job.run(plan, absent, default_jobs() if jobs is None else max(1, int(jobs)))
    values = merge_values(out / "values", out / "values.yml")
    # the appendix pages: the executed notebooks with labels of their own (report.appendix)
    # never a path of the build machine: the batch cache by name, the config's inputs relative
    # to the config's folder (as the config names them)
    cache = {
        str(batch_cache_dir()): "$TRAINPERF_CACHE/batch"
        if os.environ.get("TRAINPERF_CACHE")
        else "<trainperf batch cache>"
    }
    if cfg.source and Path(cfg.source).resolve().parent != Path("/"):
        cache[str(Path(cfg.source).resolve().parent)] = "<config folder>"
    cache.update(_input_names(cfg))
    write_appendix_notebooks(
        out / "notebooks", out / "appendix", root=root, out=out, figures=figures, named=cache
    )
    book = build_book(root, out, figures, cfg, values, use_quarto, log)
    summary = ReportSummary(
        notebooks=[str(p) for _, p in job.executed],
        tables=[rel_path(p, root) for p in job.tables],
        figures=sorted(
            rel_path(p, root)
            for p in figures.rglob("*")
            if p.is_file() and not p.name.startswith(".")
        ),
        site=book["site"],
        quarto=book["quarto"],
        problems=book["problems"],
        seconds=round(time.monotonic() - t0, 1),
        executed=job.ran,
        skipped=job.skipped,
        not_given=job.not_given,
        failed=job.failed,
    )
    write_text_atomic(json.dumps(summary.to_dict(), indent=2), out / "report_summary.json")
    record_files(out)
    counts = _counts(job.ran, job.not_given, job.skipped, job.failed)
    log(
        f"done in {summary.seconds} s: {counts}; "
        f"{len(summary.figures)} figure files in {rel_path(figures, root)}/, site {rel_path(summary.site, root)}"
    )
    return summary


def _input_names(cfg) -> dict[str, str]:
    """``{resolved input path: how the appendix writes it}`` for the config's input files and
    folders: relative to the config's folder where it lies below it (as the config names it),
    else ``<key>`` (``<mlperf>``, ``<telemetry.source>``); never the build machine's path, also
    where a link leads elsewhere."""
    base = Path(cfg.source).parent if cfg.source else None
    given = [
        ("mlperf", cfg.mlperf),
        ("power", cfg.power),
        ("published.path", cfg.published.path if cfg.published else None),
        ("telemetry.source", cfg.telemetry.source if cfg.telemetry else None),
        ("telemetry.mlperf_log", cfg.telemetry.mlperf_log if cfg.telemetry else None),
        *((f"sacct[{i}]", p) for i, p in enumerate(cfg.sacct)),
    ]
    named = {}
    for key, value in given:
        if not value or str(value) == "synthetic" or "://" in str(value):
            continue
        path = Path(value)
        shown = f"<{key}>"
        if base is not None:
            rel = os.path.relpath(path, base)
            if not rel.startswith(".."):
                shown = rel
        try:
            named[str(path.resolve())] = shown
        except OSError:
            continue
    return named


def _plan_with_config(
    root: Path,
    out: Path,
    figures: Path,
    specs: list[NotebookSpec],
    cfg,
    overrides: dict[str, dict] | None,
    run_batches: bool,
    demo: bool = False,
) -> tuple[ReportPlan, dict[str, str]]:
    """The plan of a run from the config and the user's overrides (overrides last), and the
    notebooks whose input the config does not give (name -> the sentence their page shows);
    ``demo`` (:func:`is_demo`) adds :func:`demo_overrides`."""
    inputs = report_overrides(cfg)
    names = {s.name for s in specs}
    merged: dict[str, dict] = {nb: dict(kv) for nb, kv in inputs.overrides.items() if nb in names}
    for nb, kv in demo_overrides(cfg, demo).items():
        if nb in names and nb not in inputs.absent:
            merged.setdefault(nb, {}).update(kv)
    for nb, kv in (overrides or {}).items():
        merged.setdefault(nb, {}).update(kv)
    absent = {
        nb: text
        for nb, text in inputs.absent.items()
        if nb in names and nb not in (overrides or {})
    }
    if not demo:  # the bundled capture and trace: asked for only with -p / --params
        for nb, text in bundled_measurements_absent(cfg).items():
            if nb in names and nb not in (overrides or {}):
                absent.setdefault(nb, text)
    # the MLPerf batch runs one notebook per reference log folder: with the record as the
    # reference (no folder of reference logs) the comparison notebook reads the few rows it needs
    # from the logs directly, and the batch's runs would be work no page shows
    ref = cfg.reference
    if run_batches and not demo and not (ref.pinned and not ref.from_record):
        run_batches = False
        if "eos_comparison" in names:  # no stale summary of another run from the default path
            merged.setdefault("eos_comparison", {}).setdefault("batch_summary_path", "")
    plan = plan_report(
        root,
        out,
        figures,
        specs,
        merged,
        run_batches,
        produced={
            ("eos_comparison", "comparison_path"): str(out / "comparison.csv"),
            # the memory model models the benchmarks of the evaluated results
            ("memory_model", "comparison_path"): str(out / "comparison.csv"),
            ("energy", "comparison_path"): str(out / "comparison.csv"),
        },
        reference_mlperf=inputs.reference_mlperf,
        batch_cache=batch_cache_dir(),
    )
    return plan, absent


def _write_comparison(root: Path, out: Path, cfg, log) -> pl.DataFrame:
    """``<out>/comparison.csv``: the evaluated system against the reference (atomically); a
    comparison across MLPerf rounds is said in one ``warning:`` line each."""

    comparison = config_comparison(cfg)
    comparison_csv = out / "comparison.csv"
    write_text_atomic(comparison.write_csv(), comparison_csv)
    log(f"comparison: {_comparison_line(comparison, cfg)} into {rel_path(comparison_csv, root)}")
    for line in round_warnings(comparison):
        log(f"warning: {line}")
    return comparison


def _reset_values(
    out: Path,
    plan: ReportPlan,
    cfg,
    comparison: pl.DataFrame | None = None,
    demo: bool = False,
    root: Path | None = None,
    flags: dict[str, bool] | None = None,
) -> None:
    """Values of notebooks not in this job must not linger (those of skipped notebooks stay);
    the config's values are written afresh (with :func:`logs_flags` and ``demo``,
    :func:`is_demo`, in ``values.inputs``)."""
    kept = {spec.name for spec, _ in plan.notebooks}
    for p in (out / "values").glob("*.json"):
        if p.stem not in kept:
            unlink_owned(p)  # a file trainperf did not write stays
    values = config_values(cfg)
    values["inputs"]["demo"] = demo
    values["inputs"].update(flags or {})
    if comparison is not None:
        values["inputs"].update(logs_flags(cfg, comparison))
        own = comparison.filter(pl.col("evaluated_source") == "logs")["benchmark"]
        others = tuple(sorted(set(own.drop_nulls().to_list()))) if cfg.mlperf else ()
        values["config"]["benchmarks_studied"] = benchmarks_studied(values["inputs"], others)
    values["config"]["telemetry_log"] = telemetry_log_phrase(cfg, root or project_root())
    values["config"].update(input_phrases(cfg, root or project_root()))
    for name, vals in values.items():
        write_text_atomic(json.dumps(vals, indent=2), out / "values" / f"{name}.json")
