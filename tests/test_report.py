"""The main job: notebooks executed by papermill, figures exported, preview site built offline."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest
from conftest import ROOT

from trainperf.report import job as report
from trainperf.report import preview

pytestmark = pytest.mark.slow


def test_notebooks_have_parameters_cell_and_no_outputs():
    for spec in report.NOTEBOOKS:
        nb = json.loads((ROOT / "notebooks" / f"{spec.name}.ipynb").read_text())
        tagged = [c for c in nb["cells"] if "parameters" in c.get("metadata", {}).get("tags", [])]
        assert len(tagged) == 1, spec.name
        assert all(not c.get("outputs") for c in nb["cells"] if c["cell_type"] == "code"), (
            f"{spec.name} committed with outputs"
        )
        for key in spec.parameters:  # the main job only sets parameters the notebook declares
            assert re.search(rf"^{key}\s*=", "".join(tagged[0]["source"]), re.M), (spec.name, key)


def test_notebook_executed_with_tables_and_charts(main_job):
    tmp, summary = main_job
    assert [Path(p).stem for p in summary["notebooks"]] == [s.name for s in report.NOTEBOOKS]
    nb = json.loads(Path(summary["notebooks"][0]).read_text())
    assert nb["metadata"]["papermill"]["parameters"]["figures_dir"] == str(tmp / "figures")
    outputs = [o for c in nb["cells"] if c["cell_type"] == "code" for o in c.get("outputs", [])]
    assert not [o for o in outputs if o.get("output_type") == "error"]
    htmls = ["".join(o["data"].get("text/html", "")) for o in outputs if "data" in o]
    assert any("<table" in h and "eos_n64_ngc24.09_nemo" in h for h in htmls)
    # charts are displayed as SVG only (no HTML or JavaScript output: Quarto would add require.js)
    charts = [o for o in outputs if "image/svg+xml" in o.get("data", {})]
    assert len(charts) == 2 and not [o for o in charts if "text/html" in o["data"]]


def test_figures_exported(main_job):
    tmp, _ = main_job
    names = {p.name for p in (tmp / "figures").iterdir()}
    for stem in (
        "mlperf_time_to_train_gpt3",
        "mlperf_eval_curve_gpt3",
        "mlperf_time_to_train_llama2_70b_lora",
        "mlperf_eval_curve_llama2_70b_lora",
    ):
        for ext in ("svg", "png", "pdf"):
            assert f"{stem}.{ext}" in names
    svg = (tmp / "figures" / "mlperf_time_to_train_gpt3.svg").read_text()
    assert svg.lstrip().startswith("<svg") and "eos_n64_ngc24.09_nemo" in svg
    png = (tmp / "figures" / "mlperf_eval_curve_gpt3.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    assert not [p for p in (tmp / "figures").iterdir() if p.name.endswith(".tmp")]


def test_preview_site_offline(main_job):
    tmp, summary = main_job
    index = Path(summary["site"])
    page = (index.parent / "notebook-mlperf_runs.html").read_text()
    for spec in report.NOTEBOOKS:
        assert f'href="notebook-{spec.name}.html"' in index.read_text()
        assert (
            preview.external_urls((index.parent / f"notebook-{spec.name}.html").read_text()) == []
        )
    assert "<table" in page and "eos-dfw_n1344_ngc24.04_nemo" in page
    assert page.count('src="data:image/svg+xml;base64,') == 2  # the two chart outputs, as SVG
    assert "vegaEmbed" not in page and "<script" not in page  # no chart JavaScript
    assert preview.external_urls(page) == []
    assert preview.external_urls(index.read_text()) == []


def test_external_url_detector_finds_cdn_tags():
    page = '<script src="https://cdn.jsdelivr.net/npm/vega@5"></script><link href="//cdnjs.x/y.css" rel="stylesheet"><a href="https://mlcommons.org">ok</a>'
    assert preview.external_urls(page) == ["//cdnjs.x/y.css", "https://cdn.jsdelivr.net/npm/vega@5"]


@pytest.mark.skipif(
    shutil.which("chromium") is None, reason="Debian chromium not installed (.ci/run installs it)"
)
def test_preview_site_charts_render_in_headless_chromium(main_job):
    _, summary = main_job
    page = Path(summary["site"]).parent / "notebook-mlperf_runs.html"
    with tempfile.TemporaryDirectory() as profile:
        out = subprocess.run(
            [
                "chromium",
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--no-first-run",
                f"--user-data-dir={profile}",
                "--virtual-time-budget=10000",
                "--dump-dom",
                page.as_uri(),
            ],
            capture_output=True,
            text=True,
            timeout=120,
        )
    dom = out.stdout
    # the charts are static SVG images (vl-convert's <svg class="marks"> with its marks) in the DOM
    import base64

    srcs = re.findall(r'<img[^>]*src="data:image/svg\+xml;base64,([^"]+)"', dom)
    svgs = [base64.b64decode(s).decode() for s in srcs]
    drawn = [s for s in svgs if 'class="marks"' in s and "<path" in s]
    assert len(drawn) == 2, out.stderr[-2000:]


def test_quarto_not_found_message(tmp_path, monkeypatch):
    monkeypatch.setattr(report, "quarto_available", lambda: None)
    lines = []
    nb = report.NotebookSpec(
        "mlperf_runs",
        "MLPerf",
        {"mlperf_path": "data/mlperf/v4.1/NVIDIA/results/eos_n8_ngc24.09_nemo"},
    )
    summary = report.run_report(
        out=tmp_path / "o", figures=tmp_path / "f", root=ROOT, notebooks=[nb], log=lines.append
    )
    assert summary["quarto"] is False
    msg = [line for line in lines if "Quarto not found" in line]
    assert len(msg) == 1 and "preview site at" in msg[0] and "quarto.org" in msg[0]


@pytest.mark.quarto
@pytest.mark.skipif(
    shutil.which("quarto") is None,
    reason="quarto is not on PATH (cannot be installed offline; see README)",
)
def test_quarto_render_book(tmp_path):
    work = tmp_path / "book"
    shutil.copytree(
        ROOT, work, ignore=shutil.ignore_patterns(".venv", ".git", "_book", "_output", "figures")
    )
    summary = report.run_report(root=work, use_quarto=True, log=lambda *_: None)
    index = work / "_book" / "index.html"
    assert summary["quarto"] and index.is_file()
    chapter = (work / "_book" / "chapters" / "mlperf_results.html").read_text()
    assert "<table" in chapter and "mlperf_time_to_train_gpt3.svg" in chapter
    for page in (work / "_book").rglob("*.html"):
        assert preview.external_urls(page.read_text()) == [], page


def test_eos_notebook_tables(main_job):
    _, summary = main_job
    nb = json.loads(
        Path(
            next(p for p in summary["notebooks"] if p.endswith("eos_comparison.ipynb"))
        ).read_text()
    )
    text = json.dumps([c.get("outputs", []) for c in nb["cells"]])
    assert '"ename"' not in text
    # the paper's ratios (SAKURAONE MLSys 2026, Table "comparison with Eos") appear beside ours
    for paper in ("1.09", "1.17", "1.26", "1.02", "1.05"):
        assert paper in text
    assert "mfu_fp8_dense_step" in text and "mfu_bf16_dense_step" in text


def test_comparison_reads_collected_batch_summary(main_job):
    tmp, summary = main_job
    batch_summary = tmp / "out" / "batch" / "mlperf_systems" / "summary.parquet"
    assert batch_summary.is_file()
    nb = json.loads(
        Path(
            next(p for p in summary["notebooks"] if p.endswith("eos_comparison.ipynb"))
        ).read_text()
    )
    assert nb["metadata"]["papermill"]["parameters"]["batch_summary_path"] == str(batch_summary)
    streams = "".join(
        "".join(o.get("text", ""))
        for c in nb["cells"]
        for o in c.get("outputs", [])
        if o.get("output_type") == "stream"
    )
    assert "throughput read from the collected batch results" in streams


def test_generated_values_for_the_prose(main_job):
    tmp, _ = main_job
    import yaml

    values = yaml.safe_load((tmp / "out" / "values.yml").read_text())["values"]
    # published MLPerf scores (mfu_and_results.md §5.1/§5.4), recomputed by the notebooks
    assert values["mlperf_runs"]["score_gpt3_512_min"] == "49.795"
    assert values["mlperf_runs"]["score_llama2_70b_lora_64_min"] == "4.573"
    # the paper's ratio table (sakuraone_paper.md §3.3) to two decimals
    assert (
        values["eos_comparison"]["ratio_gpt3_32n"] == "1.09"
        and values["eos_comparison"]["ratio_gpt3_96n"] == "1.26"
    )
    # 18 B/param x 174.6e9 parameters = 3.14e12 B; 4 nodes x 8 x 80 GB = 2.56e12 B
    assert (
        values["memory_model"]["model_state_tb"] == "3.14"
        and values["memory_model"]["four_nodes_tb"] == "2.56"
    )


def test_preview_chapters_follow_the_book(main_job):
    _, summary = main_job
    site = Path(summary["site"]).parent
    chapters = preview.book_chapters(ROOT)
    assert chapters[0].name == "index.qmd"
    pages = {p.name for p in site.glob("*.html")}
    for qmd in chapters[1:]:
        assert f"{qmd.stem}.html" in pages
    for page in site.glob("*.html"):
        text = page.read_text()
        assert "{{<" not in text, f"unresolved shortcode in {page.name}"
        for href in re.findall(r'href="([^"#:]+\.html)"', text):
            assert (site / href).is_file(), f"{page.name} links to missing {href}"
    results = (site / "mlperf_results.html").read_text()
    assert "49.795" in results and "<svg" in results and "<table" in results
    assert "3.14" in results and "2.56" in results  # the memory section, included


def test_render_chapter_errors_name_the_label(tmp_path):
    qmd = tmp_path / "c.qmd"
    qmd.write_text("# T\n\n{{< embed ../_output/notebooks/nb.ipynb#tbl-nope >}}\n")
    nb = tmp_path / "nb.ipynb"
    nb.write_text(json.dumps({"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))
    with pytest.raises(ValueError, match="no cell labelled 'tbl-nope'"):
        preview.render_chapter(qmd, tmp_path, tmp_path, {})
    qmd.write_text("# T\n\nvalue {{< meta values.nb.missing >}}\n")
    with pytest.raises(KeyError, match="values.nb.missing"):
        preview.render_chapter(qmd, tmp_path, tmp_path, {"nb": {}})


def test_quarto_config_lists_every_chapter_once():
    import yaml

    cfg = yaml.safe_load((ROOT / "_quarto.yml").read_text())
    chapters = cfg["book"]["chapters"]
    assert chapters == cfg["project"]["render"]
    assert len(chapters) == 8 and chapters[0] == "index.qmd"  # preface + the talk's seven chapters
    for c in chapters:
        assert (ROOT / c).is_file(), c
    # every include and embed target named by a chapter exists (includes) or is a notebook of the main job
    names = {s.name for s in report.NOTEBOOKS}
    for c in (ROOT / "chapters").glob("*.qmd"):
        text = c.read_text()
        for inc in re.findall(r"\{\{<\s*include\s+(\S+)\s*>\}\}", text):
            assert (c.parent / inc).is_file(), (c.name, inc)
        for nb in re.findall(r"\{\{<\s*embed\s+\.\./_output/notebooks/([a-z_]+)\.ipynb#", text):
            assert nb in names, (c.name, nb)
