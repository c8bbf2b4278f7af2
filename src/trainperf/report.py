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
    NotebookSpec(
        "trace",
        "Inside a step: a PyTorch profiler trace against the MLPerf log and DCGM",
        {"capture_dir": "data/traces/h200_1gpu_1.3b_20261201T0923Z"},
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


def record_values(values: dict, path: str | Path | None) -> dict:
    """Record numbers a notebook computed for the book's prose (JSON, written atomically).

    The main job passes each notebook a ``values_path``; after all notebooks ran it merges the files
    into ``<out>/values.yml`` as ``values: {<notebook>: {...}}``, which ``_quarto.yml`` reads through
    ``metadata-files``, so that chapters write ``{{< meta values.mlperf_runs.n_result_files >}}``
    instead of typing a number. The preview site resolves the same shortcodes.

    Args:
        values: flat mapping of names (letters, digits, ``_``) to numbers or short strings.
        path: where to write; empty or None: do nothing (a notebook run on its own).

    Returns:
        ``values``.

    Raises:
        ValueError: a name that Quarto's ``meta`` shortcode could not address.
    """
    for key in values:
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", str(key)):
            raise ValueError(f"value name {key!r}: use letters, digits and _ only")
    if path:
        write_text_atomic(json.dumps(values, indent=2, default=str), path)
    return values


def merge_values(values_dir: str | Path, target: str | Path) -> dict:
    """Merge ``<values_dir>/<notebook>.json`` files into ``target`` (YAML, ``values:`` mapping)."""
    import yaml

    merged = {
        p.stem: json.loads(p.read_text(encoding="utf-8"))
        for p in sorted(Path(values_dir).glob("*.json"))
    }
    write_text_atomic(
        yaml.safe_dump({"values": merged}, sort_keys=True, allow_unicode=True), target
    )
    return merged


def book_chapters(root: str | Path) -> list[Path]:
    """The chapter files of the book, in ``_quarto.yml`` order (``book.chapters``, parts flattened)."""
    import yaml

    cfg = yaml.safe_load((Path(root) / "_quarto.yml").read_text(encoding="utf-8"))
    out = []
    for entry in cfg.get("book", {}).get("chapters", []):
        if isinstance(entry, dict):
            out.extend(entry.get("chapters", []))
        else:
            out.append(entry)
    return [Path(root) / c for c in out]


_EMBED_RE = re.compile(r"\{\{<\s*embed\s+([^#\s]+)#([A-Za-z0-9_-]+)\s*>\}\}")
_INCLUDE_RE = re.compile(r"\{\{<\s*include\s+(\S+)\s*>\}\}")
_META_RE = re.compile(r"\{\{<\s*meta\s+([A-Za-z0-9_.]+)\s*>\}\}")
_FIG_RE = re.compile(r"!\[([^\]]*)\]\(([^)\s]+)\)(\{[^}]*\})?")
_ATTR_RE = re.compile(r"\s*\{[#.][^}]*\}\s*$", re.M)
_XREF_RE = re.compile(r"@((?:fig|tbl|sec)-[A-Za-z0-9_-]+)")


def _cell_outputs_html(nb_path: Path, label: str) -> str:
    import markdown
    import nbformat

    nb = nbformat.read(nb_path, as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "code" and re.search(
            rf"^#\|\s*label:\s*{re.escape(label)}\s*$", cell.source, re.M
        ):
            parts = []
            for o in cell.get("outputs", []):
                data = o.get("data", {})
                if "text/html" in data:
                    parts.append(
                        data["text/html"]
                        if isinstance(data["text/html"], str)
                        else "".join(data["text/html"])
                    )
                elif "text/markdown" in data:  # tables shown as Markdown (no text/html)
                    md = data["text/markdown"]
                    parts.append(
                        markdown.markdown(
                            md if isinstance(md, str) else "".join(md), extensions=["tables"]
                        )
                    )
                elif "image/svg+xml" in data:
                    parts.append("".join(data["image/svg+xml"]))
                elif "image/png" in data:
                    parts.append(
                        f'<img alt="{html.escape(label)}" src="data:image/png;base64,{data["image/png"]}">'
                    )
                elif "text/plain" in data:
                    parts.append(f"<pre>{html.escape(''.join(data['text/plain']))}</pre>")
            return f'<div class="embed" id="{html.escape(label)}">' + "\n".join(parts) + "</div>"
    raise ValueError(f"{nb_path}: no cell labelled {label!r} (expected a '#| label: {label}' line)")


def _lookup(values: dict, dotted: str) -> str:
    cur = values
    for part in dotted.split("."):
        if not isinstance(cur, dict) or part not in cur:
            raise KeyError(
                f"no generated value {dotted!r} (the notebook must record it with record_values)"
            )
        cur = cur[part]
    return html.escape(str(cur))


def render_chapter(
    qmd: Path, notebooks_dir: Path, figures_dir: Path, values: dict
) -> tuple[str, str]:
    """Render one Quarto chapter to an HTML fragment for the preview site (no Quarto needed).

    Handles what our chapters use: ``{{< include _part.qmd >}}`` (inlined first),
    ``{{< embed NB#label >}}`` (the labelled cell's stored outputs of
    the executed notebook in ``notebooks_dir``), ``{{< meta values.* >}}`` (generated numbers),
    ``![caption](../figures/x.svg){#fig-x}`` (the SVG inlined, so charts are real ``<svg>`` elements),
    cross references (``@fig-x`` becomes a link) and header attributes (dropped). Markdown by
    python-markdown. User-controlled strings (job names, paths) reach a chapter only through notebook
    outputs, which pandas and polars HTML-escape; they are inserted after the Markdown pass.

    Returns:
        (title, HTML fragment).

    Raises:
        ValueError / KeyError: an embed label or a value the notebooks did not produce.
    """
    import markdown

    text = _INCLUDE_RE.sub(
        lambda m: (qmd.parent / m.group(1)).read_text(encoding="utf-8"),
        qmd.read_text(encoding="utf-8"),
    )
    blocks: list[str] = []

    def stash(fragment: str) -> str:
        blocks.append(fragment)
        return f"\n\nTPBLOCK{len(blocks) - 1}X\n\n"

    def stash_inline(fragment: str) -> str:
        blocks.append(fragment)
        return f"TPINLINE{len(blocks) - 1}X"

    text = _EMBED_RE.sub(
        lambda m: stash(_cell_outputs_html(notebooks_dir / Path(m.group(1)).name, m.group(2))), text
    )
    text = _META_RE.sub(lambda m: _lookup({"values": values}, m.group(1)), text)

    def figure(m: re.Match) -> str:
        cap, src, attrs = m.group(1), m.group(2), m.group(3) or ""
        fig_id = re.search(r"#([A-Za-z0-9_-]+)", attrs)
        path = figures_dir / Path(src).name
        body = (
            path.read_text(encoding="utf-8")
            if path.suffix == ".svg" and path.is_file()
            else f'<img alt="{html.escape(cap)}" src="{html.escape(src)}">'
        )
        ident = f' id="{fig_id.group(1)}"' if fig_id else ""
        return stash(f"<figure{ident}>{body}<figcaption>{html.escape(cap)}</figcaption></figure>")

    # Quarto callouts (::: {.callout-warning} ... :::) become a highlighted box, as in the book
    def callout(m: re.Match) -> str:
        inner = markdown.markdown(m.group(2), extensions=["tables"])
        return stash(f'<div class="note callout callout-{html.escape(m.group(1))}">{inner}</div>')

    text = re.sub(
        r"^:::\s*\{\.callout-([a-z]+)[^}]*\}\s*\n(.*?)^:::\s*$", callout, text, flags=re.M | re.S
    )
    text = _FIG_RE.sub(figure, text)
    text = _ATTR_RE.sub("", text)
    # TeX math is shown as code (no MathJax: it would come from a CDN)
    text = re.sub(
        r"\$([^$\n]+)\$",
        lambda m: stash_inline(f'<code class="math">{html.escape(m.group(1))}</code>'),
        text,
    )
    kinds = {"fig": "Figure", "tbl": "Table", "sec": "Section"}
    text = _XREF_RE.sub(
        lambda m: f"[{kinds[m.group(1)[:3]]} {m.group(1)[4:]}](#{m.group(1)})", text
    )
    title_m = re.search(r"^#\s+(.+)$", text, re.M)
    title = title_m.group(1).strip() if title_m else qmd.stem
    body = markdown.markdown(text, extensions=["tables", "fenced_code"])
    body = re.sub(r"<p>TPBLOCK(\d+)X</p>", lambda m: blocks[int(m.group(1))], body)
    body = re.sub(r"TPINLINE(\d+)X", lambda m: blocks[int(m.group(1))], body)
    return title, body


def build_preview_site(
    executed: list[tuple[NotebookSpec, Path]],
    site_dir: str | Path,
    note: str = "",
    chapters: list[tuple[str, str, str]] | None = None,
) -> Path:
    """Build a static preview site (no Quarto needed): the book's chapters and the notebooks.

    Chapters (rendered by :func:`render_chapter`) come first, in book order, the first one being the
    index page; then one page per executed notebook (nbconvert ``basic`` template: outputs only, code
    hidden by CSS). Every page has the same navigation bar. Nothing on the pages is fetched from the
    network: charts carry their Vega libraries inline, figures are inline SVG.

    Args:
        executed: (spec, executed notebook path) pairs.
        site_dir: output folder; replaced as a whole (built in a temporary folder, then renamed).
        note: text shown on the index page (e.g. that this is the preview, not the Quarto book).
        chapters: (file stem, title, HTML body) triples in book order; None: an index page that lists
            the notebooks.

    Returns:
        The path of ``index.html``.
    """
    import nbformat
    from nbconvert import HTMLExporter

    site_dir = Path(site_dir)
    site_dir.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=site_dir.parent, prefix=f".{site_dir.name}."))
    chapters = list(chapters or [])
    pages = [("index" if i == 0 else stem, title) for i, (stem, title, _) in enumerate(chapters)]
    if not chapters:
        pages = [("index", "Contents")]
    pages += [(f"notebook-{spec.name}", spec.title) for spec, _ in executed]
    try:
        nav = "".join(
            f'<a href="{html.escape(name)}.html">{html.escape(title)}</a>' for name, title in pages
        )
        note_html = f'<p class="note">{html.escape(note)}</p>\n' if note else ""
        for i, (_, title, body) in enumerate(chapters):
            name = pages[i][0]
            (tmp / f"{name}.html").write_text(
                _PAGE.format(
                    title=html.escape(title), nav=nav, body=(note_html if i == 0 else "") + body
                ),
                encoding="utf-8",
            )
        exporter = HTMLExporter(template_name="basic")
        for spec, nb_path in executed:
            body, _ = exporter.from_notebook_node(nbformat.read(nb_path, as_version=4))
            (tmp / f"notebook-{spec.name}.html").write_text(
                _PAGE.format(title=html.escape(spec.title), nav=nav, body=body), encoding="utf-8"
            )
        if not chapters:
            items = "".join(
                f'<li><a href="notebook-{html.escape(spec.name)}.html">{html.escape(spec.title)}</a></li>'
                for spec, _ in executed
            )
            index_body = (
                "<h1>trainperf: LLM training performance report (preview)</h1>\n"
                + note_html
                + f"<ul>{items}</ul>\n"
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
        nb_out = execute_notebook(
            root / "notebooks" / f"{spec.name}.ipynb",
            out / "notebooks" / f"{spec.name}.ipynb",
            params,
            progress=progress,
        )
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
    summary["figures"] = sorted(_rel(p, root) for p in figures.rglob("*") if p.is_file())
    summary["seconds"] = round(time.monotonic() - t0, 1)
    write_text_atomic(json.dumps(summary, indent=2), out / "report_summary.json")
    log(
        f"done in {summary['seconds']} s: {len(executed)} notebooks, {len(summary['figures'])} figure files in {_rel(figures, root)}/, site {_rel(summary['site'], root)}"
    )
    return summary
