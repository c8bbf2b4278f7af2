"""The main job: execute the analysis notebooks once, export their figures, build the site.

Order of work (``trainperf report``):

1. every notebook in :data:`NOTEBOOKS` is executed with papermill into ``<out>/notebooks/`` (each
   written to a temporary name and renamed, so a killed run leaves no half-written notebook); the
   notebooks export their charts to ``figures/`` while they run, so nothing is executed twice;
2. with ``quarto`` on PATH, ``quarto render`` builds the book into ``_book/`` from the chapters, which
   embed the executed notebooks' outputs (Quarto does not execute them again);
3. without Quarto, a static preview site is built in ``<out>/site/`` from the executed notebooks with
   nbconvert (an index page linking them), and one line says so and how to install Quarto.

Charts display offline in both sites: the chart renderer of :mod:`trainperf.charts` inlines the Vega
libraries; the preview site uses nbconvert's ``basic`` template inside a page of our own, which carries
no CDN script (nbconvert's ``lab`` template would load require.js and MathJax from cdnjs).
"""

from __future__ import annotations

import html
import json
import os
import re
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import polars as pl

from trainperf import project_root

__all__ = [
    "NOTEBOOKS",
    "NotebookSpec",
    "execute_notebook",
    "build_preview_site",
    "external_urls",
    "quarto_available",
    "run_report",
    "write_parquet_atomic",
]

QUARTO_INSTALL_HINT = "install Quarto from https://quarto.org/docs/get-started/ or `conda install -c conda-forge quarto`"


@dataclass(frozen=True)
class NotebookSpec:
    """One analysis notebook of the main job.

    Attributes:
        name: file stem in ``notebooks/``.
        title: page title in the preview site.
        parameters: overrides of the notebook's defaults, relative paths resolved against the repo root.
    """

    name: str
    title: str
    parameters: dict = field(default_factory=dict)


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
]


#: Batch grids the main job runs before the notebooks: (grid file, notebook parameter that receives the
#: summary path). The per-system MLPerf runs go through the batch path; the comparison notebook reads
#: the collected summary instead of recomputing.
BATCH_GRIDS: list[tuple[str, str]] = [("grids/mlperf_systems.yaml", "batch_summary_path")]


def _atomic_path(target: Path) -> Path:
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    os.fchmod(fd, 0o644)  # mkstemp creates 0600; outputs are meant to be shared
    os.close(fd)
    return Path(tmp)


def write_text_atomic(text: str, target: str | Path) -> Path:
    """Write ``text`` (UTF-8) to ``target`` through a temporary file and a rename."""
    target = Path(target)
    tmp = _atomic_path(target)
    try:
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)
    return target


def write_parquet_atomic(frame: pl.DataFrame, target: str | Path) -> Path:
    """Write a polars frame to Parquet through a temporary file and a rename."""
    target = Path(target)
    tmp = _atomic_path(target)
    try:
        frame.write_parquet(tmp)
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)
    return target


def execute_notebook(
    notebook: str | Path,
    output: str | Path,
    parameters: dict | None = None,
    cwd: str | Path | None = None,
    progress: bool = True,
) -> Path:
    """Execute ``notebook`` with papermill into ``output`` (atomically).

    Args:
        notebook: source notebook (never modified).
        output: executed copy to write.
        parameters: values injected after the cell tagged ``parameters``.
        cwd: working folder of the kernel (defaults to the notebook's folder).
        progress: papermill's per-cell progress bar.

    Returns:
        ``output``.

    Raises:
        papermill.PapermillExecutionError: a cell failed (the failed notebook is kept next to
            ``output`` with the suffix ``.failed.ipynb`` for inspection).
    """
    import papermill as pm

    notebook, output = Path(notebook), Path(output)
    tmp = _atomic_path(output.with_suffix(".ipynb"))
    tmp_nb = tmp.with_name(tmp.name + ".ipynb")
    tmp.unlink()
    try:
        pm.execute_notebook(
            str(notebook),
            str(tmp_nb),
            parameters=parameters or {},
            cwd=str(cwd or notebook.parent),
            kernel_name="python3",
            progress_bar=progress,
            log_output=False,
        )
        os.replace(tmp_nb, output)
    except Exception:
        if tmp_nb.exists():
            os.replace(tmp_nb, output.with_suffix(".failed.ipynb"))
        raise
    finally:
        tmp_nb.unlink(missing_ok=True)
    return output


_EXTERNAL_RE = re.compile(
    r"<(?:script|link|img|iframe|source)\b[^>]*?\b(?:src|href)\s*=\s*[\"']((?:https?:)?//[^\"']+)",
    re.I,
)


def external_urls(html_text: str) -> list[str]:
    """Return the URLs of external resources a page would fetch (``<script src>``, ``<link href>``...)."""
    return sorted(set(_EXTERNAL_RE.findall(html_text)))


_PAGE = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{title} - trainperf</title>
<style>
body {{ font-family: "DejaVu Sans", "Liberation Sans", Arial, sans-serif; margin: 0; color: #222; }}
header {{ background: #1f4e79; color: white; padding: 0.6em 1.5em; }}
header a {{ color: white; margin-right: 1.2em; text-decoration: none; }}
main {{ max-width: 1100px; margin: 1em auto; padding: 0 1.5em; }}
.jp-InputPrompt, .prompt, .jp-OutputPrompt {{ display: none; }}
div.input, .jp-InputArea {{ display: none; }}
.output_html, .jp-OutputArea-output {{ overflow-x: auto; }}
table {{ border-collapse: collapse; font-size: 0.85em; margin: 0.5em 0; }}
th, td {{ border: 1px solid #ddd; padding: 0.2em 0.5em; text-align: right; }}
pre {{ background: #f6f6f6; padding: 0.5em; overflow-x: auto; }}
.note {{ background: #fff4e0; border-left: 4px solid #d9822b; padding: 0.5em 1em; }}
</style>
</head>
<body>
<header><nav>{nav}</nav></header>
<main>
{body}
</main>
</body>
</html>
"""


def build_preview_site(
    executed: list[tuple[NotebookSpec, Path]], site_dir: str | Path, note: str = ""
) -> Path:
    """Build a static preview site from executed notebooks (no Quarto needed).

    One page per notebook (nbconvert ``basic`` template: outputs only, code hidden by CSS) and an
    ``index.html`` linking them. Nothing on the pages is fetched from the network.

    Args:
        executed: (spec, executed notebook path) pairs, in book order.
        site_dir: output folder; replaced as a whole (built in a temporary folder, then renamed).
        note: text shown on the index page (e.g. that this is the preview, not the Quarto book).

    Returns:
        The path of ``index.html``.
    """
    import nbformat
    from nbconvert import HTMLExporter

    site_dir = Path(site_dir)
    site_dir.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=site_dir.parent, prefix=f".{site_dir.name}."))
    try:
        nav = '<a href="index.html">trainperf</a>' + "".join(
            f'<a href="{html.escape(spec.name)}.html">{html.escape(spec.title)}</a>'
            for spec, _ in executed
        )
        exporter = HTMLExporter(template_name="basic")
        for spec, nb_path in executed:
            body, _ = exporter.from_notebook_node(nbformat.read(nb_path, as_version=4))
            (tmp / f"{spec.name}.html").write_text(
                _PAGE.format(title=html.escape(spec.title), nav=nav, body=body), encoding="utf-8"
            )
        items = "".join(
            f'<li><a href="{html.escape(spec.name)}.html">{html.escape(spec.title)}</a></li>'
            for spec, _ in executed
        )
        index_body = (
            "<h1>trainperf: LLM training performance report (preview)</h1>\n"
            + (f'<p class="note">{html.escape(note)}</p>\n' if note else "")
            + f"<ul>{items}</ul>\n"
            + "<p>Figures: SVG, PNG and PDF in the <code>figures/</code> folder of the checkout.</p>"
        )
        (tmp / "index.html").write_text(
            _PAGE.format(title="Contents", nav=nav, body=index_body), encoding="utf-8"
        )
        if site_dir.exists():
            old = site_dir.with_name(f".{site_dir.name}.old")
            shutil.rmtree(old, ignore_errors=True)
            os.replace(site_dir, old)
            shutil.rmtree(old, ignore_errors=True)
        os.replace(tmp, site_dir)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return site_dir / "index.html"


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
    batch_params = {}
    if run_batches:
        from dataclasses import replace

        from trainperf import batch

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
            k: str(root / v) if k.endswith("_path") and v else v for k, v in spec.parameters.items()
        }
        params.update({k: v for k, v in batch_params.items() if k in spec.parameters})
        params["figures_dir"] = str(figures)
        log(f"[{i}/{len(specs)}] executing notebooks/{spec.name}.ipynb")
        nb_out = execute_notebook(
            root / "notebooks" / f"{spec.name}.ipynb",
            out / "notebooks" / f"{spec.name}.ipynb",
            params,
            progress=progress,
        )
        executed.append((spec, nb_out))
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
        index = build_preview_site(executed, out / "site", note=note if use_quarto is None else "")
        summary["site"] = str(index)
        if use_quarto is None:
            log(
                f"Quarto not found on PATH: skipped `quarto render`; preview site at {_rel(index, root)}; {QUARTO_INSTALL_HINT}"
            )
    summary["figures"] = sorted(_rel(p, root) for p in figures.glob("*") if p.is_file())
    summary["seconds"] = round(time.monotonic() - t0, 1)
    write_text_atomic(json.dumps(summary, indent=2), out / "report_summary.json")
    log(
        f"done in {summary['seconds']} s: {len(executed)} notebooks, {len(summary['figures'])} figure files in {_rel(figures, root)}/, site {_rel(summary['site'], root)}"
    )
    return summary
