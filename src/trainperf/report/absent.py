"""A notebook whose input is not given: not executed; its place in the book is a stand-in with
its title and its table cells, each showing one sentence saying so (nothing computed, so nothing
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
    """Write ``output``: the title of ``source``, the sentence, and every labelled table cell of
    ``source`` with only its ``#|`` options as code and the sentence as its only output
    (``text/markdown`` and ``text/plain``). The rest (code and prose about the default data) is
    left out: the page describes an analysis that did not run.

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
            "source": [f"**Input not given.** {sentence}"],
        },
    ]
    for cell in nb["cells"]:
        if cell["cell_type"] != "code":
            continue
        text = "".join(cell["source"])
        label = str(cell_options(text).get("label", ""))
        if not label.startswith("tbl-"):
            continue
        opts = [ln + "\n" for ln in text.splitlines() if ln.startswith("#|")]
        cells.append(
            {
                "cell_type": "code",
                "execution_count": None,
                "id": cell.get("id", f"absent-{label}"),
                "metadata": {},
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
    nb.setdefault("metadata", {})["trainperf"] = {"input_given": False, "note": sentence}
    write_text_atomic(json.dumps(nb, indent=1, ensure_ascii=False) + "\n", output)
    return Path(output)
