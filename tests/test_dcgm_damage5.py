"""Counter glitches and real resets of DCGM energy (trial B, F1): one rule for the reader, the
counter increase and the GPU energy module."""

from __future__ import annotations

import warnings

import pytest

from trainperf import dcgm
from trainperf.quality import QualityLog
from trainperf.telemetry.energy import cumulative_energy

E = "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION"
LBL = '{gpu="0",UUID="GPU-a",device="nvidia0",Hostname="n1"}'
T0 = 1795978622000  # ms


def _prom(tmp_path, values, times=None):
    times = times or [T0 + 1000 * i for i in range(len(values))]
    lines = [f"# TYPE {E} counter"] + [
        f"{E}{LBL} {v} {t}" for v, t in zip(values, times, strict=True)
    ]
    p = tmp_path / "e.prom"
    p.write_text("\n".join(lines) + "\n")
    return p


def _read(p):
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        rd = dcgm.read(p)
    return rd, [str(x.message) for x in w]


def test_zero_glitch_counts_nothing_and_is_flagged(tmp_path):
    # 100,000,000 -> 100,080,000 -> 0 -> 100,240,000 mJ: the 0 is a glitch (back above the old level
    # one sample later). True increase: 80,000 + 160,000 = 240,000 mJ (not 100,320,000).
    p = _prom(tmp_path, [100_000_000, 100_080_000, 0, 100_240_000])
    rd, msgs = _read(p)
    inc = dcgm.counter_increase(rd.frame(), E)["increase"].sum()
    assert inc == pytest.approx(240_000)
    q = rd.quality.filter(rd.quality["check"] == "counter_glitch")
    assert q.height == 1 and q["first_line"][0] == 4  # the 0 is on line 4 of the file
    assert any(f"{p}:4" in m and "glitch" in m for m in msgs)
    assert "counter_reset" not in rd.quality["check"].to_list()
    log = QualityLog()
    e = cumulative_energy(rd.frame(), log, str(p))
    assert e["energy_j"].to_list()[-1] == pytest.approx(240.0)  # 240,000 mJ
    assert "counter_glitch" in log.frame()["check"].to_list()


def test_real_reset_counted_like_prometheus_and_flagged(tmp_path):
    # 1,000,000 -> 1,080,000 -> 5,000 -> 85,000: a restart near zero climbing from there.
    # Prometheus increase(): 80,000 + 5,000 (from zero) + 80,000 = 165,000 mJ.
    p = _prom(tmp_path, [1_000_000, 1_080_000, 5_000, 85_000])
    rd, msgs = _read(p)
    assert dcgm.counter_increase(rd.frame(), E)["increase"].sum() == pytest.approx(165_000)
    q = rd.quality.filter(rd.quality["check"] == "counter_reset")
    assert q.height == 1 and q["action"][0] == "flagged" and q["first_line"][0] == 4
    assert any(f"{p}:4" in m and "reset" in m for m in msgs)
    log = QualityLog()
    e = cumulative_energy(rd.frame(), log, str(p))
    assert e["energy_j"].to_list()[-1] == pytest.approx(165.0)
    rows = log.frame().filter(log.frame()["check"] == "counter_reset")
    assert rows["action"].to_list() == ["flagged"]


def test_clock_stepped_back_is_flagged_and_counted_in_file_order(tmp_path):
    # the clock steps back 1 h after the 2nd scrape: times 0, 1, -3598, -3597 s; values (file order)
    # 100,000,000, 100,080,000, 100,160,000, 100,240,000 mJ: 3 x 80,000 = 240,000 mJ. Sorted by
    # time the series would read 100,160,000, 100,240,000, 100,000,000, 100,080,000: a "dip".
    times = [T0, T0 + 1000, T0 + 2000 - 3_600_000, T0 + 3000 - 3_600_000]
    p = _prom(tmp_path, [100_000_000, 100_080_000, 100_160_000, 100_240_000], times)
    rd, msgs = _read(p)
    assert dcgm.counter_increase(rd.frame(), E)["increase"].sum() == pytest.approx(240_000)
    q = rd.quality.filter(rd.quality["check"] == "clock_step").row(0, named=True)
    assert q["action"] == "flagged" and q["first_line"] == 4  # the first stepped-back sample
    assert "counter_dip" not in rd.quality["check"].to_list()
    assert any(f"{p}:4" in m and "clock_step" in m for m in msgs)
    log = QualityLog()
    e = cumulative_energy(rd.frame(), log, str(p))
    assert e["energy_j"].max() == pytest.approx(240.0)


def test_clock_jumped_forward_10h_is_flagged(tmp_path):
    # 1 s scrapes, then +10 h after the 3rd (line 4 is the 3rd sample, line 5 the jumped one):
    # gap 36,001 s > 100 x the 1 s median and > 600 s. The counter's values are unaffected:
    # 4 x 80,000 = 320,000 mJ.
    times = [T0, T0 + 1000, T0 + 2000, T0 + 3000 + 36_000_000, T0 + 4000 + 36_000_000]
    p = _prom(tmp_path, [100_000_000 + 80_000 * i for i in range(5)], times)
    rd, msgs = _read(p)
    q = rd.quality.filter(rd.quality["check"] == "clock_step").row(0, named=True)
    assert q["first_line"] == 5 and "forward" in q["detail"]
    assert dcgm.counter_increase(rd.frame(), E)["increase"].sum() == pytest.approx(320_000)


def test_steady_scrapes_are_no_clock_step(tmp_path):
    p = _prom(tmp_path, [100_000_000 + 80_000 * i for i in range(6)])
    rd, msgs = _read(p)
    assert "clock_step" not in rd.quality["check"].to_list() and not msgs
