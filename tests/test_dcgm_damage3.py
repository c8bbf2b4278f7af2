"""Damaged DCGM telemetry, round 3 (issue 26): GPU identity by UUID, two exporters of one GPU, timestamp
units, stale (frozen) fields of every kind, NaN/Inf and MIG rows warned with file and line. Every expected
value is worked out by hand in the test."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest
from helpers import quality_by_check, read_exposition_warned

from trainperf import dcgm, telemetry
from trainperf.errors import DataWarning

T0_MS = 1_767_225_600_000  # 2026-01-01T00:00:00Z in epoch ms
T0 = T0_MS // 1000
MODEL = 'modelName="NVIDIA H100 80GB HBM3"'


def sample(field: str, host: str, value: float, ms: int | None = None, uuid: str = "GPU-a",
           gpu: int = 0, extra: str = "") -> str:  # fmt: skip
    ts = f" {ms}" if ms is not None else ""
    return f'{field}{{gpu="{gpu}",UUID="{uuid}",{MODEL},Hostname="{host}"{extra}}} {value}{ts}'


read, checks = read_exposition_warned, quality_by_check


def per_gpu_power(r: dcgm.Reading) -> pl.DataFrame:
    return (
        r.frame()
        .filter(pl.col("field") == "DCGM_FI_DEV_POWER_USAGE")
        .group_by("hostname", "uuid")
        .agg(pl.len().alias("n"), pl.col("value").mean().alias("w"))
    )


# ------------------------------------------------------------------ identity: UUID first


def test_one_uuid_under_two_host_spellings_is_one_gpu(tmp_path):
    # exporter A calls the host n1, exporter B n1.cluster.local; both scrape the one GPU-a at the
    # same instants (0, 15, 30 s). A reads 350 W, B 350 W: one GPU at 350 W, 3 samples, not two GPUs
    lines = []
    for i in range(3):
        lines.append(sample("DCGM_FI_DEV_POWER_USAGE", "n1", 350.0, T0_MS + 15_000 * i))
        lines.append(
            sample("DCGM_FI_DEV_POWER_USAGE", "n1.cluster.local", 350.0, T0_MS + 15_000 * i)
        )
    p = tmp_path / "two.prom"
    p.write_text("\n".join(lines) + "\n")
    r, msgs = read(p)
    g = per_gpu_power(r)
    assert g.height == 1  # one GPU
    assert g.row(0, named=True) == {"hostname": "n1", "uuid": "GPU-a", "n": 3, "w": 350.0}
    q = checks(r)
    assert q["host_alias"]["action"] == "corrected"
    assert "n1 / n1.cluster.local" in q["host_alias"]["detail"]
    # 3 samples of B at the same time as A's: excluded, and the warning says so
    assert q["duplicate_series"]["n_samples"] == 3
    assert any("3 at the same time" in m and "two.prom" in m for m in msgs)


def test_host_and_index_identity_without_uuid(tmp_path):
    # no UUID label: host + index identify the GPU, so n1/gpu0 and n2/gpu0 are two GPUs (300, 400 W)
    lines = [
        'DCGM_FI_DEV_POWER_USAGE{gpu="0",Hostname="n1"} 300 ' + str(T0_MS),
        'DCGM_FI_DEV_POWER_USAGE{gpu="0",Hostname="n2"} 400 ' + str(T0_MS),
    ]
    p = tmp_path / "nouuid.prom"
    p.write_text("\n".join(lines) + "\n")
    r, _ = read(p)
    f = r.frame().sort("hostname")
    assert f["value"].to_list() == [300.0, 400.0]
    assert "duplicate_series" not in checks(r)


def test_two_exporters_10s_apart_fully_deduplicated(tmp_path):
    # A scrapes at 0, 30, ..., 270 s (10 samples, 350.0 + 0.1 i W); B at 10, 40, ..., 280 s
    # (10 samples, +5 W). Two of B's scrapes (at 60 and 150 s) happen to coincide with A's
    # (B's clock jitter): A 's mean is (350.0 + ... + 350.9) / 10 = 350.45 W; B's samples
    # inside A's span widened by its interval (-30 .. 300 s) are all B's 10.
    lines = []
    for i in range(10):
        lines.append(
            sample("DCGM_FI_DEV_POWER_USAGE", "n1", round(350.0 + 0.1 * i, 1), T0_MS + 30_000 * i)
        )
        tb = 30_000 * i + (0 if i in (2, 5) else 10_000)
        lines.append(sample("DCGM_FI_DEV_POWER_USAGE", "n1", round(355.0 + 0.1 * i, 1), T0_MS + tb,
                            extra=',instance="exporter-b:9400"'))  # fmt: skip
    p = tmp_path / "twoexp.prom"
    p.write_text("\n".join(lines) + "\n")
    r, msgs = read(p)
    g = per_gpu_power(r)
    assert g.height == 1
    row = g.row(0, named=True)
    assert row["n"] == 10
    assert row["w"] == pytest.approx(350.45)  # not +1.4 % (a mix of both exporters)
    q = checks(r)["duplicate_series"]
    assert q["n_samples"] == 10
    # the warning says truthfully what was done: 2 merged at the same time, 8 interleaving dropped
    assert (
        "2 at the same time" in q["detail"] and "8 of a second series interleaving" in q["detail"]
    )
    assert any("twoexp.prom" in m and "duplicate_series" in m for m in msgs)


@pytest.mark.filterwarnings(
    "ignore:.*measured by several series.*:trainperf.dcgm.fields.DcgmWarning"
)  # the duplicates it tests
def test_two_exporters_in_two_files_one_gpu(tmp_path):
    # the same as above across two files read by dcgm.load: B (another host spelling, +10 W) is
    # dropped; A alone: 10 samples at 350 W
    a = tmp_path / "a.prom"
    b = tmp_path / "b.prom"
    a.write_text("".join(sample("DCGM_FI_DEV_POWER_USAGE", "n1", 350.0, T0_MS + 30_000 * i) + "\n"
                         for i in range(10)))  # fmt: skip
    b.write_text("".join(sample("DCGM_FI_DEV_POWER_USAGE", "n1.cluster.local", 360.0,
                                T0_MS + 30_000 * i + 10_000) + "\n" for i in range(10)))  # fmt: skip
    with pytest.warns(dcgm.DcgmWarning, match=r"b\.prom:1: .*host_alias"):
        r = dcgm.load([a, b])
    g = per_gpu_power(r)
    assert g.rows() == [("n1", "GPU-a", 10, 350.0)]
    q = checks(r)["duplicate_series"]
    # the row names the file and line of the first dropped sample: b.prom, line 1
    assert (q["source"], q["first_line"], q["n_samples"]) == (str(b), 1, 10)


# ------------------------------------------------------------------ timestamp units


def test_exposition_timestamps_in_seconds_corrected(tmp_path):
    # per-sample timestamps must be ms; these are seconds (1767225600 = 2026-01-01 in s, which as
    # ms is 1970-01-21T10:53:45Z). x1000 puts them at 2026-01-01T00:00:00Z, 00:00:15Z
    p = tmp_path / "sec.prom"
    p.write_text("".join(sample("DCGM_FI_DEV_POWER_USAGE", "n1", 300 + i, T0 + 15 * i) + "\n"
                         for i in range(2)))  # fmt: skip
    r, msgs = read(p)
    ts = r.frame()["timestamp"].dt.epoch("s").to_list()
    assert ts == [T0, T0 + 15]
    q = checks(r)["timestamp_unit"]
    assert q["action"] == "corrected" and q["first_line"] == 1 and q["n_samples"] == 2
    assert "1970-01-21T10:53:45Z" in q["detail"]
    assert any("sec.prom:1" in m for m in msgs)


def test_prometheus_api_timestamps_in_ms_corrected(tmp_path):
    # the API gives seconds; 1767225600000 read as seconds is the year 57970. /1000 -> 2026
    body = {"status": "success", "data": {"resultType": "matrix", "result": [{
        "metric": {"__name__": "DCGM_FI_DEV_POWER_USAGE", "gpu": "0", "UUID": "GPU-a",
                   "Hostname": "n1"},
        "values": [[T0_MS + 15_000 * i, str(300 + i)] for i in range(3)]}]}}  # fmt: skip
    p = tmp_path / "ms.json"
    p.write_text(json.dumps(body))
    with pytest.warns(dcgm.DcgmWarning, match=r"ms\.json: .*year 5797.*timestamp_unit"):
        r = dcgm.read_prometheus_api_reading(p)
    assert r.frame()["timestamp"].dt.epoch("s").to_list() == [T0, T0 + 15, T0 + 30]


def test_implausible_times_refused_when_no_unit_fits_the_other_sources(tmp_path):
    # a scrape marker gives 2026-01-01; one sample carries its own timestamp 5000 (ms: 1970,
    # x1000 = 1970 still): no unit fits, kept as read and flagged with a clear message
    p = tmp_path / "bad.prom"
    p.write_text(
        f"{T0}\n"
        + sample("DCGM_FI_DEV_POWER_USAGE", "n1", 300)
        + "\n"
        + sample("DCGM_FI_DEV_POWER_USAGE", "n1", 400, 5000, uuid="GPU-b", gpu=1)
        + "\n"
    )
    r, msgs = read(p)
    f = r.frame()
    assert f["value"].to_list() == [300.0, 400.0]
    assert f["timestamp"].dt.epoch("ms").to_list() == [T0_MS, 5000]  # not silently moved
    q = checks(r)["timestamp_implausible"]
    assert q["action"] == "flagged" and q["first_line"] == 3 and q["n_samples"] == 1
    assert any("bad.prom:3" in m and "epoch milliseconds" in m for m in msgs)


def test_corrected_unit_checked_against_the_files_other_times(tmp_path):
    # a marker says 2026-01-01; a sample stamped 1000000000 (s -> 2001-09-09 after x1000) is a
    # plausible year but 24 years from the marker: no unit fits the file, flagged, not "corrected"
    p = tmp_path / "far.prom"
    p.write_text(
        f"{T0}\n"
        + sample("DCGM_FI_DEV_POWER_USAGE", "n1", 300)
        + "\n"
        + sample("DCGM_FI_DEV_POWER_USAGE", "n1", 400, 1_000_000_000, uuid="GPU-b", gpu=1)
        + "\n"
    )
    r, _ = read(p)
    assert r.frame()["timestamp"].dt.epoch("ms").to_list() == [T0_MS, 1_000_000_000]
    assert "timestamp_implausible" in checks(r) and "timestamp_unit" not in checks(r)


# ------------------------------------------------------------------ staleness of every field


def test_power_and_util_frozen_after_hostengine_restart_excluded(tmp_path):
    # 24 scrapes, 15 s apart. Live: power 600.5, 601.0, 612.25, 620.0 W (scrapes 0-3); from scrape 4
    # on nv-hostengine restarted and every value froze: power 619.15 W and util 97 % for 20 scrapes.
    # Mean of everything (the old answer) = (600.5+601+612.25+620 + 20*619.15)/24 = 616.8125 W;
    # live only = (600.5 + 601.0 + 612.25 + 620.0) / 4 = 608.4375 W.
    # Util: live 95, 96, 98, 99 -> 97 %; frozen at 97 (20 samples) excluded too.
    power = [600.5, 601.0, 612.25, 620.0] + [619.15] * 20
    util = [95, 96, 98, 99] + [97] * 20
    lines = []
    for i, (pw, ut) in enumerate(zip(power, util, strict=True)):
        lines += [str(T0 + 15 * i), sample("DCGM_FI_DEV_POWER_USAGE", "n1", pw),
                  sample("DCGM_FI_DEV_GPU_UTIL", "n1", ut)]  # fmt: skip
    p = tmp_path / "frozen.prom"
    p.write_text("\n".join(lines) + "\n")
    r, msgs = read(p)
    f = r.frame()
    pw = f.filter(pl.col("field") == "DCGM_FI_DEV_POWER_USAGE")["value"]
    assert pw.len() == 4 and pw.mean() == pytest.approx(608.4375)
    assert f.filter(pl.col("field") == "DCGM_FI_DEV_GPU_UTIL")["value"].to_list() == [
        95,
        96,
        98,
        99,
    ]
    q = checks(r)["stale"]
    # scrape 4 is lines 13-15: marker 13, power 14 (the first frozen sample)
    assert q["n_samples"] == 40 and q["first_line"] == 14 and q["n_gpus"] == 1
    assert any("frozen.prom:14" in m and "stale" in m for m in msgs)
    # coverage over the 24 scrapes falls to 4/24 for both fields
    cov = dcgm.coverage(f, 15, start=T0, end=T0 + 15 * 23)
    assert cov["coverage"].to_list() == pytest.approx([4 / 24, 4 / 24])


def test_constant_power_of_an_idle_integer_exporter_not_stale(tmp_path):
    # idle GPU (util 0 %) printing whole watts, 70 W for 8 scrapes: plausible, nothing excluded
    lines = []
    for i in range(8):
        lines += [str(T0 + 15 * i), sample("DCGM_FI_DEV_POWER_USAGE", "n1", 70),
                  sample("DCGM_FI_DEV_GPU_UTIL", "n1", 0)]  # fmt: skip
    p = tmp_path / "idle.prom"
    p.write_text("\n".join(lines) + "\n")
    r, _ = read(p)
    assert r.samples.height == 16 and "stale" not in checks(r)


# ------------------------------------------------------------------ NaN / Inf and MIG: warned


def test_nan_and_inf_warned_with_file_and_line(tmp_path):
    # line 1: 300 W; line 2: NaN; line 3: +Inf. Kept: 300 W only; the warning names line 2
    p = tmp_path / "nan.prom"
    p.write_text(
        f"{T0}\n"
        + sample("DCGM_FI_DEV_POWER_USAGE", "n1", 300)
        + "\n"
        + sample("DCGM_FI_DEV_POWER_USAGE", "n1", "NaN", uuid="GPU-b", gpu=1)
        + "\n"
        + sample("DCGM_FI_DEV_POWER_USAGE", "n1", "+Inf", uuid="GPU-c", gpu=2)
        + "\n"
    )
    r, msgs = read(p)
    assert r.frame()["value"].to_list() == [300.0]
    q = checks(r)["non_finite"]
    assert q["n_samples"] == 2 and q["first_line"] == 3  # line 1 is the marker
    assert any("nan.prom:3" in m and "non_finite" in m for m in msgs)


def test_mig_rows_warned_with_file_and_line(tmp_path):
    p = tmp_path / "mig.prom"
    p.write_text(f"{T0}\n" + sample("DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "n1", 0.5) + "\n"
                 + sample("DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "n1", 0.25, extra=',GPU_I_ID="1"')
                 + "\n")  # fmt: skip
    r, msgs = read(p)
    q = checks(r)["mig_instance"]
    assert q["action"] == "flagged" and q["n_samples"] == 1 and q["first_line"] == 3
    assert any("mig.prom:3" in m and "MIG" in m for m in msgs)


def test_phase_stats_without_overlap_says_so(tmp_path):
    # telemetry of 2026-01-01 against a run of 2024-09-20 (the LoRA log): no statistic, a warning
    p = tmp_path / "t.prom"
    p.write_text(f"{T0}\n" + sample("DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "n1", 0.5) + "\n")
    f = dcgm.read_exposition(p)
    root = Path(__file__).resolve().parents[1]
    ph = telemetry.phases_from_log(root / "data/mlperf/v4.1/NVIDIA/results/eos_n8_ngc24.09_nemo/"
                                   "llama2_70b_lora/result_0.txt")  # fmt: skip
    with pytest.warns(DataWarning, match=r"none of its 1 activity samples \(2026-01-01 00:00:00"):
        out = telemetry.phase_stats(f, ph)
    assert out.height == 0
