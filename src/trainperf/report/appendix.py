"""The book's appendix pages: copies of the executed notebooks whose labels are their own.

A chapter embeds a labelled cell of an executed notebook (``{{< embed ../_output/notebooks/x.ipynb#tbl-y >}}``)
and the appendix shows the whole notebook. Were the appendix the executed notebook itself, every
embedded label would exist twice in the book, and Quarto numbers a label by the page it meets
first, so a chapter's ``@tbl-y`` could print the appendix's "Table C.1" right above the chapter's
"Table 3.1". The appendix pages are therefore copies (``<out>/appendix/x.ipynb``, listed in
``_quarto.yml``) in which every ``tbl-``/``fig-`` label carries the suffix :data:`SUFFIX`: each
label is defined on one page only, and the chapters' cross-references resolve to the chapters.
The executed notebooks themselves are left as they are (they are the rerun records' outputs).
"""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

from trainperf.atomic import write_text_atomic
from trainperf.markup import md_code, md_text
from trainperf.report.absent import is_stand_in_cell
from trainperf.report.outdir import unlink_owned

__all__ = ["SUFFIX", "appendix_label", "parameters_markdown", "write_appendix_notebooks"]

SUFFIX = "-nb"
"""Added to every ``tbl-``/``fig-`` label of an appendix copy."""

_LABEL_LINE = re.compile(r"^(#\|\s*label:\s*)([\"']?)((?:tbl|fig)-[A-Za-z0-9_-]+)\2(\s*)$")


def appendix_label(label: str) -> str:
    """The label a chapter's ``label`` has on its appendix page (``tbl-x`` -> ``tbl-x-nb``)."""
    return label if label.endswith(SUFFIX) else label + SUFFIX


def _relabel(source: str) -> str:
    out = []
    for line in source.split("\n"):
        m = _LABEL_LINE.match(line)
        if m:
            line = f"{m.group(1)}{m.group(2)}{appendix_label(m.group(3))}{m.group(2)}{m.group(4)}"
        out.append(line)
    return "\n".join(out)


#: A warning as Python prints it: ``<file>:<line>: <Category>: <message>`` (the file a path of
#: the machine that ran the notebook), then the source line that warned, indented.
_WARNING = re.compile(r"^\S+?:\d+: (\w+(?:Warning|Error)): (.*)\n(?:  .*\n?)?", re.MULTILINE)


def _plain_warnings(text: str) -> str:
    """``text`` (a stderr stream) with each Python warning as ``<Category>: <message>``, without
    the file and line of the machine that ran the notebook and the echoed source line."""
    return _WARNING.sub(lambda m: f"{m.group(1)}: {m.group(2)}\n", text)


def _relative_paths(text: str, prefixes: list[tuple[str, str]]) -> str:
    for prefix, short in prefixes:
        text = text.replace(prefix, short)
    return text


def _shown_value(node: ast.expr) -> str | None:
    """A parameter's value as the page shows it: text and paths in code, ``None`` as "not
    given", booleans as "yes" / "no", numbers and lists as written; None where it is no literal."""
    try:
        value = ast.literal_eval(node)
    except (ValueError, SyntaxError, TypeError):
        return None
    if value is None:
        return "not given"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, str):
        # a config's text (a description, a name) is untrusted: a code span that no backtick in it
        # closes and no shortcode forms in (trainperf.markup); pandoc keeps a "|" in it in the cell
        code = md_code(value)
        if code.startswith("` ") and not code.startswith("``"):
            code = f"`{code[2:-2]}`"  # no backtick inside: the padding spaces are not needed
        return code or "(empty)"
    if isinstance(value, (int, float)):
        return str(value)
    if isinstance(value, (list, tuple)) and all(isinstance(v, (str, int, float)) for v in value):
        # a list of names or numbers as a reader writes it, not Python's repr; each item as text
        return ", ".join(md_text(str(v)) for v in value) if value else "(none)"
    return md_text(value)  # a dict or nested list: every punctuation character escaped


def _assignments(source: str) -> list[tuple[str, str]] | None:
    """``[(name, shown value)]`` of a cell of ``name = literal`` lines (comments allowed), in
    order; None where a statement is no such assignment."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return None
    rows = []
    for stmt in tree.body:
        if not (
            isinstance(stmt, ast.Assign)
            and len(stmt.targets) == 1
            and isinstance(stmt.targets[0], ast.Name)
        ):
            return None
        shown = _shown_value(stmt.value)
        if shown is None:
            return None
        rows.append((stmt.targets[0].id, shown))
    return rows


def parameters_markdown(source: str, defaults: str | None = None) -> str | None:
    """The parameters of a run as one Markdown table, so that an appendix page shows ``not
    given`` and ``no`` rather than Python's ``None`` and ``False``.

    Args:
        source: the cell papermill injected (``name = literal`` lines).
        defaults: the notebook's own parameters cell (its defaults, the same form); where given,
            the table holds every parameter, in the notebook's order, each with the value this run
            used (injected, else the default), so that no default of the demo's (a reference
            system's name, a bundled path) is shown beside the value that replaced it.

    Returns:
        The table, or None where a line of ``source`` (or of ``defaults``) is not such an
        assignment (the cells are then kept as code).
    """
    injected = _assignments(source)
    if not injected:
        return None
    rows = dict(injected)
    if defaults is not None:
        declared = _assignments(defaults)
        if declared is None:
            return None
        rows = {name: rows.get(name, shown) for name, shown in declared} | rows
    lines = [f"| `{name}` | {shown} |" for name, shown in rows.items()]
    return (
        "**Parameters of this run**, set by `trainperf report` (the notebook's default where "
        "the run set none):\n\n| Parameter | Value |\n|---|---|\n" + "\n".join(lines)
    )


def write_appendix_notebooks(
    notebooks_dir: str | Path,
    appendix_dir: str | Path,
    root: str | Path | None = None,
    out: str | Path | None = None,
    figures: str | Path | None = None,
    named: dict[str, str] | None = None,
) -> list[Path]:
    """Write the appendix copy of every executed notebook ``notebooks_dir/*.ipynb`` into
    ``appendix_dir`` (atomically; copies of notebooks no longer there are removed).

    The parameters papermill injected name absolute paths of the machine that built the book;
    in the copy, a path below ``out`` (the report's output folder) is written relative to it as
    ``<out's name>/...``, one below ``figures`` (the figures folder) as ``<its name>/...``, and a
    path below ``root`` (the checkout) relative to the checkout, one below a folder of ``named``
    (folder -> how to write it, e.g. the batch cache as ``$TRAINPERF_CACHE/batch``) as named, and
    any other path below the home folder as ``~/...``.

    Returns:
        the paths written, in name order.

    Raises:
        OSError: a notebook cannot be read or a copy written; ValueError: a notebook is not JSON.
    """
    src, dst = Path(notebooks_dir), Path(appendix_dir)
    dst.mkdir(parents=True, exist_ok=True)
    prefixes = []  # the longest first: _output lies inside the checkout
    if out is not None:
        prefixes.append((f"{Path(out).resolve()}/", f"{Path(out).name}/"))
    if figures is not None:
        prefixes.append((f"{Path(figures).resolve()}/", f"{Path(figures).name}/"))
        prefixes.append((str(Path(figures).resolve()), Path(figures).name))  # the folder itself
    if root is not None:
        prefixes.append((f"{Path(root).resolve()}/", ""))
    for folder, shown in (named or {}).items():
        prefixes.append((f"{Path(folder).resolve()}/", f"{shown}/"))
        prefixes.append((f'{Path(folder).resolve()}"', f'{shown}"'))  # the path itself, quoted
    prefixes.append((f"{Path.home().resolve()}/", "~/"))
    prefixes.sort(key=lambda p: -len(p[0]))
    written = []
    names = set()
    for nb_path in sorted(src.glob("*.ipynb")):
        nb = json.loads(nb_path.read_text(encoding="utf-8"))
        # a stand-in page (trainperf.report.absent) shows its title and sentence once: the cells
        # kept only so that the chapters' embeds resolve are left out of its own page
        nb["cells"] = [c for c in nb.get("cells", []) if not is_stand_in_cell(c)]
        # the notebook's defaults cell ("parameters" tag): merged into the run's table below and
        # left out, where both cells are plain assignments
        defaults = next(
            (c for c in nb["cells"] if "parameters" in c.get("metadata", {}).get("tags", [])),
            None,
        )
        defaults_text = None
        if defaults is not None:
            defaults_text = defaults.get("source", "")
            defaults_text = (
                defaults_text if isinstance(defaults_text, str) else "".join(defaults_text)
            )
            defaults_text = _relative_paths(defaults_text, prefixes)
        merged = False
        for cell in nb.get("cells", []):
            if cell.get("cell_type") != "code":
                continue
            text = cell.get("source", "")
            text = text if isinstance(text, str) else "".join(text)
            new = _relabel(text)
            if "injected-parameters" in cell.get("metadata", {}).get("tags", []):
                new = _relative_paths(new, prefixes)
                table = parameters_markdown(new, defaults_text)
                merged = table is not None and defaults_text is not None
                if table is None:
                    table = parameters_markdown(new)
                if table is not None:  # shown as a table, not as Python
                    cell.clear()
                    cell.update(
                        {
                            "cell_type": "markdown",
                            "id": "injected-parameters",
                            "metadata": {},
                            "source": table.splitlines(
                                keepends=True
                            ),  # lines, as on disk (Quarto joins them)
                        }
                    )
                    continue
            if new != text:
                cell["source"] = new
            for out in cell.get("outputs") or []:
                if out.get("output_type") == "stream" and out.get("name") == "stderr":
                    raw = out.get("text", "")
                    raw = raw if isinstance(raw, str) else "".join(raw)
                    out["text"] = _relative_paths(_plain_warnings(raw), prefixes)
        if merged:
            nb["cells"] = [c for c in nb["cells"] if c is not defaults]
        target = dst / nb_path.name
        write_text_atomic(json.dumps(nb, ensure_ascii=False, indent=1) + "\n", target)
        written.append(target)
        names.add(nb_path.name)
    for old in dst.glob("*.ipynb"):
        if old.name not in names:
            unlink_owned(old)  # a notebook the user put there stays
    return written
