"""Figure labels in English and Japanese; the Japanese figures use the CJK font named in the theme."""

from __future__ import annotations

import re
import shutil
import subprocess

import altair as alt
import polars as pl
import pytest

from trainperf.report import charts


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
        .properties(title="gpt3: time to train by scale")
    )


def test_localize_translates_titles_not_data():
    spec = charts.localize(_chart().to_dict(), "ja")
    assert spec["title"] == "gpt3: 規模別の学習時間"
    assert spec["encoding"]["x"]["title"] == "ノード数 (各 8 GPU)"
    assert spec["encoding"]["y"]["title"] == "学習時間 (分)"
    assert spec["encoding"]["color"]["title"] == "システム"
    assert spec["config"]["font"] == "Noto Sans CJK JP"
    # data values are never translated
    data = next(iter(spec["datasets"].values()))
    assert {r["system"] for r in data} == {"Eos"}
    assert charts.localize(_chart().to_dict(), "en")["title"] == "gpt3: time to train by scale"
    with pytest.raises(ValueError, match="unknown figure language"):
        charts.localize({}, "fr")


def test_save_chart_writes_both_languages(tmp_path):
    paths = charts.save_chart(_chart(), "ttt", tmp_path, formats=("svg",))
    assert paths == [tmp_path / "ttt.svg", tmp_path / "ja" / "ttt.svg"]
    assert "学習時間" in (tmp_path / "ja" / "ttt.svg").read_text()
    assert "time to train" in (tmp_path / "ttt.svg").read_text()


def _has_cjk_font() -> bool:
    if shutil.which("fc-list") is None:
        return False
    return "Noto Sans CJK JP" in subprocess.run(["fc-list"], capture_output=True, text=True).stdout


@pytest.mark.skipif(
    not _has_cjk_font(),
    reason="Noto Sans CJK JP not installed (apt-get install fonts-noto-cjk; .ci/run installs it)",
)
def test_japanese_label_drawn_with_the_cjk_font(tmp_path):
    charts.save_chart(_chart(), "ttt", tmp_path, formats=("pdf",), langs=("ja",))
    pdf = (tmp_path / "ja" / "ttt.pdf").read_bytes()
    fonts = set(re.findall(rb"/BaseFont\s*/([A-Za-z0-9+_-]+)", pdf))
    # the PDF embeds a subset of the CJK font for the Japanese glyphs (subset prefix, e.g. ABCDEF+)
    assert any(b"NotoSansCJKjp" in f for f in fonts), fonts


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
    }
    assert talk_figures <= en and en == ja
    for stem in en:
        for ext in ("png", "pdf"):
            assert (tmp / "figures" / f"{stem}.{ext}").is_file() and (
                tmp / "figures" / "ja" / f"{stem}.{ext}"
            ).is_file()
    # every Japanese figure has Japanese in its title
    for stem in ja:
        svg = (tmp / "figures" / "ja" / f"{stem}.svg").read_text()
        assert re.search(r"[\u3040-\u30ff\u4e00-\u9fff]", svg), stem


def test_talk_slides_use_exported_figures(main_job):
    from conftest import ROOT

    tmp, _ = main_job
    refs = re.findall(r"!\[[^\]]*\]\(figures/([^)]+)\)", (ROOT / "talk" / "index.qmd").read_text())
    assert len(refs) >= 10
    for ref in refs:
        assert (tmp / "figures" / ref).is_file(), ref


@pytest.mark.quarto
@pytest.mark.skipif(
    shutil.which("quarto") is None,
    reason="quarto is not on PATH (cannot be installed offline; see README)",
)
def test_talk_renders_with_quarto(main_job, tmp_path):
    from conftest import ROOT

    tmp, _ = main_job
    work = tmp_path / "talk"
    shutil.copytree(
        ROOT / "talk", work, ignore=shutil.ignore_patterns("_output", "figures", ".quarto")
    )
    shutil.copytree(tmp / "figures", work / "figures")
    subprocess.run(["quarto", "render"], cwd=work, check=True)
    assert (work / "_output" / "index.html").is_file()
