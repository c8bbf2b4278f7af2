"""The preview's pandoc passes give the HTML pandoc itself gives, faster: notebook outputs' data
URIs kept out of pandoc, and plain output blocks written as pandoc writes them (no syntax lookup
of their class)."""

from __future__ import annotations

import base64
import json

import pypandoc
import pytest

from trainperf.report.preview import xref


def _pandoc_html(markdown: str) -> str:
    """What pandoc writes for ``markdown`` in the two passes, with nothing of ours in between."""
    ast = pypandoc.convert_text(markdown, "json", format="markdown")
    return pypandoc.convert_text(
        ast, "html5", format="json", extra_args=["--mathml", "--wrap=none"]
    )


def _ours(markdown: str) -> str:
    try:
        return xref.to_html(xref.to_ast(markdown))
    finally:
        xref.release_data_uris()


@pytest.mark.parametrize(
    "text",
    [
        "35 result files, 51503 MLLOG events, 0 warnings",
        "{'n_result_files': 35, \"quoted\": 'x'}",
        "a < b && c > d; <script>alert(1)</script>",
        "テンソルコア 45 % — ünïcödé\ttab",
        "line one\n\n  indented line three\n",
    ],
)
@pytest.mark.parametrize("cls", ["tp-output", "tp-error"])
def test_output_blocks_are_written_as_pandoc_writes_them(text, cls):
    markdown = f"Before.\n\n```{{.{cls}}}\n{text}\n```\n\nAfter.\n"
    assert _ours(markdown) == _pandoc_html(markdown)


def test_a_code_block_with_a_language_still_goes_through_pandoc():
    markdown = "```python\nimport polars as pl\n```\n"
    html = _ours(markdown)
    assert html == _pandoc_html(markdown) and 'class="sourceCode python"' in html


def test_data_uris_come_back_byte_for_byte():
    svg = '<svg xmlns="http://www.w3.org/2000/svg" width="2" height="2"><rect width="2"/></svg>'
    b64 = base64.b64encode(svg.encode()).decode()
    png = base64.b64encode(b"\x89PNG\r\n\x1a\n" + bytes(range(256))).decode()
    markdown = (
        f"# A page\n\n![](data:image/svg+xml;base64,{b64})\n\ntext\n\n"
        f"![a chart](data:image/png;base64,{png})\n\n![](data:image/svg+xml;base64,{b64})\n"
    )
    ast = xref.to_ast(markdown)
    # pandoc never saw the payloads: the AST holds short tokens
    assert b64 not in json.dumps(ast) and png not in json.dumps(ast)
    html = xref.to_html(ast)
    xref.release_data_uris()
    assert html == _pandoc_html(markdown)
    assert html.count(f"data:image/svg+xml;base64,{b64}") == 2
