"""The main job: notebooks executed by papermill, figures exported, tables for readers, the preview
site built by pandoc with numbered chapters and working cross-references, nothing loaded from the
network, and a run that refuses bad input before it starts and prints nothing it does not explain."""

from __future__ import annotations

import dataclasses
import json
import re
import shutil
import subprocess
from pathlib import Path

import polars as pl
import pytest
import yaml
from helpers import ROOT

from trainperf.errors import BatchRunError, ConfigError, TrainperfError
from trainperf.report import book_build, cli, job, preview
from trainperf.report import job as report
from trainperf.report.display import CELL_PADDING_CH, TEXT_WIDTH_CH, min_width
from trainperf.report.execution import ReportJob
from trainperf.report.notebooks import CellOptionsError, NotebookError, cell_options
from trainperf.report.preview.book import book_structure

slow = pytest.mark.slow


def _nb(summary, name) -> dict:
    return json.loads(
        Path(next(p for p in summary.notebooks if p.endswith(f"{name}.ipynb"))).read_text()
    )


def _source_table_cells() -> int:
    """Code cells labelled ``tbl-`` in the notebook sources of the main job (read from the .ipynb
    files, not from the job's outputs)."""
    n = 0
    for spec in report.NOTEBOOKS:
        nb = json.loads((ROOT / "notebooks" / f"{spec.name}.ipynb").read_text())
        for c in nb["cells"]:
            src = "".join(c["source"]) if isinstance(c["source"], list) else c["source"]
            if c["cell_type"] == "code" and re.search(r"^#\| label: tbl-", src, re.M):
                n += 1
    return n


def _labelled_outputs(nb: dict):
    """(label, output) for every display output of every code cell."""
    for cell in nb["cells"]:
        if cell["cell_type"] != "code":
            continue
        label = str(cell_options("".join(cell["source"])).get("label", ""))
        for out in cell.get("outputs", []):
            if out.get("output_type") in ("display_data", "execute_result"):
                yield label, out


def _text(v) -> str:
    return v if isinstance(v, str) else "".join(v)


# --------------------------------------------------------------------------- notebooks


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


@slow
def test_notebook_executed_with_tables_and_charts(main_job):
    tmp, summary = main_job
    assert [Path(p).stem for p in summary.notebooks] == [s.name for s in report.NOTEBOOKS]
    nb = _nb(summary, "mlperf_runs")
    assert nb["metadata"]["papermill"]["parameters"]["figures_dir"] == str(tmp / "figures")
    assert not [
        o
        for c in nb["cells"]
        if c["cell_type"] == "code"
        for o in c.get("outputs", [])
        if o.get("output_type") == "error"
    ]
    tables = {
        label: _text(o["data"]["text/markdown"])
        for label, o in _labelled_outputs(nb)
        if label and "text/markdown" in o["data"]  # unlabelled: a sentence, not a table
    }
    assert set(tables) == {
        "tbl-mlperf-runs",
        "tbl-mlperf-scores",
        "tbl-mlperf-quality",
        "tbl-mlperf-hyperparameters",
        "tbl-mlperf-rules",
        "tbl-mlperf-layout",
    }
    # the rules fix Adam for GPT-3 (closed_gpt3.yaml: opt_name == 'adam'); TP stays inside a node
    assert "| fixed" in tables["tbl-mlperf-hyperparameters"]
    assert "NVLink" in tables["tbl-mlperf-layout"]
    # the bundled logs are undamaged copies of the MLCommons results (data/mlperf/SOURCES.md,
    # checksums tested) of successful runs: every file's status in the quality table is "success"
    quality = tables["tbl-mlperf-quality"]
    assert "| success " in quality and "damaged" not in quality and "parse\\_error" not in quality
    # "eos_n64_ngc24.09_nemo": escaped, with break opportunities after "_" and "."
    # no break inside a version number (issue 39): ngc24.09 stays whole
    assert "eos\\_<wbr>n64\\_<wbr>ngc24\\.09\\_<wbr>nemo" in tables["tbl-mlperf-runs"]
    charts = [o for label, o in _labelled_outputs(nb) if label.startswith("fig-")]
    # time to train, evaluation curves and the job layout ("Where the GPUs talk"), as static
    # images (no HTML or JavaScript output: Quarto would add require.js)
    assert len(charts) == 3 and all({"image/png", "image/svg+xml"} & set(o["data"]) for o in charts)
    assert not [o for o in charts if {"text/html", "application/javascript"} & set(o["data"])]


# Quarto's rule, quarto-cli src/core/jupyter/widgets.ts (extractJupyterWidgetDependencies and
# includesForJupyterWidgetDependencies): "const jsWidgets = haveOutputType(nb,
# [kApplicationJavascript, kTextHtml]);" over every display_data / execute_result output of
# every code cell of the notebook, whatever the output contains; when any has one of these
# types, every page that embeds the notebook gets '<script
# src="https://cdnjs.cloudflare.com/ajax/libs/require.js/2.3.6/require.min.js">' and jQuery
# 3.5.1 from the same CDN in its <head>. It applies to the whole notebook, not only to the cells a
# chapter embeds.
QUARTO_CDN_MIME_TYPES = ("text/html", "application/javascript")


def _cdn_outputs(summary, charts: bool):
    bad = []
    for path in summary.notebooks:
        nb = json.loads(Path(path).read_text())
        for label, out in _labelled_outputs(nb):
            if label.startswith("fig-") != charts:
                continue
            hit = sorted(set(out.get("data", {})) & set(QUARTO_CDN_MIME_TYPES))
            if hit:
                bad.append(f"{Path(path).name} {label or '(unlabelled)'}: {', '.join(hit)}")
    return bad


@slow
def test_executed_notebooks_pass_quartos_cdn_rule_outside_chart_cells(main_job):
    """Every display output of every cell that is not a chart (label ``fig-*``) is text/markdown,
    text/plain or an image. Chart cells are checked by the next test."""
    _, summary = main_job
    assert _cdn_outputs(summary, charts=False) == []


@slow
def test_executed_notebooks_pass_quartos_cdn_rule_in_chart_cells(main_job):
    _, summary = main_job
    assert _cdn_outputs(summary, charts=True) == []


@slow
def test_book_tables_read_as_a_publication(main_job):
    _, summary = main_job
    shown: set[tuple[str, str]] = set()  # (notebook, label): a cell may show two outputs
    for path in summary.notebooks:
        nb = json.loads(Path(path).read_text())
        for label, out in _labelled_outputs(nb):
            if not label.startswith("tbl-"):
                continue
            assert "text/markdown" in out["data"], (Path(path).name, label)
            md = _text(out["data"]["text/markdown"])
            for part in md.split("\n\n"):
                if not part.lstrip().startswith("|"):
                    continue  # a note above the table or the key of its source marks
                lines = part.splitlines()
                # cells split at the pipes that are not escaped (a cell may hold "\|")
                header = [c.strip() for c in re.split(r"(?<!\\)\|", lines[0].strip("|"))]
                body = [
                    [c.strip() for c in re.split(r"(?<!\\)\|", ln.strip("|"))] for ln in lines[2:]
                ]
                # human headers: no snake_case, no index column
                assert not [h for h in header if "\\_" in h or h in ("", "index")], (label, header)
                # rounded, with separators, a dash for missing
                cells = " ".join(" ".join(r) for r in body)
                assert not re.search(r"\bNaN\b|\bNone\b|\bnull\b|\d[eE][+-]\d|\d\.\d{5,}", cells), (
                    label,
                    cells[:300],
                )
                # no wider than the text column (a part of the key and one column may not split further)
                cols = list(zip(header, *body, strict=True))
                width = sum(min_width(list(c)) + CELL_PADDING_CH for c in cols)
                assert width <= TEXT_WIDTH_CH or len(header) <= 3, (label, width, header)
            shown.add((Path(path).name, label))
    assert len(shown) == _source_table_cells()  # every tbl- cell of the notebooks, all shown


@slow
def test_full_detail_csv_next_to_the_executed_notebook(main_job):
    tmp, summary = main_job
    csv = tmp / "out" / "notebooks" / "mlperf_runs" / "tbl-mlperf-runs.csv"
    assert csv.is_file()
    rows = csv.read_text().splitlines()
    header = rows[0].split(",")
    # every column of the runs frame, including those the book table leaves out
    for col in ("global_batch_size", "eval_value", "eval_target", "run_start", "result_file"):
        assert col in header
    # one row per bundled result file
    assert len(rows) - 1 == len(list((ROOT / "data" / "mlperf").rglob("result_*.txt")))
    # every tbl- cell writes its CSV (the record's GPT-3 rank cell shows two tables, the ranks and
    # each band's results, so one cell may write more than one)
    stems = {Path(t).stem for t in summary.tables}
    assert len(summary.tables) >= _source_table_cells()
    for spec in report.NOTEBOOKS:
        nb = json.loads((ROOT / "notebooks" / f"{spec.name}.ipynb").read_text())
        for c in nb["cells"]:
            src = "".join(c["source"]) if isinstance(c["source"], list) else c["source"]
            m = re.search(r"^#\| label: (tbl-[\w-]+)", src, re.M)
            # a cell that shows a sentence instead of an empty table (``else Markdown(``) may
            # write no CSV: one GPU's trace has no collectives
            if c["cell_type"] == "code" and m and "else Markdown(" not in src:
                assert any(s == m.group(1) or s.startswith(m.group(1) + "-") for s in stems), (
                    m.group(1)
                )


@slow
def test_eos_notebook_tables(main_job):
    _, summary = main_job
    nb = _nb(summary, "eos_comparison")
    outs = {label: o["data"] for label, o in _labelled_outputs(nb)}
    ratio = _text(outs["tbl-eos-ratio"]["text/markdown"])
    # the paper's ratios (SAKURAONE MLSys 2026, Table "comparison with Eos") appear beside ours
    for paper in ("1.09", "1.17", "1.26", "1.02", "1.05"):
        assert paper in ratio
    throughput = _text(outs["tbl-eos-throughput"]["text/markdown"])
    # the precision the runs trained in (FP8) comes first
    assert throughput.index("FP8 dense") < throughput.index("BF16 dense")
    assert "mfu_fp8_dense_step" in _text(outs["tbl-eos-throughput"]["text/csv"])


@slow
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


@slow
def test_comparison_reads_collected_batch_summary(main_job):
    tmp, summary = main_job
    nb = _nb(summary, "eos_comparison")
    batch_summary = Path(nb["metadata"]["papermill"]["parameters"]["batch_summary_path"])
    # the reference batch runs live in the cache shared by every --out, keyed by their inputs
    assert batch_summary.is_file() and batch_summary.name == "summary.parquet"
    # ($TRAINPERF_CACHE: the session's folder for fixtures, tests/conftest.py), not <out>/batch
    assert batch_summary.parent.parent.name == "batch" and tmp / "out" not in batch_summary.parents
    assert batch_summary.parent.name.startswith("mlperf_systems-")
    streams = "".join(
        "".join(o.get("text", ""))
        for c in nb["cells"]
        for o in c.get("outputs", [])
        if o.get("output_type") == "stream"
    )
    assert "throughput read from the collected batch results" not in streams  # no stray prints
    values = json.loads((tmp / "out" / "values" / "eos_comparison.json").read_text())
    assert values["throughput_from"] == "batch summary"


@slow
def test_generated_values_for_the_prose(main_job):
    tmp, _ = main_job
    values = yaml.safe_load((tmp / "out" / "values.yml").read_text())["values"]
    # published MLPerf scores (MLPerf Training v4.1 results, logs in data/mlperf), recomputed by the
    # notebooks; 512-GPU GPT-3 exists in v3.1 (58.302) and v4.1 (49.795): the newest round is quoted
    assert values["mlperf_runs"]["score_gpt3_512_min"] == "49.795"
    assert values["mlperf_runs"]["score_llama2_70b_lora_64_min"] == "4.573"
    # step-level model TFLOP/s/GPU of the v4.1 512-GPU runs only: medians of train_step_timing
    # 9.4931 / 9.5542 / 9.4963 s (the raw logs) give 928.9 / 923.0 / 928.6, median 928.6 -> "929";
    # mixing in the v3.1 512-GPU runs (about 798) would give about 860
    assert values["eos_comparison"]["eos_512_tflops_step"] == "929"
    # the paper's ratio table (arXiv 2604.13600 Table 12, as relayed by a third-party summary) to two
    # decimals
    assert (
        values["eos_comparison"]["ratio_gpt3_32n"] == "1.09"
        and values["eos_comparison"]["ratio_gpt3_96n"] == "1.26"
    )
    # 18 B/param x 174.6e9 parameters = 3.14e12 B; 4 nodes x 8 x 80 GB = 2.56e12 B
    assert (
        values["memory_model"]["model_state_tb"] == "3.14"
        and values["memory_model"]["four_nodes_tb"] == "2.56"
    )


# --------------------------------------------------------------------------- a quiet, honest run


@slow
def test_the_run_prints_nothing_unexplained(main_job):
    tmp, summary = main_job
    text = (tmp / "run_output.txt").read_text()
    assert "without encryption" not in text
    assert "KeyboardInterrupt" not in text
    assert "Traceback" not in text
    assert "Parent appears to have exited" not in text
    assert not [ln for ln in text.splitlines() if "warning" in ln.lower()], text[-3000:]
    assert summary.problems == []
    # the lines it does print: the batch, one per notebook, the site
    n = len(report.NOTEBOOKS)
    pattern = rf"\[\d+/{n}\] executing notebooks/"
    assert sum(1 for ln in text.splitlines() if re.match(pattern, ln)) == n


def test_a_missing_path_is_refused_before_anything_runs(tmp_path):
    lines = []
    with pytest.raises(ConfigError) as err:
        report.run_report(
            out=tmp_path / "o",
            figures=tmp_path / "f",
            root=ROOT,
            log=lines.append,
            overrides={"slurm_jobs": {"dump_paths": ["/no/such/sacct.txt"]}},
        )
    assert str(err.value) == "slurm_jobs.dump_paths: no such file or folder: /no/such/sacct.txt"
    assert lines == [] and not (tmp_path / "o").exists()


def test_a_missing_path_on_the_command_line_is_one_line(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)  # relative paths on the command line are taken from here
    rc = cli.main(
        ["report", "--out", str(tmp_path / "o"), "-p", "telemetry.mlperf_log=logs/result_0.txt"]
    )
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 1 and len(err) == 1
    assert err[0].startswith(
        "trainperf: error: ConfigError: telemetry.mlperf_log: no such file or folder: logs/result_0.txt"
    )
    assert not (tmp_path / "o").exists()


def test_plan_resolves_every_parameter_in_one_place(tmp_path):
    plan = report.plan_report(
        ROOT,
        tmp_path / "out",
        tmp_path / "fig",
        report.NOTEBOOKS,
        overrides={"telemetry": {"timeline_every": "30s"}},
    )
    params = {spec.name: p for spec, p in plan.notebooks}
    assert [s.name for s, _ in plan.notebooks] == [s.name for s in report.NOTEBOOKS]
    assert params["telemetry"]["timeline_every"] == "30s"  # the user's override
    assert params["mlperf_runs"]["mlperf_path"] == str(ROOT / "data/mlperf")  # NOTEBOOKS, from root
    assert params["mlperf_runs"]["figures_dir"] == str(tmp_path / "fig")  # provided by the job
    assert params["eos_comparison"]["batch_summary_path"] == str(
        tmp_path / "out" / "batch" / "mlperf_systems" / "summary.parquet"
    )
    assert ("eos_comparison", "batch_summary_path") in plan.produced
    with pytest.raises(ConfigError, match=r"does not declare parameter\(s\) nope"):
        report.plan_report(ROOT, tmp_path, tmp_path, report.NOTEBOOKS, {"cluster": {"nope": 1}})
    with pytest.raises(ConfigError, match="no notebook nosuch in the main job"):
        report.plan_report(ROOT, tmp_path, tmp_path, report.NOTEBOOKS, {"nosuch": {}})
    # an output parameter is never checked for existence
    report.plan_report(
        ROOT, tmp_path, tmp_path, report.NOTEBOOKS, {"cluster": {"values_path": "/no/such/v.json"}}
    )


def test_an_invalid_cell_option_block_is_refused_before_anything_runs(tmp_path):
    root = tmp_path / "repo"
    (root / "notebooks").mkdir(parents=True)
    src = json.loads((ROOT / "notebooks" / "cluster.ipynb").read_text())
    for cell in src["cells"]:
        if "tbl-cluster-top500" in "".join(cell["source"]):
            cell["source"] = "#| label: tbl-cluster-top500\n#| tbl-cap: TOP500: entries\ntop500\n"
    (root / "notebooks" / "cluster.ipynb").write_text(json.dumps(src))
    lines = []
    with pytest.raises(CellOptionsError, match=r"cluster\.ipynb cell \d+, option line 2"):
        report.run_report(
            out=tmp_path / "o",
            root=root,
            notebooks=[report.NotebookSpec("cluster", "C")],
            log=lines.append,
        )
    assert lines == []


# --------------------------------------------------------------------------- the preview site


def _site(summary) -> Path:
    return Path(summary.site).parent


def _page_ids(page: Path) -> set[str]:
    return set(re.findall(r'\bid="([^"]+)"', page.read_text()))


def _chapter_text(page_name: str, values: dict | None = None) -> str:
    """The source of a preview page's chapter, includes inlined ("" for other pages); with the
    run's ``values``, only the conditional content (``when-meta``) that run shows."""
    stem = page_name.removesuffix(".html")
    qmd = ROOT / "index.qmd" if stem == "index" else ROOT / "chapters" / f"{stem}.qmd"
    if not qmd.is_file():
        return ""
    text = re.sub(
        r"\{\{<\s*include\s+(\S+)\s*>\}\}",
        lambda m: (qmd.parent / m.group(1)).read_text(),
        qmd.read_text(),
    )
    return text if values is None else preview.pages._conditional_content(text, {"values": values})


def _expected_numbers(values: dict | None = None) -> dict[str, tuple[str, str]]:
    """id -> (page, text) for every chapter, section, figure and embedded table, numbered the way
    a Quarto book numbers them (chapters in _quarto.yml order, the {.unnumbered} preface apart)."""

    chapters = [p.relative_to(ROOT).as_posix() for p in book_structure(ROOT).chapters]
    out, number = {}, 0
    for i, path in enumerate(chapters):
        page = "index.html" if i == 0 else Path(path).stem + ".html"
        text = _chapter_text(page, values)
        if re.search(r"^# .*\{[^}]*\.unnumbered", text, re.M):
            continue
        number += 1
        sec, sub, fig, tbl, in_callout = 0, 0, 0, 0, False
        for line in text.splitlines():
            if re.match(r"^:::\s*\{\.callout", line):
                in_callout = True
            elif in_callout and line.strip() == ":::":
                in_callout = False
            if in_callout:
                continue
            m = re.match(r"^(#{1,3}) .*\{#(sec-[\w-]+)", line)
            if m and len(m.group(1)) == 1:
                out[m.group(2)] = (page, f"Chapter {number}")
            elif line.startswith("## "):
                sec, sub = sec + 1, 0
                if m:
                    out[m.group(2)] = (page, f"Section {number}.{sec}")
            elif line.startswith("### "):
                sub += 1
                if m:
                    out[m.group(2)] = (page, f"Section {number}.{sec}.{sub}")
            for ident in re.findall(r"\{#(fig-[\w-]+)\}", line):
                fig += 1
                out[ident] = (page, f"Figure {number}.{fig}")
            for ident in re.findall(r"\{\{<\s*embed\s+\S+#(tbl-[\w-]+)\s*>\}\}", line):
                tbl += 1
                out[ident] = (page, f"Table {number}.{tbl}")
    return out


@slow
def test_preview_site_offline(main_job):
    _, summary = main_job
    site = _site(summary)
    assert preview.network_loads(site) == {}
    for spec in report.NOTEBOOKS:
        assert (site / f"notebook-{spec.name}.html").is_file()
    page = (site / "notebook-mlperf_runs.html").read_text()
    assert "<table" in page and "n1344" in page and "<details" in page
    # each table of a notebook page links its full-detail CSV, which the site carries
    for href in re.findall(r'href="(tables/[^"]+\.csv)"', page):
        assert (site / href).is_file()
    assert 'href="tables/mlperf_runs/tbl-mlperf-runs.csv"' in page
    # the three chart outputs (time to train, evaluation curves, the job layout) are static SVG
    # images, no chart JavaScript
    assert page.count('src="data:image/svg+xml;base64,') == 3
    assert "vegaEmbed" not in page


def test_external_url_detector_finds_cdn_tags_and_css_imports(tmp_path):
    page = '<script src="https://cdn.jsdelivr.net/npm/vega@5"></script><link href="//cdnjs.x/y.css" rel="stylesheet"><a href="https://mlcommons.org">ok</a>'
    assert preview.external_urls(page) == ["//cdnjs.x/y.css", "https://cdn.jsdelivr.net/npm/vega@5"]
    # a theme's web font: a local stylesheet that imports another that imports Google Fonts
    (tmp_path / "libs").mkdir()
    (tmp_path / "libs" / "a.css").write_text('@import url("b.css");\nbody{}')
    (tmp_path / "libs" / "b.css").write_text(
        "@import url(https://fonts.googleapis.com/css2?family=Source+Sans+Pro);"
    )
    (tmp_path / "index.html").write_text('<link rel="stylesheet" href="libs/a.css"><p>x</p>')
    (tmp_path / "ok.html").write_text("<style>body{font-family:serif}</style><p>ok</p>")
    assert preview.network_loads(tmp_path) == {
        "index.html": ["https://fonts.googleapis.com/css2?family=Source+Sans+Pro"]
    }


@slow
def test_preview_numbers_chapters_and_resolves_cross_references(main_job):
    tmp, summary = main_job
    values = yaml.safe_load((tmp / "out" / "values.yml").read_text())["values"]
    site = _site(summary)
    pages = {p.name: p.read_text() for p in site.glob("*.html")}
    # chapter order of _quarto.yml: 1 introduction ... 7 summary, the preface unnumbered
    assert re.search(
        r'<h1 id="sec-results"><span class="header-section-number">4</span> MLPerf results',
        pages["mlperf_results.html"],
    )
    assert re.search(
        r'id="sec-memory"><span class="header-section-number">4\.3</span>',
        pages["mlperf_results.html"],
    )
    # the numbers a Quarto book gives, counted here from the chapter sources with a few regexes
    # (includes inlined; headings inside callouts are titles, not sections)
    expected = _expected_numbers(values)
    assert expected["fig-memory-wall"] == ("workload.html", "Figure 2.1")
    assert expected["sec-memory"] == ("mlperf_results.html", "Section 4.3")
    assert expected["sec-telemetry"] == ("telemetry.html", "Chapter 5")
    assert expected["tbl-mlperf-scores"] == ("mlperf_results.html", "Table 4.1")
    for name, text in pages.items():
        links = set(re.findall(r'<a href="([^"]+)" class="quarto-xref">([^<]+)</a>', text))
        src = _chapter_text(name, values)
        for ident in re.findall(r"@((?:sec|fig|tbl)-[A-Za-z0-9_-]+)", src):
            if ident.endswith("-nb"):  # a full table or figure on its appendix page
                kind = "Figure" if ident.startswith("fig-") else "Table"
                assert [
                    lbl
                    for h, lbl in links
                    if h.startswith("notebook-")
                    and h.endswith(f"#{ident}")
                    and re.fullmatch(kind + r" [A-I]\.\d+", lbl)
                ], (name, ident)
                continue
            if ident not in expected:  # a figure of the unnumbered key-results page
                assert [h for h, _ in links if h.endswith(f"#{ident}")], (name, ident)
                continue
            page, label = expected[ident]
            href = ("" if page == name else page) + f"#{ident}"
            assert (href, label) in links, (name, ident, href, label)
    # every cross-reference link of every page points at an element that exists
    n = 0
    for name, text in pages.items():
        assert (
            "?@" not in text and "@fig-" not in text and "@tbl-" not in text and "@sec-" not in text
        ), name
        for href in re.findall(r'<a href="([^"]+)" class="quarto-xref">', text):
            target, _, ident = href.partition("#")
            assert ident in _page_ids(site / (target or name)), (name, href)
            n += 1
    assert (
        n == sum(len(re.findall(r"@(?:sec|fig|tbl)-", _chapter_text(p, values))) for p in pages) > 0
    )
    # captions carry the numbers
    assert "Table 4.1:" in pages["mlperf_results.html"] and "Figure 2.1:" in pages["workload.html"]
    assert summary.problems == []


@slow
def test_preview_navigation_groups_the_notebooks_as_an_appendix(main_job):
    _, summary = main_job
    index = (_site(summary) / "index.html").read_text()
    nav = index.split('<nav id="tp-sidebar"', 1)[1].split("</nav>", 1)[0]
    chapters, appendix = nav.split("Appendices", 1)
    assert re.findall(r'<li><a href="([^"]+)\.html"', chapters) == [
        "index",
        "introduction",
        "workload",
        "cluster",
        "mlperf_results",
        "telemetry",
        "energy",
        "summary",
        "case_study",  # the demo's own part
        "telemetry_cluster",
        "operations",
        "glossary",
        "references",
    ]
    # appendix order of _quarto.yml
    assert re.findall(r'href="notebook-([^"]+)\.html"', appendix) == [
        "cluster",
        "mlperf_runs",
        "eos_comparison",
        "memory_model",
        "telemetry",
        "telemetry_capture",
        "energy",
        "trace",
        "slurm_jobs",
        "reliability",
    ]
    assert (
        '<span class="tp-num">A</span>' in appendix and '<span class="tp-num">7</span>' in chapters
    )
    cluster_nb = (_site(summary) / "notebook-cluster.html").read_text()
    assert "Appendix A —" in cluster_nb and "Table A.1:" in cluster_nb


@slow
def test_preview_math_is_mathml_and_figures_are_local(main_job):
    _, summary = main_job
    site = _site(summary)
    page = (site / "mlperf_results.html").read_text()
    assert page.count("<math") >= 5
    # no TeX left as text: outside MathML's own annotations, no "F_{tok}"
    assert "F_{tok}" not in re.sub(r"<annotation.*?</annotation>", "", page, flags=re.S)
    srcs = re.findall(r'<img src="([^"]+)"', page)
    assert srcs and all(s.startswith("figures/") and (site / s).is_file() for s in srcs)


@slow
def test_preview_chapters_follow_the_book(main_job):
    _, summary = main_job
    site = _site(summary)
    structure = preview.book_structure(ROOT)
    assert structure.chapters[0].name == "index.qmd"
    pages = {p.name for p in site.glob("*.html")}
    for qmd in structure.chapters[1:]:
        assert f"{qmd.stem}.html" in pages
    for page in site.glob("*.html"):
        text = page.read_text()
        assert "{{<" not in text, f"unresolved shortcode in {page.name}"
        for href in re.findall(r'href="([^"#:]+\.html)"', text):
            assert (site / href).is_file(), f"{page.name} links to missing {href}"
    results = (site / "mlperf_results.html").read_text()
    assert "49.795" in results and "<img" in results and "<table" in results
    # the memory section, included: GPT-3 175B, 174,604,259,328 parameters x 18 B = 3,142.9 GB
    assert "3,142.9" in results


def test_chapter_markdown_errors_name_the_label(tmp_path):
    qmd = tmp_path / "c.qmd"
    qmd.write_text("# T\n\n{{< embed ../_output/notebooks/nb.ipynb#tbl-nope >}}\n")
    nb = tmp_path / "nb.ipynb"
    nb.write_text(json.dumps({"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))
    with pytest.raises(ValueError, match="no cell labelled 'tbl-nope'"):
        preview.chapter_markdown(qmd, tmp_path, {})
    qmd.write_text("# T\n\nvalue {{< meta values.nb.missing >}}\n")
    with pytest.raises(KeyError, match="values.nb.missing"):
        preview.chapter_markdown(qmd, tmp_path, {"nb": {}})


def test_preview_of_a_small_book_by_hand(tmp_path):
    """Numbering and cross-references on a two-chapter book written here, counted by hand."""
    root = tmp_path / "book"
    (root / "chapters").mkdir(parents=True)
    (root / "_quarto.yml").write_text(
        "book:\n  title: T\n  chapters: [index.qmd, chapters/a.qmd, chapters/b.qmd]\n"
    )
    (root / "index.qmd").write_text("# Preface {.unnumbered}\n\nSee @sec-b2 and @fig-one.\n")
    (root / "chapters" / "a.qmd").write_text(
        "# A {#sec-a}\n\n## One {#sec-a1}\n\n![First](x.svg){#fig-one}\n\n"
        "::: {.callout-note}\n## Not a section\nText.\n:::\n\n## Two {#sec-a2}\n\n"
        "![Second](y.svg){#fig-two}\n\n@fig-two and [-@fig-one] and @fig-nope.\n"
    )
    (root / "chapters" / "b.qmd").write_text(
        "# B {#sec-b}\n\n## Only {#sec-b2}\n\nBack to @sec-a.\n"
    )
    note = "Preview; `conda install -c conda-forge quarto` for the book."
    index, problems = preview.build_preview_site(
        root, tmp_path, tmp_path, {}, tmp_path / "site", note=note
    )
    site = index.parent
    a = (site / "a.html").read_text()
    assert (
        '<span class="header-section-number">1.2</span> Two' in a
    )  # the callout heading is not 1.2
    assert re.search(r'<div class="callout-title">\s*<strong>Not a section</strong>\s*</div>', a)
    assert '<a href="#fig-two" class="quarto-xref">Figure 1.2</a>' in a
    assert '<a href="#fig-one" class="quarto-xref">1.1</a>' in a  # [-@fig-one]: the number only
    assert "<strong>?@fig-nope</strong>" in a and problems == [
        "a.qmd: unresolved cross-reference @fig-nope",
        "a.qmd: image x.svg not found",
        "a.qmd: image y.svg not found",
    ]
    pre = index.read_text()
    assert '<a href="b.html#sec-b2" class="quarto-xref">Section 2.1</a>' in pre
    assert '<a href="a.html#fig-one" class="quarto-xref">Figure 1.1</a>' in pre
    assert (
        '<a href="a.html#sec-a" class="quarto-xref">Chapter 1</a>' in (site / "b.html").read_text()
    )
    assert re.search(r"<h1[^>]*>Preface</h1>", pre)  # the preface is unnumbered
    # the banner: Markdown rendered, no literal backticks
    banner = pre.split('class="tp-banner">', 1)[1].split("</div>", 1)[0]
    assert "`" not in banner and "<code>conda install -c conda-forge quarto</code>" in banner


@slow
def test_quarto_not_found_message(tmp_path, monkeypatch):
    monkeypatch.setattr(book_build, "quarto_available", lambda: None)  # where the book is built
    lines = []
    # no notebook executed: the message and the left-out chapters do not depend on one
    summary = report.run_report(
        out=tmp_path / "o",
        figures=tmp_path / "f",
        root=ROOT,
        notebooks=[],
        run_batches=False,
        log=lines.append,
        progress=False,
    )
    assert summary.quarto is False
    msg = [line for line in lines if "Quarto not found" in line]
    assert len(msg) == 1 and "preview site at" in msg[0] and "quarto.org" in msg[0]
    # the chapters whose notebooks did not run are left out, each with one line saying so
    left_out = [line for line in lines if "left out of the preview" in line]
    assert left_out and all(line.startswith("warning: ") for line in left_out)


def test_quarto_config_lists_every_chapter_and_notebook_once():
    cfg = yaml.safe_load((ROOT / "_quarto.yml").read_text())
    structure = book_structure(ROOT)  # parts flattened
    chapters = [p.relative_to(ROOT).as_posix() for p in structure.chapters]
    appendices = cfg["book"]["appendices"]
    assert cfg["project"]["render"] == chapters + appendices
    # key results + the findings (seven chapters, energy among them) + the demo's case study
    # (one) + method on generated data (two) + glossary, references
    assert len(chapters) == 13 and chapters[0] == "index.qmd"
    for c in chapters:
        assert (ROOT / c).is_file(), c
    # the appendix: every notebook of the main job, as its appendix copy (labels of its own), once
    assert sorted(appendices) == sorted(
        f"_output/appendix/{s.name}.ipynb" for s in report.NOTEBOOKS
    )
    # offline: MathML, and the theme's web font switched off
    html = cfg["format"]["html"]
    assert html["html-math-method"] == "mathml"
    assert (
        "book.scss" in html["theme"]
        and "$web-font-path: false;" in (ROOT / "book.scss").read_text()
    )
    talk = yaml.safe_load((ROOT / "talk" / "_quarto.yml").read_text())["format"]["revealjs"]
    assert talk["html-math-method"] == "mathml" and talk["theme"] == "default"
    # every include and embed target named by a chapter exists (includes) or is a notebook of the main job
    names = {s.name for s in report.NOTEBOOKS}
    for c in (ROOT / "chapters").glob("*.qmd"):
        text = c.read_text()
        for inc in re.findall(r"\{\{<\s*include\s+(\S+)\s*>\}\}", text):
            assert (c.parent / inc).is_file(), (c.name, inc)
        for nb in re.findall(r"\{\{<\s*embed\s+\.\./_output/notebooks/([a-z_]+)\.ipynb#", text):
            assert nb in names, (c.name, nb)


# --------------------------------------------------------------------------- real Quarto


@pytest.mark.quarto
@pytest.mark.skipif(
    shutil.which("quarto") is None,
    reason="quarto is not on PATH (cannot be installed offline; see README)",
)
def test_quarto_render_book_and_talk_offline(tmp_path):
    work = tmp_path / "book"
    shutil.copytree(
        ROOT, work, ignore=shutil.ignore_patterns(".venv", ".git", "_book", "_output", "figures")
    )
    summary = report.run_report(root=work, use_quarto=True, log=lambda *_: None, progress=False)
    index = work / "_book" / "index.html"
    assert summary.quarto and index.is_file()
    chapter = (work / "_book" / "chapters" / "mlperf_results.html").read_text()
    case_study = (work / "_book" / "chapters" / "case_study.html").read_text()  # issue 38's part
    assert "<table" in chapter and "eos_gpt3_gpu_hours_by_scale.svg" in case_study
    assert re.search(r"Table(&nbsp;|\s)4\.1", chapter) and "<math" in chapter
    assert "?@" not in chapter
    # zero network loads in every page of the book (tags and the stylesheets they link)
    assert preview.network_loads(work / "_book") == {}
    assert summary.problems == []
    # the talk: `make talk`
    shutil.copytree(work / "figures", work / "talk" / "figures")
    subprocess.run(["quarto", "render"], cwd=work / "talk", check=True)
    assert (work / "talk" / "_output" / "index.html").is_file()
    assert preview.network_loads(work / "talk" / "_output") == {}


# --------------------------------------------------------------------------- one bad notebook


@slow
def test_a_failing_notebook_costs_only_its_own_page(tmp_path):
    """A notebook that raises (here: the telemetry notebook given a file that is not an MLPerf
    log) is logged in one line and replaced by a stand-in page saying why; the notebook after it
    still runs, the site is built and the summary records the failure. fail_fast=True keeps the
    old behaviour."""
    bad_log = tmp_path / "result_0.txt"
    bad_log.write_text("this is not an MLPerf log\n", encoding="utf-8")
    specs = [s for s in report.NOTEBOOKS if s.name in ("telemetry", "cluster")]
    kw = dict(
        figures=tmp_path / "f",
        root=ROOT,
        notebooks=specs,
        use_quarto=False,
        progress=False,
        run_batches=False,
        overrides={"telemetry": {"mlperf_log": str(bad_log)}},
    )
    lines: list[str] = []
    summary = report.run_report(out=tmp_path / "o", log=lines.append, **kw)
    assert list(summary.failed) == ["telemetry"]
    assert summary.failed["telemetry"].startswith("notebooks/telemetry.ipynb, cell ")
    assert summary.executed == ["cluster"]
    failed_lines = [ln for ln in lines if "failed:" in ln]
    assert len(failed_lines) == 1 and "telemetry.ipynb" in failed_lines[0]
    page = json.loads((tmp_path / "o" / "notebooks" / "telemetry.ipynb").read_text())
    assert page["metadata"]["trainperf"]["executed"] is False
    note = "".join(page["cells"][1]["source"])
    assert note.startswith("**Not executed: the notebook failed.** notebooks/telemetry.ipynb, cell")
    assert Path(summary.site).is_file()
    on_disk = json.loads((tmp_path / "o" / "report_summary.json").read_text())
    assert on_disk["failed"] == summary.failed
    assert lines[-1].startswith("done in ") and "1 executed" in lines[-1]
    assert "1 failed (telemetry)" in lines[-1]
    # (the failing notebook alone: the other one would only be executed again)
    kw["notebooks"] = [s for s in specs if s.name == "telemetry"]
    with pytest.raises(NotebookError, match=r"^notebooks/telemetry\.ipynb, cell "):
        report.run_report(out=tmp_path / "o2", log=lambda *_: None, fail_fast=True, **kw)


def test_report_exits_non_zero_naming_the_failed_notebooks(monkeypatch, capsys):
    monkeypatch.setattr(
        job,
        "run_report",
        lambda **kw: job.ReportSummary(failed={"telemetry": "x", "slurm_jobs": "y"}),
    )
    assert cli.main(["report"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [
        "trainperf: error: 2 notebooks failed: telemetry, slurm_jobs; their pages say why "
        "(the rest of the book was built)"
    ]
    seen = {}
    monkeypatch.setattr(job, "run_report", lambda **kw: seen.update(kw) or job.ReportSummary())
    assert cli.main(["report", "--fail-fast"]) == 0 and seen["fail_fast"] is True


def test_report_summary_is_a_frozen_record_with_the_json_fields():
    s = report.ReportSummary(executed=["cluster"], failed={"telemetry": "x"})
    with pytest.raises(dataclasses.FrozenInstanceError):
        s.failed = {}  # type: ignore[misc]
    assert list(s.to_dict()) == [
        "notebooks", "tables", "figures", "site", "quarto", "problems", "seconds",
        "executed", "skipped", "not_given", "failed",
    ]  # fmt: skip
    assert s.to_dict()["failed"] == {"telemetry": "x"}


def test_a_failed_batch_is_a_product_error_naming_the_grid_and_first_run():
    class Planned:
        tasks: list = []

        def summarize(self):
            return pl.DataFrame(
                {"run": ["a", "b"], "status": ["failed", "success"], "error": ["OSError: x", None]}
            )

    rj = object.__new__(ReportJob)
    rj._batches = {"g": ("grids/x.yaml", Planned())}
    with pytest.raises(
        BatchRunError, match=r"^batch grids/x\.yaml: 1 run\(s\) failed, first: a: OSError: x$"
    ) as e:
        rj._batch_done("g")
    assert isinstance(e.value, TrainperfError)
