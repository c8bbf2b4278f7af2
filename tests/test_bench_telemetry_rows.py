"""The telemetry benchmark's 256x rows: a partial store is never reported as the target met, a
size left out is reported as not run (not met), and a partial store holds the whole store's files
of its hosts (issue 29)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[1] / "benchmarks"
sys.path.insert(0, str(BENCH))

import bench_telemetry  # noqa: E402
import telemetry_scale  # noqa: E402


def _row(hosts: int) -> dict:
    # 10 M rows analysed in 8 s CPU: 0.8 s per M rows; peak 1.5 GB
    return {
        "k": 256,
        "rows": 10_000_000,
        "hosts": hosts,
        "sink_only": True,
        "generate_s": 100.0,
        "sink": {
            "cpu_s": 8.0,
            "seconds": 40.0,
            "peak_rss": 1_500_000_000,
            "phase_stats_rows": 500_000,
            "phase_stats_file_mb": 20.0,
        },
        "result": {},
    }


def test_whole_store_within_limits_is_met():
    r = bench_telemetry._sink_row(_row(0), 256, 100, cpu0=1.0, k0=1)
    assert r.ratio == pytest.approx(0.8)  # 0.8 s per M rows / 1.0 at 1x
    assert r.met  # 1.5 GB <= 4 GB and 0.8 <= 1.3
    assert "10.0 M rows, 100 nodes" in r.work
    assert "PARTIAL" not in r.note


def test_partial_store_is_never_met_and_says_how_much_ran():
    r = bench_telemetry._sink_row(_row(10), 256, 100, cpu0=1.0, k0=1)
    assert r.ratio == pytest.approx(0.8)
    assert not r.met  # the same figures, but only 10 of 100 hosts ran
    # 10 M rows from 10 of 100 hosts: about 10 * 100 / 10 = 100 M rows for the whole store
    assert "first 10 of 100 hosts: 10.0 M of about 100 M rows" in r.work
    assert "PARTIAL" in r.note and "meets" in r.note


def test_partial_store_missing_the_limit_says_so():
    row = _row(10)
    row["sink"]["peak_rss"] = 5_000_000_000  # 5 GB > 4 GB
    r = bench_telemetry._sink_row(row, 256, 100, cpu0=1.0, k0=1)
    assert not r.met and "misses" in r.note


def test_size_left_out_is_a_not_run_row():
    r = bench_telemetry._not_run_row(256, 100)
    assert not r.met and r.ratio is None and r.product == "not run"
    assert "TRAINPERF_BENCH_256X=1" in r.peer


def test_partial_store_holds_the_whole_stores_files_of_its_hosts(tmp_path):
    # 2 nodes, 1x: the whole store, then the first host only, by the benchmark's own child
    whole = telemetry_scale.run_child("generate", tmp_path / "whole", 1, 2)
    first = telemetry_scale.run_child("generate", tmp_path / "first", 1, 2, hosts=1)
    names = lambda root: sorted(  # noqa: E731
        str(p.relative_to(root)) for p in root.rglob("*.parquet")
    )
    w, f = names(tmp_path / "whole"), names(tmp_path / "first")
    assert f and set(f) < set(w)  # content-named files: the same bytes give the same names
    assert {p.split("/")[0] for p in f} == {"hostname=gpu001"}
    assert first["rows"] < whole["rows"]
