"""Config strings reach pages as text (issue 26): no HTML, no Markdown markup, no cross-reference and
no Quarto shortcode can come out of a config's name or description, in the chapters (values.yml,
{{< meta >}}), the comparison notebook's Markdown outputs and the preview site."""

from __future__ import annotations

import ast
import html as h
import json
import re
from pathlib import Path

import pytest
from IPython.display import Markdown

from trainperf.config import config_values, load_config
from trainperf.markup import WORD_JOINER, html_text, md_code, md_text
from trainperf.report.preview.pages import chapter_markdown

ROOT = Path(__file__).resolve().parents[1]
HOSTILE = [
    "<script>alert(1)</script>",
    "[click](javascript:alert(1))",
    "<javascript:alert(1)>",
    "**bold** _it_ `code` $x^2$",
    "see @sec-cluster and [@fig-x]",
    "{{< include /etc/passwd >}}",
    "{{% meta values.x %}} {{{< var y >}}}",
    "line one\n# heading\n::: {.callout}\n- item",
    "a\\b & c ] ) > |",
]


def html_of(md: str) -> str:
    pypandoc = pytest.importorskip("pypandoc")
    return pypandoc.convert_text(md, "html", format="markdown")


def visible(html: str) -> str:
    return h.unescape(re.sub(r"<[^>]+>", "", html)).replace(WORD_JOINER, "").strip()


@pytest.mark.parametrize("s", HOSTILE)
def test_md_text_shows_exactly_its_characters_and_nothing_else(s):
    md = md_text(s)
    assert "{{" not in md and "}}" not in md  # no shortcode can form, in any reading
    out = html_of(md)
    assert out.startswith("<p>") and out.count("<p>") == 1  # one paragraph: no block structure
    assert "<script" not in out and "<a " not in out and "<strong" not in out and "<em" not in out
    assert "<code" not in out and "math" not in out and "cite" not in out
    assert visible(out) == " ".join(s.split())  # the characters, newlines as spaces


def test_md_code_is_one_code_span_however_many_backticks():
    s = "a`b``c {{< include x >}}"
    out = html_of(md_code(s))
    assert out.count("<code>") == 1 and visible(out) == s
    assert "{{" not in md_code(s)


def test_html_text():
    assert html_text('<a href="x">{{y}}</a>') == (
        "&lt;a href=&quot;x&quot;&gt;{"
        + WORD_JOINER
        + "{"
        + WORD_JOINER
        + "y"
        + WORD_JOINER
        + "}"
        + WORD_JOINER
        + "}&lt;/a&gt;"
    )


def test_config_values_escaped_for_the_prose(tmp_path):
    demo = (ROOT / "configs" / "sakuraone.yaml").read_text()
    lines = demo.splitlines()
    k = next(i for i, ln in enumerate(lines) if ln.startswith("name:"))
    lines[k] = "name: '<script>alert(1)</script> {{< include /etc/passwd >}}'"
    (tmp_path / "configs").mkdir()
    (tmp_path / "data").symlink_to(ROOT / "data")  # the demo config's ../data/... paths
    cfg_path = tmp_path / "configs" / "x`y.yaml"
    cfg_path.write_text("\n".join(lines) + "\n")
    cfg = load_config(cfg_path)
    v = config_values(cfg)["config"]
    out = html_of(f"The evaluated cluster is {v['name']}, config {v['file']}.")
    assert "<script" not in out and "{{" not in v["name"]
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in out
    assert "<code>x`y.yaml</code>" in out


def test_preview_never_reads_a_value_as_a_shortcode(tmp_path):
    qmd = tmp_path / "c.qmd"
    qmd.write_text("Cluster {{< meta values.config.name >}}.\n")
    for name in ["{{< embed /etc/passwd#tbl-x >}}", md_text("{{< embed /etc/passwd#tbl-x >}}")]:
        # raw (a value some other writer did not escape) or escaped: never expanded
        md = chapter_markdown(qmd, tmp_path, {"config": {"name": name}})
        assert md.startswith("Cluster ") and "passwd" in md and "root:" not in md


def _cell(nb: str, label: str) -> str:
    doc = json.loads((ROOT / "notebooks" / nb).read_text())
    return next(
        "".join(c["source"]) for c in doc["cells"] if f"#| label: {label}" in "".join(c["source"])
    )


def test_comparison_notebook_markdown_outputs_escape_the_config_name():
    shown = []
    ns = {"published_given": False, "case_study": False, "evaluated": "<script>x</script> **b**",
          "md_text": md_text, "Markdown": Markdown, "display": shown.append}  # fmt: skip
    src = _cell("eos_comparison.ipynb", "tbl-eos-talk")
    exec(compile(ast.parse(src), "<cell>", "exec"), ns)  # noqa: S102 - the project's own notebook
    out = html_of(shown[0].data)
    assert "<script" not in out and "<strong" not in out
    assert "&lt;script&gt;x&lt;/script&gt; **b**" in out
