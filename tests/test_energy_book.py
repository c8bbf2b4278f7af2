"""The energy chapter: its chart in English and Japanese, its notebook on the bundled data, and how
the main job shows it (demo) or says in one sentence that a user's book has no energy input."""

from __future__ import annotations

import html
import json
import re

import polars as pl
import pytest
from helpers import ROOT

from trainperf.config import load_config
from trainperf.config.plan import report_overrides
from trainperf.report import book_words, charts, job
from trainperf.report import demo as demo_mod
from trainperf.report.charts import export, fonts, i18n

REFERENCE = ROOT / "data" / "reference" / "mlperf_power_runs.csv"


def _points():
    return pl.DataFrame(
        {
            "series": ["Dell v4.1, 64 × H100 SXM"] * 3,
            "kind": ["run", "run", "score"],
            "time_to_train_min": [4.9, 5.2, 5.05],
            "energy_kwh": [4.4, 4.7, 4.55],
        }
    )


def test_energy_chart_axes_from_zero_and_the_evaluated_time_as_a_rule():
    times = pl.DataFrame({"series": ["SAKURAONE 64 GPUs"], "time_to_train_min": [4.79]})
    spec = charts.energy_vs_time(_points(), times).to_dict()
    layers = spec["layer"]
    assert [
        ly["mark"]["type"] if isinstance(ly["mark"], dict) else ly["mark"] for ly in layers
    ] == ["circle", "point", "rule", "text"]
    assert (
        layers[0]["encoding"]["x"]["scale"]["zero"] and layers[0]["encoding"]["y"]["scale"]["zero"]
    )
    assert spec["title"]["text"] == "Llama 2 70B LoRA: energy to train against time to train"
    # without an evaluated time: no rule, no line of the subtitle about it
    plain = charts.energy_vs_time(_points()).to_dict()
    assert len(plain["layer"]) == 2 and len(plain["title"]["subtitle"]) == 2


@pytest.mark.skipif(
    fonts.find_cjk_font().family is None,
    reason="no CJK font installed (apt-get install fonts-noto-cjk)",
)
def test_energy_chart_is_japanese_throughout():
    times = pl.DataFrame({"series": ["SAKURAONE 64 GPUs"], "time_to_train_min": [4.79]})
    spec = i18n.localize(
        charts.energy_vs_time(_points(), times).to_dict(), "ja", fonts.find_cjk_font().family
    )
    svg = export.render_svg(spec)
    texts = [html.unescape(t) for t in re.findall(r"<text[^>/]*>([^<]*)</text>", svg)]
    allowed = re.compile(
        r"(?<![A-Za-z])(?:[A-Z][A-Za-z0-9.+]*|GPU|kWh|v\d[\d.]*|\d[\w.]*)(?![A-Za-z])"
    )
    assert [t for t in texts if re.findall(r"[A-Za-z]{2,}", allowed.sub(" ", t))] == []
    assert "学習時間に対する学習エネルギー" in " ".join(texts)
    assert any("エネルギー測定なし" in t for t in texts)


def test_notebook_on_the_bundled_data(tmp_path):
    """The thin notebook quotes the bundled Dell v4.1 score and the evaluated cluster's time at the
    same GPU count, and the GPU-only energy of the H100 capture."""
    pm = pytest.importorskip("papermill")
    comparison = tmp_path / "comparison.csv"
    pl.DataFrame(
        {
            "benchmark": ["llama2_70b_lora"] * 2,
            "n_gpus": [8, 64],
            "evaluated_system": ["SAKURAONE"] * 2,
            "evaluated_min": [28.44, 4.79],
        }
    ).write_csv(comparison)
    values = tmp_path / "values.json"
    pm.execute_notebook(
        str(ROOT / "notebooks" / "energy.ipynb"),
        str(tmp_path / "out.ipynb"),
        parameters={
            "comparison_path": str(comparison),
            "values_path": str(values),
            "figures_dir": str(tmp_path / "fig"),
        },
        cwd=str(ROOT / "notebooks"),
        progress_bar=False,
        kernel_name="python3",
    )
    v = json.loads(values.read_text())
    dell = pl.read_csv(REFERENCE).filter(pl.col("submitter") == "Dell")
    # the olympic mean of the kept runs x scaling factor, in kWh (J / 3.6e6)
    expected = (
        dell.filter(pl.col("in_score"))["energy_j"].mean() * dell["scaling_factor"][0] / 3.6e6
    )
    assert (
        v["ref_kwh"] == f"{expected:.2f}"
        and v["ref_submitter"] == "Dell"
        and v["ref_is_dell_v41"] is True
    )
    # only the 64-GPU time: the H100 power result is on 64 GPUs (8 x B200 is another accelerator)
    assert (v["evaluated_min"], v["evaluated_series"]) == ("4.79", "SAKURAONE 64 GPUs")
    assert v["gpu_model"] == "NVIDIA H100 80GB HBM3" and v["has_gpu"] is True
    assert (tmp_path / "fig" / "energy_vs_time.svg").is_file()


def test_the_job_shows_energy_in_the_demo_and_one_sentence_otherwise():
    spec = next(s for s in job.NOTEBOOKS if s.name == "energy")
    assert all((ROOT / p).is_dir() for p in spec.parameters["capture_paths"])
    assert (ROOT / spec.parameters["power_runs_path"]).is_file()
    cfg = load_config(ROOT / "configs" / "sakuraone.yaml")
    assert report_overrides(cfg).overrides["energy"] == {"accelerator": "H100 SXM"}
    # a user's book: the page is one sentence unless a power result or captures are passed with -p
    sentence = book_words.bundled_measurements_absent(cfg)["energy"]
    # the demo's telemetry is generated: no energy from it, said so
    assert sentence.startswith(
        "No MLPerf power log or measured GPU telemetry of SAKURAONE was given (its DCGM telemetry "
        "is generated"
    )
    assert demo_mod.demo_overrides(cfg, demo=False)["energy"] == {"capture_paths": []}
    assert "energy" not in demo_mod.demo_overrides(cfg, demo=True)
