"""The preview site: the book's chapters and its notebook appendix as static HTML, without Quarto.

Built on pandoc itself (the ``pypandoc-binary`` wheel ships pandoc 3.9, the engine Quarto drives),
so that what Quarto would hand to pandoc is parsed by pandoc here too: fenced divs, attributes,
pipe tables, figures, callouts and TeX math (written as MathML, which browsers render without any
script). What Quarto adds on top of pandoc is done here on pandoc's JSON AST, in Python:

* the book's structure from ``_quarto.yml`` (``book.chapters``, ``book.appendices``);
* shortcodes, resolved in the text before pandoc reads it, as Quarto does:
  ``{{< include >}}``, ``{{< meta values.* >}}`` (the generated numbers) and
  ``{{< embed NB.ipynb#label >}}`` (the labelled cell's stored outputs, chosen by Quarto's MIME
  priority for HTML, ``src/core/jupyter/display-data.ts``, with its ``tbl-cap``/``fig-cap``);
* numbering: chapters 1, 2, ... (a chapter whose title has ``{.unnumbered}`` is not numbered),
  appendices A, B, ..., sections 3.1 and 3.1.2, figures and tables per chapter (Figure 3.2,
  Table A.1), as a Quarto book numbers them;
* cross-references: ``@sec-x``, ``@fig-x``, ``@tbl-x`` (pandoc reads them as citations) become
  links to the target page and id with the text "Chapter 3", "Section 3.1", "Figure 3.2",
  "Table 3.1" or "Appendix A"; an unknown id shows as ``?@fig-x`` and is reported;
* callouts (``::: {.callout-warning}``) get their first heading as the title, unnumbered.

Appendix pages are the executed notebooks (as in ``_quarto.yml``, where the appendices are the
executed ``.ipynb`` files): markdown cells as text, code folded under "Code", every output, and
under each table a link to its full-detail CSV (the ``text/csv`` output of
:func:`trainperf.report.display.table`).

Nothing on the pages is fetched from the network: figures are copied next to the pages, notebook
images are data URIs, math is MathML, the stylesheet is inline.
"""

from __future__ import annotations

import base64
import html
import json
import os
import re
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

__all__ = [
    "BookStructure",
    "book_chapters",
    "book_structure",
    "build_preview_site",
    "chapter_markdown",
    "csv_outputs",
    "external_urls",
    "network_loads",
    "notebook_markdown",
]


# --------------------------------------------------------------------------- network checks

_EXTERNAL_RE = re.compile(
    r"<(?:script|link|img|iframe|source|video|audio|embed|object)\b[^>]*?\b(?:src|href|data)\s*=\s*[\"']((?:https?:)?//[^\"']+)",
    re.I,
)
_CSS_URL_RE = re.compile(
    r"""(?:@import\s+(?:url\()?|url\()\s*["']?((?:https?:)?//[^"')\s;]+)""", re.I
)
_CSS_LOCAL_RE = re.compile(r"""(?:@import\s+(?:url\()?|url\()\s*["']?([^"')\s;:]+\.css)""", re.I)
_LINK_CSS_RE = re.compile(r"<link\b[^>]*?\bhref\s*=\s*[\"']([^\"':]+\.css)[\"']", re.I)
_STYLE_RE = re.compile(r"<style\b[^>]*>(.*?)</style>", re.I | re.S)


def external_urls(html_text: str) -> list[str]:
    """URLs of external resources a page would fetch: ``<script src>``, ``<link href>``,
    ``<img src>``... and ``@import``/``url()`` in its inline ``<style>`` blocks."""
    urls = set(_EXTERNAL_RE.findall(html_text))
    for css in _STYLE_RE.findall(html_text):
        urls.update(_CSS_URL_RE.findall(css))
    return sorted(urls)


def _css_loads(css_file: Path, seen: set[Path]) -> set[str]:
    if css_file in seen or not css_file.is_file():
        return set()
    seen.add(css_file)
    text = css_file.read_text(encoding="utf-8", errors="replace")
    urls = set(_CSS_URL_RE.findall(text))
    for rel in _CSS_LOCAL_RE.findall(text):
        urls |= _css_loads((css_file.parent / rel).resolve(), seen)
    return urls


def network_loads(site_dir: str | Path) -> dict[str, list[str]]:
    """Every page of a built site (Quarto's ``_book`` or the preview) that would fetch something
    from the network, with the URLs: tags of :func:`external_urls`, and ``@import``/``url()`` in the
    local stylesheets the page links (followed through local ``@import``), e.g. a theme's web font.

    Returns:
        ``{page path relative to site_dir: [urls]}``, only pages with at least one URL.
    """
    site_dir = Path(site_dir)
    out = {}
    for page in sorted(site_dir.rglob("*.html")):
        text = page.read_text(encoding="utf-8", errors="replace")
        urls = set(external_urls(text))
        seen: set[Path] = set()
        for rel in _LINK_CSS_RE.findall(text):
            urls |= _css_loads((page.parent / rel).resolve(), seen)
        if urls:
            out[str(page.relative_to(site_dir))] = sorted(urls)
    return out


# --------------------------------------------------------------------------- book structure


@dataclass(frozen=True)
class BookStructure:
    """The book as ``_quarto.yml`` lists it: chapter files and appendix files (absolute paths)."""

    chapters: list[Path]
    appendices: list[Path]


def _flatten(entries) -> list[str]:
    out = []
    for entry in entries or []:
        if isinstance(entry, dict):
            out.extend(_flatten(entry.get("chapters", [])))
        else:
            out.append(str(entry))
    return out


def book_structure(root: str | Path) -> BookStructure:
    """Chapters and appendices of ``_quarto.yml`` (``book.chapters``, ``book.appendices``; parts
    flattened), in book order."""
    import yaml

    root = Path(root)
    cfg = yaml.safe_load((root / "_quarto.yml").read_text(encoding="utf-8")) or {}
    book = cfg.get("book", {}) or {}
    return BookStructure(
        [root / c for c in _flatten(book.get("chapters"))],
        [root / c for c in _flatten(book.get("appendices"))],
    )


def book_chapters(root: str | Path) -> list[Path]:
    """The chapter files of the book, in ``_quarto.yml`` order (appendices not included)."""
    return book_structure(root).chapters


# --------------------------------------------------------------------------- notebook outputs

# Quarto's display priority for HTML output (src/core/jupyter/display-data.ts, displayDataMimeType)
_MIME_PRIORITY = (
    "application/vnd.jupyter.widget-state+json",
    "application/vnd.jupyter.widget-view+json",
    "application/javascript",
    "text/html",
    "text/markdown",
    "image/svg+xml",
    "image/png",
    "image/jpeg",
    "text/plain",
)
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


def _text(value) -> str:
    return value if isinstance(value, str) else "".join(value)


def _fence(text: str, cls: str = "") -> str:
    ticks = "`" * max(3, max((len(m) for m in re.findall(r"`+", text)), default=0) + 1)
    attr = f" {{.{cls}}}" if cls else ""
    return f"{ticks}{attr}\n{text.rstrip()}\n{ticks}"


def _display_markdown(data: dict, alt: str) -> str:
    mime = next((m for m in _MIME_PRIORITY if m in data), None)
    if mime is None:
        return ""
    value = data[mime]
    if mime == "text/markdown":
        return _text(value)
    if mime in ("text/html",):
        return "```{=html}\n" + _text(value) + "\n```"
    if mime == "application/javascript":
        return "```{=html}\n<script>" + _text(value) + "</script>\n```"
    if mime.startswith("application/vnd.jupyter.widget"):
        return ""
    if mime == "image/svg+xml":
        b64 = base64.b64encode(_text(value).encode("utf-8")).decode("ascii")
        return f"![{alt}](data:image/svg+xml;base64,{b64})"
    if mime in ("image/png", "image/jpeg"):
        return f"![{alt}](data:{mime};base64,{_text(value).strip()})"
    return _fence(_text(value), "tp-output")


def _outputs_markdown(cell, csv_links: dict[int, str] | None = None) -> str:
    parts = []
    for i, out in enumerate(cell.get("outputs", [])):
        kind = out.get("output_type")
        if kind == "stream":
            parts.append(_fence(_ANSI.sub("", _text(out.get("text", ""))), "tp-output"))
        elif kind == "error":
            tb = "\n".join(_ANSI.sub("", line) for line in out.get("traceback", []))
            parts.append(_fence(tb or f"{out.get('ename')}: {out.get('evalue')}", "tp-error"))
        elif kind in ("display_data", "execute_result"):
            md = _display_markdown(out.get("data", {}), "")
            if md:
                parts.append(md)
            if csv_links and i in csv_links:
                parts.append(f"[Full table (CSV)]({csv_links[i]}){{.tp-csv}}")
    return "\n\n".join(parts)


def _cell_options(cell, where: str) -> dict:
    from trainperf.report.notebooks import cell_options

    return cell_options(cell.get("source", ""), where)


def csv_outputs(nb_path: str | Path) -> list[tuple[int, int, str, str]]:
    """The ``text/csv`` outputs of an executed notebook (full-detail tables):
    ``(cell index, output index, file name, csv text)``, the file name from the cell's label
    (``tbl-x.csv``; ``tbl-x-2.csv`` for a second table) or ``cell-<n>.csv``."""
    import nbformat

    nb = nbformat.read(Path(nb_path), as_version=4)
    found = []
    for ci, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        try:
            label = _cell_options(cell, f"{nb_path} cell {ci}").get("label")
        except ValueError:
            label = None
        k = 0
        for oi, out in enumerate(cell.get("outputs", [])):
            data = out.get("data", {})
            if "text/csv" in data:
                k += 1
                stem = str(label or f"cell-{ci}") + (f"-{k}" if k > 1 else "")
                found.append((ci, oi, f"{stem}.csv", _text(data["text/csv"])))
    return found


def _float_markdown(label: str, caption: str, content: str) -> str:
    kind = label.split("-", 1)[0]
    cap = f"::: {{.tp-caption}}\n{caption}\n:::\n" if caption else ""
    if kind == "fig":  # figure captions go below, table captions above, as Quarto places them
        return f"::: {{#{label} .tp-float .tp-float-fig}}\n{content}\n\n{cap}:::"
    return f"::: {{#{label} .tp-float .tp-float-{kind}}}\n{cap}\n{content}\n:::"


def _embed_markdown(nb_path: Path, label: str) -> str:
    import nbformat

    if not nb_path.is_file():
        raise FileNotFoundError(f"embed: no executed notebook {nb_path} (was it run?)")
    nb = nbformat.read(nb_path, as_version=4)
    for ci, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        opts = _cell_options(cell, f"{nb_path} cell {ci}")
        if opts.get("label") == label or cell.get("id") == label:
            content = _outputs_markdown(cell)
            if not content.strip():
                raise ValueError(f"{nb_path}: the cell labelled {label!r} has no output to embed")
            if label.startswith(("tbl-", "fig-")):
                cap = opts.get(f"{label[:3]}-cap", "")
                return _float_markdown(label, str(cap), content)
            return f"::: {{#{label}}}\n{content}\n:::"
    raise ValueError(f"{nb_path}: no cell labelled {label!r} (expected a '#| label: {label}' line)")


_EMBED_RE = re.compile(r"\{\{<\s*embed\s+(\S+?\.ipynb)(?:#([A-Za-z0-9_-]+))?\s*>\}\}")
_INCLUDE_RE = re.compile(r"\{\{<\s*include\s+(\S+)\s*>\}\}")
_META_RE = re.compile(r"\{\{<\s*meta\s+([A-Za-z0-9_.-]+)\s*>\}\}")


def _lookup(values: dict, dotted: str) -> str:
    cur = values
    for part in dotted.split("."):
        if not isinstance(cur, dict) or part not in cur:
            raise KeyError(
                f"no generated value {dotted!r} (the notebook must record it with record_values)"
            )
        cur = cur[part]
    return str(cur)


def _inline_includes(path: Path, depth: int = 0) -> str:
    text = path.read_text(encoding="utf-8")
    if depth > 8:
        raise ValueError(f"{path}: includes nested too deeply")
    return _INCLUDE_RE.sub(lambda m: _inline_includes(path.parent / m.group(1), depth + 1), text)


def chapter_markdown(qmd: str | Path, notebooks_dir: str | Path, values: dict) -> str:
    """A chapter's Markdown with Quarto's shortcodes resolved (includes, meta values, embeds),
    ready for pandoc.

    Args:
        qmd: the chapter.
        notebooks_dir: folder of the executed notebooks (an embed ``../_output/notebooks/x.ipynb``
            is looked up by file name there, so the preview works for any ``--out``).
        values: the merged generated values (``values.yml``'s ``values`` mapping).

    Raises:
        ValueError: an embed label no cell has, or a cell without output.
        KeyError: a ``meta`` value the notebooks did not record.
        trainperf.report.notebooks.CellOptionsError: an embedded cell's ``#|`` block is not YAML.
    """
    qmd = Path(qmd)
    text = _inline_includes(qmd)
    text = _META_RE.sub(lambda m: _lookup({"values": values}, m.group(1)), text)
    nb_dir = Path(notebooks_dir)

    def embed(m: re.Match) -> str:
        nb = nb_dir / Path(m.group(1)).name
        if not m.group(2):
            raise ValueError(f"{qmd}: embed of a whole notebook ({m.group(1)}) is not supported")
        return "\n\n" + _embed_markdown(nb, m.group(2)) + "\n\n"

    return _EMBED_RE.sub(embed, text)


def notebook_markdown(
    nb_path: str | Path, csv_links: dict[tuple[int, int], str] | None = None
) -> str:
    """An executed notebook as one Markdown page, as Quarto renders a notebook chapter: markdown
    cells as text, each code cell's source folded under "Code", its outputs (labelled ``tbl-``/
    ``fig-`` cells as numbered floats with their captions), and under a table the link
    ``csv_links[(cell, output)]`` to its CSV."""
    import nbformat

    nb_path = Path(nb_path)
    nb = nbformat.read(nb_path, as_version=4)
    csv_links = csv_links or {}
    parts = []
    for ci, cell in enumerate(nb.cells):
        src = cell.get("source", "")
        if cell.cell_type == "markdown":
            if "papermill-error-cell-tag" in cell.metadata.get("tags", []):
                continue
            parts.append(src)
            continue
        if cell.cell_type != "code":
            continue
        opts = _cell_options(cell, f"{nb_path} cell {ci}")
        code = "\n".join(ln for ln in src.splitlines() if not ln.startswith("#|")).strip()
        tags = cell.metadata.get("tags", [])
        summary = "Parameters used" if "injected-parameters" in tags else "Code"
        if code:
            parts.append(
                f'<details class="tp-code"><summary>{summary}</summary>\n\n'
                + _fence(code, "python")
                + "\n\n</details>"
            )
        content = _outputs_markdown(
            cell, {oi: link for (c, oi), link in csv_links.items() if c == ci}
        )
        if not content.strip():
            continue
        label = str(opts.get("label", ""))
        if label.startswith(("tbl-", "fig-")):
            parts.append(_float_markdown(label, str(opts.get(f"{label[:3]}-cap", "")), content))
        else:
            parts.append(content)
    return "\n\n".join(parts) + "\n"


# --------------------------------------------------------------------------- AST work


def _to_ast(markdown: str) -> dict:
    import pypandoc

    return json.loads(pypandoc.convert_text(markdown, "json", format="markdown"))


def _to_html(doc: dict) -> str:
    import pypandoc

    return pypandoc.convert_text(
        json.dumps(doc), "html5", format="json", extra_args=["--mathml", "--wrap=none"]
    )


def _str(text: str) -> list:
    out = []
    for i, word in enumerate(text.split(" ")):
        if i:
            out.append({"t": "Space"})
        if word:
            out.append({"t": "Str", "c": word})
    return out


def _plain_text(inlines: list) -> str:
    out = []
    for el in inlines:
        t, c = el.get("t"), el.get("c")
        if t == "Str":
            out.append(c)
        elif t in ("Space", "SoftBreak", "LineBreak"):
            out.append(" ")
        elif t in (
            "Emph",
            "Strong",
            "SmallCaps",
            "Strikeout",
            "Underline",
            "Superscript",
            "Subscript",
        ):
            out.append(_plain_text(c))
        elif t in ("Span", "Link", "Quoted"):
            out.append(_plain_text(c[1]))
        elif t == "Code":
            out.append(c[1])
        elif t == "Math":
            out.append(c[1])
        elif t == "Cite":
            out.append(_plain_text(c[1]))
    return "".join(out)


def _callouts(blocks: list) -> list:
    """Quarto callouts: a div ``.callout-*`` whose first block is a heading gets it as its title."""
    out = []
    for b in blocks:
        if b.get("t") == "Div":
            (ident, classes, kvs), inner = b["c"]
            kind = next((c for c in classes if c.startswith("callout-")), None)
            inner = _callouts(inner)
            if kind:
                title = []
                if inner and inner[0].get("t") == "Header":
                    title = inner[0]["c"][2]
                    inner = inner[1:]
                if not title:
                    title = _str(kind.removeprefix("callout-").capitalize())
                head = {
                    "t": "Div",
                    "c": [
                        ["", ["callout-title"], []],
                        [{"t": "Plain", "c": [{"t": "Strong", "c": title}]}],
                    ],
                }
                body = {"t": "Div", "c": [["", ["callout-body"], []], inner]}
                b = {"t": "Div", "c": [[ident, ["callout", *classes], kvs], [head, body]]}
            else:
                b = {"t": "Div", "c": [[ident, classes, kvs], inner]}
        out.append(b)
    return out


_XREF_KINDS = {"fig": "Figure", "tbl": "Table", "sec": "Section"}


@dataclass
class _Page:
    name: str  # html file stem
    source: Path
    appendix: bool
    blocks: list
    meta: dict = field(default_factory=dict)
    number: str | None = None  # "3", "A" or None (unnumbered)
    title: str = ""
    csv_files: dict[str, str] = field(default_factory=dict)  # site-relative path -> csv text


@dataclass
class _Target:
    page: str
    kind: str  # fig, tbl, sec
    number: str | None
    level: int = 0  # headings: 1 chapter


def _number_page(page: _Page, index: dict[str, _Target], warnings: list[str]) -> None:
    """Number the page's headings and floats, record its ids in ``index`` (first one wins, so
    chapters come before the appendix copies of the same cells)."""
    counters = [0, 0, 0, 0, 0, 0, 0]
    floats = {"fig": 0, "tbl": 0}
    chap = page.number

    def label(n: int, prefix: str | None) -> str:
        return f"{prefix}.{n}" if prefix else str(n)

    def record(ident: str, target: _Target) -> None:
        if ident in index and index[ident].page == page.name:
            warnings.append(f"{page.source.name}: duplicate id #{ident}")
        index.setdefault(ident, target)

    def walk(blocks: list) -> None:
        for b in blocks:
            t = b.get("t")
            if t == "Header":
                level, (ident, classes, kvs), inlines = b["c"]
                if level == 1:
                    if not page.title:
                        page.title = _plain_text(inlines)
                    number = chap
                else:
                    number = None
                    if chap and "unnumbered" not in classes and level <= 4:
                        counters[level] += 1
                        for k in range(level + 1, len(counters)):
                            counters[k] = 0
                        number = ".".join([chap] + [str(counters[k]) for k in range(2, level + 1)])
                if number and "unnumbered" not in classes:
                    kvs = [kv for kv in kvs if kv[0] != "tp-number"] + [["tp-number", number]]
                    b["c"][1][2] = kvs
                if ident:
                    record(ident, _Target(page.name, "sec", number, level))
            elif t == "Figure":
                ident = b["c"][0][0]
                if ident.startswith("fig-"):
                    floats["fig"] += 1
                    num = label(floats["fig"], chap)
                    b["c"][0][2] = b["c"][0][2] + [["tp-number", num]]
                    record(ident, _Target(page.name, "fig", num))
                walk(b["c"][2])
            elif t == "Div":
                (ident, classes, kvs), inner = b["c"]
                kind = ident.split("-", 1)[0] if "-" in ident else ""
                if "tp-float" in classes and kind in floats:
                    floats[kind] += 1
                    num = label(floats[kind], chap)
                    b["c"][0][2] = kvs + [["tp-number", num]]
                    record(ident, _Target(page.name, kind, num))
                if "callout" not in classes:
                    walk(inner)
            elif t in ("BlockQuote",):
                walk(b["c"])

    walk(page.blocks)


def _ref_text(target: _Target) -> str:
    if target.kind == "sec" and target.level == 1:
        if target.number is None:
            return "the preface"
        return ("Appendix " if target.number.isalpha() else "Chapter ") + target.number
    return f"{_XREF_KINDS[target.kind]} {target.number or '?'}"


def _number_of(kvs: list) -> str | None:
    return next((v for k, v in kvs if k == "tp-number"), None)


def _resolve(
    page: _Page, index: dict[str, _Target], warnings: list[str], local: dict[str, _Target]
) -> None:
    """Headings and captions get their numbers, cross-references become links."""

    def link(ident: str, suppress: bool) -> list:
        target = local.get(ident) or index.get(ident)
        if target is None:
            warnings.append(f"{page.source.name}: unresolved cross-reference @{ident}")
            return [{"t": "Strong", "c": [{"t": "Str", "c": f"?@{ident}"}]}]
        text = target.number if (suppress and target.number) else _ref_text(target)
        href = ("" if target.page == page.name else f"{target.page}.html") + f"#{ident}"
        return [{"t": "Link", "c": [["", ["quarto-xref"], []], _str(text), [href, ""]]}]

    def inlines(items: list) -> list:
        out = []
        for el in items:
            t = el.get("t")
            if t == "Cite":
                cites = el["c"][0]
                ids = [c["citationId"] for c in cites]
                if all(i.split("-", 1)[0] in _XREF_KINDS and "-" in i for i in ids):
                    for k, c in enumerate(cites):
                        if k:
                            out += [{"t": "Str", "c": ","}, {"t": "Space"}]
                        out += inlines(c.get("citationPrefix", []))
                        out += link(c["citationId"], c["citationMode"]["t"] == "SuppressAuthor")
                        out += inlines(c.get("citationSuffix", []))
                    continue
            elif isinstance(el.get("c"), list):
                el = dict(el)
                el["c"] = _inlines_in(el["t"], el["c"], inlines, blocks)
            out.append(el)
        return out

    def prefix_caption(blocks_: list, text: str) -> list:
        for i, b in enumerate(blocks_):
            if b.get("t") in ("Plain", "Para"):
                new = dict(b)
                new["c"] = [
                    {"t": "Span", "c": [["", ["tp-float-number"], []], _str(text + ":")]},
                    {"t": "Space"},
                ] + b["c"]
                return blocks_[:i] + [new] + blocks_[i + 1 :]
        return [
            {"t": "Plain", "c": [{"t": "Span", "c": [["", ["tp-float-number"], []], _str(text)]}]}
        ] + blocks_

    def blocks(items: list) -> list:
        out = []
        for b in items:
            t = b.get("t")
            if t == "Header":
                level, (ident, classes, kvs), ins = b["c"]
                number = _number_of(kvs)
                ins = inlines(ins)
                if number:
                    if level == 1 and page.appendix:
                        lead = _str(f"Appendix {number} —")
                    else:
                        lead = [{"t": "Str", "c": number}]
                    ins = [
                        {"t": "Span", "c": [["", ["header-section-number"], []], lead]},
                        {"t": "Space"},
                    ] + ins
                kvs = [kv for kv in kvs if kv[0] != "tp-number"]
                b = {"t": "Header", "c": [level, [ident, classes, kvs], ins]}
            elif t == "Figure":
                (ident, classes, kvs), (short, cap), body = b["c"]
                number = _number_of(kvs)
                kvs = [kv for kv in kvs if kv[0] != "tp-number"]
                cap = blocks(cap)
                if number:
                    cap = prefix_caption(cap, f"Figure {number}")
                b = {"t": "Figure", "c": [[ident, classes, kvs], [short, cap], blocks(body)]}
            elif t == "Div":
                (ident, classes, kvs), inner = b["c"]
                number = _number_of(kvs)
                kvs = [kv for kv in kvs if kv[0] != "tp-number"]
                inner = blocks(inner)
                if number:
                    kind = _XREF_KINDS[ident.split("-", 1)[0]]
                    for i, sub in enumerate(inner):
                        if sub.get("t") == "Div" and "tp-caption" in sub["c"][0][1]:
                            inner[i] = {
                                "t": "Div",
                                "c": [sub["c"][0], prefix_caption(sub["c"][1], f"{kind} {number}")],
                            }
                            break
                    else:
                        cap = {
                            "t": "Div",
                            "c": [["", ["tp-caption"], []], prefix_caption([], f"{kind} {number}")],
                        }
                        inner = [cap] + inner if kind == "Table" else inner + [cap]
                b = {"t": "Div", "c": [[ident, classes, kvs], inner]}
            elif t in ("Para", "Plain"):
                b = {"t": t, "c": inlines(b["c"])}
            elif t == "BlockQuote":
                b = {"t": t, "c": blocks(b["c"])}
            elif t in ("BulletList",):
                b = {"t": t, "c": [blocks(item) for item in b["c"]]}
            elif t == "OrderedList":
                b = {"t": t, "c": [b["c"][0], [blocks(item) for item in b["c"][1]]]}
            elif t == "Table":
                b = _walk_table(b, inlines, blocks)
            out.append(b)
        return out

    page.blocks = blocks(page.blocks)


def _inlines_in(t: str, c: list, inlines, blocks):
    """Recurse into the inline content of an inline element (emphasis, spans, links, quotes)."""
    if t in ("Emph", "Strong", "SmallCaps", "Strikeout", "Underline", "Superscript", "Subscript"):
        return inlines(c)
    if t in ("Span", "Link", "Image"):
        return [c[0], inlines(c[1]), *c[2:]]
    if t == "Quoted":
        return [c[0], inlines(c[1])]
    if t == "Note":
        return blocks(c)
    return c


def _walk_table(b: dict, inlines, blocks) -> dict:
    attr, caption, colspecs, head, bodies, foot = b["c"]

    def rows(rs):
        return [
            [r[0], [[cell[0], cell[1], cell[2], cell[3], blocks(cell[4])] for cell in r[1]]]
            for r in rs
        ]

    head = [head[0], rows(head[1])]
    bodies = [[bd[0], bd[1], rows(bd[2]), rows(bd[3])] for bd in bodies]
    foot = [foot[0], rows(foot[1])]
    return {
        "t": "Table",
        "c": [attr, [caption[0], blocks(caption[1])], colspecs, head, bodies, foot],
    }


def _local_images(blocks: list, resolve) -> None:
    """Rewrite the ``src`` of images in place with ``resolve(src)``."""

    def inl(items):
        for el in items:
            t, c = el.get("t"), el.get("c")
            if t == "Image":
                c[2][0] = resolve(c[2][0])
                inl(c[1])
            elif t in (
                "Emph",
                "Strong",
                "SmallCaps",
                "Strikeout",
                "Underline",
                "Superscript",
                "Subscript",
            ):
                inl(c)
            elif t in ("Span", "Link", "Quoted"):
                inl(c[1])

    def blk(items):
        for b in items:
            t, c = b.get("t"), b.get("c")
            if t in ("Para", "Plain"):
                inl(c)
            elif t == "Figure":
                blk(c[1][1])
                blk(c[2])
            elif t == "Div":
                blk(c[1])
            elif t == "BlockQuote":
                blk(c)
            elif t == "BulletList":
                for item in c:
                    blk(item)
            elif t == "OrderedList":
                for item in c[1]:
                    blk(item)

    blk(blocks)


# --------------------------------------------------------------------------- the site

_STYLE = """
:root { --tp-text: 50rem; --tp-accent: #1f4e79; }
* { box-sizing: border-box; }
body { font-family: "DejaVu Sans", "Liberation Sans", Arial, sans-serif; margin: 0; color: #222;
  line-height: 1.5; display: grid; grid-template-columns: 17rem minmax(0, 1fr); min-height: 100vh; }
#tp-sidebar { background: #f4f6f9; border-right: 1px solid #dde3ea; padding: 1rem 0.8rem;
  font-size: 0.9rem; position: sticky; top: 0; height: 100vh; overflow-y: auto; }
#tp-sidebar .tp-book-title { font-weight: bold; font-size: 1.1rem; margin: 0 0 0.8rem 0.3rem; }
#tp-sidebar .tp-book-title a { color: var(--tp-accent); text-decoration: none; }
#tp-sidebar ol { list-style: none; padding: 0; margin: 0; }
#tp-sidebar li a { display: block; padding: 0.2rem 0.3rem; color: #333; text-decoration: none; }
#tp-sidebar li a:hover { background: #e6ebf1; }
#tp-sidebar li a.active { color: var(--tp-accent); font-weight: bold; }
#tp-sidebar .tp-num { display: inline-block; min-width: 1.8rem; color: #666; }
#tp-sidebar .tp-section { margin: 1rem 0 0.3rem 0.3rem; font-weight: bold; color: #555;
  text-transform: uppercase; font-size: 0.75rem; letter-spacing: 0.05em; }
main { width: 100%; max-width: calc(var(--tp-text) + 3rem); padding: 1rem 1.5rem 3rem; }
main > * { max-width: var(--tp-text); }
.tp-banner { background: #fff4e0; border-left: 4px solid #d9822b; padding: 0.5rem 1rem; }
h1 { font-size: 1.9rem; margin-top: 0.5rem; }
.header-section-number { color: #555; margin-right: 0.3em; }
table { border-collapse: collapse; font-size: 0.9rem; margin: 0.3rem 0 1rem; }
th, td { padding: 0.25rem 0.5rem; border-bottom: 1px solid #dde3ea; vertical-align: top; }
thead th { border-bottom: 2px solid #888; }
.tp-float { margin: 1.2rem 0; }
.tp-caption, figcaption { font-size: 0.92rem; color: #333; margin: 0.3rem 0; }
.tp-float-number { font-weight: bold; }
figure { margin: 1.2rem 0; }
figure img, .tp-float img { max-width: 100%; height: auto; }
pre { background: #f6f6f6; padding: 0.5rem; overflow-x: auto; font-size: 0.85rem; }
code { font-family: "DejaVu Sans Mono", monospace; font-size: 0.9em; }
details.tp-code summary { cursor: pointer; color: #666; font-size: 0.85rem; }
.callout { border-left: 4px solid #d9822b; background: #fffaf2; padding: 0.4rem 1rem; margin: 1rem 0; }
.callout-title { margin-bottom: 0.3rem; }
.tp-csv { font-size: 0.85rem; }
.tp-pager { display: flex; justify-content: space-between; margin-top: 3rem; border-top: 1px solid #dde3ea; padding-top: 0.8rem; }
.tp-pager a { color: var(--tp-accent); text-decoration: none; }
math { font-size: 1.05em; }
"""

_PAGE = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{title} – {book}</title>
<style>{style}</style>
</head>
<body>
<nav id="tp-sidebar" aria-label="Contents">
{nav}
</nav>
<main id="tp-main">
{banner}{body}
<nav class="tp-pager">{prev}{next}</nav>
</main>
</body>
</html>
"""


def _page_label(page: _Page) -> str:
    return page.number or ""


def _nav_html(pages: list[_Page], current: str, book_title: str) -> str:
    parts = [
        f'<div class="tp-book-title"><a href="index.html">{html.escape(book_title)}</a></div>',
        "<ol>",
    ]
    in_appendix = False
    for p in pages:
        if p.appendix and not in_appendix:
            parts.append('</ol><div class="tp-section">Appendices</div><ol>')
            in_appendix = True
        cls = ' class="active"' if p.name == current else ""
        num = f'<span class="tp-num">{html.escape(_page_label(p))}</span>' if p.number else ""
        parts.append(f'<li><a href="{p.name}.html"{cls}>{num}{html.escape(p.title)}</a></li>')
    parts.append("</ol>")
    return "\n".join(parts)


def _pager(pages: list[_Page], i: int) -> tuple[str, str]:
    def a(p: _Page, arrow: str, first: bool) -> str:
        label = (f"{p.number} " if p.number else "") + p.title
        text = f"{arrow} {html.escape(label)}" if first else f"{html.escape(label)} {arrow}"
        return f'<a href="{p.name}.html">{text}</a>'

    prev = a(pages[i - 1], "←", True) if i > 0 else "<span></span>"
    nxt = a(pages[i + 1], "→", False) if i + 1 < len(pages) else "<span></span>"
    return prev, nxt


def _markdown_inline_html(text: str) -> str:
    import pypandoc

    return pypandoc.convert_text(
        text, "html5", format="markdown", extra_args=["--wrap=none"]
    ).strip()


def build_preview_site(
    root: str | Path,
    notebooks_dir: str | Path,
    figures_dir: str | Path,
    values: dict,
    site_dir: str | Path,
    note: str = "",
    log=None,
) -> tuple[Path, list[str]]:
    """Build the preview site of the book (no Quarto needed).

    Pages, in ``_quarto.yml`` order: the chapters (the first one is ``index.html``, the others
    ``<file stem>.html``), then the appendices (an executed notebook ``x.ipynb`` becomes
    ``notebook-x.html``). Every page has the same sidebar (chapters, then "Appendices") and
    previous/next links. Figures a chapter shows are copied to ``figures/``; full-detail tables
    to ``tables/<notebook>/<file>.csv``.

    Args:
        root: the checkout holding ``_quarto.yml``, ``chapters/`` and ``notebooks/``.
        notebooks_dir: folder of the executed notebooks (embeds and appendices are looked up by
            file name there).
        figures_dir: folder of the exported figures.
        values: generated values for ``{{< meta values.* >}}``.
        site_dir: output folder; replaced as a whole (built in a temporary folder, then renamed).
        note: Markdown shown at the top of the first page (e.g. that this is the preview).
        log: callable for one line per page left out (a chapter whose notebook did not run).

    Returns:
        (path of ``index.html``, problems: unresolved cross-references, duplicate ids, pages
        left out).

    Raises:
        FileNotFoundError: ``_quarto.yml`` is missing.
    """
    import yaml

    root, notebooks_dir, figures_dir = Path(root), Path(notebooks_dir), Path(figures_dir)
    site_dir = Path(site_dir)
    cfg = yaml.safe_load((root / "_quarto.yml").read_text(encoding="utf-8")) or {}
    book_title = str((cfg.get("book") or {}).get("title", "Book"))
    structure = book_structure(root)
    problems: list[str] = []
    pages: list[_Page] = []

    for qmd in structure.chapters:
        try:
            md = chapter_markdown(qmd, notebooks_dir, values)
        except (ValueError, KeyError, OSError) as exc:  # e.g. a notebook not run this time
            problems.append(f"{qmd.relative_to(root)} left out of the preview: {exc}")
            continue
        name = "index" if not pages else qmd.stem
        doc = _to_ast(md)
        pages.append(_Page(name, qmd, False, _callouts(doc["blocks"]), doc.get("meta", {})))
    for nb_ref in structure.appendices:
        nb = notebooks_dir / nb_ref.name if nb_ref.suffix == ".ipynb" else nb_ref
        if not nb.is_file():
            problems.append(f"{nb_ref.relative_to(root)} left out of the preview: no file {nb}")
            continue
        if nb.suffix == ".ipynb":
            csvs = csv_outputs(nb)
            links = {(ci, oi): f"tables/{nb.stem}/{fname}" for ci, oi, fname, _ in csvs}
            md = notebook_markdown(nb, links)
            files = {f"tables/{nb.stem}/{fname}": text for _, _, fname, text in csvs}
            name = f"notebook-{nb.stem}"
        else:
            md, files, name = chapter_markdown(nb, notebooks_dir, values), {}, nb.stem
        doc = _to_ast(md)
        pages.append(
            _Page(name, nb, True, _callouts(doc["blocks"]), doc.get("meta", {}), csv_files=files)
        )

    # numbers: chapters 1.. (unless {.unnumbered}), appendices A..
    n_chapter, n_appendix = 0, 0
    for p in pages:
        first = next((b for b in p.blocks if b.get("t") == "Header" and b["c"][0] == 1), None)
        unnumbered = first is not None and (
            "unnumbered" in first["c"][1][1] or "unlisted" in first["c"][1][1]
        )
        if first is None or unnumbered:
            p.number = None
        elif p.appendix:
            p.number = chr(ord("A") + n_appendix)
            n_appendix += 1
        else:
            n_chapter += 1
            p.number = str(n_chapter)
    index: dict[str, _Target] = {}
    local: dict[str, dict[str, _Target]] = {}
    for p in pages:
        before = set(index)
        page_index: dict[str, _Target] = {}
        _number_page(p, page_index, problems)
        local[p.name] = page_index
        for k, v in page_index.items():
            if k not in before:
                index[k] = v
        if not p.title:
            p.title = p.source.stem

    site_dir.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=site_dir.parent, prefix=f".{site_dir.name}."))
    try:
        copied: dict[Path, str] = {}

        def figure_src(src: str, page: _Page) -> str:
            if src.startswith(("data:", "http://", "https://", "#")):
                return src
            # an exported figure (../figures/x.svg) is taken from this run's figures folder
            path = figures_dir / Path(src).name if "figures/" in src else page.source.parent / src
            if not path.is_file():
                problems.append(f"{page.source.name}: image {src} not found")
                return src
            if path not in copied:
                (tmp / "figures").mkdir(exist_ok=True)
                target = f"figures/{path.name}"
                if target in copied.values():  # same name, another folder
                    target = f"figures/{len(copied)}-{path.name}"
                shutil.copyfile(path, tmp / target)
                copied[path] = target
            return copied[path]

        banner = f'<div class="tp-banner">{_markdown_inline_html(note)}</div>\n' if note else ""
        for i, p in enumerate(pages):
            _resolve(p, index, problems, local[p.name])
            if not p.appendix:
                _local_images(p.blocks, lambda src, p=p: figure_src(src, p))
            body = _to_html({"pandoc-api-version": [1, 23, 1, 1], "meta": {}, "blocks": p.blocks})
            prev, nxt = _pager(pages, i)
            (tmp / f"{p.name}.html").write_text(
                _PAGE.format(
                    title=html.escape(p.title),
                    book=html.escape(book_title),
                    style=_STYLE,
                    nav=_nav_html(pages, p.name, book_title),
                    banner=banner if i == 0 else "",
                    body=body,
                    prev=prev,
                    next=nxt,
                ),
                encoding="utf-8",
            )
            for rel, text in p.csv_files.items():
                (tmp / rel).parent.mkdir(parents=True, exist_ok=True)
                (tmp / rel).write_text(text, encoding="utf-8")
        if not pages:
            (tmp / "index.html").write_text(
                _PAGE.format(
                    title="Contents",
                    book=html.escape(book_title),
                    style=_STYLE,
                    nav="",
                    banner=banner,
                    body="<p>No chapter could be built.</p>",
                    prev="",
                    next="",
                ),
                encoding="utf-8",
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
    if log:
        for line in problems:
            log(f"warning: {line}")
    return site_dir / "index.html", problems
