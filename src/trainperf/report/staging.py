"""The Quarto project of one run, staged in ``<out>/quarto/`` for ``quarto render``.

A book is made for the config's data, not the demo's with pieces hidden: the staged copy of the
project holds only what this run's data support.

* **Conditional content is decided here**, on this run's values (``values.yml``), with the same
  rule the preview site uses (:func:`trainperf.report.preview.pages.conditional_content`, Quarto's
  ``when-meta`` test). Quarto itself resolves ``{{< embed >}}`` before it applies
  ``.content-visible``, so an embed inside a hidden block of a chapter would still have to find its
  cell in the executed notebook; decided here, a hidden block is not in the staged chapter at all.
* **The parts and appendices are the config's**: the case study's part (:data:`trainperf.report.parts.CASE_STUDY_PART`)
  only in the demo's book, and no appendix page for a notebook whose input the config does not
  give (:func:`trainperf.report.parts.shown_appendices`): its chapter says so in one sentence.
* **An embed whose cell has no output** in this run's executed notebook (a table a notebook makes
  only for some inputs) becomes one sentence saying so instead of Quarto's fatal error.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import yaml

from trainperf.atomic import write_text_atomic
from trainperf.markup import md_text
from trainperf.report.notebooks import cell_options
from trainperf.report.outdir import remove_tree
from trainperf.report.parts import (
    absent_notebooks,
    shown_appendices,
    shown_chapters,
    with_part_titles,
)
from trainperf.report.preview.pages import conditional_content

__all__ = ["book_sources", "book_title", "embeddable_labels", "stage_book", "staged_chapter"]

_EMBED_RE = re.compile(r"\{\{<\s*embed\s+(\S+?\.ipynb)#([A-Za-z0-9_-]+)\s*>\}\}")

#: what an embed of a cell without output becomes (a table or figure these inputs do not make)
NO_OUTPUT = "*This table or figure is not made for the inputs of this book.*"


def book_title(name: str) -> str:
    """The title of a cluster's book (Quarto and preview): ``<name>: LLM training performance``."""
    return f"{name}: LLM training performance"


def book_sources(root: Path, project: dict) -> list[str]:
    """What the Quarto project is made of (copied by :func:`stage_book`): the top-level file or
    folder of every ``project.render`` entry not under ``_output/``, and the style and
    bibliography files at the root (``*.scss``, ``*.css``, ``*.bib``, ``*.csl``)."""
    items = {
        Path(e).parts[0]
        for e in (project.get("project", {}).get("render") or [])
        if not str(e).startswith("_output/")
    }
    items |= {p.name for ext in ("scss", "css", "bib", "csl") for p in root.glob(f"*.{ext}")}
    return sorted(items)


def embeddable_labels(notebook: Path) -> set[str]:
    """The ``#| label:`` values of ``notebook``'s code cells that have at least one output (what
    Quarto's ``{{< embed >}}`` can show); empty for a missing or unreadable notebook."""
    try:
        nb = json.loads(notebook.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return set()
    labels = set()
    for cell in nb.get("cells") or []:
        if cell.get("cell_type") != "code" or not cell.get("outputs"):
            continue
        try:
            label = cell_options("".join(cell.get("source") or [])).get("label")
        except Exception:  # a cell whose options are not YAML cannot be embedded either
            continue
        if label:
            labels.add(str(label))
    return labels


def staged_chapter(text: str, values: dict, notebooks_dir: Path) -> str:
    """A chapter's text as the staged project holds it: ``when-meta`` / ``unless-meta`` blocks
    decided on ``values`` (the ``values`` mapping of ``values.yml``), and every embed whose cell
    has no output in ``notebooks_dir/<notebook>`` replaced by :data:`NO_OUTPUT`."""
    text = conditional_content(text, {"values": values})
    cache: dict[str, set[str]] = {}

    def embed(m: re.Match) -> str:
        name = Path(m.group(1)).name
        if name not in cache:
            cache[name] = embeddable_labels(notebooks_dir / name)
        return m.group(0) if m.group(2) in cache[name] else NO_OUTPUT

    return _EMBED_RE.sub(embed, text)


def _copy_sources(root: Path, stage: Path, project: dict) -> None:
    for item in book_sources(root, project):
        src, dst = root / item, stage / item
        if dst.is_dir() and not dst.is_symlink():
            remove_tree(dst)  # a file the user put there stays (report.outdir)
        if src.is_dir():
            shutil.copytree(src, dst, dirs_exist_ok=True)
        elif src.is_file():
            shutil.copyfile(src, dst)


def stage_book(
    root: Path,
    out: Path,
    figures: Path,
    name: str,
    inputs: dict[str, bool] | None = None,
    values: dict | None = None,
) -> Path:
    """The Quarto project of this run, ready for ``quarto render``: ``<out>/quarto/``.

    The chapters embed ``../_output/notebooks/*.ipynb`` and show ``../figures/*``, and
    ``_quarto.yml`` reads ``_output/values.yml``: in the staging folder ``_output`` holds a link to
    each of ``out``'s entries (the appendix pages shown are copies, :func:`_stage_output`) and
    ``figures`` is a link to ``figures``, so the book shows this run's outputs whatever
    ``--out`` is, and nothing is written into the checkout. The sources (:func:`book_sources`)
    are copied fresh; ``_quarto.yml`` is copied with the cluster's ``name`` in the book's title,
    the part titles its ``inputs`` support, the case study's part only for the demo and no
    appendix of a notebook whose input is not given (:mod:`trainperf.report.parts`); with
    ``values`` every ``.qmd`` is staged by :func:`staged_chapter`. A ``.gitignore`` with
    ``/.quarto/`` stops ``quarto render`` from editing one.

    Args:
        inputs: ``values.inputs`` (``demo`` among them); None: the book as ``_quarto.yml`` has it.
        values: the ``values`` mapping of this run's ``values.yml``; None: chapters copied as
            they are.

    Returns:
        The staging folder (``quarto render`` runs there; the book lands in its ``_book/``).
    """

    stage = out / "quarto"
    stage.mkdir(parents=True, exist_ok=True)
    project = yaml.safe_load((root / "_quarto.yml").read_text(encoding="utf-8"))
    _copy_sources(root, stage, project)
    book = project.setdefault("book", {})
    # Quarto reads the title as Markdown (raw HTML included): the config's name is text there
    book["title"] = md_text(book_title(name))
    chapters = shown_chapters(book.get("chapters") or [], inputs)
    book["chapters"] = with_part_titles(chapters, inputs)
    absent = absent_notebooks(out / "notebooks")
    book["appendices"] = shown_appendices(book.get("appendices") or [], absent)
    kept = _flat(book["chapters"]) | set(book["appendices"])
    render = project.setdefault("project", {}).get("render")
    if render:
        project["project"]["render"] = [e for e in render if e in kept]
    write_text_atomic(
        yaml.safe_dump(project, sort_keys=False, allow_unicode=True), stage / "_quarto.yml"
    )
    write_text_atomic("/.quarto/\n/_book/\n", stage / ".gitignore")
    if values is not None:
        for qmd in _staged_qmds(stage, book_sources(root, project)):
            text = qmd.read_text(encoding="utf-8")
            write_text_atomic(staged_chapter(text, values, out / "notebooks"), qmd)
    for link in ("_output", "figures"):
        p = stage / link
        if p.is_symlink() or p.is_file():
            p.unlink()
        elif p.is_dir():
            shutil.rmtree(p)  # the staging's own: links and copies only (never follows a link)
    (stage / "figures").symlink_to(figures.resolve(), target_is_directory=True)
    _stage_output(out, stage / "_output", set(book["appendices"]))
    return stage


def _stage_output(out: Path, dest: Path, appendices: set[str]) -> None:
    """``dest`` (``<stage>/_output``): a link to each of ``out``'s entries but the staging folder
    itself, and the appendix pages as real copies. Quarto resolves a page's path through links,
    so a linked ``_output/appendix/x.ipynb`` would sit outside the project for any ``--out`` but
    the default, and the project's bibliography, ``../../references.bib`` from it, would not be
    found."""
    dest.mkdir(parents=True)
    stage = dest.parent.resolve()
    for entry in sorted(out.iterdir()):
        if entry.resolve() == stage:
            continue
        if entry.name == "appendix" and entry.is_dir():
            (dest / "appendix").mkdir()
            for page in appendices:
                src = out / Path(page).relative_to("_output")
                if src.is_file():
                    shutil.copyfile(src, dest / Path(page).relative_to("_output"))
            continue
        (dest / entry.name).symlink_to(entry.resolve(), target_is_directory=entry.is_dir())


def _staged_qmds(stage: Path, items: list[str]) -> list[Path]:
    found: list[Path] = []
    for item in items:
        p = stage / item
        if p.is_file() and p.suffix == ".qmd":
            found.append(p)
        elif p.is_dir() and not p.is_symlink():
            found.extend(sorted(p.rglob("*.qmd")))
    return found


def _flat(entries) -> set[str]:
    out: set[str] = set()
    for e in entries or []:
        if isinstance(e, dict):
            out |= _flat(e.get("chapters"))
        else:
            out.add(str(e))
    return out
