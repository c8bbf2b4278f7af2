"""The energy chapter of a user's book (issue 42): with the cluster's own MLPerf power result (the
config's ``power:``) and its DCGM telemetry (``telemetry:``), the page says its energy to train and
its GPU energy per run and phase with the numbers a hand computation gives; with power logs only, it
says which config key would add GPU energy. The notebook runs as the job runs it (papermill, the
parameters :func:`trainperf.config.report_overrides` sets), the page as the preview resolves it."""

from __future__ import annotations

import json
import re

import pytest
from helpers import ROOT
from test_energy_telemetry_source import PHASES, RUN, _csv, _hand, _log
from test_power import _folder

from trainperf.config import parse_config, report_overrides
from trainperf.report.preview.pages import chapter_markdown

pm = pytest.importorskip("papermill")


def _chapter(tmp_path, cfg) -> tuple[str, dict]:
    """The energy page of ``cfg``'s book and the values its notebook recorded."""
    params = dict(report_overrides(cfg).overrides["energy"])
    values = tmp_path / "values.json"
    nbs = tmp_path / "notebooks"
    nbs.mkdir()
    params |= {"capture_paths": [], "values_path": str(values), "figures_dir": ""}
    params["scratch_dir"] = str(tmp_path / "scratch")
    pm.execute_notebook(
        str(ROOT / "notebooks" / "energy.ipynb"),
        str(nbs / "energy.ipynb"),
        parameters=params,
        cwd=str(ROOT / "notebooks"),
        progress_bar=False,
        kernel_name="python3",
    )
    v = json.loads(values.read_text())
    meta = {
        "energy": v,
        "inputs": {"energy": True, **cfg.inputs()},
        "config": {"name": cfg.name},
    }
    text = chapter_markdown(ROOT / "chapters" / "energy.qmd", nbs, meta)
    return re.sub(r"\s+", " ", text), v


def test_a_users_book_with_power_logs_and_telemetry(tmp_path, results_tree):
    power = _folder(results_tree).parent.parent  # Acme/results/sysP: three gpt3 runs with power/
    _csv(tmp_path / "dcgm.csv")
    _log(tmp_path / "result_0.txt")
    cfg = parse_config(
        {
            "name": "Mine",
            "accelerator": "H100 SXM",
            "gpus_per_node": 8,
            "power": str(power),
            "telemetry": {"source": "dcgm.csv", "mlperf_log": "result_0.txt", "job_id": "4242"},
        },
        tmp_path,
    )
    page, v = _chapter(tmp_path, cfg)
    # its power result: the olympic mean keeps the 2-minute run, 2 x 0.95 x 1000 W + 200 W for 120 s
    # = 252 kJ = 0.07 kWh (tests/test_power.py's hand computation)
    assert f"{252_000 / 3.6e6:.2f}" == v["own_kwh"] == "0.07"
    assert "Mine's own MLPerf power result is in the table too" in page
    assert "a score of 2.00 min and an energy to train of 0.07 kWh" in page
    # its GPU energy over the run (10-60 s) from its telemetry, by hand; per sample: 320 samples
    run = _hand([RUN])
    # n1 + n2, 4 GPUs at ~300-700 W for 50 s: ~110 kJ, ~0.03 kWh, ~350 J per sample
    assert f"the GPU boards drew {run / 1e3:.1f} kJ ({run / 3.6e6:.3f} kWh)" in page
    assert (
        f"{run / 50 / 4:.0f} W per GPU on average, or {run / 320:.1f} J per trained sample" in page
    )
    assert f"training blocks took {100 * _hand(PHASES['train']) / run:.0f}%" in page
    assert "4 GPUs on 2 hosts" in page and "(`telemetry:`, dcgm\\.csv)" in page
    # the table's row of the whole run, named by the cluster (Markdown escapes its dot and brackets)
    row = f"| Mine \\(H100 SXM\\), run result\\_0\\.txt | 4 | whole run \\(timed\\) | 50.0 | {run / 1e3:.1f} |"
    assert row in page, "the table's whole-run row: 4 GPUs, 50 s, the hand-integrated kJ"
    assert "the energy counter where the GPUs have one, else board power" in page
    # nothing of the project's own captures, nothing generated, no notebook parameter
    assert "project's own short GPT runs" not in page and "generated" not in page
    assert "-p " not in page and "No measured DCGM telemetry" not in page
    assert str(tmp_path) not in page  # no path of the build machine


def test_a_users_book_with_power_logs_only_names_the_telemetry_key(tmp_path, results_tree):
    power = _folder(results_tree).parent.parent
    cfg = parse_config(
        {"name": "Mine", "accelerator": "H100 SXM", "gpus_per_node": 8, "power": str(power)},
        tmp_path,
    )
    page, v = _chapter(tmp_path, cfg)
    assert v["own_kwh"] == "0.07" and "has_cluster" not in v
    assert "No measured DCGM telemetry of Mine was given (config key `telemetry:`" in page
    assert "GPU boards drew" not in page
    assert "no measured GPU telemetry was given" not in page  # no empty table beside the sentence
