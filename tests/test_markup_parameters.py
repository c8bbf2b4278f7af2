"""The appendix's "Parameters of this run" table shows a config's text as text (trial B F2): no live
HTML, no Quarto shortcode, on the notebook write_appendix_notebooks produces."""

from __future__ import annotations

import json

import pytest

from trainperf.markup import WORD_JOINER
from trainperf.report import appendix

SCRIPT = "a` <script>alert(3)</script> `b"
SHORTCODE = "{{< include /etc/passwd >}}"


def _table(tmp_path, source: str) -> str:
    nb = {
        "cells": [
            {
                "cell_type": "code",
                "id": "p",
                "metadata": {"tags": ["injected-parameters"]},
                "source": source,
                "outputs": [],
            }
        ],
        "metadata": {},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    (tmp_path / "nb").mkdir()
    (tmp_path / "nb" / "cluster.ipynb").write_text(json.dumps(nb))
    [copy] = appendix.write_appendix_notebooks(tmp_path / "nb", tmp_path / "appendix")
    cell = json.loads(copy.read_text())["cells"][0]
    assert cell["cell_type"] == "markdown"
    return "".join(cell["source"])


def test_description_with_script_and_shortcode_is_text(tmp_path):
    src = _table(
        tmp_path,
        f"description = {SCRIPT!r}\nname = {SHORTCODE!r}\ntags = ['<b>x</b>', 'a|b']\nn = 3",
    )
    # the description in a code span fenced by 2 backticks (its longest backtick run is 1)
    assert f"| `description` | `` {SCRIPT} `` |" in src
    # the shortcode's braces split by a word joiner: no "{{" or "}}" left
    assert "{{" not in src and "}}" not in src
    assert (
        f"{{{WORD_JOINER}{{{WORD_JOINER}< include /etc/passwd >{WORD_JOINER}}}{WORD_JOINER}}}"
        in src
    )
    # a list of texts: its items, comma-separated (no Python repr), each with every punctuation
    # character escaped (no raw HTML, no cell-splitting pipe)
    assert "| `tags` | \\<b\\>x\\<\\/b\\>, a\\|b |" in src
    assert "| `n` | 3 |" in src
    pypandoc = pytest.importorskip("pypandoc")
    html = pypandoc.convert_text(src, "html5", format="markdown", extra_args=["--wrap=none"])
    assert "<script>" not in html and "<b>" not in html
    assert "&lt;script&gt;alert(3)&lt;/script&gt;" in html
    assert html.count("<tr") == 5  # header + 4 parameters: nothing split a row
