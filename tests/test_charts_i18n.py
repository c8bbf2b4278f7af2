"""Figures in English and Japanese: every string of a Japanese figure translated, the CJK font found
through fontconfig or Japanese skipped with one line saying why (never a figure without text), the talk
in Japanese."""

from __future__ import annotations

import html
import re
import warnings
from datetime import datetime

import altair as alt
import polars as pl
import pytest
from helpers import ROOT, main_job_languages

from trainperf.report import charts, job
from trainperf.report.charts import export, fonts, i18n
from trainperf.report.charts.operations import _SIZE_ORDER


def _chart():
    df = pl.DataFrame({"n_nodes": [32, 64], "minutes": [96.7, 49.8], "system": ["Eos", "Eos"]})
    return (
        alt.Chart(df)
        .mark_line()
        .encode(
            x=alt.X("n_nodes:Q", title="nodes (8 GPUs each)"),
            y=alt.Y("minutes:Q", title="time to train (min)"),
            color=alt.Color("system:N", title="system"),
        )
        .properties(title="GPT-3 175B: time to train by scale")
    )


def _has_cjk_font() -> bool:
    return fonts.find_cjk_font().family is not None


needs_cjk = pytest.mark.skipif(
    not _has_cjk_font(),
    reason="no CJK font installed (apt-get install fonts-noto-cjk; .ci/run installs it)",
)


def test_localize_translates_titles_not_data():
    spec = charts.localize(_chart().to_dict(), "ja")
    assert spec["title"] == "GPT-3 175B: 規模別の学習時間"
    assert spec["encoding"]["x"]["title"] == "ノード数 (各 8 GPU)"
    assert spec["encoding"]["y"]["title"] == "学習時間 (分)"
    assert spec["encoding"]["color"]["title"] == "システム"
    assert spec["config"]["font"] == "Noto Sans CJK JP"
    # data values outside the *_label columns are never translated
    data = next(iter(spec["datasets"].values()))
    assert {r["system"] for r in data} == {"Eos"}
    assert (
        charts.localize(_chart().to_dict(), "en")["title"] == "GPT-3 175B: time to train by scale"
    )
    with pytest.raises(ValueError, match="unknown figure language"):
        charts.localize({}, "fr")


def test_label_columns_domains_sorts_and_expressions_are_translated():
    df = pl.DataFrame(
        {"group_label": ["all sizes", "1 node"], "group": ["all sizes", "1 node"], "x": [1, 2]}
    )
    groups = ["all sizes", "1 node"]
    ch = (
        alt.Chart(df)
        .mark_line()
        .encode(
            x=alt.X("x:Q", axis=alt.Axis(labelExpr="{1: '1 min', 2: '1 h'}[datum.value]")),
            color=alt.Color("group_label:N", sort=groups, scale=alt.Scale(domain=groups)),
            strokeWidth=alt.condition(
                alt.datum.group_label == "all sizes", alt.value(3), alt.value(1)
            ),
        )
    )
    spec = charts.localize(ch.to_dict(), "ja")
    rows = next(iter(spec["datasets"].values()))
    assert [r["group_label"] for r in rows] == ["全規模", "1 ノード"]
    assert [r["group"] for r in rows] == ["all sizes", "1 node"]  # not a label column
    enc = spec["encoding"]
    assert enc["color"]["scale"]["domain"] == ["全規模", "1 ノード"]
    assert enc["color"]["sort"] == ["全規模", "1 ノード"]
    assert "'1 分'" in enc["x"]["axis"]["labelExpr"] and "'1 時間'" in enc["x"]["axis"]["labelExpr"]
    assert "全規模" in enc["strokeWidth"]["condition"]["test"]


def test_phrases_only_on_word_boundaries():
    # "train" (a phase kind) is an entry; it must not eat the start of "training"
    assert charts.translate("train", "ja") == "学習"
    assert "学習ing" not in charts.translate("Per-rail throughput in the training blocks", "ja")
    assert charts.translate("SAKURAONE v4.1 (unverified)", "ja") == "SAKURAONE v4.1 (未検証)"
    # "other" is an entry (その他); inside a bar's slot key it is data: the Japanese GPT-3 bars had
    # lost "96|measured_other" from their sort order and drawn the measured 96-node bar last
    assert charts.translate("96|measured_other", "ja") == "96|measured_other"
    assert charts.translate(["32|measured", "96|measured_other"], "ja") == [
        "32|measured",
        "96|measured_other",
    ]


@needs_cjk
def test_japanese_month_names_from_the_locale():
    df = pl.DataFrame({"t": ["2024-01-15", "2024-12-15"], "v": [1, 2]})
    ch = alt.Chart(df).mark_line().encode(x=alt.X("t:T", scale=alt.Scale(type="utc")), y="v:Q")
    svg = charts.render_svg(charts.localize(ch.to_dict(), "ja"))
    labels = re.findall(r"<text[^>]*>([^<]+)</text>", svg)
    assert "7月" in labels and "8月" in labels, labels
    assert not {"July", "August", "Jul", "Aug"} & set(labels)


@needs_cjk  # without one: English only, said in one warning (tested below)
def test_save_chart_writes_both_languages(tmp_path):
    paths = charts.save_chart(_chart(), "ttt", tmp_path, formats=("svg",))
    assert paths == [tmp_path / "ttt.svg", tmp_path / "ja" / "ttt.svg"]
    assert "学習時間" in (tmp_path / "ja" / "ttt.svg").read_text()
    assert "time to train" in (tmp_path / "ttt.svg").read_text()


@needs_cjk
def test_japanese_label_drawn_with_the_cjk_font(tmp_path):
    charts.save_chart(_chart(), "ttt", tmp_path, formats=("pdf",), langs=("ja",))
    pdf = (tmp_path / "ja" / "ttt.pdf").read_bytes()
    found = re.findall(rb"/BaseFont\s*/([A-Za-z0-9+_-]+)", pdf)
    # the PDF embeds a subset of the CJK font for the Japanese glyphs (subset prefix, e.g. ABCDEF+)
    assert any(b"NotoSansCJK" in f or b"CJK" in f for f in found), found


# --- a missing CJK font never gives a blank figure ---------------------------------------------


def test_absent_font_name_skips_japanese_with_the_reason(tmp_path, monkeypatch):
    monkeypatch.setenv("TRAINPERF_CJK_FONT", "No Such Font CJK 12345")
    monkeypatch.delenv("TRAINPERF_FIGURE_LANGS", raising=False)
    found = fonts.find_cjk_font()
    assert found.family is None and "No Such Font CJK 12345" in found.reason
    with pytest.warns(UserWarning, match="Japanese figures skipped: .*No Such Font CJK 12345"):
        res = charts.save_chart(_chart(), "ttt", tmp_path, formats=("svg", "png"))
    assert res == [tmp_path / "ttt.svg", tmp_path / "ttt.png"]
    assert not (tmp_path / "ja").exists()  # nothing written in Japanese, so nothing without text
    assert len(res.languages_skipped) == 1 and "No Such Font CJK 12345" in res.languages_skipped[0]
    # the warning is issued once per process, not once per figure
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        charts.save_chart(_chart(), "ttt2", tmp_path, formats=("svg",))


def test_no_fontconfig_says_so(monkeypatch):
    monkeypatch.delenv("TRAINPERF_CJK_FONT", raising=False)
    monkeypatch.setattr(fonts.shutil, "which", lambda _name: None)
    found = fonts.find_cjk_font()
    assert found.family is None and "fc-list" in found.reason


def test_font_choice_prefers_a_japanese_sans_face(monkeypatch):
    listing = (
        (["Noto Serif CJK JP"], "/f/serif.ttc"),
        (["IPAGothic", "IPAゴシック"], "/f/ipag.ttf"),
        (["Noto Sans Mono CJK JP"], "/f/mono.ttc"),
    )
    monkeypatch.delenv("TRAINPERF_CJK_FONT", raising=False)
    monkeypatch.setattr(fonts, "_fc_list_cached", lambda _exe: listing)
    assert fonts.find_cjk_font(fc_list="fc-list").family == "IPAGothic"
    assert fonts.find_cjk_font("Noto Serif CJK JP", fc_list="fc-list").files == ("/f/serif.ttc",)


@pytest.mark.slow
def test_main_job_without_the_font_says_so_in_one_line(tmp_path, monkeypatch):
    monkeypatch.setenv("TRAINPERF_CJK_FONT", "No Such Font CJK 12345")
    lines: list[str] = []
    nb = job.NotebookSpec(
        "mlperf_runs",
        "MLPerf",
        {"mlperf_path": "data/mlperf/v4.1/NVIDIA/results/eos_n8_ngc24.09_nemo"},
    )
    kw = dict(
        out=tmp_path / "o",
        figures=tmp_path / "f",
        root=ROOT,
        notebooks=[nb],
        use_quarto=False,
        progress=False,
        # the demo config points mlperf_runs at every bundled log; the user's override comes last
        overrides={"mlperf_runs": {"mlperf_path": str(ROOT / nb.parameters["mlperf_path"])}},
    )
    job.run_report(log=lines.append, **kw)
    note = [line for line in lines if "Japanese" in line]
    assert len(note) == 1 and note[0].startswith("Japanese figures skipped:"), lines
    assert "No Such Font CJK 12345" in note[0]
    assert sorted(p.name for p in (tmp_path / "f").glob("*.svg")) == [
        "mlperf_eval_curve_llama2_70b_lora.svg",
        "mlperf_time_to_train_llama2_70b_lora.svg",
    ]
    assert not (tmp_path / "f" / "ja").exists()
    exported = [line for line in lines if "figures:" in line]
    assert exported == [
        "  figures: exported mlperf_time_to_train_llama2_70b_lora (en), mlperf_eval_curve_llama2_70b_lora (en)"
    ]
    # a second run skips the unchanged notebook altogether (trainperf.report.rerun) ...
    lines.clear()
    job.run_report(log=lines.append, **kw)
    assert any("mlperf_runs.ipynb unchanged" in line for line in lines)
    assert not [line for line in lines if "figures:" in line]
    # ... and one forced to run again finds the same figures unchanged, skips them and says so
    lines.clear()
    job.run_report(log=lines.append, force=True, **kw)
    assert [line for line in lines if "figures:" in line] == [
        "  figures: unchanged, skipped: mlperf_time_to_train_llama2_70b_lora (en), mlperf_eval_curve_llama2_70b_lora (en)"
    ]


# --- the main job's figure set ---------------------------------------------------------------

#: Words allowed in a Japanese figure: proper names, units, field and format names, Slurm states,
#: hardware, MLPerf (data values and terms of the field, never translated).
_ALLOWED_LATIN = re.compile(
    r"(?<![A-Za-z])(?:[A-Z][A-Za-z0-9.+]*|GB|TB|GPU|MFU|FLOPs|TX|RX|UTC|kWh|v\d[\d.]*|x|i|[a-z]?\d[\w.]*)(?![A-Za-z])"
)


def _latin_words(text: str) -> list[str]:
    # result-folder names (eos_n64_ngc24.09_nemo) and DCGM field names are data: drop words joined
    # by "_" or "-" to other word characters
    text = re.sub(r"[\w.\-]*_[\w.\-]*", " ", text)
    text = _ALLOWED_LATIN.sub(" ", text)
    return re.findall(r"[A-Za-z]{2,}", text)


def test_latin_word_finder_catches_english():
    assert _latin_words("FP8 密行列ピーク: the 実行で使った精度") == ["the"]
    assert _latin_words("eos_n64_ngc24.09_nemo (512 GPU, v4.1)") == []
    assert _latin_words("Jobs and GPU-hours by job size") == ["and", "hours", "by", "job", "size"]


def test_main_job_exports_the_figure_set_in_both_languages(main_job):
    tmp, _ = main_job
    en = {p.stem for p in (tmp / "figures").glob("*.svg")}
    ja = {p.stem for p in (tmp / "figures" / "ja").glob("*.svg")}
    talk_figures = {
        "memory_wall",
        "eos_gpt3_time_to_train_by_scale",
        "eos_efficiency_ratio_by_scale",
        "eos_gpt3_mfu_by_scale",
        "memory_model_state_gpt3_175b",
        "eos_llama2_70b_lora_time_to_train_by_scale",
        "telemetry_tensor_activity",
        "telemetry_rail_throughput",
        "slurm_share_by_state",
        "slurm_share_by_size",
        "slurm_runtime_distribution",
        "cluster_job_layout",
    }
    # the languages the job wrote when it ran, not whether a font is installed now
    if "ja" not in main_job_languages(main_job):
        assert talk_figures <= en and not ja
        pytest.skip("no CJK font: Japanese figures skipped (checked); install fonts-noto-cjk")
    assert (
        talk_figures <= en and en == ja and len(en) == 34
    )  # the record's figures (GPT-3 and Llama 2 70B LoRA, the demo's GPT-3 among v3.1-v4.1), the energy chapter's energy against time, 19, the two trace figures, the job layout, the three reliability figures, the comparison's
    # ratio by GPU count, the GPT-3 GPU-hours by scale, the two llama31_405b run figures and the
    # Llama 2 70B LoRA memory figure (the demo's published rows include LoRA)
    for stem in en:
        for ext in ("png", "pdf"):
            assert (tmp / "figures" / f"{stem}.{ext}").is_file()
            assert (tmp / "figures" / "ja" / f"{stem}.{ext}").is_file()
    # every string of every Japanese figure is Japanese, names and units aside
    leftovers = {}
    for stem in ja:
        svg = (tmp / "figures" / "ja" / f"{stem}.svg").read_text()
        texts = [html.unescape(t) for t in re.findall(r"<text[^>/]*>([^<]*)</text>", svg)]
        assert any(re.search(r"[\u3040-\u30ff\u4e00-\u9fff]", t) for t in texts), stem
        bad = sorted({t for t in texts if _latin_words(t)})
        if bad:
            leftovers[stem] = bad
    assert leftovers == {}
    # the English figures stay English
    for stem in en:
        svg = (tmp / "figures" / f"{stem}.svg").read_text()
        assert not re.search(r"[\u3040-\u30ff\u4e00-\u9fff]", svg), stem


# The talk's decks (talk/index.qmd, talk/en.qmd): tests/test_talk.py.


@needs_cjk
def test_trace_and_monthly_figures_are_japanese_throughout():
    sb = pl.DataFrame(
        {
            "rank": [0, 0],
            "step": [7, 8],
            "complete": [True, False],
            "compute_share": [0.9, 0.8],
            "comm_exposed_share": [0.05, 0.1],
            "memory_exposed_share": [0.01, 0.0],
            "other_exposed_share": [0.0, 0.0],
            "idle_share": [0.04, 0.1],
        }
    )
    mt = pl.DataFrame(
        {
            "timestamp": [datetime(2026, 12, 1, 9, 23, 1)],
            "busy_share": [0.99],
            "gr_engine_active": [1.0],
            "compute_share": [0.97],
            "sm_active": [0.93],
            "matmul_share": [0.66],
            "tensor_active": [0.57],
        }
    )
    months = pl.DataFrame(
        {
            "period_start": [datetime(2024, 12, 1), datetime(2025, 1, 1)],
            "size_bin": [_SIZE_ORDER[0]] * 2,
            "gpu_hours": [10.0, 20.0],
        }
    )
    font = fonts.find_cjk_font().family
    for chart in (
        charts.trace_step_breakdown(sb),
        charts.trace_vs_telemetry(mt),
        charts.slurm_gpu_hours_over_time(months, every="1mo"),
    ):
        svg = export.render_svg(i18n.localize(chart.to_dict(), "ja", font))
        texts = [html.unescape(t) for t in re.findall(r"<text[^>/]*>([^<]*)</text>", svg)]
        assert [t for t in texts if _latin_words(t)] == [], texts
    # the month labels of the ja locale, the year in Japanese order at January
    assert "2025年1月" in texts and "12月" in texts
    assert "ランク 0 ステップ 8 (最後)" in export.render_svg(
        i18n.localize(charts.trace_step_breakdown(sb).to_dict(), "ja", font)
    )
