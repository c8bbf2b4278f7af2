"""GPU-board energy from DCGM telemetry: counter (resets, dips) and power (trapezoid), by hand."""

from __future__ import annotations

import datetime as dt

import polars as pl
import pytest
from helpers import ROOT

from trainperf import dcgm, mlperf
from trainperf.dcgm import SCHEMA
from trainperf.telemetry import gpu_energy, phases_from_log, trained_units

T0 = dt.datetime(2026, 12, 1, tzinfo=dt.UTC)


def _frame(field_id, name, values, gpu=0, host="n1"):
    rows = [
        {
            "timestamp": T0 + dt.timedelta(seconds=i),
            "hostname": host,
            "gpu": gpu,
            "uuid": f"GPU-{gpu}",
            "entity": "gpu",
            "entity_id": gpu,
            "field_id": field_id,
            "field": name,
            "value": float(v),
            "job_id": None,
            "labels": "{}",
        }
        for i, v in enumerate(values)
    ]
    return pl.DataFrame(rows, schema=SCHEMA)


def _phases(spans):
    rows = [
        {
            "phase": p,
            "kind": k,
            "index": i,
            "start": T0 + dt.timedelta(seconds=a),
            "end": T0 + dt.timedelta(seconds=b),
            "duration_s": float(b - a),
        }
        for i, (p, k, a, b) in enumerate(spans)
    ]
    return pl.DataFrame(
        rows,
        schema={
            "phase": pl.String,
            "kind": pl.String,
            "index": pl.Int32,
            "start": pl.Datetime("us", "UTC"),
            "end": pl.Datetime("us", "UTC"),
            "duration_s": pl.Float64,
        },
    )


def _s(x):
    return T0 + dt.timedelta(seconds=x)


def test_power_trapezoid_by_hand():
    # 100, 200, 300, 300, 100 W at 0..4 s: trapezoids 150, 250, 300, 200 J -> E = 0, 150, 400, 700, 900
    f = _frame(155, "DCGM_FI_DEV_POWER_USAGE", [100, 200, 300, 300, 100])
    ph = _phases([("init", "init", 0, 1), ("train_01", "train", 1, 3), ("eval_01", "eval", 3, 4)])
    e = gpu_energy(f, ph, _s(1), _s(4), tokens=1000)
    by = {r["kind"]: r for r in e.summary.iter_rows(named=True)}
    assert by["run"]["energy_j"] == pytest.approx(750.0)  # 900 - 150
    assert by["init"]["energy_j"] == pytest.approx(150.0)
    assert by["train"]["energy_j"] == pytest.approx(550.0)  # 700 - 150
    assert by["eval"]["energy_j"] == pytest.approx(200.0)
    assert by["run"]["j_per_token"] == pytest.approx(0.75)
    assert by["run"]["mean_power_w_per_gpu"] == pytest.approx(250.0)  # 750 J / 3 s
    assert by["run"]["energy_kwh"] == pytest.approx(750.0 / 3.6e6)
    assert set(e.summary["source"]) == {"power"} and set(e.summary["scope"]) == {"GPU boards only"}
    # a phase between samples: E linear inside a sample interval: E(0.5) = 75, E(2.5) = 550
    e2 = gpu_energy(f, _phases([("train_01", "train", 0.5, 2.5)]), _s(0.5), _s(2.5))
    assert e2.phases.filter(pl.col("phase") == "train_01")["energy_j"][0] == pytest.approx(475.0)


def test_counter_reset_and_dip_by_hand():
    # mJ: +200 J, +200 J, a dip (1.3e6 < 1.4e6, not under half: adds nothing), back up to 1.5e6
    # (+100 J above the highest), a reset to 1e5 (under half: counts 100 J from zero), +200 J
    v = [1_000_000, 1_200_000, 1_400_000, 1_300_000, 1_500_000, 100_000, 300_000]
    f = _frame(156, "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", v)
    f = pl.concat(
        [f, _frame(155, "DCGM_FI_DEV_POWER_USAGE", [5000] * 7)]
    )  # ignored: the counter wins
    with pytest.warns(Warning) as rec:
        e = gpu_energy(f, _phases([]), _s(0), _s(6))
    # E = 0, 200, 400, 400, 500, 600, 800 J
    assert e.summary.filter(pl.col("kind") == "run")["energy_j"][0] == pytest.approx(800.0)
    assert e.summary["source"][0] == "counter"
    checks = dict(e.quality.select("check", "n_samples").iter_rows())
    assert checks == {"counter_dip": 1, "counter_reset": 1}
    assert len(rec) == 2
    # from 2.5 s to 4.5 s: E(2.5) = 400, E(4.5) = 550
    with pytest.warns(Warning):
        e2 = gpu_energy(f, _phases([]), _s(2.5), _s(4.5))
    assert e2.summary["energy_j"][0] == pytest.approx(150.0)


def test_phase_beyond_the_samples_is_clipped_and_flagged():
    f = _frame(155, "DCGM_FI_DEV_POWER_USAGE", [100, 100, 100])
    with pytest.warns(Warning, match="not covered"):
        e = gpu_energy(f, _phases([]), _s(1), _s(10))
    r = e.phases.row(0, named=True)
    assert r["covered_s"] == pytest.approx(1.0) and r["energy_j"] == pytest.approx(100.0)


CAPTURES = {
    # the run's tokens from its console.log: steps x global batch x 2048
    "h200_2gpu_1.3b_20261129T1852Z": 18_120_704,  # 553 steps x 16 x 2048, 2 x H200
    "h100_1gpu_1.3b_20261207T1901Z": 8_945_664,  # 546 steps x 8 x 2048, 1 x H100 (made for issue 42)
}


@pytest.mark.parametrize(("name", "expected_tokens"), CAPTURES.items())
def test_bundled_capture_matches_a_hand_integration(name, expected_tokens):
    """On the real H200 capture: the power-based run energy equals a plain-Python trapezoid of the
    same samples, and the energy counter agrees with it within 1 % (two NVML sources)."""
    capture = ROOT / "data" / "telemetry" / name
    t = dcgm.read_exposition(capture / "telemetry.prom")
    r = mlperf.load_results(capture / "gpt_smoke" / "result_0.txt")
    run = r.runs.row(0, named=True)
    a, b = run["run_start"].timestamp(), run["run_stop"].timestamp()
    tokens, _ = trained_units(r)
    assert tokens == expected_tokens
    power = gpu_energy(t.filter(pl.col("field_id") == 155), phases_from_log(r), a, b, tokens=tokens)
    hand = 0.0
    for gpu in sorted(set(t["gpu"].to_list())):
        s = t.filter((pl.col("field_id") == 155) & (pl.col("gpu") == gpu)).sort("timestamp")
        ts = [x.timestamp() for x in s["timestamp"]]
        ws = s["value"].to_list()

        def at(x, ts=ts, ws=ws):  # trapezoids from the first sample to x; E linear inside one
            e = 0.0
            for i in range(1, len(ts)):
                full = (ws[i] + ws[i - 1]) / 2 * (ts[i] - ts[i - 1])
                if ts[i] <= x:
                    e += full
                else:
                    e += full * (x - ts[i - 1]) / (ts[i] - ts[i - 1])
                    break
            return e

        hand += at(b) - at(a)
    run_p = power.summary.filter(pl.col("kind") == "run").row(0, named=True)
    assert run_p["energy_j"] == pytest.approx(hand, rel=1e-9)
    counter = (
        gpu_energy(t, phases_from_log(r), a, b, tokens=tokens)
        .summary.filter(pl.col("kind") == "run")
        .row(0, named=True)
    )
    assert counter["source"] == "counter"
    assert counter["energy_j"] == pytest.approx(run_p["energy_j"], rel=0.01)
    assert counter["j_per_token"] == pytest.approx(counter["energy_j"] / tokens)
