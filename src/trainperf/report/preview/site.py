"""The preview site itself: page template, navigation, and :func:`build_preview_site`."""

from __future__ import annotations

import html
import os
import re
import shutil
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import NamedTuple

import pypandoc
import yaml

from trainperf.atomic import dir_mode
from trainperf.report.outdir import carry_kept
from trainperf.report.parts import (
    absent_notebooks,
    part_title,
    shown_appendices,
    shown_chapters,
)
from trainperf.report.preview.book import book_structure
from trainperf.report.preview.pages import chapter_markdown, csv_outputs, notebook_markdown
from trainperf.report.preview.xref import (
    Page,
    Target,
    callouts,
    number_page,
    release_data_uris,
    resolve_xrefs,
    rewrite_targets,
    to_ast,
    to_html,
)
from trainperf.report.schedule import default_jobs

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


def _page_label(page: Page) -> str:
    return page.number or ""


def _nav_html(pages: list[Page], current: str, book_title: str) -> str:
    parts = [
        f'<div class="tp-book-title"><a href="index.html">{html.escape(book_title)}</a></div>',
        "<ol>",
    ]
    in_appendix = False
    for p in pages:
        if p.part and not p.appendix:
            parts.append(f'</ol><div class="tp-section">{html.escape(p.part)}</div><ol>')
        if p.appendix and not in_appendix:
            parts.append('</ol><div class="tp-section">Appendices</div><ol>')
            in_appendix = True
        cls = ' class="active"' if p.name == current else ""
        num = f'<span class="tp-num">{html.escape(_page_label(p))}</span>' if p.number else ""
        parts.append(f'<li><a href="{p.name}.html"{cls}>{num}{html.escape(p.title)}</a></li>')
    parts.append("</ol>")
    return "\n".join(parts)


def _pager(pages: list[Page], i: int) -> tuple[str, str]:
    def a(p: Page, arrow: str, first: bool) -> str:
        label = (f"{p.number} " if p.number else "") + p.title
        text = f"{arrow} {html.escape(label)}" if first else f"{html.escape(label)} {arrow}"
        return f'<a href="{p.name}.html">{text}</a>'

    prev = a(pages[i - 1], "←", True) if i > 0 else "<span></span>"
    nxt = a(pages[i + 1], "→", False) if i + 1 < len(pages) else "<span></span>"
    return prev, nxt


def _markdown_inline_html(text: str) -> str:

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
    title: str | None = None,
    bibliography: str | Path | None = None,
) -> tuple[Path, list[str]]:
    """Build the preview site of the book (no Quarto needed); ``title``: the book's title (None:
    ``book.title`` of ``_quarto.yml``); ``bibliography``: the BibTeX file citations and the
    references page are rendered with (None: the ``bibliography:`` of ``_quarto.yml``).

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

    root, notebooks_dir, figures_dir = Path(root), Path(notebooks_dir), Path(figures_dir)
    site_dir = Path(site_dir)
    cfg = yaml.safe_load((root / "_quarto.yml").read_text(encoding="utf-8")) or {}
    book_title = title or str((cfg.get("book") or {}).get("title", "Book"))
    problems: list[str] = []
    try:
        return _build(
            root,
            notebooks_dir,
            figures_dir,
            site_dir,
            book_title,
            note,
            log,
            values,
            problems,
            bibliography,
        )
    finally:
        release_data_uris()


def _build(
    root, notebooks_dir, figures_dir, site_dir, book_title, note, log, values, problems, bib=None
):
    pages = _read_pages(root, notebooks_dir, values, problems)
    index, local = _number_pages(pages, problems)
    site_dir.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=site_dir.parent, prefix=f".{site_dir.name}."))

    os.chmod(tmp, dir_mode())  # mkdtemp makes 0700: the site follows the umask like any folder
    try:
        _write_pages(
            tmp,
            pages,
            index,
            local,
            figures_dir,
            book_title,
            note,
            problems,
            Path(bib) if bib else _bibliography(root),
        )
        if site_dir.exists():
            for k in carry_kept(site_dir, tmp):  # a user's file in site/ survives the rebuild
                problems.append(f"{k} is not trainperf's (kept in the manifest): left in place "
                                "instead of the page of that name")  # fmt: skip
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


def _bibliography(root: Path) -> Path | None:
    """The ``bibliography:`` file of ``_quarto.yml`` (the preview renders citations with it)."""

    cfg = yaml.safe_load((root / "_quarto.yml").read_text(encoding="utf-8")) or {}
    bib = cfg.get("bibliography")
    bib = bib[0] if isinstance(bib, list) and bib else bib
    return root / str(bib) if bib else None


def _pandoc_map(fn, items: list) -> list:
    """``[fn(x) for x in items]`` with the pandoc processes side by side, one per CPU (pandoc
    takes 0.2-1 s a page, most of the preview's time; the threads only wait on it)."""

    if len(items) <= 1:
        return [fn(x) for x in items]
    with ThreadPoolExecutor(max_workers=default_jobs()) as pool:
        return list(pool.map(fn, items))


class _Found(NamedTuple):
    """A page :func:`_read_pages` found, before pandoc reads its Markdown."""

    name: str
    source: Path
    appendix: bool
    csv_files: dict[str, str]  # tables/<notebook>/<file> -> CSV text
    markdown: str


def _shown_parts(root: Path, inputs) -> tuple[set[Path], dict[Path, str]]:
    """The chapter files a run's book shows (:func:`trainperf.report.parts.shown_chapters` of
    ``root/_quarto.yml``, as the staged Quarto project) and the part title each part's first
    shown chapter opens."""
    cfg = yaml.safe_load((root / "_quarto.yml").read_text(encoding="utf-8")) or {}
    shown, opens = set(), {}
    for entry in shown_chapters((cfg.get("book") or {}).get("chapters") or [], inputs):
        files = (entry.get("chapters") or []) if isinstance(entry, dict) else [entry]
        shown |= {root / str(c) for c in files}
        if isinstance(entry, dict) and entry.get("part") and files:
            opens[root / str(files[0])] = str(entry["part"])
    return shown, opens


def _read_pages(root: Path, notebooks_dir: Path, values: dict, problems: list[str]) -> list[Page]:
    """The chapters and appendices of ``_quarto.yml`` as pandoc ASTs (a page that cannot be built
    is left out with a line in ``problems``)."""
    structure = book_structure(root)
    part_of: dict[Path, str] = {}  # chapter -> the title of the part it opens
    found: list[_Found] = []
    inputs = (values or {}).get("inputs")
    # the case study's part only in the demo's book, no chapter or appendix of an input not
    # given (trainperf.report.parts, as the staged Quarto project)
    shown, opens = _shown_parts(root, inputs)
    chapters = [c for c in structure.chapters if c in shown]
    appendices = shown_appendices(structure.appendices, absent_notebooks(notebooks_dir))
    for qmd in chapters:
        try:
            md = chapter_markdown(qmd, notebooks_dir, values)
        except (ValueError, KeyError, OSError) as exc:  # e.g. a notebook not run this time
            problems.append(f"{qmd.relative_to(root)} left out of the preview: {exc}")
            continue
        found.append(_Found("index" if not found else qmd.stem, qmd, False, {}, md))
        # the part's title as the inputs' provenance supports it (trainperf.report.parts)
        part_of[qmd] = part_title(opens.get(qmd, ""), (values or {}).get("inputs"))
    for nb_ref in appendices:
        # an appendix page is the copy in <out>/<folder>/ (``_output/appendix/x.ipynb``: labels of
        # its own, trainperf.report.appendix), else the executed notebook itself
        copy = notebooks_dir.parent / nb_ref.parent.name / nb_ref.name
        nb = (
            (copy if copy.is_file() else notebooks_dir / nb_ref.name)
            if nb_ref.suffix == ".ipynb"
            else nb_ref
        )
        if not nb.is_file():
            problems.append(f"{nb_ref.relative_to(root)} left out of the preview: no file {nb}")
            continue
        if nb.suffix == ".ipynb":
            csvs = csv_outputs(nb)
            links = {(ci, oi): f"tables/{nb.stem}/{fname}" for ci, oi, fname, _ in csvs}
            md = notebook_markdown(nb, links)
            files = {f"tables/{nb.stem}/{fname}": text for _, _, fname, text in csvs}
            found.append(_Found(f"notebook-{nb.stem}", nb, True, files, md))
        else:
            found.append(_Found(nb.stem, nb, True, {}, chapter_markdown(nb, notebooks_dir, values)))
    docs = _pandoc_map(to_ast, [f.markdown for f in found])
    return [
        Page(
            name,
            source,
            appendix,
            callouts(doc["blocks"]),
            doc.get("meta", {}),
            csv_files=files,
            part=part_of.get(source, ""),
        )
        for (name, source, appendix, files, _), doc in zip(found, docs, strict=True)
    ]


def _number_pages(
    pages: list[Page], problems: list[str]
) -> tuple[dict[str, Target], dict[str, dict[str, Target]]]:
    """Chapters 1.. (unless ``{.unnumbered}``), appendices A..; then sections, figures and tables
    per page. Returns the book-wide index of ids and each page's own."""
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
    index: dict[str, Target] = {}
    local: dict[str, dict[str, Target]] = {}
    for p in pages:
        before = set(index)
        page_index: dict[str, Target] = {}
        number_page(p, page_index, problems)
        local[p.name] = page_index
        for k, v in page_index.items():
            if k not in before:
                index[k] = v
        if not p.title:
            p.title = p.source.stem
    return index, local


def _write_pages(
    tmp: Path,
    pages: list[Page],
    index: dict[str, Target],
    local: dict[str, dict[str, Target]],
    figures_dir: Path,
    book_title: str,
    note: str,
    problems: list[str],
    bibliography: Path | None = None,
) -> None:
    """Write every page (cross-references resolved, figures copied next to the pages) and its
    full-detail CSV files into ``tmp``."""
    copied: dict[Path, str] = {}

    def figure_src(src: str, page: Page) -> str:
        if src.startswith(("data:", "tpdata:", "http://", "https://", "#")):
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
    names = {p.name for p in pages}

    def page_link(target: str) -> str:
        # a link to another page of the book by its source (references.qmd#ref-x), as Quarto
        # resolves it: the preview's pages sit side by side, named by the source's stem
        m = re.fullmatch(r"(?:[\w./-]*/)?([\w-]+)\.qmd(#.*)?", target)
        return f"{m.group(1)}.html{m.group(2) or ''}" if m and m.group(1) in names else target

    for p in pages:
        resolve_xrefs(p, index, problems, local[p.name])
        if not p.appendix:
            rewrite_targets(p.blocks, image=lambda src, p=p: figure_src(src, p), link=page_link)
    bib = bibliography

    def html_of(p: Page) -> str:
        meta = {k: v for k, v in p.meta.items() if k == "nocite"}  # the references page's @*
        return to_html(
            {"pandoc-api-version": [1, 23, 1, 1], "meta": meta, "blocks": p.blocks},
            bib if not p.appendix else None,
        )

    bodies = _pandoc_map(html_of, pages)
    for i, (p, body) in enumerate(zip(pages, bodies, strict=True)):
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
