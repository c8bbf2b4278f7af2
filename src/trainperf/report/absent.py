"""A notebook whose input is not given (or that failed): not executed; its place in the book is
a stand-in: its title and one sentence saying why (nothing computed, so nothing synthetic either).

Every labelled cell (``#| label: tbl-...`` / ``fig-...``) of the source is kept, marked as a
stand-in (cell metadata ``{"trainperf": {"stand_in": true}}``) with the sentence as its only
output, so that each ``{{< embed NB.ipynb#tbl-... >}}`` of a chapter still finds its label (Quarto
resolves embeds before it applies conditional content, so the label must exist even where the
chapter hides the embed with ``when-meta="values.inputs.<kind>"``), while the notebook's own page
(the appendix copy, :mod:`trainperf.report.appendix`, which leaves the marked cells out) shows the
title and the sentence only. Not ``#| include: false``: Quarto (1.10) refuses to embed a cell
with it ("doesn't contain output to embed"), which stopped the book of every config that leaves
an input out. Why not drop the cells and let the chapters stop embedding:
the chapters would need a second, label-free copy of every section, and an embed elsewhere (the
summary, the talk) would break.
"""

from __future__ import annotations

import json
from pathlib import Path

from trainperf.atomic import write_text_atomic
from trainperf.report.notebooks import cell_options

__all__ = ["STAND_IN_KEY", "is_stand_in_cell", "write_absent_notebook"]

STAND_IN_KEY = "trainperf"
"""Cell metadata key of a stand-in cell (``{"trainperf": {"stand_in": true}}``)."""


def is_stand_in_cell(cell: dict) -> bool:
    """Whether a notebook cell is a stand-in cell of :func:`write_absent_notebook`."""
    meta = cell.get("metadata") or {}
    return bool(isinstance(meta.get(STAND_IN_KEY), dict) and meta[STAND_IN_KEY].get("stand_in"))


def write_absent_notebook(
    source: str | Path, output: str | Path, sentence: str, heading: str = "Input not given."
) -> Path:
    """Write ``output``: the title of ``source``, ``heading`` and the sentence, and every labelled
    ``tbl-``/``fig-`` cell of ``source`` with only its ``#|`` options as code, marked as a
    stand-in (see the module), and the sentence as its only output (``text/markdown`` and ``text/plain``). The rest
    (code and prose about the default data) is left out: the page describes an analysis that did
    not run.

    Args:
        heading: the bold lead of the note (``Input not given.``, ``Not executed: the notebook
            failed.``).

    Returns:
        ``output``.
    """
    nb = json.loads(Path(source).read_text(encoding="utf-8"))
    first = "".join(nb["cells"][0]["source"]).splitlines() if nb["cells"] else []
    title = next((ln for ln in first if ln.startswith("# ")), "# " + Path(source).stem)
    cells = [
        {"cell_type": "markdown", "id": "absent-title", "metadata": {}, "source": [title]},
        {
            "cell_type": "markdown",
            "id": "absent-note",
            "metadata": {},
            "source": [f"**{heading}** {sentence}"],
        },
    ]
    for cell in nb["cells"]:
        if cell["cell_type"] != "code":
            continue
        text = "".join(cell["source"])
        label = str(cell_options(text).get("label", ""))
        if not label.startswith(("tbl-", "fig-")):
            continue
        opts = [ln + "\n" for ln in text.splitlines() if ln.startswith("#|")]
        opts = [ln for ln in opts if not ln.replace(" ", "").startswith("#|include:")]
        cells.append(
            {
                "cell_type": "code",
                "execution_count": None,
                "id": cell.get("id", f"absent-{label}"),
                "metadata": {STAND_IN_KEY: {"stand_in": True}},
                "source": opts,
                "outputs": [
                    {
                        "output_type": "display_data",
                        "metadata": {},
                        "data": {"text/markdown": [sentence], "text/plain": [sentence]},
                    }
                ],
            }
        )
    nb["cells"] = cells
    nb.setdefault("metadata", {})["trainperf"] = {
        "input_given": heading != "Input not given.",  # a failed notebook had its input
        "executed": False,
        "note": sentence,
    }
    write_text_atomic(json.dumps(nb, indent=1, ensure_ascii=False) + "\n", output)
    return Path(output)
