"""Power results, trial B (F9): the interconnect estimate in only some runs, a power folder with no
result file, node readings too low for a node (kW logged as W), and which conversion_eff is used
when one is out of range. Expected values by hand."""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest
from helpers import gpt3_run, mllog

from trainperf.power import energy_to_train, file_energy, read_power_log

T0 = 1_700_000_000_000


def _write(path: Path, lines) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n")
    return path


def _node(pdir, t0, stop, watts, eff=0.95):
    readings = [(t, watts) for t in range(t0 - 1000, stop + 1, 1000)]
    lines = [mllog("power_measurement_start", None, t0 - 2000, event_type="INTERVAL_START")]
    lines.append(mllog("conversion_eff", eff, t0 - 2000, {"measurement_type": "AC"}))
    lines += [mllog("power_reading", w, t, {"host": "node_0"}) for t, w in readings]
    lines.append(mllog("power_measurement_stop", None, stop, event_type="INTERVAL_END"))
    return _write(pdir / "node_0.txt", lines)


def _folder(results_tree, est=(True, True, True), watts=1000.0):
    """3 gpt3 runs of 1, 2 and 5 min on one node at a constant ``watts`` (eff 0.95); a switch file per
    run, with interconnect_power_est 200 W where ``est`` says so."""
    for i, m in enumerate((1.0, 2.0, 5.0)):
        t0 = T0 + i * 3_600_000
        res = results_tree.add("sysP", "gpt3", i, gpt3_run(t0=t0, minutes=m), nodes=1)
        pdir = res.parent / "power" / f"result_{i}"
        _node(pdir, t0, int(t0 + m * 60_000) + 1000, watts)
        sw = [mllog("conversion_eff", 1.0, t0)]
        if est[i]:
            sw.append(mllog("interconnect_power_est", 200.0, t0))
        _write(pdir / "sw_0.txt", sw)
    return res.parent


def _energy(folder):
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        res = energy_to_train(folder)
    return res, [str(x.message) for x in w]


def test_interconnect_estimate_in_only_one_run_is_flagged(results_tree):
    folder = _folder(results_tree, est=(False, True, False))
    res, msgs = _energy(folder)
    q = res.quality.filter(res.quality["check"] == "interconnect_inconsistent").row(0, named=True)
    assert q["action"] == "flagged" and q["source"] == str(folder / "power")
    assert "result_1" in q["detail"] and "result_0, result_2" in q["detail"]
    assert any(str(folder / "power") in m and "interconnect_inconsistent" in m for m in msgs)
    clean, _ = _energy(_folder_copy(results_tree, folder))
    assert "interconnect_inconsistent" not in clean.quality["check"].to_list()


def _folder_copy(results_tree, folder):
    # the same folder with the estimate in every run's switch file
    for i in range(3):
        t0 = T0 + i * 3_600_000
        _write(
            folder / "power" / f"result_{i}" / "sw_0.txt",
            [mllog("conversion_eff", 1.0, t0), mllog("interconnect_power_est", 200.0, t0)],
        )
    return folder


def test_orphan_power_folder_is_flagged(results_tree):
    folder = _folder(results_tree)
    _node(folder / "power" / "result_7", T0, T0 + 60_000, 1000.0)  # no result_7.txt
    res, msgs = _energy(folder)
    q = res.quality.filter(res.quality["check"] == "orphan_power_log").row(0, named=True)
    assert q["source"] == str(folder / "power" / "result_7") and "result_7" in q["detail"]
    assert any("result_7" in m and "orphan_power_log" in m for m in msgs)
    # the 3 runs are still scored: the 2-min run, 0.95 x 1000 W + 200 W = 1150 W x 120 s = 138 kJ
    assert res.scores["energy_to_train_j"][0] == pytest.approx(138_000.0)


def test_node_readings_in_kw_are_flagged(results_tree):
    # readings of 1.0 (kW logged as W): mean 0.95 x 1.0 = 0.95 W < 50 W
    folder = _folder(results_tree, watts=1.0)
    res, msgs = _energy(folder)
    q = res.quality.filter(res.quality["check"] == "implausible_power").row(0, named=True)
    assert q["action"] == "flagged" and "0.95 W" in q["detail"]
    assert any("node_0.txt" in m and "implausible_power" in m for m in msgs)


@pytest.mark.parametrize(
    ("effs", "used", "text"),
    [((1.5, 0.9), 0.9, "the last valid one, 0.9, is used"), ((1.5,), 1.0, "1.0 is used")],
)
def test_bad_conversion_eff_names_the_value_used(tmp_path, effs, used, text):
    lines = [mllog("power_measurement_start", None, T0, event_type="INTERVAL_START")]
    lines += [mllog("conversion_eff", e, T0) for e in effs]
    lines += [mllog("power_reading", 100.0, T0 + 1000 * k, {"host": "n"}) for k in range(1, 5)]
    lines.append(mllog("power_measurement_stop", None, T0 + 4000, event_type="INTERVAL_END"))
    log = read_power_log(_write(tmp_path / "node_0.txt", lines))
    bad = [i for i in log.issues if i.check == "conversion_eff" and i.action == "excluded"]
    assert bad and text in bad[0].detail and bad[0].line == 2
    # 100 W x 4 s window x eff, for a 4 s time to train
    assert file_energy(log, 4000.0)[0]["energy_j"] == pytest.approx(400.0 * used)
