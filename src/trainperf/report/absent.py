"""A notebook whose input is not given: not executed; its place in the book is a copy of the
notebook whose table cells show one sentence saying so (and nothing computed, so nothing
synthetic either).

Every labelled table cell (``#| label: tbl-...``) gets the sentence as its only output, so each
``{{< embed NB.ipynb#tbl-... >}}`` of a chapter still resolves, in Quarto and in the preview; the
chapters hide their prose about the missing input with ``when-meta="values.inputs.<kind>"``.
"""

from __future__ import annotations

import json
from pathlib import Path

from trainperf.atomic import write_text_atomic
from trainperf.report.notebooks import cell_options

__all__ = ["write_absent_notebook"]


def write_absent_notebook(source: str | Path, output: str | Path, sentence: str) -> Path:
    """Write ``output``: ``source`` without execution, the sentence under its title and as the
    output of every labelled table cell (``text/markdown`` and ``text/plain``).

    Returns:
        ``output``.
    """
    nb = json.loads(Path(source).read_text(encoding="utf-8"))
    note = {"cell_type": "markdown", "metadata": {}, "source": [f"**Input not given.** {sentence}"]}
    cells = []
    for i, cell in enumerate(nb["cells"]):
        if cell["cell_type"] == "code":
            cell["outputs"], cell["execution_count"] = [], None
            label = str(cell_options("".join(cell["source"])).get("label", ""))
            if label.startswith("tbl-"):
                cell["outputs"] = [
                    {
                        "output_type": "display_data",
                        "metadata": {},
                        "data": {"text/markdown": [sentence], "text/plain": [sentence]},
                    }
                ]
        cells.append(cell)
        if i == 0:
            cells.append(note)
    nb["cells"] = cells
    nb.setdefault("metadata", {})["trainperf"] = {"input_given": False, "note": sentence}
    write_text_atomic(json.dumps(nb, indent=1, ensure_ascii=False) + "\n", output)
    return Path(output)
