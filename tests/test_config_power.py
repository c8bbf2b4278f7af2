"""The config's MLPerf power results (``power:``, or found beside the ``mlperf:`` logs as MLCommons
publishes them: ``results/<system>/<benchmark>/power/result_N/node_K.txt``) and measured telemetry
reach the energy chapter; a wrong ``power:`` is refused in one line naming the key; a config with
neither gets one sentence naming the config keys (issue 42)."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import ROOT

from trainperf.config import TEMPLATE, load_config, parse_config, report_overrides
from trainperf.errors import ConfigError
from trainperf.report import book_words

BASE = {"name": "Mine", "accelerator": "H100 SXM", "gpus_per_node": 8}


def _power_result(root: Path, system: str = "mine_n8") -> Path:
    """An MLCommons-layout folder: results/<system>/llama2_70b_lora with a result file and a power
    log beside it (names only: the config checks where the files are, the chapter reads them)."""
    bench = root / "Us" / "results" / system / "llama2_70b_lora"
    (bench / "power" / "result_0").mkdir(parents=True)
    (bench / "result_0.txt").write_text(":::MLLOG {}\n")
    (bench / "power" / "result_0" / "node_0.txt").write_text(":::MLLOG {}\n")
    return root


def test_power_results_beside_the_mlperf_logs_are_found_and_passed_to_the_chapter(tmp_path):
    root = _power_result(tmp_path / "training_results_v4.1")
    cfg = parse_config({**BASE, "mlperf": "training_results_v4.1"}, tmp_path)
    assert cfg.power == str(root.resolve()) and cfg.inputs()["power"] is True
    assert report_overrides(cfg).overrides["energy"]["power_dir"] == str(root.resolve())
    # the page is shown: no "not given" sentence for it
    assert "energy" not in book_words.bundled_measurements_absent(cfg)


def test_power_key_names_another_folder_and_false_turns_discovery_off(tmp_path):
    logs = tmp_path / "logs" / "Us" / "results" / "mine_n8" / "gpt3"
    logs.mkdir(parents=True)
    (logs / "result_0.txt").write_text(":::MLLOG {}\n")
    power = _power_result(tmp_path / "power_runs")
    cfg = parse_config({**BASE, "mlperf": "logs", "power": "power_runs"}, tmp_path)
    assert cfg.power == str(power.resolve())
    # logs with power results beside them, but `power: false`: none
    _power_result(tmp_path / "logs")
    off = parse_config({**BASE, "mlperf": "logs", "power": False}, tmp_path)
    assert off.power is None and "power_dir" not in report_overrides(off).overrides["energy"]
    # MLPerf logs without power results: no power input, and the page's sentence names the key
    plain = parse_config({**BASE, "mlperf": str(logs)}, tmp_path)
    assert plain.power is None
    sentence = book_words.bundled_measurements_absent(plain)["energy"]
    assert "`power:`" in sentence and "`telemetry:`" in sentence and "-p " not in sentence


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("nowhere", r"^power: no such file or folder: nowhere$"),
        ("empty", r"^power: no MLPerf power result under empty \(a benchmark folder holding "),
        (True, r"^power: expected a folder of MLPerf power results \(or false\), got True$"),
        (["a"], r"^power: expected text, got list$"),
    ],
)
def test_a_wrong_power_key_is_one_line_naming_it(tmp_path, value, message):
    (tmp_path / "empty").mkdir()
    with pytest.raises(ConfigError, match=message):
        parse_config({**BASE, "power": value}, tmp_path)


def test_measured_telemetry_reaches_the_energy_chapter_and_synthetic_does_not(tmp_path):
    log = tmp_path / "result_0.txt"
    log.write_text(":::MLLOG {}\n")
    (tmp_path / "dcgm.prom").write_text("")
    tel = {"source": "dcgm.prom", "mlperf_log": "result_0.txt", "job_id": "4242"}
    cfg = parse_config({**BASE, "telemetry": tel}, tmp_path)
    ov = report_overrides(cfg).overrides["energy"]
    assert ov["telemetry_source"] == str((tmp_path / "dcgm.prom").resolve())
    assert (ov["telemetry_log"], ov["job_id"], ov["evaluated_name"]) == (
        str(log.resolve()),
        "4242",
        "Mine",
    )
    assert "energy" not in book_words.bundled_measurements_absent(cfg)
    # generated telemetry is no measurement: no energy from it, and the sentence says why
    syn = parse_config({**BASE, "telemetry": {**tel, "source": "synthetic"}}, tmp_path)
    assert "telemetry_source" not in report_overrides(syn).overrides["energy"]
    assert (
        "its DCGM telemetry is generated" in book_words.bundled_measurements_absent(syn)["energy"]
    )


def test_the_demo_config_has_no_power_result_and_the_template_documents_the_key(tmp_path):
    demo = load_config(ROOT / "configs" / "sakuraone.yaml")
    assert demo.power is None and report_overrides(demo).overrides["energy"] == {
        "accelerator": "H100 SXM"
    }
    assert "# power: " in TEMPLATE and "power: false" in TEMPLATE
    # the template's commented power line, uncommented, is a valid key once its folder exists
    line = next(ln for ln in TEMPLATE.splitlines() if ln.startswith("# power: "))
    folder = line.removeprefix("# power: ").split("#")[0].strip()
    _power_result(tmp_path / folder)
    assert parse_config({**BASE, "power": folder}, tmp_path).power == str(
        (tmp_path / folder).resolve()
    )
