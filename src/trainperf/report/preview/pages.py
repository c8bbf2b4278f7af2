"""Chapters and notebooks as Markdown for pandoc: shortcodes (include, meta, embed), conditional
content on metadata, notebook outputs by Quarto's MIME priority, the full-detail CSV tables."""

from __future__ import annotations

import base64
import re
from pathlib import Path
from typing import NamedTuple

import nbformat

from trainperf.report.notebooks import cell_options

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


def _outputs_markdown(cell, csv_links: dict[int, str] | None = None, stderr: bool = True) -> str:
    """A cell's outputs as Markdown; ``stderr`` False leaves out its stderr streams (warnings,
    which name files of the machine that ran it): an embed in a chapter shows the table or
    figure, as Quarto's embed does."""
    parts = []
    for i, out in enumerate(cell.get("outputs", [])):
        kind = out.get("output_type")
        if kind == "stream" and not stderr and out.get("name") == "stderr":
            continue
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

    return cell_options(cell.get("source", ""), where)


class CsvOutput(NamedTuple):
    """One ``text/csv`` output of an executed notebook (:func:`csv_outputs`)."""

    cell: int  # the cell's index in the notebook
    output: int  # the output's index in the cell
    name: str  # file name: tbl-x.csv, tbl-x-2.csv, cell-<n>.csv
    text: str  # the CSV text


def csv_outputs(nb_path: str | Path) -> list[CsvOutput]:
    """The ``text/csv`` outputs of an executed notebook (full-detail tables), as
    :class:`CsvOutput` ``(cell index, output index, file name, csv text)``, the file name from the
    cell's label (``tbl-x.csv``; ``tbl-x-2.csv`` for a second table) or ``cell-<n>.csv``."""

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
                # an appendix copy's label (tbl-x-nb, trainperf.report.appendix) names the CSV
                # as the chapter's table does: tbl-x.csv
                stem = str(label or f"cell-{ci}").removesuffix("-nb") + (f"-{k}" if k > 1 else "")
                found.append(CsvOutput(ci, oi, f"{stem}.csv", _text(data["text/csv"])))
    return found


def _float_markdown(label: str, caption: str, content: str) -> str:
    kind = label.split("-", 1)[0]
    cap = f"::: {{.tp-caption}}\n{caption}\n:::\n" if caption else ""
    if kind == "fig":  # figure captions go below, table captions above, as Quarto places them
        return f"::: {{#{label} .tp-float .tp-float-fig}}\n{content}\n\n{cap}:::"
    return f"::: {{#{label} .tp-float .tp-float-{kind}}}\n{cap}\n{content}\n:::"


def _embed_markdown(nb_path: Path, label: str) -> str:

    if not nb_path.is_file():
        raise FileNotFoundError(f"embed: no executed notebook {nb_path} (was it run?)")
    nb = nbformat.read(nb_path, as_version=4)
    for ci, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        opts = _cell_options(cell, f"{nb_path} cell {ci}")
        if opts.get("label") == label or cell.get("id") == label:
            content = _outputs_markdown(cell, stderr=False)
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


_FENCE_OPEN_RE = re.compile(r"^\s*(:{3,})\s*\{([^}]*)\}\s*$|^\s*(:{3,})\s*[A-Za-z]")
_FENCE_CLOSE_RE = re.compile(r"^\s*:{3,}\s*$")
_COND_RE = re.compile(r"\b(when|unless)-meta\s*=\s*[\"']([^\"']+)[\"']")


def _meta_true(values: dict, dotted: str) -> bool:
    """Quarto's test (``content-hidden.lua``, ``check_meta``): the key, split on ``.``, names a
    boolean that is true; anything else (missing, a string, a number) is false."""
    cur = values
    for part in dotted.split("."):
        if not isinstance(cur, dict) or part not in cur:
            return False
        cur = cur[part]
    return cur is True


def conditional_content(text: str, values: dict) -> str:
    """Keep or drop Quarto's ``.content-visible`` / ``.content-hidden`` divs whose condition is
    ``when-meta`` or ``unless-meta`` (other conditions, such as ``when-format``, are kept as they
    are: the preview is HTML). The fences of a decided div are removed, its content kept or not."""
    out: list[str] = []
    stack: list[tuple[bool, bool]] = []  # (decided here, keep)
    in_code = False
    for line in text.splitlines(keepends=True):
        if line.lstrip().startswith(("```", "~~~")):
            in_code = not in_code
        keep_now = all(k for _, k in stack)
        if not in_code and _FENCE_CLOSE_RE.match(line) and stack:
            decided, _ = stack.pop()
            if not decided and keep_now:
                out.append(line)
            continue
        m = None if in_code else _FENCE_OPEN_RE.match(line)
        if m:
            attrs = m.group(2) or ""
            conds = _COND_RE.findall(attrs)
            kind = (
                "visible"
                if ".content-visible" in attrs
                else "hidden"
                if ".content-hidden" in attrs
                else None
            )
            if kind and conds:
                met = all(_meta_true(values, key) == (w == "when") for w, key in conds)
                stack.append((True, met if kind == "visible" else not met))
                continue
            stack.append((False, True))
        if keep_now:
            out.append(line)
    return "".join(out)


#: the old private name (tests import it)
_conditional_content = conditional_content


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
    text = conditional_content(_inline_includes(qmd), {"values": values})
    nb_dir = Path(notebooks_dir)

    def embed(m: re.Match) -> str:
        nb = nb_dir / Path(m.group(1)).name
        if not m.group(2):
            raise ValueError(f"{qmd}: embed of a whole notebook ({m.group(1)}) is not supported")
        return "\n\n" + _embed_markdown(nb, m.group(2)) + "\n\n"

    # meta values last, in one pass: a value is never read again as a shortcode (an include or
    # an embed written into a config's name stays text), whatever the value holds
    text = _EMBED_RE.sub(embed, text)
    return _META_RE.sub(lambda m: _lookup({"values": values}, m.group(1)), text)


def notebook_markdown(
    nb_path: str | Path, csv_links: dict[tuple[int, int], str] | None = None
) -> str:
    """An executed notebook as one Markdown page, as Quarto renders a notebook chapter: markdown
    cells as text, each code cell's source folded under "Code", its outputs (labelled ``tbl-``/
    ``fig-`` cells as numbered floats with their captions), and under a table the link
    ``csv_links[(cell, output)]`` to its CSV."""

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
        if opts.get("include") is False:  # as Quarto: not on its own page (embeds still find it)
            continue
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
