"""The main job: execute the analysis notebooks once, export their figures, build the site.

Order of work (``trainperf report``):

1. every notebook in :data:`NOTEBOOKS` is executed with papermill into ``<out>/notebooks/`` (each
   written to a temporary name and renamed, so a killed run leaves no half-written notebook); the
   notebooks export their charts to ``figures/`` while they run, so nothing is executed twice;
2. with ``quarto`` on PATH, ``quarto render`` builds the book into ``_book/`` from the chapters, which
   embed the executed notebooks' outputs (Quarto does not execute them again);
3. without Quarto, a static preview site is built in ``<out>/site/`` from the executed notebooks with
   nbconvert (an index page linking them), and one line says so and how to install Quarto.

Executing a notebook is :mod:`trainperf.report.notebooks`, the numbers for the prose
:mod:`trainperf.report.values`, the preview site :mod:`trainperf.report.preview`.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import time
from pathlib import Path

import polars as pl

from trainperf import project_root
from trainperf.atomic import write_text_atomic
from trainperf.report.notebooks import NotebookSpec, execute_notebook
from trainperf.report.preview import (
    book_chapters,
    build_preview_site,
    external_urls,
    render_chapter,
)
from trainperf.report.values import merge_values

__all__ = ["BATCH_GRIDS", "NOTEBOOKS", "NotebookSpec", "quarto_available", "run_report"]

QUARTO_INSTALL_HINT = "install Quarto from https://quarto.org/docs/get-started/ or `conda install -c conda-forge quarto`"


NOTEBOOKS: list[NotebookSpec] = [
    NotebookSpec("mlperf_runs", "MLPerf Training runs and scores", {"mlperf_path": "data/mlperf"}),
    NotebookSpec(
        "eos_comparison",
        "Per-GPU comparison with NVIDIA Eos",
        {
            "mlperf_path": "data/mlperf",
            "published_path": "data/reference/published_results.csv",
            # filled in by run_report with the summary of the per-system batch (BATCH_GRIDS)
            "batch_summary_path": "",
        },
    ),
    NotebookSpec("memory_model", "Memory model"),
    NotebookSpec(
        "telemetry",
        "GPU telemetry aligned with the MLPerf run",
        # scratch_dir is set by run_report to <out>/scratch/telemetry (the synthetic default data)
        {
            "mlperf_log": "data/mlperf/v4.1/NVIDIA/results/eos_n64_ngc24.09_nemo/gpt3/result_0.txt",
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
    NotebookSpec("slurm_jobs", "Slurm accounting: jobs, states, sizes and run times"),
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


def _rel(path: str | Path, root: Path) -> str:
    path = Path(path)
    try:
        return str(path.relative_to(root))
    except ValueError:
        return str(path)


def quarto_available() -> str | None:
    """Return the path of the ``quarto`` binary on PATH, or None."""
    return shutil.which("quarto")


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
) -> dict:
    """Run the main job (see the module docstring) and return a summary.

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
            unknown notebook or a parameter the notebook does not declare is an error.

    Returns:
        dict with keys ``notebooks`` (executed paths), ``figures`` (files in the figures folder),
        ``site`` (index page of the site built), ``quarto`` (bool: the book was rendered),
        ``seconds``.

    Raises:
        papermill.PapermillExecutionError: a notebook failed (the message names the cell).
        subprocess.CalledProcessError: ``quarto render`` failed.
    """
    t0 = time.monotonic()
    root = Path(root) if root else project_root()
    out = root / out
    figures = root / figures
    specs = notebooks if notebooks is not None else NOTEBOOKS
    import papermill as pm

    # check the user's overrides before anything runs
    overrides = overrides or {}
    unknown_nb = sorted(set(overrides) - {s.name for s in specs})
    if unknown_nb:
        raise ValueError(
            f"no notebook {', '.join(unknown_nb)} in the main job; notebooks: {', '.join(s.name for s in specs)}"
        )
    declared_by = {
        s.name: set(pm.inspect_notebook(str(root / "notebooks" / f"{s.name}.ipynb"))) for s in specs
    }
    for nb, kv in overrides.items():
        bad = sorted(set(kv) - declared_by[nb])
        if bad:
            raise ValueError(
                f"notebooks/{nb}.ipynb does not declare parameter(s) {', '.join(bad)}; "
                f"it declares: {', '.join(sorted(declared_by[nb]))}"
            )
    # values of notebooks run earlier must not linger
    shutil.rmtree(out / "values", ignore_errors=True)
    # figure languages: Japanese needs a CJK font; without one, say so once and write English only
    from trainperf.report.charts import export as figure_export
    from trainperf.report.charts.fonts import figure_languages

    figure_langs, _, font_note = figure_languages(warn=False)
    if font_note:
        log(font_note)
    figure_log = out / "figures.jsonl"
    figure_log.parent.mkdir(parents=True, exist_ok=True)
    figure_log.unlink(missing_ok=True)
    batch_params = {}
    if run_batches:
        from dataclasses import replace

        from trainperf.report import batch

        for grid_file, param in BATCH_GRIDS:
            if not any(param in spec.parameters for spec in specs):
                continue
            grid = batch.load_grid(root / grid_file)
            grid = replace(grid, output=out / "batch" / Path(grid_file).stem)
            log(f"batch {grid_file}: {len(grid.runs)} runs into {_rel(grid.output, root)}")
            summary_df = batch.run_batch(grid, progress=progress)
            failed = summary_df.filter(pl.col("status") == "failed")
            if failed.height:
                raise RuntimeError(
                    f"batch {grid_file}: {failed.height} run(s) failed, first: {failed['run'][0]}: {failed['error'][0]}"
                )
            batch_params[param] = str(grid.output / "summary.parquet")
    executed = []
    for i, spec in enumerate(specs, start=1):
        params = {
            k: str(root / v) if k.endswith(("_path", "_log", "_dir")) and v else v
            for k, v in spec.parameters.items()
        }
        params.update({k: v for k, v in batch_params.items() if k in spec.parameters})
        # parameters the main job provides, passed only to notebooks that declare them
        declared = declared_by[spec.name]
        provided = {
            "figures_dir": str(figures),
            "values_path": str(out / "values" / f"{spec.name}.json"),
            "scratch_dir": str(out / "scratch" / spec.name),
        }
        params.update({k: v for k, v in provided.items() if k in declared})
        params.update(overrides.get(spec.name, {}))
        unknown = sorted(set(params) - declared)
        if unknown:
            raise ValueError(
                f"notebooks/{spec.name}.ipynb does not declare parameter(s) {', '.join(unknown)}"
            )
        log(f"[{i}/{len(specs)}] executing notebooks/{spec.name}.ipynb")
        n_exports = len(figure_export.read_export_log(figure_log))
        with figure_export.job_environment(figure_log, figure_langs):
            nb_out = execute_notebook(
                root / "notebooks" / f"{spec.name}.ipynb",
                out / "notebooks" / f"{spec.name}.ipynb",
                params,
                progress=progress,
            )
        exports = figure_export.summarize_exports(
            figure_export.read_export_log(figure_log)[n_exports:]
        )
        if exports:
            log(f"  {exports}")
        executed.append((spec, nb_out))
    values = merge_values(out / "values", out / "values.yml")
    quarto = (
        quarto_available() if use_quarto is None else (quarto_available() if use_quarto else None)
    )
    summary = {"notebooks": [str(p) for _, p in executed], "quarto": False}
    if quarto:
        log("rendering the book with quarto render")
        subprocess.run([quarto, "render"], cwd=root, check=True)
        summary["quarto"] = True
        summary["site"] = str(root / "_book" / "index.html")
        for page in (root / "_book").rglob("*.html"):
            urls = external_urls(page.read_text(encoding="utf-8", errors="replace"))
            if urls:
                log(f"warning: {_rel(page, root)} loads external resources: {', '.join(urls[:3])}")
    else:
        note = f"Quarto was not found on PATH, so this is the preview site built with nbconvert; {QUARTO_INSTALL_HINT}, then run `make report` again for the book."
        chapters = []
        if (root / "_quarto.yml").is_file():
            for qmd in book_chapters(root):
                try:
                    title, body = render_chapter(qmd, out / "notebooks", figures, values)
                except (ValueError, KeyError, OSError) as exc:  # e.g. a notebook not run this time
                    log(f"warning: {_rel(qmd, root)} left out of the preview: {exc}")
                    continue
                chapters.append((qmd.stem, title, body))
        index = build_preview_site(
            executed, out / "site", note=note if use_quarto is None else "", chapters=chapters
        )
        summary["site"] = str(index)
        if use_quarto is None:
            log(
                f"Quarto not found on PATH: skipped `quarto render`; preview site at {_rel(index, root)}; {QUARTO_INSTALL_HINT}"
            )
    summary["figures"] = sorted(
        _rel(p, root) for p in figures.rglob("*") if p.is_file() and not p.name.startswith(".")
    )
    summary["seconds"] = round(time.monotonic() - t0, 1)
    write_text_atomic(json.dumps(summary, indent=2), out / "report_summary.json")
    log(
        f"done in {summary['seconds']} s: {len(executed)} notebooks, {len(summary['figures'])} figure files in {_rel(figures, root)}/, site {_rel(summary['site'], root)}"
    )
    return summary
