"""The preview site: the book's chapters and the executed notebooks as static HTML, without Quarto.

Charts display offline: the chart renderer of :mod:`trainperf.report.charts` inlines the Vega
libraries; notebook pages use nbconvert's ``basic`` template inside a page of our own, which carries
no CDN script (nbconvert's ``lab`` template would load require.js and MathJax from cdnjs).
"""

from __future__ import annotations

import html
import os
import re
import shutil
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from trainperf.report.notebooks import NotebookSpec

__all__ = ["book_chapters", "build_preview_site", "external_urls", "render_chapter"]


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
                    import markdown

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
