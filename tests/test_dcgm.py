"""Tests for trainperf.dcgm. Fixtures: tests/data/dcgm (synthetic, see README there).

Expected values are worked out by hand from the fixture text (arithmetic in comments),
never taken from the code under test.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import re
from pathlib import Path

import polars as pl
import pytest

from trainperf import dcgm

D = Path(__file__).parent / "data" / "dcgm"
UTC = dt.timezone.utc  # noqa: UP017 (py3.10)
T0 = dt.datetime(2026, 1, 1, tzinfo=UTC)  # 1767225600 in the fixtures


def by(frame: pl.DataFrame, **eq) -> pl.DataFrame:
    for k, v in eq.items():
        frame = frame.filter(pl.col(k) == v)
    return frame.sort("timestamp")


# ---------------------------------------------------------------- schema / single scrape


def test_single_scrape_schema_sentinels_and_labels():
    f = dcgm.read_exposition(D / "scrape_single.prom", timestamp=T0)
    assert f.schema == pl.Schema(dcgm.SCHEMA)
    # 6 metrics x 2 GPUs = 12 samples; minus MEMORY_TEMP gpu1 (INT64 sentinel
    # 9223372036854775794 = not supported) and GR_ENGINE_ACTIVE gpu1 (FP64 blank 2**47) = 10
    assert f.height == 10
    assert by(f, field_id=140)["gpu"].to_list() == [0]
    assert by(f, field_id=1001)["gpu"].to_list() == [0]
    assert set(f["timestamp"].to_list()) == {T0}
    assert set(f["hostname"].to_list()) == {"gpu-node-01"}
    p = by(f, field="DCGM_FI_DEV_POWER_USAGE", gpu=1)
    assert p["value"].to_list() == [110.786]
    assert p["uuid"].to_list() == ["GPU-3d0c5a6e-1f1b-4a51-9c0e-4c7d8f9a0b11"]
    lab = json.loads(p["labels"][0])
    assert lab["pod"] == "llama-0" and lab["DCGM_FI_DRIVER_VERSION"] == "580.105.08"
    assert "gpu" not in lab and "UUID" not in lab and "Hostname" not in lab
    # units as exported: GPU_UTIL percent, energy mJ
    assert by(f, field_id=203, gpu=0)["value"].to_list() == [97.0]
    assert by(f, field_id=156, gpu=0)["value"].to_list() == [123456789.0]


# the file's two samples of one series share the file's mtime: the duplicate_sample warning is
# expected here (the archive has no scrape markers)
@pytest.mark.filterwarnings("ignore:.*duplicate_sample:trainperf.dcgm.fields.DcgmWarning")
def test_single_scrape_defaults_to_file_mtime(tmp_path):
    p = tmp_path / "s.prom"
    p.write_bytes(
        (D / "per_sample_ts.prom")
        .read_bytes()
        .replace(b" 1767225600000", b"")
        .replace(b" 1767225601500", b"")
    )
    os.utime(p, (1767225700, 1767225700))
    f = dcgm.read_exposition(p)
    assert set(f["timestamp"].to_list()) == {T0 + dt.timedelta(seconds=100)}


def test_bytes_without_time_is_an_error():
    data = b'DCGM_FI_DEV_GPU_UTIL{gpu="0",Hostname="h"} 5\n'
    with pytest.raises(dcgm.DcgmFormatError, match=r"<bytes>:1: .*sample time"):
        dcgm.read_exposition(data)


def test_per_sample_timestamps_ms():
    f = dcgm.read_exposition(D / "per_sample_ts.prom")
    # 1767225600000 ms = T0; 1767225601500 ms = T0 + 1.5 s
    assert f["timestamp"].to_list() == [T0, T0 + dt.timedelta(milliseconds=1500)]
    assert f["value"].to_list() == [500.5, 501.25]


# ---------------------------------------------------------------- archives


def test_archive_markers_and_mixed_hostname_label():
    f = dcgm.read_exposition(D / "archive_mixed_hostname.prom")
    # 3 scrapes (epoch line, bare ISO line, "# SCRAPE iso") x 2 metrics x 2 GPUs
    assert f.height == 12
    assert sorted(set(f["timestamp"].to_list())) == [
        T0 + dt.timedelta(seconds=s) for s in (0, 15, 30)
    ]
    # scrapes 1-2 say Hostname=, scrape 3 hostname=: still one host, one series per GPU+field
    assert f["hostname"].unique().to_list() == ["gpu-node-01"]
    cov = dcgm.coverage(f, "15s")
    assert cov.height == 4  # 2 fields x 2 GPUs
    # window 0..30 s at 15 s -> 30 // 15 + 1 = 3 expected, 3 present
    assert cov["n_expected"].to_list() == [3] * 4 and cov["coverage"].to_list() == [1.0] * 4


def test_pcie_declared_counter_going_down_is_kept_as_rate():
    f = dcgm.read_exposition(D / "archive_mixed_hostname.prom")
    v = by(f, field_id=1009, gpu=0)["value"].to_list()
    assert v == [5e9, 1.25e9, 3e9]  # as written: down then up, no differencing
    assert dcgm.FIELDS[1009].kind == "gauge" and dcgm.FIELDS[1009].unit == "B/s"
    with pytest.raises(ValueError, match="not a counter"):
        dcgm.counter_increase(f, 1009)


def test_counter_increase_handles_reset():
    base = dict(
        hostname="h",
        gpu=0,
        uuid="u",
        entity="GPU",
        entity_id=0,
        field_id=156,
        field="DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION",
        job_id=None,
        labels="{}",
    )
    rows = [
        dict(base, timestamp=T0 + dt.timedelta(seconds=s), value=v)
        for s, v in [(0, 1000.0), (30, 4000.0), (60, 500.0)]
    ]
    f = pl.DataFrame(rows, schema=dcgm.SCHEMA)
    inc = dcgm.counter_increase(f, "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION")["increase"].to_list()
    # 4000-1000 = 3000; then 500 < 4000 -> reset, increase = 500 (counted from 0)
    assert inc == [None, 3000.0, 500.0]


def test_engines_agree():
    for name in [
        "scrape_single.prom",
        "archive_mixed_hostname.prom",
        "per_sample_ts.prom",
        "xid_hour.prom",
        "nvlink_two_fields.prom",
        "no_prof_host.prom",
    ]:
        a = dcgm.read_exposition(D / name, timestamp=T0)
        b = dcgm.read_exposition(D / name, timestamp=T0, engine="prometheus_client")
        key = ["hostname", "gpu", "field_id", "entity", "timestamp"]
        assert a.sort(key).equals(b.sort(key)), name


def test_bad_labels_error_names_file_and_line():
    with pytest.raises(dcgm.DcgmFormatError) as e:
        dcgm.read_exposition(D / "bad_labels.prom", timestamp=T0)
    assert isinstance(e.value, ValueError)
    assert e.value.line == 3 and "bad_labels.prom:3" in str(e.value) and "labels" in str(e.value)


def test_garbage_line_error():
    data = b'1767225600\nDCGM_FI_DEV_GPU_UTIL{gpu="0"} 5\n!!garbage\n'
    with pytest.raises(dcgm.DcgmFormatError, match=r"<bytes>:3: expected a sample"):
        dcgm.read_exposition(data)
    with pytest.raises(dcgm.DcgmFormatError, match=r"<bytes>:2: expected a numeric value"):
        dcgm.read_exposition(b'1767225600\nDCGM_FI_DEV_GPU_UTIL{gpu="0"} abc\n')


# ---------------------------------------------------------------- NVLink, XID, missing


def test_nvlink_two_units_reconciled():
    f = dcgm.read_exposition(D / "nvlink_two_fields.prom")
    n = dcgm.nvlink_throughput(f)
    assert n["gpu"].to_list() == [0, 1]  # one row per GPU and time: de-duplicated
    g0, g1 = n.row(0, named=True), n.row(1, named=True)
    # GPU 0: prof TX+RX = 150e9 + 149e9 = 299e9 B/s preferred; 449 says 300000 MB/s = 300e9 B/s
    assert g0["bytes_per_s"] == 299e9 and g0["source"] == "prof"
    # rel_diff = |299e9 - 300e9| / 300e9 = 1/300
    assert g0["rel_diff"] == pytest.approx(1 / 300) and g0["disagree"] is False
    # GPU 1: only 449 = 120000 MB/s -> 1.2e11 B/s
    assert g1["bytes_per_s"] == 1.2e11 and g1["source"] == "dev449" and g1["rel_diff"] is None
    si = dcgm.with_si_units(f).filter(pl.col("field_id") == 449).sort("gpu")
    assert si["value_si"].to_list() == [3e11, 1.2e11] and si["unit"].to_list() == ["MB/s"] * 2


def test_xid_held_for_an_hour_is_one_event():
    f = dcgm.read_exposition(D / "xid_hour.prom")
    assert by(f, field_id=230, gpu=3).height == 121  # 0..3600 s every 30 s: 3600/30 + 1
    ev = dcgm.xid_events(f)
    assert ev.height == 1  # GPU 0 holds 0 (no XID); GPU 3 holds 79 -> one event
    e = ev.row(0, named=True)
    assert (e["gpu"], e["xid"], e["n_samples"]) == (3, 79, 121)
    assert e["first_seen"] == T0 and e["last_seen"] == T0 + dt.timedelta(hours=1)


def test_xid_change_makes_new_event():
    base = dict(
        hostname="h",
        gpu=0,
        uuid="u",
        entity="GPU",
        entity_id=0,
        field_id=230,
        field="DCGM_FI_DEV_XID_ERRORS",
        job_id="7",
        labels="{}",
    )
    vals = [0, 79, 79, 48, 48, 79]  # events: 79 (2 samples), 48 (2), 79 again (1)
    rows = [
        dict(base, timestamp=T0 + dt.timedelta(seconds=30 * i), value=float(v))
        for i, v in enumerate(vals)
    ]
    ev = dcgm.xid_events(pl.DataFrame(rows, schema=dcgm.SCHEMA))
    assert ev["xid"].to_list() == [79, 48, 79] and ev["n_samples"].to_list() == [2, 2, 1]


def test_host_without_profiling_fields():
    f = dcgm.read_exposition(D / "no_prof_host.prom")
    av = dcgm.available_metrics(f)
    assert av["field_id"].to_list() == [203, 252, 1004]
    m = dcgm.missing_metrics(f, ["tensor_active", "sm_active", "gpu_util"])
    got = {(r["wanted"], r["hostname"]): r["reason"] for r in m.iter_rows(named=True)}
    assert got == {
        ("tensor_active", "gpu-node-02"): "no_profiling",  # node-02 has no DCGM_FI_PROF_* at all
        ("sm_active", "gpu-node-02"): "no_profiling",
        ("sm_active", "gpu-node-01"): "off_by_default",  # node-01 has PROF, but not SM_ACTIVE
    }
    assert dcgm.missing_metrics(f, ["gpu_util", 203]).height == 0


# ---------------------------------------------------------------- dmon


def test_dmon_untimed_first_tick_na_and_repeating_headers():
    f = dcgm.read_dmon(D / "dmon_untimed.txt", hostname="n1", start=T0, interval=1)
    # 32 ticks; tick 0 all N/A (no rows); ticks 1..31 = 31 ticks with
    # GPU 0: GRACT, TENSO, DRAMA (3) + GPU 1: GRACT, DRAMA (2; TENSO N/A) = 5 per tick
    assert f.height == 31 * 5
    ts = sorted(set(f["timestamp"].to_list()))
    # headers before ticks 15 and 29 do not shift the clock: tick k at T0 + k s
    assert ts[0] == T0 + dt.timedelta(seconds=1) and ts[-1] == T0 + dt.timedelta(seconds=31)
    assert len(ts) == 31
    assert by(f, gpu=1, field_id=1004).height == 0
    assert set(by(f, gpu=0, field_id=1001)["value"].to_list()) == {0.9}
    cov = dcgm.coverage(f, 1, start=T0, end=T0 + dt.timedelta(seconds=31))
    # expected 31/1 + 1 = 32 ticks, 31 present -> 31/32
    assert set(cov["coverage"].to_list()) == {31 / 32}


def test_dmon_timed_entities():
    f = dcgm.read_dmon(D / "dmon_timed.txt", hostname="n1")
    t1 = T0 + dt.timedelta(microseconds=12345)
    t2 = T0 + dt.timedelta(seconds=1, microseconds=13001)
    assert sorted(set(f["timestamp"].to_list())) == [t1, t2]
    assert by(f, field_id=203)["value"].to_list() == [97.0, 98.0]
    link = by(f, entity="NVLink")
    assert link["gpu"].to_list() == [0, 0] and link["entity_id"].to_list() == [2, 2]
    assert link["value"].to_list() == [1000.0, 2000.0]
    assert by(f, entity="GPU-I").height == 0  # all N/A


def test_dmon_errors():
    with pytest.raises(dcgm.DcgmFormatError, match=r"bad_dmon.txt:4: expected 3 values"):
        dcgm.read_dmon(D / "bad_dmon.txt", start=T0, interval=1)
    with pytest.raises(dcgm.DcgmFormatError, match="start= and interval="):
        dcgm.read_dmon(D / "dmon_untimed.txt")
    with pytest.raises(dcgm.DcgmFormatError, match=r":1: expected a known dmon column"):
        dcgm.read_dmon(b"#Entity  WHAT\nID\nGPU 0  1\n", start=T0, interval=1)


# ---------------------------------------------------------------- Prometheus API, CSV


def test_prometheus_api_vector():
    f = dcgm.read_prometheus_api(D / "api_vector.json")
    r = f.row(0, named=True)
    assert r["timestamp"] == T0 + dt.timedelta(milliseconds=500) and r["value"] == 97.0
    assert r["job_id"] == "4242" and r["hostname"] == "gpu-node-01"
    lab = json.loads(r["labels"])
    # exported_namespace is the exporter's value; the target's is kept as target_namespace
    assert lab["namespace"] == "train" and lab["target_namespace"] == "gpu-operator"


@pytest.mark.filterwarnings(
    "ignore:.*NaN or \\+-Inf values.*:trainperf.dcgm.fields.DcgmWarning"
)  # the NaN the test drops
def test_prometheus_api_matrix_drops_nan():
    f = dcgm.read_prometheus_api(D / "api_matrix.json")
    # 3 points, "NaN" dropped -> t0 (0.5) and t0+60 s (0.75)
    assert f["timestamp"].to_list() == [T0, T0 + dt.timedelta(seconds=60)]
    assert f["value"].to_list() == [0.5, 0.75]


def test_prometheus_api_error_status():
    with pytest.raises(dcgm.DcgmFormatError, match="status"):
        dcgm.read_prometheus_api(
            {"status": "error", "errorType": "bad_data", "error": "parse error"}
        )
    with pytest.raises(dcgm.DcgmFormatError, match=r"<bytes>:2"):
        dcgm.read_prometheus_api(b'{"status":\n "success",,}')


def test_csv_long():
    f = dcgm.read_csv_long(D / "long.csv")
    # 4 rows, the N/A one dropped; dcgm_gpu_utilization (1.x name) -> field 203
    assert f.height == 3
    u = by(f, field_id=203)
    assert u["value"].to_list() == [97.0, 93.0]
    assert u["timestamp"].to_list() == [T0, T0 + dt.timedelta(seconds=30)]
    assert set(f["job_id"].to_list()) == {"4242"}


def test_csv_long_roundtrip_of_reader_output(tmp_path):
    a = dcgm.read_exposition(D / "archive_mixed_hostname.prom")
    p = tmp_path / "x.csv"
    a.write_csv(p)
    b = dcgm.read_csv_long(p)
    assert a.equals(b)


def test_grafana_wide():
    f = dcgm.read_grafana_csv(D / "grafana_wide.csv")
    # 3 rows x 2 series, one empty cell -> 5 samples
    assert f.height == 5
    g0 = by(f, gpu=0)
    assert g0["value"].to_list() == [650.5, 655.0]
    assert g0["timestamp"].to_list() == [T0, T0 + dt.timedelta(seconds=30)]
    assert set(f["hostname"].to_list()) == {"gpu-node-01"}


def test_grafana_formatted_values_rejected():
    with pytest.raises(dcgm.DcgmFormatError, match=r"grafana_formatted.csv:2: .*Formatted data"):
        dcgm.read_grafana_csv(D / "grafana_formatted.csv")


# ---------------------------------------------------------------- parquet store


def test_parquet_partitioned_roundtrip(tmp_path):
    a = dcgm.read_exposition(D / "no_prof_host.prom")
    files = dcgm.write_parquet_partitioned(a, tmp_path)
    assert len(files) == 2  # 2 hosts x 1 day
    assert {p.parent.name for p in files} == {"date=2026-01-01"}
    again = dcgm.write_parquet_partitioned(a, tmp_path)  # idempotent: same names
    assert sorted(again) == sorted(files) and len(list(tmp_path.rglob("*.parquet"))) == 2
    assert not list(tmp_path.rglob(".tmp-*"))
    lf = dcgm.scan_parquet(tmp_path)
    assert isinstance(lf, pl.LazyFrame)
    b = lf.collect()
    key = ["hostname", "field_id", "gpu"]
    assert b.sort(key).equals(a.sort(key))
    assert dcgm.scan_parquet(tmp_path, hostnames=["gpu-node-02"]).collect().height == 2


def test_aliases_keyed_on_id():
    assert dcgm.field_id("DCGM_FI_DEV_GPU_UTIL") == 203
    assert dcgm.field_id("DCGM_FI_DEV_GPU_UTIL_RATIO") == 203  # DCGM 4.6 rename
    assert dcgm.field_id("dcgm_fi_prof_pipe_tensor_active") == 1004  # 1.x lower case
    assert dcgm.field_id("DCGM_FI_DEV_CLOCK_THROTTLE_REASONS") == 112
    assert dcgm.FIELDS[449].unit == "MB/s" and dcgm.FIELDS[1002].default_on is False


def test_ingest_exposition_streams_in_chunks(tmp_path):
    # an archive of 40 scrapes x 2 GPUs x 2 fields, ingested in chunks of ~1 kB: the store holds exactly
    # what read_exposition returns for the whole file
    lines = []
    for k in range(40):
        lines.append(f"# SCRAPE {1_700_000_000 + 15 * k}")
        for g in range(2):
            lab = f'gpu="{g}",UUID="GPU-{g}",device="nvidia{g}",modelName="NVIDIA H100 80GB HBM3",Hostname="n1"'
            lines.append(f"DCGM_FI_DEV_POWER_USAGE{{{lab}}} {300 + k + g}")
            lines.append(f"DCGM_FI_PROF_PIPE_TENSOR_ACTIVE{{{lab}}} {0.01 * (k % 50)}")
    src = tmp_path / "a.prom"
    src.write_text("\n".join(lines) + "\n")
    stats = dcgm.ingest_exposition(src, tmp_path / "store", chunk_mb=0.001)
    assert stats["chunks"] > 5 and stats["rows"] == 40 * 2 * 2  # 160 samples
    whole = dcgm.read_exposition(src)
    got = dcgm.scan_parquet(tmp_path / "store").collect()
    key = ["timestamp", "gpu", "field_id"]
    assert got.select(whole.columns).sort(key).equals(whole.sort(key))


# removing the broken scrape's marker gives its samples the previous scrape's time: the
# duplicate_sample warning is expected (the test asserts its quality rows)
@pytest.mark.filterwarnings("ignore:.*duplicate_sample:trainperf.dcgm.fields.DcgmWarning")
def test_ingest_exposition_error_names_the_absolute_line(tmp_path):
    lines = []
    for k in range(20):  # 20 scrapes of 1 marker + 9 samples: lines 10k+1 .. 10k+10
        lines.append(f"# SCRAPE {1_700_000_000 + 15 * k}")
        lines += [f'DCGM_FI_DEV_POWER_USAGE{{gpu="{g}",Hostname="n1"}} {k}' for g in range(9)]
    lines[150] = "this is not a sample"  # line 151 of the file, in a late chunk
    src = tmp_path / "b.prom"
    src.write_text("\n".join(lines) + "\n")
    # line 151 (the marker of scrape 16) is excluded, not fatal (one bad line among readable
    # samples); its row names the absolute line. Without the marker, scrape 16 repeats scrape 15's
    # time: those 9 samples are excluded as duplicate_sample.
    with pytest.warns(dcgm.DcgmWarning, match=re.escape(f"{src}:151:")):
        stats = dcgm.ingest_exposition(src, tmp_path / "store", chunk_mb=0.0005)
    q = {r["check"]: r for r in stats["quality"].iter_rows(named=True)}
    assert q["malformed_line"]["first_line"] == 151 and q["malformed_line"]["source"] == str(src)
    assert stats["rows"] == 20 * 9 - 9


def test_empty_exposition_warns(tmp_path):
    p = tmp_path / "empty.prom"
    p.write_text("")
    with pytest.warns(UserWarning, match="no samples"):
        assert dcgm.read_exposition(p).height == 0


def test_binary_exposition_is_a_format_error(tmp_path):
    p = tmp_path / "bin.prom"
    p.write_bytes(bytes(range(256)) * 4)  # includes 0x1f and NUL bytes
    with pytest.raises(dcgm.DcgmFormatError, match=re.escape(str(p))):
        dcgm.read_exposition(p)
