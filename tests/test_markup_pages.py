"""Config strings on every page, round 4 (issue 40): the cluster chapter's ``values.cluster.system``
(three times in the chapter), the stand-in pages of a chapter whose input the config does not give
(the telemetry appendix among them), the telemetry page's source line and the comparison's
"no result" sentence show a config's name, description or paths as text: no HTML, no link."""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import pytest
import yaml
from IPython.display import Markdown

from trainperf.config import load_config, report_overrides
from trainperf.markup import md_text
from trainperf.report.job import stage_book
from trainperf.report.preview.pages import chapter_markdown
from trainperf.report.values import record_values

ROOT = Path(__file__).resolve().parents[1]
NAME = "<script>alert(1)</script>[x](javascript:alert(2))"


def html_of(md: str) -> str:
    pypandoc = pytest.importorskip("pypandoc")
    return pypandoc.convert_text(md, "html", format="markdown")


def no_markup(out: str) -> None:
    assert "<script" not in out and "<a " not in out and "javascript:alert(2)" in out


def cell(nb: str, needle: str) -> str:
    doc = json.loads((ROOT / "notebooks" / nb).read_text())
    return next("".join(c["source"]) for c in doc["cells"] if needle in "".join(c["source"]))


def statement(src: str, needle: str) -> str:
    """The top-level statement of a cell's source that contains ``needle`` (run on its own)."""
    tree = ast.parse(src)
    lines = src.splitlines()
    node = next(n for n in tree.body if needle in "\n".join(lines[n.lineno - 1 : n.end_lineno]))
    return "\n".join(lines[node.lineno - 1 : node.end_lineno])


def test_cluster_chapter_shows_the_config_name_as_text(tmp_path):
    # the cluster notebook's values cell, run with a hostile config name, then the chapter's
    # {{< meta values.cluster.system >}} (three of them) through the preview
    src = cell("cluster.ipynb", "record_values(")
    vp = tmp_path / "cluster.json"
    ns = {"pl": __import__("polars"), "top500": None, "in_top500": False, "in_systems_table": False,
          "evaluated": NAME, "accelerator": "H100 SXM", "nodes": 4, "gpus_per_node": 8,
          "values_path": str(vp), "mlperf_path": ""}  # fmt: skip
    exec(compile(src, "<cluster values>", "exec"), ns)  # noqa: S102 - the project's own notebook
    values = {"cluster": json.loads(vp.read_text()), "inputs": {"nodes": True, "demo": False}}
    qmd = tmp_path / "cluster.qmd"
    text = (ROOT / "chapters" / "cluster.qmd").read_text()
    # the chapter up to its first embed (the embeds need the executed notebooks)
    qmd.write_text(text.split("{{< embed", 1)[0])
    out = html_of(chapter_markdown(qmd, tmp_path, values))
    no_markup(out)
    # the name's use above the first embed, shown as text (the node-count sentence now names the
    # hardware table's source instead of repeating the name)
    assert out.count("&lt;script&gt;alert(1)&lt;/script&gt;") >= 1


def test_stand_in_pages_show_the_config_name_as_text(tmp_path):
    # a config without telemetry and sacct: the telemetry, slurm_jobs and reliability pages are
    # stand-ins whose sentence names the cluster
    demo = (ROOT / "configs" / "sakuraone.yaml").read_text()
    keep, skip = [], False
    for ln in demo.splitlines():
        if re.match(r"^(telemetry|sacct):", ln):
            skip = ln.startswith("telemetry:")
            continue
        if skip and ln.startswith("  "):
            continue
        skip = False
        keep.append(f"name: '{NAME}'" if ln.startswith("name:") else ln)
    (tmp_path / "configs").mkdir()
    (tmp_path / "data").symlink_to(ROOT / "data")
    p = tmp_path / "configs" / "c.yaml"
    p.write_text("\n".join(keep) + "\n")
    absent = report_overrides(load_config(p)).absent
    assert set(absent) == {"telemetry", "slurm_jobs", "reliability"}
    for sentence in absent.values():
        no_markup(html_of(sentence))


def test_telemetry_source_line_is_text():
    src = statement(cell("telemetry.ipynb", "Telemetry: {"), "Telemetry: {")
    shown = []
    ns = {"source_label": NAME, "job_id": "", "n_hosts": 2, "mlperf_log": "a/b/c.txt", "Path": Path,
          "md_text": md_text, "Markdown": Markdown, "display": shown.append}  # fmt: skip
    exec(compile(src, "<telemetry source line>", "exec"), ns)  # noqa: S102
    no_markup(html_of(shown[0].data))


def test_comparison_no_result_sentence_is_text():
    src = statement(cell("eos_comparison.ipynb", "No result of {"), "No result of {")
    shown = []
    ns = {"evaluated": NAME, "md_text": md_text, "Markdown": Markdown, "display": shown.append}
    # the statement is the body of an if/else: run the branch that displays the sentence
    body = next(ln.strip() for ln in src.splitlines() if "No result of {" in ln)
    exec(compile(body, "<comparison no result>", "exec"), ns)  # noqa: S102
    no_markup(html_of(shown[0].data))


def test_recorded_values_of_the_comparison_are_text(tmp_path):
    src = cell("eos_comparison.ipynb", '"evaluated": ')
    line = next(ln.strip() for ln in src.splitlines() if '"evaluated": ' in ln)
    ns = {"f_tok": 1.0, "evaluated": NAME, "reference": "Eos", "md_text": md_text}
    exec(compile(line, "<vals>", "exec"), ns)  # noqa: S102
    vp = tmp_path / "v.json"
    record_values(ns["vals"], vp)
    no_markup(html_of(json.loads(vp.read_text())["evaluated"]))


def test_quarto_book_title_shows_the_config_name_as_text(tmp_path):
    # Quarto reads the book's title as Markdown: the staged _quarto.yml holds the name as text
    # (before, a live <script> in the book's <h1 class="title">)
    out, figures = tmp_path / "out", tmp_path / "figures"
    out.mkdir()
    figures.mkdir()
    stage = stage_book(ROOT, out, figures, NAME, {})
    title = yaml.safe_load((stage / "_quarto.yml").read_text(encoding="utf-8"))["book"]["title"]
    out_html = html_of(title)
    no_markup(out_html)
    shown = " ".join(out_html.split())  # pandoc wraps long lines
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in shown and "LLM training performance" in shown
